/*
 * cdslc - the cdsl compiler's command line: parse, check, and emit what was asked for.
 *
 * A thin user of cdsl.h: it turns arguments into cdsl_compile_opts, compiles, and writes the
 * requested artifact (nothing on success by default, like a compiler's -fsyntax-only). Exit
 * status: 0 clean, 1 errors in the program (or in producing the artifact), 2 bad usage.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdsl.h"
#include "cli.h"

enum { MAX_LIST = 256 };
#define TEXT_OF(x) #x
#define NUMBER_TEXT(x) TEXT_OF(x)

typedef enum Emit { EMIT_NONE, EMIT_AST, EMIT_IR, EMIT_DOT, EMIT_CUDA, EMIT_PTX, EMIT_CUBIN } Emit;

typedef struct Args {
    cdsl_compile_opts opts;
    const char *defines[MAX_LIST];
    const char *includes[MAX_LIST];
    Emit emit;
    const char *output;
    cdsl_backend backend;
    cdsl_dtype dtype;
    const char *arch;
    bool have_n;
    const char *n_text;   /* -n as written, for messages */
} Args;

static const char usage_text[] =
    "usage: cdslc FILE.cdsl -n NRANKS [options]\n"
    "\n"
    "Parse a .cdsl collective program, check it for cross-rank races, deadlocks and a wrong\n"
    "result on every rank, and optionally emit device code. Silent when the program is clean.\n"
    "\n"
    "options:\n"
    "  -n N                 number of ranks (1 .. " NUMBER_TEXT(CDSL_MAX_RANKS) "), required\n"
    "  --program NAME       the program to compile when the file holds several\n"
    "  -D NAME=VALUE        set a program parameter (e.g. -D chunks=4)\n"
    "  -I DIR               search DIR for imports (after the importing file's folder)\n"
    "  --dump-ast           print the syntax tree (parse and resolve only)\n"
    "  --dump-ir            print every rank's operations (no checks)\n"
    "  --emit-dot           print the happens-before graph for Graphviz (races in red)\n"
    "  --emit-cuda          print the CUDA source\n"
    "  --emit-ptx           compile it with NVRTC and print the PTX\n"
    "  --emit-cubin         compile it with NVRTC to a cubin (needs -o)\n"
    "  --backend p2p|nvls   which device code to emit (default p2p)\n"
    "  --dtype T            element type for reductions: f32 f16 bf16 u32 s32 (default f32)\n"
    "  --arch sm_XX         NVRTC target architecture (default sm_90)\n"
    "  -o FILE              write the output to FILE instead of standard output\n"
    "  --color=WHEN         colour diagnostics: auto (default), always, never\n"
    "  --check-memory SIZE  memory the checker may use, e.g. 512M, 4G (default 2G)\n"
    "  --check-steps N      steps of work the checker may take (default 2^32)\n"
    "  --help, --version\n"
    "\n"
    "exit status: 0 clean, 1 errors in the program, 2 bad usage\n"
    "environment: CDSL_PATH (import folders), CDSL_CACHE_DIR, CDSL_NO_CACHE=1\n";

static int usage(const char *fmt, const char *arg)
{
    return cli_usage("cdslc", fmt, arg);
}

static bool parse_ranks(const char *s, int *n)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < INT_MIN || v > INT_MAX)
        return false;
    *n = (int)v;
    return true;
}

/* "512M", "4G", "65536": bytes, with an optional K, M or G (powers of 1024). */
static bool parse_size(const char *s, unsigned long long *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (!*s || *s == '-' || *end || errno || v == 0 || v > (ULLONG_MAX >> shift))
        return false;
    *out = v << shift;
    return true;
}

static const struct { const char *flag; Emit emit; } emit_flags[] = {
    {"--dump-ast", EMIT_AST},   {"--dump-ir", EMIT_IR},     {"--emit-dot", EMIT_DOT},
    {"--emit-cuda", EMIT_CUDA}, {"--emit-ptx", EMIT_PTX},   {"--emit-cubin", EMIT_CUBIN},
};

static int parse_option(Args *a, int argc, char **argv, int *i)
{
    const char *arg = argv[*i], *v;
    for (size_t k = 0; k < sizeof emit_flags / sizeof *emit_flags; k++)
        if (!strcmp(arg, emit_flags[k].flag)) {
            a->emit = emit_flags[k].emit;
            return 0;
        }
    if ((v = cli_option_value(argc, argv, i, "-n"))) {
        if (!parse_ranks(v, &a->opts.nranks))
            return usage("-n expects a number of ranks, not '%s'", v);
        a->have_n = true;
        a->n_text = v;
    } else if ((v = cli_option_value(argc, argv, i, "--program"))) {
        a->opts.program = v;
    } else if ((v = cli_option_value(argc, argv, i, "-D")) || !strncmp(arg, "-D", 2)) {
        if (!v)
            v = arg + 2;
        if (a->opts.ndefines == MAX_LIST)
            return usage("too many -D options%s", "");
        a->defines[a->opts.ndefines++] = v;
    } else if ((v = cli_option_value(argc, argv, i, "-I")) || !strncmp(arg, "-I", 2)) {
        if (!v)
            v = arg + 2;
        if (a->opts.ninclude_dirs == MAX_LIST)
            return usage("too many -I options%s", "");
        a->includes[a->opts.ninclude_dirs++] = v;
    } else if ((v = cli_option_value(argc, argv, i, "-o"))) {
        a->output = v;
    } else if ((v = cli_option_value(argc, argv, i, "--backend"))) {
        if (cdsl_backend_parse(v, &a->backend) || a->backend == CDSL_BACKEND_SIM)
            return usage("--backend for code generation is p2p or nvls, not '%s'", v);
    } else if ((v = cli_option_value(argc, argv, i, "--dtype"))) {
        if (cdsl_dtype_parse(v, &a->dtype))
            return usage("--dtype is f32, f16, bf16, u32 or s32, not '%s'", v);
    } else if ((v = cli_option_value(argc, argv, i, "--arch"))) {
        a->arch = v;
    } else if ((v = cli_option_value(argc, argv, i, "--check-memory"))) {
        unsigned long long bytes;
        if (!parse_size(v, &bytes) || bytes > SIZE_MAX)
            return usage("--check-memory expects a size such as 512M or 4G, not '%s'", v);
        a->opts.check_memory = (size_t)bytes;
    } else if ((v = cli_option_value(argc, argv, i, "--check-steps"))) {
        if (!parse_size(v, &a->opts.check_steps))
            return usage("--check-steps expects a positive number, not '%s'", v);
    } else if ((v = cli_option_value(argc, argv, i, "--color"))) {
        if (strcmp(v, "auto") && strcmp(v, "always") && strcmp(v, "never"))
            return usage("--color is auto, always or never, not '%s'", v);
        a->opts.color = !strcmp(v, "auto") ? -1 : !strcmp(v, "always");
    } else {
        return usage("unknown option '%s'", arg);
    }
    if (v && !*v)
        return usage("%s needs a value", arg);
    return 0;
}

