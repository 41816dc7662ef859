/*
 * cdslrun - compile a .cdsl collective, run it on a backend, and verify its result.
 *
 * A thin user of cdsl.h: compile (the checker's diagnostics and exit 1 on a bad program),
 * create a communicator (sim, p2p or nvls; p2p when a GPU can run it, else sim), then for
 * every size: allocate, fill the inputs with a pattern (cdsl_fill), run warmup + timed
 * iterations (the warm-up in calls of the timed call's length, so that the timed call replays
 * the CUDA graph the warm-up captured), and check the collective's postcondition on every rank (cdsl_check). Output is
 * one summary line per size, or nccl-tests-style rows with --bench, or one JSON object with
 * --json. Sizes follow nccl-tests: the larger of one rank's input and output buffers.
 *
 * Exit status: 0 verified, 1 errors in the program, 2 bad usage, 3 system (no GPU, out of
 * memory, standard output could not be written), 4 a run failed (a wait ran out of its
 * bound), 5 a wrong result.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdsl.h"
#include "cli.h"
#include "collective.h"

enum { MAX_SIZES = 64, EXIT_USAGE = 2 };
/* --bench's default timed runs per size: enough that a replay's fixed cost (about 12 us per
 * CUDA graph launch, measured on 2 x H200) is small per run, bounded in time at big sizes. */
enum { BENCH_ITERS = 200, BENCH_SIM_ITERS = 20, BENCH_MIN_ITERS = 10 };
#define BENCH_BUDGET_US 5e5

typedef struct Args {
    CliCompile c;                   /* what compiles the program (cli.h) */
    cdsl_comm_opts comm;
    cdsl_dtype dtype;
    const char *size_arg;           /* --size or --sizes as typed, for messages */
    size_t size_min, size_max;      /* equal unless sweeping */
    unsigned factor;                /* sweep step */
    bool sweep;
    int iters, warmup;              /* -1: the default for the mode */
    bool iters_auto;                /* --bench without --iters: BENCH_ITERS within BENCH_BUDGET_US */
    bool check, bench, json;
    bool unchecked;                 /* debugging: run without the checker (sim only) */
    bool jitter_set;
} Args;

/* One size's outcome. */
typedef struct Row {
    size_t size, chunk;
    int iters, warmup;              /* the runs this size had: timed, and untimed before them */
    double us;
    unsigned long long wrong;
    int status;
} Row;

typedef struct Run {
    const Args *a;
    cdsl_program *prog;
    cdsl_comm *comm;
    size_t sizes[MAX_SIZES];
    int nsizes;
    Row rows[MAX_SIZES];
    int nrows;
    int status;                     /* the exit status so far */
    bool progress;                  /* stderr is a terminal */
    int size_class;                 /* a pipelined plan: the class prog was read for; -1 chosen by -D */
    char class_define[40];          /* "pipeline_iterations=N" for a recompile */
} Run;

