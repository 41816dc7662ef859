/*
 * cdslrun - compile a .cdsl collective, run it on a backend, and verify its result.
 *
 * A thin user of cdsl.h: compile (the checker's diagnostics and exit 1 on a bad program),
 * create a communicator (sim, p2p or nvls; p2p when a GPU can run it, else sim), then for
 * every size: allocate, fill the inputs with a pattern (cdsl_fill), run warmup + timed
 * iterations, and check the collective's postcondition on every rank (cdsl_check). Output is
 * one summary line per size, or nccl-tests-style rows with --bench, or one JSON object with
 * --json. Sizes follow nccl-tests: the larger of one rank's input and output buffers.
 *
 * Exit status: 0 verified, 1 errors in the program, 2 bad usage, 3 system (no GPU, out of
 * memory, standard output could not be written), 4 a run failed (a wait ran out of its
 * bound), 5 a wrong result.
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

#define TEXT_OF(x) #x
#define NUMBER_TEXT(x) TEXT_OF(x)

enum { MAX_LIST = 256, MAX_SIZES = 64, EXIT_USAGE = 2 };

typedef struct Args {
    cdsl_compile_opts copts;
    const char *defines[MAX_LIST];
    const char *includes[MAX_LIST];
    cdsl_comm_opts comm;
    bool have_n;
    cdsl_dtype dtype;
    const char *size_arg;           /* --size or --sizes as typed, for messages */
    size_t size_min, size_max;      /* equal unless sweeping */
    unsigned factor;                /* sweep step */
    bool sweep;
    int iters, warmup;              /* -1: the default for the mode */
    bool check, bench, json;
    bool unchecked;                 /* debugging: run without the checker (sim only) */
    bool jitter_set;
} Args;

/* One size's outcome. */
typedef struct Row {
    size_t size, chunk;
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
} Run;

static const char usage_text[] =
    "usage: cdslrun FILE.cdsl -n NRANKS [options]\n"
    "       cdslrun PLAN.json [-n NRANKS] [options]\n"
    "\n"
    "Compile and check a .cdsl collective (or read an MSCCL++ execution plan), run it, and\n"
    "verify its result on every rank.\n"
    "\n"
    "options:\n"
    "  -n N                  number of ranks (1 .. " NUMBER_TEXT(CDSL_MAX_RANKS) "); required for a .cdsl file,\n"
    "                        a plan's gpu count when given for a plan\n"
    "  --program NAME        the program to run when the file holds several\n"
    "  -D NAME=VALUE         set a program parameter (e.g. -D chunks=4)\n"
    "  -I DIR                search DIR for imports\n"
    "  --backend B           sim, p2p or nvls (default: p2p when this machine's GPUs can\n"
    "                        run it, else sim; never nvls unless asked for)\n"
    "  --size S              collective size in bytes, K/M/G suffixes (default 64M): the\n"
    "                        larger of one rank's input and output, as nccl-tests counts\n"
    "  --sizes MIN:MAX[:F]   sweep sizes from MIN to MAX, multiplying by F (default 2);\n"
    "                        each size is rounded down to what the chunk count allows\n"
    "  --dtype T             f32 f16 bf16 u32 s32 (default f32)\n"
    "  --iters N             timed runs per size (default 1, with --bench 20)\n"
    "  --warmup N            untimed runs first (default 0, with --bench 5)\n"
    "  --check, --no-check   verify the result (default) or not\n"
    "  --bench               one row per size: size, count, type, time, algbw, busbw, #wrong\n"
    "  --json                one JSON object on standard output instead\n"
    "  --ranks-per-gpu K     p2p/nvls: place K ranks on each GPU (default 1; with the default\n"
    "                        backend, as few as this machine's GPUs allow)\n"
    "  --seed S              sim: shake the schedule with random delays from seed S\n"
    "  --jitter US           sim: the longest delay, in microseconds (default 20)\n"
    "  --spin-limit N        polls before a wait gives up (sim: polls in which no rank\n"
    "                        made progress; default 5 s of that)\n"
    "  --help, --version\n"
    "\n"
    "debugging:\n"
    "  --unchecked           run without the checker (sim only): races, deadlocks and wrong\n"
    "                        results then show up, if at all, at run time\n"
    "\n"
    "The inputs hold a pattern in which every element is distinct as far as the type allows\n"
    "(small integers for reducescatter and allreduce, so that f16/bf16 sums are exact);\n"
    "outputs start as all-ones bytes, so a chunk nobody wrote is reported as never written.\n"
    "\n"
    "exit status: 0 verified, 1 errors in the program, 2 bad usage, 3 system (no GPU, out of\n"
    "memory, a failed write), 4 a run failed (a wait ran out of its bound), 5 a wrong result\n"
    "environment: CDSL_PATH (import folders); the GPU backends' JIT cache: CDSL_CACHE_DIR,\n"
    "  CDSL_NO_CACHE=1, CDSL_CACHE_MAXSIZE (else CUDA_CACHE_MAXSIZE), CDSL_CACHE_VERBOSE=1,\n"
    "  as in cdslc --help\n"
    "\n"
    "One process per GPU is libcdsl's per-rank API and python3 -m cdsl.selftest, not cdslrun;\n"
    "its environment: CDSL_ENGINE, CDSL_TIMEOUT, CDSL_NCCL_LIB (docs/multiprocess.md)\n";

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

