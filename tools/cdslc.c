/*
 * cdslc - the cdsl compiler's command line: parse, check, and emit what was asked for.
 *
 * A thin user of cdsl.h: it turns arguments into cdsl_compile_opts, compiles, and writes the
 * requested artifact (nothing on success by default, like a compiler's -fsyntax-only). Exit
 * status: 0 clean, 1 errors in the program, 2 bad usage, 3 system (out of memory, a failed
 * write, NVRTC missing or failing). Output to -o FILE goes to a temporary file in FILE's
 * folder, renamed over FILE once complete, so that a failure never leaves half a file; -o
 * naming the input file itself is refused.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cdsl.h"
#include "cli.h"

enum { MAX_LIST = 256, EXIT_PROGRAM = 1, EXIT_USAGE = 2, EXIT_SYSTEM = 3 };
#define TEXT_OF(x) #x
#define NUMBER_TEXT(x) TEXT_OF(x)

typedef enum Emit { EMIT_NONE, EMIT_AST, EMIT_IR, EMIT_DOT, EMIT_MSCCLPP, EMIT_CUDA, EMIT_PTX, EMIT_CUBIN } Emit;

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
    int rank;             /* --rank R: emit rank R's code only; -1: every rank's */
    const char *rank_text;
} Args;

static const char usage_text[] =
    "usage: cdslc FILE.cdsl -n NRANKS [options]\n"
    "       cdslc PLAN.json [-n NRANKS] [options]\n"
    "\n"
    "Parse a .cdsl collective program, or read an MSCCL++ execution plan (JSON), check it for\n"
    "races across ranks and thread blocks, deadlocks and a wrong result on every rank, and\n"
    "optionally emit device code or the program as a plan. Silent when the program is clean.\n"
    "\n"
    "options:\n"
    "  -n N                 number of ranks (1 .. " NUMBER_TEXT(CDSL_MAX_RANKS) "); required for a .cdsl file,\n"
    "                       a plan's gpu count when given for a plan\n"
    "  --program NAME       the program to compile when the file holds several\n"
    "  -D NAME=VALUE        set a program parameter (e.g. -D chunks=4)\n"
    "  -I DIR               search DIR for imports (after the importing file's folder)\n"
    "  --dump-ast           print the syntax tree (parse and resolve only)\n"
    "  --dump-ir            print every rank's operations (no checks)\n"
    "  --emit-dot           print the happens-before graph for Graphviz (races in red)\n"
    "  --emit-mscclpp       print the checked program as an MSCCL++ execution plan (JSON)\n"
    "  --emit-cuda          print the CUDA source\n"
    "  --emit-ptx           compile it with NVRTC and print the PTX\n"
    "  --emit-cubin         compile it with NVRTC to a cubin (needs -o)\n"
    "  --backend p2p|nvls   which device code to emit (default p2p)\n"
    "  --dtype T            element type for reductions: f32 f16 bf16 u32 s32 (default f32)\n"
    "  --arch sm_XX         NVRTC target architecture (default sm_90)\n"
    "  --rank R             with --emit-cuda/--emit-ptx/--emit-cubin: rank R's code only, what\n"
    "                       one process per GPU loads (every rank is still checked)\n"
    "  -o FILE              write the output to FILE instead of standard output\n"
    "  --color=WHEN         colour diagnostics: auto (default), always, never\n"
    "  --check-memory SIZE  memory the checker may use, e.g. 512M, 4G (default 2G)\n"
    "  --check-steps N      steps of work the checker may take (default 2^32)\n"
    "  --help, --version\n"
    "  --cache-clean        (alone) remove the JIT cache's entries and temporary files, list them\n"
    "\n"
    "exit status: 0 clean, 1 errors in the program, 2 bad usage, 3 system (out of memory,\n"
    "a failed write, NVRTC missing or failing)\n"
    "environment: CDSL_PATH (import folders), CDSL_CACHE_DIR (JIT cache folder, default\n"
    "  $XDG_CACHE_HOME/cdsl or ~/.cache/cdsl; used only when yours and not writable by others),\n"
    "  CDSL_NO_CACHE=1, CDSL_CACHE_MAXSIZE (cap in bytes, else CUDA_CACHE_MAXSIZE, default\n"
    "  268435456), CDSL_CACHE_VERBOSE=1 (report hits, misses, evictions)\n";

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
    {"--emit-mscclpp", EMIT_MSCCLPP},
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
    } else if ((v = cli_option_value(argc, argv, i, "--rank"))) {
        if (*v && !parse_ranks(v, &a->rank))
            return usage("--rank expects a rank number, not '%s'", v);
        a->rank_text = v;
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
    a->rank = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            exit(0);
        }
        if (!strcmp(argv[i], "--cache-clean"))
            return usage("--cache-clean takes no other arguments%s", "");
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
    bool plan = cdsl_is_plan(a->opts.path);
    if (!a->have_n && !plan)
        return usage("missing -n NRANKS (the number of ranks to compile for)%s", "");
    const char *n_text = a->n_text;
    if (a->have_n && (a->opts.nranks < 1 || a->opts.nranks > CDSL_MAX_RANKS))
        return usage("-n %s: the number of ranks must be between 1 and " NUMBER_TEXT(CDSL_MAX_RANKS), n_text);
    if (a->rank_text && a->emit < EMIT_CUDA)
        return usage("--rank %s selects one rank's device code: it needs --emit-cuda, --emit-ptx or --emit-cubin",
                     a->rank_text);
    if (a->rank_text && a->have_n && (a->rank < 0 || a->rank >= a->opts.nranks)) {
        fprintf(stderr, "cdslc: error: --rank %s: there is no such rank at -n %s (ranks are 0 to %d)\n"
                "(see cdslc --help)\n", a->rank_text, n_text, a->opts.nranks - 1);
        return 2;
    }
    a->opts.defines = a->defines;
    a->opts.include_dirs = a->includes;
    if (a->emit == EMIT_AST)
        a->opts.stop_after = CDSL_STAGE_PARSE;
    if (a->emit == EMIT_IR)
        a->opts.stop_after = CDSL_STAGE_EVAL;
    return 0;
}