static const char usage_text[] =
    "usage: cdslrun PROGRAM -n NRANKS [options]\n"
    "       cdslrun PLAN.json [-n NRANKS] [options]\n"
    "\n"
    "Compile and check a .cdsl collective (or read an MSCCL++ execution plan), run it, and\n"
    "verify its result on every rank. PROGRAM is a .cdsl file, - for standard input (imports\n"
    "are then looked up from the current folder), or the name of a stdlib program (cdslrun\n"
    "--list shows them).\n"
    "\n"
    "options:\n"
    "  -n, --nranks N        number of ranks (1 .. " CLI_NUMBER_TEXT(CDSL_MAX_RANKS) "); required for a .cdsl\n"
    "                        program, optional for a plan (then it must be the plan's gpu count)\n"
    "  --program NAME        the program to run when the file holds several\n"
    "  -D, --define NAME=VALUE  set a program parameter (e.g. -D chunks=4)\n"
    "  -I DIR                search DIR for imports\n"
    "  --backend B           @BACKENDS@ (default: p2p when this machine's GPUs can\n"
    "                        run it, else sim; never nvls unless asked for)\n"
    "  --size S              collective size in bytes, K/M/G suffixes (default 64M): the\n"
    "                        larger of one rank's input and output, as nccl-tests counts\n"
    "  --sizes MIN:MAX[:F]   sweep sizes from MIN to MAX, multiplying by F (default 2)\n"
    "                        a size that does not split into the program's chunks runs at the\n"
    "                        nearest size below that does (a note says so); a barrier has no\n"
    "                        size: it runs once, at size 0, with no bandwidth\n"
    "  --dtype T             f32 f16 bf16 u32 s32 (default f32)\n"
    "  --iters N             timed runs per size (default 1; --bench: 200 on a GPU, fewer\n"
    "                        (>= 10) where a probe run says 200 take over 0.5 s; sim 20)\n"
    "  --warmup N            untimed runs first (default 0, --bench 5), in calls of --iters\n"
    "                        runs (rounded up), so that the timed runs replay the warm-up's\n"
    "                        CUDA graph\n"
    "  --check, --no-check   verify the result (default) or not\n"
    "  --in-place            NCCL's in-place form: allgather's input is this rank's part of\n"
    "                        its output, reducescatter's output this rank's part of its input,\n"
    "                        allreduce's and alltoall's input its output (checked as such;\n"
    "                        refused, with the access that breaks it, where it cannot run so)\n"
    "  --bench               one row per size: size, count, type, time, algbw, busbw, #wrong\n"
    "  --json                one JSON object on standard output instead\n"
    "  --ranks-per-gpu K     p2p/nvls: place K ranks on each GPU (default 1; with the default\n"
    "                        backend, as few as this machine's GPUs allow)\n"
    "  --seed S              sim: shake the schedule with random delays from seed S\n"
    "  --jitter US           sim: the longest delay, in microseconds (default 20)\n"
    "  --spin-limit N        polls before a wait gives up (sim: polls in which no rank\n"
    "                        made progress; default 5 s of that)\n"
    "  --color=WHEN          colour diagnostics: auto (default), always, never\n"
    "  -Wno-WARNING, -w, -Werror, -fdiagnostics-format=json   warnings and diagnostics,\n"
    "                        as in cdslc --help\n"
    "  --check-memory SIZE, --check-steps N   the checker's budget, as in cdslc --help\n"
    "  --list                list the stdlib's programs: name, collective, what it does\n"
    "  -h, --help, --version\n"
    "  --                    the end of the options: what follows is the program\n"
    "\n"
    "debugging:\n"
    "  --unchecked           run without the checker (sim only): races, deadlocks and wrong\n"
    "                        results then show up, if at all, at run time\n"
    "\n"
    "The inputs hold a pattern in which every element is distinct as far as the type allows\n"
    "(small integers for reducescatter and allreduce, so that f16/bf16 sums are exact);\n"
    "outputs start as all-ones bytes, so a chunk nobody wrote is reported as never written.\n"
    "\n"
    "exit status: 0 verified, 1 errors in the program, 2 bad usage (also a program file that\n"
    "cannot be read), 3 system (no GPU, out of memory, a failed write), 4 a run failed (a wait\n"
    "ran out of its bound), 5 a wrong result\n"
    "\n"
    "One process per GPU is libcdsl's per-rank API and python3 -m cdsl.selftest, not cdslrun\n"
    "(docs/multiprocess.md).\n";

/* ---- arguments ------------------------------------------------------------------------------- */

static int usage(const char *fmt, const char *arg)
{
    return cli_usage("cdslrun", fmt, arg);
}

static bool parse_ull(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;
    errno = 0;
    if (!*s || *s == '-' || *s == '+')
        return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno || v > max)
        return false;
    *out = v;
    return true;
}

static bool parse_int(const char *s, int lo, int hi, int *out)
{
    unsigned long long v;
    if (!parse_ull(s, (unsigned long long)hi, &v) || (long long)v < lo)
        return false;
    *out = (int)v;
    return true;
}

/* "65536", "64K", "64M", "1G", also with "B" or "iB" after the unit; powers of 1024. */
static bool parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    if (!*s || *s == '-' || *s == '+')
        return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return false;
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    case 't': case 'T': shift = 40; end++; break;
    }
    if (shift && (!strcmp(end, "iB") || !strcmp(end, "B")))
        end += strlen(end);
    else if (!shift && !strcmp(end, "B"))
        end++;
    if (*end || v > (SIZE_MAX >> shift))
        return false;
    *out = (size_t)v << shift;
    return true;
}

/* "MIN:MAX" or "MIN:MAX:F" */
static int parse_sweep(Args *a, const char *v)
{
    char buf[128];
    if (strlen(v) >= sizeof buf)
        return usage("--sizes '%s' is too long", v);
    strcpy(buf, v);
    char *colon = strchr(buf, ':'), *second = colon ? strchr(colon + 1, ':') : NULL;
    unsigned long long f = 2;
    if (!colon)
        return usage("--sizes expects MIN:MAX or MIN:MAX:FACTOR, not '%s'", v);
    *colon = '\0';
    if (second) {
        *second = '\0';
        if (!parse_ull(second + 1, 1u << 20, &f) || f < 2)
            return usage("--sizes: the factor must be a whole number of 2 or more, in '%s'", v);
    }
    if (!parse_size(buf, &a->size_min) || !parse_size(colon + 1, &a->size_max))
        return usage("--sizes expects sizes like 1K:1G, not '%s'", v);
    if (a->size_min == 0 || a->size_min > a->size_max)
        return usage("--sizes '%s': MIN must be positive and at most MAX", v);
    a->factor = (unsigned)f;
    a->sweep = true;
    a->size_arg = v;
    return 0;
}