static int add_to_list(const char **list, int *n, const char *v, const char *flag)
{
    if (*n == MAX_LIST)
        return usage("too many %s options", flag);
    list[(*n)++] = v;
    return 0;
}

static bool is_flag(const char *arg, const char *name, bool *field, bool value)
{
    if (strcmp(arg, name))
        return false;
    *field = value;
    return true;
}

/* Options that take no value. */
static bool parse_flag(Args *a, const char *arg)
{
    return is_flag(arg, "--check", &a->check, true) || is_flag(arg, "--no-check", &a->check, false) ||
           is_flag(arg, "--bench", &a->bench, true) || is_flag(arg, "--json", &a->json, true) ||
           is_flag(arg, "--unchecked", &a->unchecked, true);
}

static int parse_run_option(Args *a, int argc, char **argv, int *i, const char **v)
{
    unsigned long long u;
    const char *arg = argv[*i];
    if ((*v = cli_option_value(argc, argv, i, "--size"))) {
        if (!parse_size(*v, &a->size_min) || a->size_min == 0)
            return usage("--size expects a positive size like 65536, 64K or 1G, not '%s'", *v);
        a->size_max = a->size_min;
        a->sweep = false;
        a->size_arg = *v;
    } else if ((*v = cli_option_value(argc, argv, i, "--sizes"))) {
        return **v ? parse_sweep(a, *v) : usage("%s needs a value", arg);
    } else if ((*v = cli_option_value(argc, argv, i, "--iters"))) {
        if (!parse_int(*v, 1, INT_MAX, &a->iters))
            return usage("--iters expects a number of runs (1 or more), not '%s'", *v);
    } else if ((*v = cli_option_value(argc, argv, i, "--warmup"))) {
        if (!parse_int(*v, 0, INT_MAX, &a->warmup))
            return usage("--warmup expects a number of runs, not '%s'", *v);
    } else if ((*v = cli_option_value(argc, argv, i, "--seed"))) {
        if (!parse_ull(*v, UINT_MAX, &u))
            return usage("--seed expects a whole number, not '%s'", *v);
        a->comm.seed = (unsigned)u;
    } else if ((*v = cli_option_value(argc, argv, i, "--jitter"))) {
        if (!parse_int(*v, 0, 1000000, &a->comm.jitter_us))
            return usage("--jitter expects microseconds (0 .. 1000000), not '%s'", *v);
        a->jitter_set = true;
    } else if ((*v = cli_option_value(argc, argv, i, "--ranks-per-gpu"))) {
        if (!parse_int(*v, 1, CDSL_MAX_RANKS, &a->comm.ranks_per_gpu))
            return usage("--ranks-per-gpu expects a number of ranks (1 .. " NUMBER_TEXT(CDSL_MAX_RANKS) "), not '%s'", *v);
    } else if ((*v = cli_option_value(argc, argv, i, "--spin-limit"))) {
        if (!parse_ull(*v, ULLONG_MAX, &a->comm.spin_limit) || !a->comm.spin_limit)
            return usage("--spin-limit expects a positive number of polls, not '%s'", *v);
    } else {
        return usage("unknown option '%s'", arg);
    }
    return 0;
}

