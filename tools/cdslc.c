/*
 * cdslc - the cdsl compiler's command line: parse, check, and emit what was asked for.
 *
 * A thin user of cdsl.h: it turns arguments into cdsl_compile_opts, compiles, and writes the
 * requested artifact (nothing on success by default, like a compiler's -fsyntax-only). Exit
 * status: 0 clean, 1 errors in the program, 2 bad usage (also a program file that cannot be
 * read), 3 system (out of memory, a failed write, NVRTC missing or failing). Output to -o FILE goes to a temporary file in FILE's
 * folder, renamed over FILE once complete, so that a failure never leaves half a file; -o
 * naming the input file itself (or, for "-", the file standard input reads) is refused.
 */
#include <errno.h>
#include <getopt.h>
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

enum { EXIT_PROGRAM = 1, EXIT_USAGE = 2, EXIT_SYSTEM = 3 };

typedef enum Emit { EMIT_NONE, EMIT_AST, EMIT_IR, EMIT_DOT, EMIT_CE, EMIT_MSCCLPP, EMIT_CUDA, EMIT_PTX, EMIT_CUBIN } Emit;

typedef struct Args {
    CliCompile c;
    Emit emit;
    const char *output;
    cdsl_backend backend;
    cdsl_dtype dtype;
    const char *arch;
    int rank;             /* --rank R: emit rank R's code only; -1: every rank's */
    const char *rank_text;
    bool cache_clean;
    bool standalone;      /* --standalone: the device library pasted into --emit-cuda's output */
} Args;

static const char usage_text[] =
    "usage: cdslc PROGRAM -n NRANKS [options]\n"
    "       cdslc PLAN.json [-n NRANKS] [options]\n"
    "\n"
    "Parse a .cdsl collective program, or read an MSCCL++ execution plan (JSON), check it for\n"
    "races across ranks and thread blocks, deadlocks and a wrong result on every rank, and\n"
    "optionally emit device code or the program as a plan. Silent when the program is clean.\n"
    "PROGRAM is a .cdsl file, - for standard input (imports are then looked up from the\n"
    "current folder), or the name of a stdlib program (cdslc --list shows them).\n"
    "\n"
    "options:\n"
    "  -n, --nranks N       number of ranks (1 .. " CLI_NUMBER_TEXT(CDSL_MAX_RANKS) "); required for a .cdsl\n"
    "                       program, optional for a plan (then it must be the plan's gpu count)\n"
    "  --program NAME       the program to compile when the file holds several\n"
    "  -D, --define NAME=VALUE  set a program parameter (e.g. -D chunks=4); for an MSCCL++\n"
    "                       plan with pipelines, -D pipeline_iterations=N: its size class\n"
    "  -I DIR               search DIR for imports (after the importing file's folder)\n"
    "  --in-place           check (and emit) NCCL's in-place form: allgather's input is this\n"
    "                       rank's part of its output, reducescatter's output this rank's part\n"
    "                       of its input, allreduce's and alltoall's input its output\n"
    "  --dump-ast           print the syntax tree (parse and resolve only)\n"
    "  --dump-ir            print every rank's operations (no checks)\n"
    "  --emit-dot           print the happens-before graph for Graphviz (races in red)\n"
    "  --dump-ce            print the copy-engine plan: the stream operations p2p runs for\n"
    "                       bulk sizes (or why the program has none)\n"
    "  --emit-mscclpp       print the checked program as an MSCCL++ execution plan (JSON)\n"
    "  --emit-cuda          print the CUDA source: a short program that includes cdsl's device\n"
    "                       library, cdsl_device.cuh (installed in include/cdsl/)\n"
    "  --standalone         with --emit-cuda: paste the device library in, one file that\n"
    "                       nvcc compiles alone (nvcc -cubin -arch=sm_90 -std=c++17 FILE.cu)\n"
    "  --emit-ptx           compile it with NVRTC and print the PTX\n"
    "  --emit-cubin         compile it with NVRTC to a cubin (needs -o)\n"
    "  --backend @FLAVOURS@   which device code to emit (default p2p)\n"
    "  --dtype T            element type for reductions: f32 f16 bf16 u32 s32 (default f32)\n"
    "  --arch sm_XX         NVRTC target architecture (default sm_90)\n"
    "  --rank R             with --emit-cuda/--emit-ptx/--emit-cubin: rank R's code only, what\n"
    "                       one process per GPU loads (every rank is still checked)\n"
    "  -o, --output FILE    write the output to FILE instead of standard output\n"
    "  --color=WHEN         colour diagnostics: auto (default), always, never\n"
    "  -W WARNING, -Wno-WARNING  turn a warning on (the default) or off: unused,\n"
    "                       redundant-barrier, stronger-order, writes-input (docs/warnings.md)\n"
    "  -Wall, -w, -Werror   every warning on; none; warnings are errors (exit 1)\n"
    "  -fdiagnostics-format=json  diagnostics as gcc's JSON (one array per call) for tools\n"
    "  --check-memory SIZE  memory the checker may use, e.g. 512M, 4G (default 2G)\n"
    "  --check-steps N      steps of work the checker may take (default 2^32)\n"
    "  --list               list the stdlib's programs: name, collective, what it does\n"
    "  -h, --help, --version\n"
    "  --cache-clean        (alone) remove the JIT cache's entries and temporary files, list them\n"
    "  --                   the end of the options: what follows is the program\n"
    "\n"
    "exit status: 0 clean, 1 errors in the program, 2 bad usage (also a program file that\n"
    "cannot be read), 3 system (out of memory, a failed write, NVRTC missing or failing);\n"
    "warnings never change it unless -Werror\n";