enum { OPT_BACKEND = CLI_TOOL_FIRST, OPT_DTYPE, OPT_SIZE, OPT_SIZES, OPT_ITERS, OPT_WARMUP, OPT_SEED, OPT_JITTER,
       OPT_RANKS_PER_GPU, OPT_SPIN_LIMIT, OPT_CHECK, OPT_NO_CHECK, OPT_BENCH, OPT_JSON, OPT_UNCHECKED };

static const struct option long_options[] = {
    CLI_COMPILE_LONG,
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"dtype", required_argument, NULL, OPT_DTYPE},
    {"size", required_argument, NULL, OPT_SIZE},
    {"sizes", required_argument, NULL, OPT_SIZES},
    {"iters", required_argument, NULL, OPT_ITERS},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"seed", required_argument, NULL, OPT_SEED},
    {"jitter", required_argument, NULL, OPT_JITTER},
    {"ranks-per-gpu", required_argument, NULL, OPT_RANKS_PER_GPU},
    {"spin-limit", required_argument, NULL, OPT_SPIN_LIMIT},
    {"check", no_argument, NULL, OPT_CHECK},
    {"no-check", no_argument, NULL, OPT_NO_CHECK},
    {"bench", no_argument, NULL, OPT_BENCH},
    {"json", no_argument, NULL, OPT_JSON},
    {"unchecked", no_argument, NULL, OPT_UNCHECKED},
    {NULL, 0, NULL, 0},
};

/* Options that take no value. */
static bool parse_flag(Args *a, int opt)
{
    switch (opt) {
    case OPT_CHECK: a->check = true; return true;
    case OPT_NO_CHECK: a->check = false; return true;
    case OPT_BENCH: a->bench = true; return true;
    case OPT_JSON: a->json = true; return true;
    case OPT_UNCHECKED: a->unchecked = true; return true;
    }
    return false;
}

static int parse_run_option(Args *a, int opt, const char *v)
{
    unsigned long long u;
    switch (opt) {
    case OPT_SIZE:
        if (!parse_size(v, &a->size_min) || a->size_min == 0)
            return usage("--size expects a positive size like 65536, 64K or 1G, not '%s'", v);
        a->size_max = a->size_min;
        a->sweep = false;
        a->size_arg = v;
        return 0;
    case OPT_SIZES: return parse_sweep(a, v);
    case OPT_ITERS:
        if (!parse_int(v, 1, INT_MAX, &a->iters))
            return usage("--iters expects a number of runs (1 or more), not '%s'", v);
        return 0;
    case OPT_WARMUP:
        if (!parse_int(v, 0, INT_MAX, &a->warmup))
            return usage("--warmup expects a number of runs, not '%s'", v);
        return 0;
    case OPT_SEED:
        if (!parse_ull(v, UINT_MAX, &u))
            return usage("--seed expects a whole number, not '%s'", v);
        a->comm.seed = (unsigned)u;
        return 0;
    case OPT_JITTER:
        if (!parse_int(v, 0, 1000000, &a->comm.jitter_us))
            return usage("--jitter expects microseconds (0 .. 1000000), not '%s'", v);
        a->jitter_set = true;
        return 0;
    case OPT_RANKS_PER_GPU:
        if (!parse_int(v, 1, CDSL_MAX_RANKS, &a->comm.ranks_per_gpu))
            return usage("--ranks-per-gpu expects a number of ranks (1 .. " CLI_NUMBER_TEXT(CDSL_MAX_RANKS) "), not '%s'", v);
        return 0;
    case OPT_SPIN_LIMIT:
        if (!parse_ull(v, ULLONG_MAX, &a->comm.spin_limit) || !a->comm.spin_limit)
            return usage("--spin-limit expects a positive number of polls, not '%s'", v);
        return 0;
    }
    return usage("unknown option '%s'", "?");
}

/* One option of cdslrun's own (the shared ones are cli.h's). */
static int parse_option(void *arg, int opt, const char *v)
{
    Args *a = arg;
    cdsl_backend b;
    if (parse_flag(a, opt))
        return 0;
    if (opt == OPT_BACKEND) {
        if (cdsl_backend_parse(v, &b))
            return cli_usage_names("cdslrun", "--backend is", CDSL_LIST_BACKENDS, v);
        a->comm.backend = (int)b;
        return 0;
    }
    if (opt == OPT_DTYPE) {
        if (cdsl_dtype_parse(v, &a->dtype))
            return usage("--dtype is f32, f16, bf16, u32 or s32, not '%s'", v);
        return 0;
    }
    return parse_run_option(a, opt, v);
}