/* Where the output goes: standard output, or a temporary file beside -o's that replaces it
 * only when everything was written. */
typedef struct Output {
    FILE *f;
    const char *path;         /* -o, or NULL for standard output */
    bool direct;              /* -o names a device or a FIFO (/dev/null): written in place */
    char tmp[PATH_MAX + 16];
} Output;

/* "cannot write 'FILE': why" (or "to standard output"); returns EXIT_SYSTEM. */
static int write_error(const char *path)
{
    char shown[PATH_MAX];
    cdsl_escape(path, shown, sizeof shown);
    const char *why = strerror(errno ? errno : EIO);
    if (path)
        fprintf(stderr, "cdslc: error: cannot write '%s': %s\n", shown, why);
    else
        fprintf(stderr, "cdslc: error: cannot write to standard output: %s\n", why);
    return EXIT_SYSTEM;
}

static int output_open(Output *o, const char *path)
{
    struct stat st;
    o->path = path;
    o->f = stdout;
    o->direct = path && stat(path, &st) == 0 && !S_ISREG(st.st_mode);
    if (!path)
        return 0;
    if (o->direct) {
        errno = 0;
        o->f = fopen(path, "wb");
        return o->f ? 0 : write_error(path);
    }
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    if (snprintf(o->tmp, sizeof o->tmp, "%.*s.cdslc.XXXXXX", dirlen, path) >= (int)sizeof o->tmp) {
        errno = ENAMETOOLONG;
        return write_error(path);
    }
    int fd = mkstemp(o->tmp);
    mode_t mask = umask(0);
    umask(mask);
    if (fd < 0 || fchmod(fd, 0666 & ~mask) != 0 || !(o->f = fdopen(fd, "wb"))) {
        int err = errno;
        if (fd >= 0) {
            close(fd);
            unlink(o->tmp);
        }
        errno = err;
        return write_error(path);
    }
    return 0;
}

/* Finish the output: flushed and checked; -o's file renamed into place when ok, else removed. */
static int output_close(Output *o, bool ok)
{
    errno = 0;
    bool written = fflush(o->f) == 0 && !ferror(o->f);
    if (!o->path)
        return written || !ok ? 0 : write_error(NULL);
    int err = errno;
    written &= fclose(o->f) == 0;
    err = err ? err : errno;
    if (o->direct)
        return written || !ok ? 0 : (errno = err, write_error(o->path));
    if (ok && written && rename(o->tmp, o->path) == 0)
        return 0;
    err = err ? err : errno;
    unlink(o->tmp);
    errno = err;
    return ok ? write_error(o->path) : 0;
}

static int write_output(const char *path, const void *data, size_t len, bool binary)
{
    if (!path && binary && isatty(STDOUT_FILENO)) {
        fputs("cdslc: error: a cubin is binary; write it to a file with -o FILE\n", stderr);
        return EXIT_USAGE;
    }
    Output o;
    int rc = output_open(&o, path);
    if (rc)
        return rc;
    errno = 0;
    bool ok = fwrite(data, 1, len, o.f) == len;
    int err = errno;
    rc = output_close(&o, ok);
    errno = err;
    return ok ? rc : write_error(path);
}