static int parse_option(Args *a, int argc, char **argv, int *i)
{
    const char *arg = argv[*i], *v;
    cdsl_backend b;
    int rc = 0;
    if (parse_flag(a, arg))
        return 0;
    if ((v = cli_option_value(argc, argv, i, "-n"))) {
        if (!parse_int(v, 1, CDSL_MAX_RANKS, &a->copts.nranks))
            return usage("-n expects a number of ranks (1 .. " NUMBER_TEXT(CDSL_MAX_RANKS) "), not '%s'", v);
        a->have_n = true;
    } else if ((v = cli_option_value(argc, argv, i, "--program"))) {
        a->copts.program = v;
    } else if ((v = cli_option_value(argc, argv, i, "-D")) || !strncmp(arg, "-D", 2)) {
        rc = add_to_list(a->defines, &a->copts.ndefines, v ? v : arg + 2, "-D");
    } else if ((v = cli_option_value(argc, argv, i, "-I")) || !strncmp(arg, "-I", 2)) {
        rc = add_to_list(a->includes, &a->copts.ninclude_dirs, v ? v : arg + 2, "-I");
    } else if ((v = cli_option_value(argc, argv, i, "--backend"))) {
        if (cdsl_backend_parse(v, &b))
            return usage("--backend is sim, p2p or nvls, not '%s'", v);
        a->comm.backend = (int)b;
    } else if ((v = cli_option_value(argc, argv, i, "--dtype"))) {
        if (cdsl_dtype_parse(v, &a->dtype))
            return usage("--dtype is f32, f16, bf16, u32 or s32, not '%s'", v);
    } else {
        rc = parse_run_option(a, argc, argv, i, &v);
    }
    if (!rc && v && !*v)
        return usage("%s needs a value", arg);
    return rc;
}

static void default_args(Args *a)
{
    memset(a, 0, sizeof *a);
    a->copts.color = -1;
    a->copts.stop_after = CDSL_STAGE_CHECK;
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
    if (!a->copts.path)
        return usage("no input file%s", "");
    if (!a->have_n && !cdsl_is_plan(a->copts.path))
        return usage("missing -n NRANKS (the number of ranks to run)%s", "");
    if (a->iters < 0)
        a->iters = a->bench ? 20 : 1;
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
        a->copts.stop_after = CDSL_STAGE_EVAL;
    }
    a->copts.defines = a->defines;
    a->copts.include_dirs = a->includes;
    a->comm.nranks = a->copts.nranks;
    return 0;
}

/* An option that takes a value, given last with none. */
static bool value_missing(int argc, char **argv, int i)
{
    static const char *const takes_value[] = {"-n", "--program", "-D", "-I", "--backend", "--dtype", "--size", "--sizes",
                                              "--iters", "--warmup", "--seed", "--jitter", "--ranks-per-gpu",
                                              "--spin-limit"};
    if (i + 1 < argc)
        return false;
    for (size_t k = 0; k < sizeof takes_value / sizeof *takes_value; k++)
        if (!strcmp(argv[i], takes_value[k]))
            return true;
    return false;
}

/* 0: go on; -1: done (--help, --version); otherwise the exit status. */
static int parse_args(Args *a, int argc, char **argv)
{
    default_args(a);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_text, stdout);
            return -1;
        }
        if (!strcmp(argv[i], "--version")) {
            printf("cdslrun %s\n", cdsl_version());
            return -1;
        }
        if (argv[i][0] != '-' || !argv[i][1]) {
            if (a->copts.path)
                return usage("more than one input file ('%s')", argv[i]);
            a->copts.path = argv[i];
            continue;
        }
        if (value_missing(argc, argv, i))
            return usage("%s needs a value", argv[i]);
        int rc = parse_option(a, argc, argv, &i);
        if (rc)
            return rc;
    }
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

static int size_error(const Run *R, size_t size, size_t granule)
{
    int in = cdsl_program_buf_chunks(R->prog, CDSL_BUF_INPUT), out = cdsl_program_buf_chunks(R->prog, CDSL_BUF_OUTPUT);
    char bytes[48] = "";
    if (strspn(R->a->size_arg, "0123456789") != strlen(R->a->size_arg))
        snprintf(bytes, sizeof bytes, " (%zu bytes)", size);
    if (in <= 0 && out <= 0) {
        fprintf(stderr, "cdslrun: error: --size %s%s: %s has no input or output chunks, so the size is its chunk "
                "size, a multiple of 4 bytes\n", R->a->size_arg, bytes, cdsl_program_name(R->prog));
        return EXIT_USAGE;
    }
    fprintf(stderr,
            "cdslrun: error: --size %s%s does not split into %d %s chunks of whole 4-byte words: "
            "%s at -n %d takes multiples of %zu bytes",
            R->a->size_arg, bytes, in > out ? in : out, in > out ? "input" : "output", cdsl_program_name(R->prog),
            cdsl_program_nranks(R->prog), granule);
    size_t down = size / granule * granule, up = down + granule;
    if (down)
        fprintf(stderr, " (try %zu or %zu)\n", down, up);
    else
        fprintf(stderr, " (try %zu)\n", up);
    return EXIT_USAGE;
}