static void default_args(Args *a)
{
    memset(a, 0, sizeof *a);
    cli_defaults(&a->c);
    cdsl_comm_opts_init(&a->comm);
    a->dtype = CDSL_F32;
    a->size_min = a->size_max = (size_t)64 << 20;
    a->size_arg = "64M";
    a->factor = 2;
    a->iters = a->warmup = -1;
    a->check = true;
}

/* Settings that follow from others once every option is read. */
static int finish_args(Args *a)
{
    CliCompile *c = &a->c;
    if (!c->input)
        return usage("no input file%s", "");
    if (!c->have_n && !cdsl_is_plan(c->input))
        return usage("missing -n NRANKS (the number of ranks to run)%s", "");
    if (c->have_n && (c->opts.nranks < 1 || c->opts.nranks > CDSL_MAX_RANKS))
        return usage("-n expects a number of ranks (1 .. " CLI_NUMBER_TEXT(CDSL_MAX_RANKS) "), not '%s'", c->n_text);
    a->iters_auto = a->iters < 0 && a->bench;
    if (a->iters < 0)
        a->iters = a->bench ? BENCH_ITERS : 1;
    if (a->warmup < 0)
        a->warmup = a->bench ? 5 : 0;
    if (a->jitter_set && a->comm.jitter_us == 0)
        a->comm.seed = 0; /* --jitter 0: no jitter at all */
    else if (a->jitter_set && a->comm.seed == 0)
        a->comm.seed = 1;
    if (a->unchecked) {
        if (a->comm.backend != CDSL_BACKEND_AUTO && a->comm.backend != CDSL_BACKEND_SIM)
            return usage("--unchecked runs on the sim backend only%s", "");
        a->comm.backend = CDSL_BACKEND_SIM;
        c->opts.stop_after = CDSL_STAGE_EVAL;
    }
    a->comm.nranks = c->opts.nranks;
    return cli_resolve_input(c, "cdslrun");
}

/* 0: go on; -1: done (--help, --version, --list); otherwise the exit status. */
static int parse_args(Args *a, int argc, char **argv)
{
    default_args(a);
    int rc = cli_parse(&a->c, "cdslrun", argc, argv, "", long_options, parse_option, a);
    if (rc)
        return rc;
    if (cli_answered(&a->c, "cdslrun", usage_text, &rc))
        return rc ? rc : -1;
    return finish_args(a);
}

/* ---- sizes ----------------------------------------------------------------------------------- */

/* "64 MiB", "1 KiB", "1000 B": exact, so that the summary names the size that ran. */
static void format_size(size_t b, char *out, size_t len)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && b && b % 1024 == 0) {
        b /= 1024;
        u++;
    }
    snprintf(out, len, "%zu %s", b, unit[u]);
}

/* A size that does not split into the program's chunks of whole 4-byte words runs at the
 * nearest valid size below it, for --size and each size of --sizes alike, with a note. */
static size_t round_size(const Run *R, const char *opt, size_t size, size_t granule)
{
    size_t down = size / granule * granule;
    if (down == size)
        return size;
    int in = cdsl_program_buf_chunks(R->prog, CDSL_BUF_INPUT), out = cdsl_program_buf_chunks(R->prog, CDSL_BUF_OUTPUT);
    const char *name = cdsl_program_name(R->prog);
    int n = cdsl_program_nranks(R->prog);
    if (!down && !R->a->sweep)
        return 0; /* plan_sizes says it, as an error */
    if (!down)
        fprintf(stderr, "cdslrun: note: %s: %zu bytes is below the smallest size %s at -n %d takes (%zu bytes); "
                "skipped\n", opt, size, name, n, granule);
    else
        fprintf(stderr, "cdslrun: note: %s: %zu bytes does not split into %d %s chunks of whole 4-byte words; "
                "running %zu, the nearest size below that %s at -n %d takes (a multiple of %zu bytes)\n", opt, size,
                in > out ? in : out, in > out ? "input" : "output", down, name, n, granule);
    return down;
}

/* The sizes to run: one, or the sweep, each rounded down to a whole number of chunks. A program
 * with no input or output chunks (a barrier) moves no data: it runs once, at size 0. */
static int plan_sizes(Run *R)
{
    const Args *a = R->a;
    size_t chunk, granule;
    cdsl_chunk_bytes(R->prog, 4, &chunk, &granule);
    if (cdsl_program_buf_chunks(R->prog, CDSL_BUF_INPUT) <= 0 && cdsl_program_buf_chunks(R->prog, CDSL_BUF_OUTPUT) <= 0) {
        R->sizes[R->nsizes++] = 0;
        return 0;
    }
    const char *opt = a->sweep ? "--sizes" : "--size";
    for (size_t s = a->size_min; s <= a->size_max && R->nsizes < MAX_SIZES;) {
        size_t rounded = round_size(R, opt, s, granule);
        if (rounded && (R->nsizes == 0 || R->sizes[R->nsizes - 1] != rounded))
            R->sizes[R->nsizes++] = rounded;
        if (s > a->size_max / a->factor)
            break;
        s *= a->factor;
    }
    if (R->nsizes == 0) {
        fprintf(stderr, "cdslrun: error: %s %s: %s below the smallest size %s at -n %d takes (%zu bytes)\n", opt,
                a->size_arg, a->sweep ? "every size is" : "it is", cdsl_program_name(R->prog),
                cdsl_program_nranks(R->prog), granule);
        return EXIT_USAGE;
    }
    return 0;
}