static int usage(const char *fmt, const char *arg)
{
    return cli_usage("cdslc", fmt, arg);
}

/* The emit options in Emit's order (EMIT_AST ...): an option's code maps onto its Emit. */
enum { OPT_DUMP_AST = CLI_TOOL_FIRST, OPT_DUMP_IR, OPT_EMIT_DOT, OPT_DUMP_CE, OPT_EMIT_MSCCLPP, OPT_EMIT_CUDA, OPT_EMIT_PTX, OPT_EMIT_CUBIN,
       OPT_BACKEND, OPT_DTYPE, OPT_ARCH, OPT_RANK, OPT_CACHE_CLEAN, OPT_STANDALONE };

static const struct option long_options[] = {
    CLI_COMPILE_LONG,
    {"dump-ast", no_argument, NULL, OPT_DUMP_AST},
    {"dump-ir", no_argument, NULL, OPT_DUMP_IR},
    {"emit-dot", no_argument, NULL, OPT_EMIT_DOT},
    {"dump-ce", no_argument, NULL, OPT_DUMP_CE},
    {"emit-mscclpp", no_argument, NULL, OPT_EMIT_MSCCLPP},
    {"emit-cuda", no_argument, NULL, OPT_EMIT_CUDA},
    {"emit-ptx", no_argument, NULL, OPT_EMIT_PTX},
    {"emit-cubin", no_argument, NULL, OPT_EMIT_CUBIN},
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"dtype", required_argument, NULL, OPT_DTYPE},
    {"arch", required_argument, NULL, OPT_ARCH},
    {"rank", required_argument, NULL, OPT_RANK},
    {"output", required_argument, NULL, 'o'},
    {"cache-clean", no_argument, NULL, OPT_CACHE_CLEAN},
    {"standalone", no_argument, NULL, OPT_STANDALONE},
    {NULL, 0, NULL, 0},
};

/* One option of cdslc's own (the shared ones are cli.h's). */
static int parse_option(void *arg, int opt, const char *v)
{
    Args *a = arg;
    long long n;
    if (opt >= OPT_DUMP_AST && opt <= OPT_EMIT_CUBIN) {
        a->emit = (Emit)(EMIT_AST + (opt - OPT_DUMP_AST));
        return 0;
    }
    switch (opt) {
    case 'o': a->output = v; return 0;
    case OPT_BACKEND:
        if (!cli_named(CDSL_LIST_FLAVOURS, v) || cdsl_backend_parse(v, &a->backend))
            return cli_usage_names("cdslc", "--backend for code generation is", CDSL_LIST_FLAVOURS, v);
        return 0;
    case OPT_DTYPE:
        if (cdsl_dtype_parse(v, &a->dtype))
            return usage("--dtype is f32, f16, bf16, u32 or s32, not '%s'", v);
        return 0;
    case OPT_ARCH: a->arch = v; return 0;
    case OPT_RANK:
        if (!cli_parse_long(v, INT_MIN, INT_MAX, &n))
            return usage("--rank expects a rank number, not '%s'", v);
        a->rank = (int)n;
        a->rank_text = v;
        return 0;
    case OPT_CACHE_CLEAN: a->cache_clean = true; return 0;
    case OPT_STANDALONE: a->standalone = true; return 0;
    }
    return usage("unknown option '%s'", "?");
}