static int status_of(int rc)
{
    return rc == CDSL_ERR_USAGE ? EXIT_USAGE : rc == CDSL_ERR_SYSTEM ? EXIT_SYSTEM : rc ? EXIT_PROGRAM : 0;
}

static int emit_dump(cdsl_program *p, cdsl_dump what, const char *path)
{
    Output o;
    int rc = output_open(&o, path);
    if (rc)
        return rc;
    errno = 0;
    rc = cdsl_program_dump(p, what, o.f);
    int err = errno;
    int closed = output_close(&o, rc == CDSL_OK);
    if (rc == CDSL_ERR_SYSTEM && err != ENOMEM) {   /* out of memory: the library said so */
        errno = err;
        return write_error(path);
    }
    return rc ? status_of(rc) : closed;
}

static int emit_device(cdsl_program *p, const Args *a)
{
    if (a->emit == EMIT_CUDA) {
        errno = 0;
        const char *src = a->rank >= 0 ? cdsl_emit_cuda_rank(p, a->backend, a->dtype, a->rank)
                                       : cdsl_emit_cuda(p, a->backend, a->dtype);
        if (!src)
            return errno == ENOMEM ? EXIT_SYSTEM : EXIT_PROGRAM;
        return write_output(a->output, src, strlen(src), false);
    }
    void *data = NULL;
    size_t len = 0;
    cdsl_artifact what = a->emit == EMIT_PTX ? CDSL_PTX : CDSL_CUBIN;
    int rc = a->rank >= 0 ? cdsl_compile_device_rank(p, a->backend, a->dtype, a->rank, a->arch, what, &data, &len)
                          : cdsl_compile_device(p, a->backend, a->dtype, a->arch, what, &data, &len);
    if (rc) {
        free(data);
        return status_of(rc);
    }
    if (a->emit == EMIT_PTX && len && ((char *)data)[len - 1] == 0)
        len--;   /* NVRTC's PTX is NUL-terminated text */
    rc = write_output(a->output, data, len, a->emit == EMIT_CUBIN);
    free(data);
    return rc;
}

static int emit_plan(cdsl_program *p, const char *path)
{
    Output o;
    int rc = output_open(&o, path);
    if (rc)
        return rc;
    errno = 0;
    rc = cdsl_emit_mscclpp(p, o.f);
    int err = errno;
    int closed = output_close(&o, rc == CDSL_OK);
    if (rc == CDSL_ERR_SYSTEM && err != ENOMEM) {
        errno = err;
        return write_error(path);
    }
    return rc ? status_of(rc) : closed;
}

/* -o naming the input (by device and inode, as gcc compares): writing would destroy it. */
static bool output_is_input(const Args *a)
{
    struct stat in, out;
    return a->output && stat(a->opts.path, &in) == 0 && stat(a->output, &out) == 0 && in.st_dev == out.st_dev &&
           in.st_ino == out.st_ino;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--cache-clean"))
        return cdsl_cache_clean(stdout, stderr) ? 1 : 0;
    Args a;
    memset(&a, 0, sizeof a);
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc;
    if (a.emit != EMIT_NONE && output_is_input(&a))
        return usage("-o '%s' is the input file; refusing to overwrite it", a.output);
    cdsl_program *p = NULL;
    rc = cdsl_compile(&a.opts, &p);
    if (rc == CDSL_ERR_USAGE || rc == CDSL_ERR_SYSTEM || !p) {
        cdsl_program_destroy(p);
        return rc == CDSL_ERR_SYSTEM ? EXIT_SYSTEM : EXIT_USAGE;
    }
    int status = rc ? EXIT_PROGRAM : 0;
    if (!rc && a.rank_text && a.rank >= cdsl_program_nranks(p)) { /* a plan without -n: now known */
        fprintf(stderr, "cdslc: error: --rank %s: there is no such rank in the plan (ranks are 0 to %d)\n"
                "(see cdslc --help)\n", a.rank_text, cdsl_program_nranks(p) - 1);
        cdsl_program_destroy(p);
        return EXIT_USAGE;
    }
    if (a.emit == EMIT_DOT) {
        int drc = emit_dump(p, CDSL_DUMP_DOT, a.output);   /* drawn also when checks failed */
        status = drc == EXIT_SYSTEM || !status ? drc : status;
    } else if (!rc && (a.emit == EMIT_AST || a.emit == EMIT_IR)) {
        status = emit_dump(p, a.emit == EMIT_AST ? CDSL_DUMP_AST : CDSL_DUMP_IR, a.output);
    } else if (!rc && a.emit == EMIT_MSCCLPP) {
        status = emit_plan(p, a.output);
    } else if (!rc && a.emit >= EMIT_CUDA) {
        status = emit_device(p, &a);
    }
    cdsl_program_destroy(p);
    return status;
}