/* ---- running --------------------------------------------------------------------------------- */

static void show_progress(const Run *R, int i)
{
    if (!R->progress)
        return;
    char sz[32];
    format_size(R->sizes[i], sz, sizeof sz);
    /* The cursor goes back to the start, so that a message printed during the run overwrites
     * this line instead of trailing it. */
    fprintf(stderr, "\r\033[Kcdslrun: %s, %s (%d of %d)\r", cdsl_program_name(R->prog), sz, i + 1, R->nsizes);
    fflush(stderr);
}

static void clear_progress(const Run *R)
{
    if (R->progress) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}

/* --bench without --iters: BENCH_ITERS timed runs (BENCH_SIM_ITERS on sim, whose times are
 * CPU threads'), fewer where they would take longer than BENCH_BUDGET_US by one probe run's
 * time, but at least BENCH_MIN_ITERS. The probe counts as a warm-up run. */
static int bench_most(const Run *R)
{
    return cdsl_comm_backend(R->comm) == CDSL_BACKEND_SIM ? BENCH_SIM_ITERS : BENCH_ITERS;
}

static int bench_iters(Run *R, Row *row)
{
    int most = bench_most(R);
    double us = 0;
    int rc = cdsl_run(R->comm, R->prog, R->a->dtype, 1, &us);
    row->warmup = 1;
    row->iters = most;
    if (!rc && us * most > BENCH_BUDGET_US)
        row->iters = us * BENCH_MIN_ITERS > BENCH_BUDGET_US ? BENCH_MIN_ITERS : (int)(BENCH_BUDGET_US / us);
    return rc;
}

/* The warm-up, in calls of exactly the timed call's iteration count: the GPU backends capture
 * one CUDA graph per chain length, so a warm-up of another length would leave the timed call
 * to capture its own. */
static int warm_up(Run *R, Row *row)
{
    int calls = (R->a->warmup + row->iters - 1) / row->iters, rc = CDSL_OK;
    for (int k = 0; !rc && k < calls; k++)
        rc = cdsl_run(R->comm, R->prog, R->a->dtype, row->iters, NULL);
    row->warmup += calls * row->iters;
    return rc;
}

/* A plan whose pipelines run a number of times that depends on the size is read and checked
 * for one size class (docs/mscclpp.md §3.3): before a size of another class, the plan is read
 * again for that class, unless -D pipeline_iterations chose one. */
static int take_size_class(Run *R, size_t size)
{
    int k = size && R->size_class >= 0 ? cdsl_program_size_class(R->prog, size) : 0;
    if (k <= 0 || k == R->size_class)
        return CDSL_OK;
    cdsl_compile_opts o = R->a->c.opts;
    const char *defines[CLI_MAX_LIST + 1];
    for (int i = 0; i < o.ndefines; i++)
        defines[i] = o.defines[i];
    snprintf(R->class_define, sizeof R->class_define, "pipeline_iterations=%d", k);
    defines[o.ndefines++] = R->class_define;
    o.defines = defines;
    cdsl_program *p = NULL;
    int rc = cdsl_compile(&o, &p);
    if (rc) {
        cdsl_program_destroy(p);
        return rc;
    }
    cdsl_program_destroy(R->prog);
    R->prog = p;
    R->size_class = k;
    return CDSL_OK;
}

static int run_one_size(Run *R, size_t size, Row *row)
{
    const Args *a = R->a;
    *row = (Row){.size = size, .chunk = 4, .iters = a->iters};    /* size 0 (a barrier): chunks of 4 bytes */
    int rc = take_size_class(R, size);
    if (!rc && size)
        rc = cdsl_chunk_bytes(R->prog, size, &row->chunk, NULL);
    if (!rc)
        rc = cdsl_comm_alloc(R->comm, R->prog, row->chunk);
    if (!rc)
        rc = cdsl_fill(R->comm, R->prog, a->dtype);
    if (!rc && a->iters_auto)
        rc = bench_iters(R, row);
    if (!rc)
        rc = warm_up(R, row);
    if (!rc)
        rc = cdsl_run(R->comm, R->prog, a->dtype, row->iters, &row->us);
    /* In place, a run consumes its input (an allreduce's sums are summed again by the next):
     * after several, the result checked is that of one run on a fresh fill, as nccl-tests does. */
    if (!rc && a->check && a->c.opts.in_place && row->warmup + row->iters > 1 && !(rc = cdsl_fill(R->comm, R->prog, a->dtype)))
        rc = cdsl_run(R->comm, R->prog, a->dtype, 1, NULL);
    if (!rc && a->check)
        rc = cdsl_check(R->comm, R->prog, a->dtype, &row->wrong);
    row->status = rc;
    return rc;
}