/* Settings that follow from others once every option is read. */
static int finish_args(Args *a, int argc)
{
    CliCompile *c = &a->c;
    if (a->cache_clean && argc != 2)
        return usage("--cache-clean takes no other arguments%s", "");
    if (!c->input)
        return usage("no input file%s", "");
    bool plan = cdsl_is_plan(c->input);   /* an MSCCL++ plan says its own rank count */
    if (!c->have_n && !plan)
        return usage("missing -n NRANKS (the number of ranks to compile for)%s", "");
    if (c->have_n && (c->opts.nranks < 1 || c->opts.nranks > CDSL_MAX_RANKS))
        return usage("-n %s: the number of ranks must be between 1 and " CLI_NUMBER_TEXT(CDSL_MAX_RANKS), c->n_text);
    if (a->rank_text && a->emit < EMIT_CUDA)
        return usage("--rank %s selects one rank's device code: it needs --emit-cuda, --emit-ptx or --emit-cubin",
                     a->rank_text);
    if (a->rank_text && c->have_n && (a->rank < 0 || a->rank >= c->opts.nranks)) {
        fprintf(stderr, "cdslc: error: --rank %s: there is no such rank at -n %s (ranks are 0 to %d)\n"
                "(see cdslc --help)\n", a->rank_text, c->n_text, c->opts.nranks - 1);
        return EXIT_USAGE;
    }
    if (a->standalone && a->emit != EMIT_CUDA)
        return usage("--standalone pastes the device library into CUDA source: it needs --emit-cuda%s", "");
    if (a->emit == EMIT_AST)
        c->opts.stop_after = CDSL_STAGE_PARSE;
    if (a->emit == EMIT_IR)
        c->opts.stop_after = CDSL_STAGE_EVAL;
    return cli_resolve_input(c, "cdslc");
}

/* 0: go on; -1: done (--help, --version, --list, --cache-clean); otherwise the exit status. */
static int parse_args(Args *a, int argc, char **argv)
{
    cli_defaults(&a->c);
    a->backend = CDSL_BACKEND_P2P;
    a->dtype = CDSL_F32;
    a->arch = "sm_90";
    a->rank = -1;
    int rc = cli_parse(&a->c, "cdslc", argc, argv, "o:", long_options, parse_option, a);
    if (rc)
        return rc;
    if (cli_answered(&a->c, "cdslc", usage_text, &rc))
        return rc ? rc : -1;
    if (a->cache_clean && argc == 2)
        return cdsl_cache_clean(stdout, stderr) ? EXIT_PROGRAM : -1;
    return finish_args(a, argc);
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
        if (!a->standalone)
            return write_output(a->output, src, strlen(src), false);
        char *whole = cdsl_cuda_standalone(src);
        if (!whole) {
            fprintf(stderr, "cdslc: error: out of memory\n");
            return EXIT_SYSTEM;
        }
        int rc = write_output(a->output, whole, strlen(whole), false);
        free(whole);
        return rc;
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

/* -o naming the input (by device and inode, as gcc compares): writing would destroy it. For
 * "-" the input is the file standard input reads, when it is one (a pipe or a terminal is
 * no file that -o could name). */
static bool output_is_input(const Args *a)
{
    struct stat in;
    bool have_in = a->c.stdin_text ? fstat(STDIN_FILENO, &in) == 0 && S_ISREG(in.st_mode)
                                   : stat(a->c.opts.path, &in) == 0;
    return have_in && cli_same_file(a->output, &in);
}

/* What was asked for, from a compiled program (rc: the compile's status). */
static int emit(cdsl_program *p, const Args *a, int rc)
{
    int status = rc ? EXIT_PROGRAM : 0;
    if (a->emit == EMIT_DOT) {
        int drc = emit_dump(p, CDSL_DUMP_DOT, a->output);   /* drawn also when checks failed */
        status = drc == EXIT_SYSTEM || !status ? drc : status;
    } else if (!rc && (a->emit == EMIT_AST || a->emit == EMIT_IR)) {
        status = emit_dump(p, a->emit == EMIT_AST ? CDSL_DUMP_AST : CDSL_DUMP_IR, a->output);
    } else if (!rc && a->emit == EMIT_CE) {
        status = emit_dump(p, CDSL_DUMP_CE, a->output);
    } else if (!rc && a->emit == EMIT_MSCCLPP) {
        status = emit_plan(p, a->output);
    } else if (!rc && a->emit >= EMIT_CUDA) {
        status = emit_device(p, a);
    }
    return status;
}

int main(int argc, char **argv)
{
    static Args a;
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (a.emit != EMIT_NONE && output_is_input(&a))
        rc = usage(a.c.stdin_text ? "-o '%s' is the file standard input reads; refusing to overwrite it"
                                  : "-o '%s' is the input file; refusing to overwrite it", a.output);
    cdsl_program *p = NULL;
    if (!rc) {
        rc = cdsl_compile(&a.c.opts, &p);
        if (rc)
            cli_input_advice(&a.c, "cdslc");
        if (rc == CDSL_ERR_USAGE || rc == CDSL_ERR_SYSTEM || !p)
            rc = rc == CDSL_ERR_SYSTEM ? EXIT_SYSTEM : EXIT_USAGE;
        else if (!rc && a.rank_text && a.rank >= cdsl_program_nranks(p)) { /* a plan without -n: now known */
            fprintf(stderr, "cdslc: error: --rank %s: there is no such rank in the plan (ranks are 0 to %d)\n"
                    "(see cdslc --help)\n", a.rank_text, cdsl_program_nranks(p) - 1);
            rc = EXIT_USAGE;
        } else
            rc = emit(p, &a, rc);
    }
    cdsl_program_destroy(p);
    free(a.c.stdin_text);
    return rc;
}