/* The sizes to run: one, or the sweep, each rounded down to a whole number of chunks. */
static int plan_sizes(Run *R)
{
    const Args *a = R->a;
    size_t chunk, granule;
    if (!a->sweep) {
        if (cdsl_chunk_bytes(R->prog, a->size_min, &chunk, &granule))
            return size_error(R, a->size_min, granule);
        R->sizes[R->nsizes++] = a->size_min;
        return 0;
    }
    cdsl_chunk_bytes(R->prog, 4, &chunk, &granule);
    for (size_t s = a->size_min; s <= a->size_max && R->nsizes < MAX_SIZES;) {
        size_t rounded = s / granule * granule;
        if (rounded && (R->nsizes == 0 || R->sizes[R->nsizes - 1] != rounded))
            R->sizes[R->nsizes++] = rounded;
        if (s > a->size_max / a->factor)
            break;
        s *= a->factor;
    }
    if (R->nsizes == 0) {
        fprintf(stderr, "cdslrun: error: --sizes %s: every size is below the smallest this program takes (%zu bytes)\n",
                a->size_arg, granule);
        return EXIT_USAGE;
    }
    return 0;
}

/* ---- running --------------------------------------------------------------------------------- */

static bool has_postcondition(const cdsl_program *p)
{
    const char *c = cdsl_program_collective(p);
    return strcmp(c, "barrier") && strcmp(c, "custom");
}

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

static int run_one_size(Run *R, size_t size, Row *row)
{
    const Args *a = R->a;
    *row = (Row){.size = size};
    int rc = cdsl_chunk_bytes(R->prog, size, &row->chunk, NULL);
    if (!rc)
        rc = cdsl_comm_alloc(R->comm, R->prog, row->chunk);
    if (!rc)
        rc = cdsl_fill(R->comm, R->prog, a->dtype);
    if (!rc && a->warmup)
        rc = cdsl_run(R->comm, R->prog, a->dtype, a->warmup, NULL);
    if (!rc)
        rc = cdsl_run(R->comm, R->prog, a->dtype, a->iters, &row->us);
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

static double busbw_factor(const cdsl_program *p)
{
    const char *c = cdsl_program_collective(p);
    double n = cdsl_program_nranks(p);
    if (!strcmp(c, "allgather") || !strcmp(c, "reducescatter"))
        return (n - 1) / n;
    if (!strcmp(c, "allreduce"))
        return 2 * (n - 1) / n;
    if (!strcmp(c, "barrier"))
        return 0;
    return 1;
}

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
    if (!strcmp(cdsl_program_collective(R->prog), "barrier"))
        return "completed";
    if (!R->a->check || !has_postcondition(R->prog))
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
    int total = a->warmup + a->iters;
    if (total > 1)
        snprintf(runs, sizeof runs, ", %d runs", total);
    if (!strcmp(cdsl_program_collective(R->prog), "barrier"))
        printf("%s: %d ranks, %s: completed (barrier%s)\n", name, n, be, runs);
    else if (!has_postcondition(R->prog))
        printf("%s: %d ranks, %s, %s, %s: ran (custom: no postcondition to check%s)\n", name, n, be,
               cdsl_dtype_name(a->dtype), sz, runs);
    else if (!a->check)
        printf("%s: %d ranks, %s, %s, %s: ran (not checked%s)\n", name, n, be, cdsl_dtype_name(a->dtype), sz, runs);
    else
        printf("%s: %d ranks, %s, %s, %s: verified (%d ranks x %d chunk%s%s)\n", name, n, be,
               cdsl_dtype_name(a->dtype), sz, n, out, out == 1 ? "" : "s", runs);
}

static void print_bench_header(const Run *R)
{
    const Args *a = R->a;
    printf("# %s: %s, %d ranks, %s, %s, %d warmup + %d timed runs per size\n", cdsl_program_name(R->prog),
           cdsl_program_collective(R->prog), cdsl_program_nranks(R->prog),
           cdsl_backend_name(cdsl_comm_backend(R->comm)), cdsl_dtype_name(a->dtype), a->warmup, a->iters);
    printf("#\n# %10s  %12s  %6s  %10s  %11s  %11s  %6s\n", "size", "count", "type", "time(us)", "algbw(GB/s)",
           "busbw(GB/s)", "#wrong");
}

static void print_bench_row(const Run *R, const Row *r)
{
    char wrong[24];
    if (r->status && r->status != CDSL_ERR_VERIFY)
        snprintf(wrong, sizeof wrong, "failed");
    else if (!R->a->check || !has_postcondition(R->prog))
        snprintf(wrong, sizeof wrong, "N/A");
    else
        snprintf(wrong, sizeof wrong, "%llu", r->wrong);
    double bw = algbw(r);
    printf("  %10zu  %12zu  %6s  %10.2f  %11.2f  %11.2f  %6s\n", r->size, r->size / cdsl_dtype_size(R->a->dtype),
           cdsl_dtype_name(R->a->dtype), r->us, bw, bw * busbw_factor(R->prog), wrong);
}