static void print_row(const Run *R, const Row *r);
static void print_bench_header(const Run *R);
static void print_bench_footer(const Run *R);

/* Every size in turn, each printed as soon as it is done (bench rows, summaries). */
static int run_sizes(Run *R)
{
    bool text = !R->a->json;
    if (text && R->a->bench)
        print_bench_header(R);
    for (int i = 0; i < R->nsizes; i++) {
        show_progress(R, i);
        Row *row = &R->rows[R->nrows++];
        int rc = run_one_size(R, R->sizes[i], row);
        clear_progress(R);
        if (text)
            print_row(R, row);
        if (rc && !R->status)
            R->status = rc;
        if (rc && rc != CDSL_ERR_VERIFY)
            break; /* a broken run or machine: later sizes would fail the same way */
    }
    if (text && R->a->bench)
        print_bench_footer(R);
    return R->status;
}

/* ---- output ---------------------------------------------------------------------------------- */

static double algbw(const Row *r)
{
    return r->us > 0 ? (double)r->size / r->us / 1e3 : 0;
}

static const char *row_verdict(const Run *R, const Row *r)
{
    if (r->status == CDSL_ERR_VERIFY)
        return "wrong";
    if (r->status)
        return "failed";
    if (collective_is_barrier(R->prog))
        return "completed";
    if (!R->a->check || !collective_has_postcondition(R->prog))
        return "ran";
    return "verified";
}

static void print_summary(const Run *R, const Row *r)
{
    const Args *a = R->a;
    const char *name = cdsl_program_name(R->prog);
    int n = cdsl_program_nranks(R->prog), out = cdsl_program_buf_chunks(R->prog, CDSL_BUF_OUTPUT);
    const char *be = cdsl_backend_name(cdsl_comm_backend(R->comm));
    char sz[32], runs[48] = "";
    format_size(r->size, sz, sizeof sz);
    int total = r->warmup + r->iters;
    if (total > 1)
        snprintf(runs, sizeof runs, ", %d runs", total);
    if (collective_is_barrier(R->prog))
        printf("%s: %d ranks, %s: completed (barrier%s)\n", name, n, be, runs);
    else if (!collective_has_postcondition(R->prog))
        printf("%s: %d ranks, %s, %s, %s: ran (custom: no postcondition to check%s)\n", name, n, be,
               cdsl_dtype_name(a->dtype), sz, runs);
    else if (!a->check)
        printf("%s: %d ranks, %s, %s, %s: ran (not checked%s)\n", name, n, be, cdsl_dtype_name(a->dtype), sz, runs);
    else if (collective_sums(R->prog) && cdsl_program_root(R->prog) >= 0)   /* a reduce: the root's only */
        printf("%s: %d ranks, %s, %s, %s: verified (root %d's %d chunk%s%s)\n", name, n, be,
               cdsl_dtype_name(a->dtype), sz, cdsl_program_root(R->prog), out, out == 1 ? "" : "s", runs);
    else if (cdsl_program_root(R->prog) >= 0)
        printf("%s: %d ranks, %s, %s, %s: verified (%d ranks x %d chunk%s from root %d%s)\n", name, n, be,
               cdsl_dtype_name(a->dtype), sz, n, out, out == 1 ? "" : "s", cdsl_program_root(R->prog), runs);
    else
        printf("%s: %d ranks, %s, %s, %s: verified (%d ranks x %d chunk%s%s)\n", name, n, be,
               cdsl_dtype_name(a->dtype), sz, n, out, out == 1 ? "" : "s", runs);
}

/* Untimed runs before the timed ones when --iters is given (warm_up's rounding). */
static int warm_runs(int warmup, int iters)
{
    return (warmup + iters - 1) / iters * iters;
}

static void print_bench_header(const Run *R)
{
    const Args *a = R->a;
    printf("# %s: %s, %d ranks, %s, %s, ", cdsl_program_name(R->prog), cdsl_program_collective(R->prog),
           cdsl_program_nranks(R->prog), cdsl_backend_name(cdsl_comm_backend(R->comm)), cdsl_dtype_name(a->dtype));
    if (!a->iters_auto)
        printf("%d warmup + %d timed runs per size\n", warm_runs(a->warmup, a->iters), a->iters);
    else
        printf("up to %d timed runs per size (fewer past a %.1f s budget: a '# N timed runs' line then "
               "follows the row), after a probe run and %s\n", bench_most(R), BENCH_BUDGET_US / 1e6,
               a->warmup ? "a warm-up of as many runs" : "no warm-up");
    printf("#\n# %10s  %12s  %6s  %10s  %11s  %11s  %6s\n", "size", "count", "type", "time(us)", "algbw(GB/s)",
           "busbw(GB/s)", "#wrong");
}