static int parse_args(Args *a, int argc, char **argv)
{
    a->opts.color = -1;
    a->opts.stop_after = CDSL_STAGE_CHECK;
    a->backend = CDSL_BACKEND_P2P;
    a->dtype = CDSL_F32;
    a->arch = "sm_90";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            exit(0);
        }
        if (!strcmp(argv[i], "--version")) {
            printf("cdslc %s\n", cdsl_version());
            exit(0);
        }
        if (argv[i][0] != '-' || !argv[i][1]) {
            if (a->opts.path)
                return usage("more than one input file ('%s')", argv[i]);
            a->opts.path = argv[i];
            continue;
        }
        int rc = parse_option(a, argc, argv, &i);
        if (rc)
            return rc;
    }
    if (!a->opts.path)
        return usage("no input file%s", "");
    if (!a->have_n)
        return usage("missing -n NRANKS (the number of ranks to compile for)%s", "");
    const char *n_text = a->n_text;
    if (a->opts.nranks < 1 || a->opts.nranks > CDSL_MAX_RANKS)
        return usage("-n %s: the number of ranks must be between 1 and " NUMBER_TEXT(CDSL_MAX_RANKS), n_text);
    a->opts.defines = a->defines;
    a->opts.include_dirs = a->includes;
    if (a->emit == EMIT_AST)
        a->opts.stop_after = CDSL_STAGE_PARSE;
    if (a->emit == EMIT_IR)
        a->opts.stop_after = CDSL_STAGE_EVAL;
    return 0;
}

static int write_output(const char *path, const void *data, size_t len, bool binary)
{
    if (!path && binary && isatty(STDOUT_FILENO)) {
        fputs("cdslc: error: a cubin is binary; write it to a file with -o FILE\n", stderr);
        return 2;
    }
    FILE *f = path ? fopen(path, "wb") : stdout;
    if (!f) {
        fprintf(stderr, "cdslc: error: cannot write '%s': %s\n", path, strerror(errno));
        return 1;
    }
    bool ok = fwrite(data, 1, len, f) == len;
    if (path)
        ok &= fclose(f) == 0;
    else
        ok &= fflush(f) == 0;
    if (!ok) {
        fprintf(stderr, "cdslc: error: writing '%s' failed\n", path ? path : "standard output");
        return 1;
    }
    return 0;
}

static int emit_dump(cdsl_program *p, cdsl_dump what, const char *path)
{
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f) {
        fprintf(stderr, "cdslc: error: cannot write '%s': %s\n", path, strerror(errno));
        return 1;
    }
    int rc = cdsl_program_dump(p, what, f);
    if (path)
        fclose(f);
    return rc ? 1 : 0;
}

static int emit_device(cdsl_program *p, const Args *a)
{
    if (a->emit == EMIT_CUDA) {
        const char *src = cdsl_emit_cuda(p, a->backend, a->dtype);
        return src ? write_output(a->output, src, strlen(src), false) : 1;
    }
    void *data = NULL;
    size_t len = 0;
    int rc = cdsl_compile_device(p, a->backend, a->dtype, a->arch, a->emit == EMIT_PTX ? CDSL_PTX : CDSL_CUBIN,
                                 &data, &len);
    if (rc) {
        free(data);
        return rc == CDSL_ERR_USAGE ? 2 : 1;
    }
    if (a->emit == EMIT_PTX && len && ((char *)data)[len - 1] == 0)
        len--;   /* NVRTC's PTX is NUL-terminated text */
    rc = write_output(a->output, data, len, a->emit == EMIT_CUBIN);
    free(data);
    return rc;
}

int main(int argc, char **argv)
{
    Args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc;
    cdsl_program *p = NULL;
    rc = cdsl_compile(&a.opts, &p);
    if (rc == CDSL_ERR_USAGE || !p) {
        cdsl_program_destroy(p);
        return 2;
    }
    int status = rc ? 1 : 0;
    if (a.emit == EMIT_DOT && p) {
        int drc = emit_dump(p, CDSL_DUMP_DOT, a.output);   /* drawn also when checks failed */
        status = status ? status : drc;
    } else if (!rc && (a.emit == EMIT_AST || a.emit == EMIT_IR)) {
        status = emit_dump(p, a.emit == EMIT_AST ? CDSL_DUMP_AST : CDSL_DUMP_IR, a.output);
    } else if (!rc && a.emit >= EMIT_CUDA) {
        status = emit_device(p, &a);
    }
    cdsl_program_destroy(p);
    return status;
}