static void print_bench_footer(const Run *R)
{
    double sum = 0;
    unsigned long long wrong = 0;
    for (int i = 0; i < R->nrows; i++) {
        sum += algbw(&R->rows[i]) * busbw_factor(R->prog);
        wrong += R->rows[i].wrong;
    }
    if (R->a->check && has_postcondition(R->prog))
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

/* A JSON string: names come from identifiers and file paths. A path is first made safe for a
 * terminal (cdsl_escape: "\x1b" stands for ESC), then escaped as JSON requires. */
static void json_string(const char *text)
{
    char s[PATH_MAX * 2];
    cdsl_escape(text, s, sizeof s);
    putchar('"');
    for (const char *c = s; *c; c++) {
        if (*c == '"' || *c == '\\')
            printf("\\%c", *c);
        else
            putchar(*c);
    }
    putchar('"');
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

static void json_row(const Run *R, const Row *r)
{
    double bw = algbw(r);
    /* Six significant digits, however small the figure (a slow build's small sizes). */
    printf("{\"size\": %zu, \"count\": %zu, \"chunk_bytes\": %zu, \"time_us\": %.3f, \"algbw_gbs\": %.6g, "
           "\"busbw_gbs\": %.6g, \"wrong\": ",
           r->size, r->size / cdsl_dtype_size(R->a->dtype), r->chunk, r->us, bw, bw * busbw_factor(R->prog));
    if (R->a->check && has_postcondition(R->prog) && (!r->status || r->status == CDSL_ERR_VERIFY))
        printf("%llu", r->wrong);
    else
        fputs("null", stdout);
    printf(", \"result\": \"%s\"}", row_verdict(R, r));
}

static void print_json(const Run *R)
{
    const Args *a = R->a;
    const cdsl_program *p = R->prog;
    bool have = p && cdsl_program_name(p);
    printf("{\"tool\": \"cdslrun\", \"version\": ");
    json_string(cdsl_version());
    printf(", \"file\": ");
    json_string(a->copts.path);
    printf(", \"program\": ");
    if (have)
        json_string(cdsl_program_name(p));
    else
        fputs("null", stdout);
    printf(", \"collective\": ");
    if (have)
        json_string(cdsl_program_collective(p));
    else
        fputs("null", stdout);
    printf(", \"nranks\": %d, \"backend\": ", a->copts.nranks);
    if (R->comm)
        json_string(cdsl_backend_name(cdsl_comm_backend(R->comm)));
    else
        fputs("null", stdout);
    printf(", \"dtype\": \"%s\", \"iters\": %d, \"warmup\": %d, \"check\": %s, \"seed\": %u, \"results\": [",
           cdsl_dtype_name(a->dtype), a->iters, a->warmup, a->check ? "true" : "false", a->comm.seed);
    for (int i = 0; i < R->nrows; i++) {
        fputs(i ? ", " : "", stdout);
        json_row(R, &R->rows[i]);
    }
    printf("], \"status\": \"%s\", \"exit\": %d}\n", status_word(R->status), R->status);
}

/* ---- main ------------------------------------------------------------------------------------ */

static int compile(Run *R, Args *a)
{
    int rc = cdsl_compile(&a->copts, &R->prog);
    if (rc)
        return rc;
    if (!a->comm.nranks) /* a plan says how many */
        a->copts.nranks = a->comm.nranks = cdsl_program_nranks(R->prog);
    if (a->unchecked)
        fputs("cdslrun: warning: --unchecked: the program was not checked; races and deadlocks show up, "
              "if at all, at run time\n",
              stderr);
    return 0;
}

static int run(Run *R, Args *a)
{
    int rc = compile(R, a);
    if (!rc)
        rc = plan_sizes(R);
    if (!rc)
        rc = cdsl_comm_create(&a->comm, &R->comm);
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
    if (a.json)
        print_json(&R);
    if (fflush(stdout) != 0 || ferror(stdout)) {   /* a full disk, a closed pipe: say so */
        fprintf(stderr, "cdslrun: error: cannot write to standard output: %s\n", strerror(errno ? errno : EIO));
        R.status = R.status ? R.status : CDSL_ERR_SYSTEM;
    }
    cdsl_comm_destroy(R.comm);
    cdsl_program_destroy(R.prog);
    return R.status;
}