static void print_bench_row(const Run *R, const Row *r)
{
    char wrong[24];
    if (r->status && r->status != CDSL_ERR_VERIFY)
        snprintf(wrong, sizeof wrong, "failed");
    else if (!R->a->check || !collective_has_postcondition(R->prog))
        snprintf(wrong, sizeof wrong, "N/A");
    else
        snprintf(wrong, sizeof wrong, "%llu", r->wrong);
    double bw = algbw(r);
    printf("  %10zu  %12zu  %6s  %10.2f  %11.2f  %11.2f  %6s\n", r->size, r->size / cdsl_dtype_size(R->a->dtype),
           cdsl_dtype_name(R->a->dtype), r->us, bw, bw * collective_busbw_factor(R->prog), wrong);
    if (R->a->iters_auto && r->iters != bench_most(R) && !r->status)
        printf("# %d timed runs at %zu bytes (the %.1f s budget)\n", r->iters, r->size, BENCH_BUDGET_US / 1e6);
}

static void print_bench_footer(const Run *R)
{
    double sum = 0;
    unsigned long long wrong = 0;
    for (int i = 0; i < R->nrows; i++) {
        sum += algbw(&R->rows[i]) * collective_busbw_factor(R->prog);
        wrong += R->rows[i].wrong;
    }
    if (R->a->check && collective_has_postcondition(R->prog))
        printf("# wrong elements: %llu%s\n", wrong, wrong || R->status ? "" : " (verified)");
    printf("# avg busbw: %.2f GB/s\n", R->nrows ? sum / R->nrows : 0.0);
}

static void print_row(const Run *R, const Row *r)
{
    if (R->a->bench)
        print_bench_row(R, r);
    else if (r->status == CDSL_OK)
        print_summary(R, r);
    fflush(stdout);
}

/* Text as --json shows it: names and paths first made safe for a terminal, as every message
 * shows them (cdsl_escape: "\x1b" stands for ESC); jansson then escapes what JSON needs. NULL
 * text, or no memory: null. */
static json_t *json_shown(const char *text)
{
    if (!text)
        return json_null();
    size_t n = cdsl_escape(text, NULL, 0) + 1;
    char *s = malloc(n);
    if (!s)
        return json_null();
    cdsl_escape(text, s, n);
    json_t *j = json_string(s);
    free(s);
    return j ? j : json_null();
}

/* x as it reads when printed with fmt (the digits a reader of the figure gets). */
static double rounded(const char *fmt, double x)
{
    char text[64];
    snprintf(text, sizeof text, fmt, x);
    return strtod(text, NULL);
}

static const char *status_word(int status)
{
    switch (status) {
    case CDSL_OK: return "ok";
    case CDSL_ERR_PROGRAM: return "program error";
    case CDSL_ERR_USAGE: return "usage error";
    case CDSL_ERR_SYSTEM: return "system error";
    case CDSL_ERR_RUNTIME: return "runtime error";
    case CDSL_ERR_VERIFY: return "wrong result";
    }
    return "error";
}

static json_t *json_row(const Run *R, const Row *r)
{
    double bw = algbw(r);
    bool counted = R->a->check && collective_has_postcondition(R->prog) && (!r->status || r->status == CDSL_ERR_VERIFY);
    /* Time to the nanosecond; six significant digits of bandwidth, however small the figure (a
     * slow build's small sizes). */
    return json_pack("{s:I, s:I, s:I, s:f, s:f, s:f, s:o, s:i, s:i, s:s}", "size", (json_int_t)r->size, "count",
                     (json_int_t)(r->size / cdsl_dtype_size(R->a->dtype)), "chunk_bytes", (json_int_t)r->chunk,
                     "time_us", rounded("%.3f", r->us), "algbw_gbs", rounded("%.6g", bw), "busbw_gbs",
                     rounded("%.6g", bw * collective_busbw_factor(R->prog)), "wrong",
                     counted ? json_integer((json_int_t)r->wrong) : json_null(), "iters", r->iters, "warmup",
                     r->warmup, "result", row_verdict(R, r));
}

/* One object on one line, written by jansson (", " and ": " between items, keys in order). The
 * figures were rounded to what they mean, so fifteen digits print them without noise. A row
 * that cannot be made (out of memory, a figure that is not a number) fails the whole output
 * rather than leave a report that looks complete; CDSL_ERR_SYSTEM then, after a message. */
static int print_json(const Run *R)
{
    const Args *a = R->a;
    const cdsl_program *p = R->prog;
    bool have = p && cdsl_program_name(p);
    json_t *rows = json_array();
    for (int i = 0; rows && i < R->nrows; i++)
        if (json_array_append_new(rows, json_row(R, &R->rows[i])) != 0) {
            fprintf(stderr, "cdslrun: error: cannot make --json's row for %zu bytes (out of memory, or a figure "
                    "that is not a number)\n", R->rows[i].size);
            json_decref(rows);
            return CDSL_ERR_SYSTEM;
        }
    json_t *o = json_pack("{s:s, s:s, s:o, s:o, s:o, s:i, s:i, s:o, s:s, s:i, s:i, s:b, s:I, s:o, s:s, s:i}", "tool",
                          "cdslrun", "version", cdsl_version(), "file", json_shown(a->c.opts.path), "program",
                          json_shown(have ? cdsl_program_name(p) : NULL), "collective",
                          json_shown(have ? cdsl_program_collective(p) : NULL), "root", cdsl_program_root(p),
                          "nranks", a->c.opts.nranks,
                          "backend", json_shown(R->comm ? cdsl_backend_name(cdsl_comm_backend(R->comm)) : NULL),
                          "dtype", cdsl_dtype_name(a->dtype), "iters",
                          a->iters_auto && R->comm ? bench_most(R) : a->iters, "warmup", a->warmup, "check",
                          a->check, "seed", (json_int_t)a->comm.seed, "results", rows, "status",
                          status_word(R->status), "exit", R->status);
    int rc = CDSL_OK;
    if (!o) {
        fputs("cdslrun: error: out of memory making --json\n", stderr);
        rc = CDSL_ERR_SYSTEM;
    } else if (json_dumpf(o, stdout, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) != 0) {
        fprintf(stderr, "cdslrun: error: cannot write to standard output: %s\n", strerror(errno ? errno : EIO));
        rc = CDSL_ERR_SYSTEM;
    } else {
        putchar('\n');
    }
    json_decref(o);
    return rc;
}

/* ---- main ------------------------------------------------------------------------------------ */

static int compile(Run *R, Args *a)
{
    int rc = cdsl_compile(&a->c.opts, &R->prog);
    if (rc) {
        cli_input_advice(&a->c, "cdslrun");
        return rc;
    }
    if (!a->comm.nranks) /* a plan says how many */
        a->c.opts.nranks = a->comm.nranks = cdsl_program_nranks(R->prog);
    R->size_class = 1;
    for (int i = 0; i < a->c.opts.ndefines; i++)
        if (!strncmp(a->c.opts.defines[i], "pipeline_iterations=", 20))
            R->size_class = -1;
    if (cdsl_program_in_place(R->prog)) /* a plan may say so itself */
        a->c.opts.in_place = 1;
    if (a->unchecked)
        fputs("cdslrun: warning: --unchecked: the program was not checked; races and deadlocks show up, "
              "if at all, at run time\n",
              stderr);
    return 0;
}

/* The library says why a backend cannot run here, in words for every user of it; the
 * command line's way out is the tool's to give. */
static void backend_advice(const Args *a, int rc)
{
    if (rc != CDSL_ERR_SYSTEM)
        return;
    if (a->comm.backend == CDSL_BACKEND_P2P)
        fputs("cdslrun: note: --backend sim runs the program on CPU threads, without a GPU\n", stderr);
    else if (a->comm.backend == CDSL_BACKEND_NVLS)
        fputs("cdslrun: note: --backend p2p runs the program over peer memory, without multicast\n", stderr);
}

static int run(Run *R, Args *a)
{
    int rc = compile(R, a);
    if (!rc)
        rc = plan_sizes(R);
    if (!rc) {
        rc = cdsl_comm_create(&a->comm, &R->comm);
        backend_advice(a, rc);
    }
    if (!rc)
        rc = run_sizes(R);
    return rc;
}

int main(int argc, char **argv)
{
    static Args a;
    static Run R;
    int rc = parse_args(&a, argc, argv);
    if (rc)
        return rc < 0 ? 0 : rc;
    R.a = &a;
    R.progress = !a.json && isatty(STDERR_FILENO);
    R.status = run(&R, &a);
    int json_rc = a.json ? print_json(&R) : CDSL_OK;
    if (json_rc) {
        R.status = R.status ? R.status : json_rc;
    } else if (fflush(stdout) != 0 || ferror(stdout)) {   /* a full disk, a closed pipe: say so */
        fprintf(stderr, "cdslrun: error: cannot write to standard output: %s\n", strerror(errno ? errno : EIO));
        R.status = R.status ? R.status : CDSL_ERR_SYSTEM;
    }
    cdsl_comm_destroy(R.comm);
    cdsl_program_destroy(R.prog);
    free(a.c.stdin_text);
    return R.status;
}
