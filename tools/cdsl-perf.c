/*
 * cdsl-perf - a .cdsl collective benchmarked the way nccl-tests benchmarks NCCL: its flags
 * (-b -e -f -i -n -w -c -g -d -o -r -G -z -T), its header, its two row groups per size (out of place,
 * in place: time, algbw, busbw, #wrong) and its footer ("# Out of bounds values : 0 OK",
 * "# Avg bus bandwidth : X"), so that scripts written for all_gather_perf read it unchanged.
 * The program is the last argument (a path, or a stdlib program by name); it runs wherever
 * cdslrun does (sim without a GPU). Options of our own are long ones only, so that none takes
 * a letter nccl-tests uses. Results also go to a file with -F (perf_files.c).
 *
 * The in-place group runs the program compiled in place (cdsl_compile_opts.in_place); one that
 * cannot run in place prints N/A there, with the reason in the header. On the sim backend the
 * time, algbw and busbw columns are N/A (CPU threads: not a measurement), also in the footer.
 *
 * Under mpirun, srun or torchrun with -g 1, each process runs its own rank (perf_launch.c finds
 * the launcher and passes the unique id, perf_rank.c runs and gathers); rank 0 prints.
 *
 * Exit status, nccl-tests' where it has one: 0 every value verified, 1 errors in the program,
 * 2 system (no GPU for the backend asked for, out of memory, a failed write), 4 a run failed
 * (a wait ran out of its bound: nccl-tests' timeout), 5 an nccl-tests option or value cdsl-perf
 * does not have (not implemented), 6 bad usage (invalid usage; also a program file that cannot
 * be read), 7 wrong values, or an average
 * bus bandwidth below NCCL_TESTS_MIN_BW (nccl-tests' result failure).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdsl.h"
#include "cli.h"
#include "collective.h"
#include "perf.h"
#include "perf_launch.h"
#include "perf_rank.h"
#include "perf_types.h"

enum {
    EXIT_OK = 0, EXIT_PROGRAM = 1, EXIT_SYSTEM = 2, EXIT_RUN = 4, EXIT_NOT_IMPLEMENTED = 5, EXIT_USAGE = 6,
    EXIT_WRONG = 7,
};
enum { MAX_LIST = 256, MAX_SIZES = 4096, MAX_TYPES = PERF_NTYPES, DEFAULT_RANKS = 8 };
/* nccl-tests' defaults, which --help states from these same macros. */
#define DEFAULT_ITERS 20
#define DEFAULT_WARMUP 1
#define STR_(x) #x
#define STR(x) STR_(x)

/* Set when a launcher (mpirun, srun, torchrun) started this process as one rank of several. */
static PerfLaunch launch;

typedef struct Opts {
    /* nccl-tests' */
    size_t min_bytes, max_bytes, step_bytes, step_factor;
    int iters, warmup, check, ngpus, graph, blocking;
    int root;                   /* -r: a broadcast's or reduce's root; -1: not given */
    char root_define[32];       /* "root=R", added to the defines for a collective with a root */
    double timeout_s;           /* -T: the bound of every wait; 0: the backend's default */
    cdsl_dtype types[MAX_TYPES];
    int ntypes;
    /* ours */
    cdsl_compile_opts copts;
    const char *defines[MAX_LIST], *includes[MAX_LIST];
    cdsl_comm_opts comm;
    int nranks;                 /* 0: from -g and --ranks-per-gpu, else DEFAULT_RANKS */
    bool in_place;              /* run the in-place group */
    bool unchecked;             /* debugging: run without the checker (sim only) */
    const char *output_file;
    const char *arg;            /* the program as given */
    char path[PATH_MAX];
    bool by_name;               /* arg named no file: path is the stdlib program found */
    bool list;                  /* --list */
} Opts;

typedef struct Bench {
    Opts *o;
    cdsl_program *prog[2];      /* out of place, in place (NULL: cannot run in place) */
    char why_not[512];          /* why the in-place form cannot run */
    cdsl_comm *comm;
    PerfRank *rank;             /* one process per rank: this rank's engine (comm is NULL) */
    const char *backend;        /* where it runs: the backend's or the engine's name */
    cdsl_device_info *devices;
    size_t sizes[MAX_SIZES];
    int nsizes;
    PerfRow *rows;
    int nrows;
    int status;
    bool measured;
    int ranks_per_gpu;          /* as the communicator placed them (0 on sim) */
} Bench;

static const char usage_text[] =
    "usage: cdsl-perf [options] PROGRAM\n"
    "\n"
    "Benchmark a .cdsl collective the way nccl-tests benchmarks NCCL: the same flags, header,\n"
    "rows (out of place, then in place) and footer. PROGRAM is a .cdsl file or a stdlib\n"
    "program's name (allgather_ring; --list shows them). It runs wherever cdslrun does: p2p on\n"
    "this machine's GPUs, else sim (CPU threads, whose times are not measurements: those\n"
    "columns say N/A).\n"
    "\n"
    "nccl-tests' options:\n"
    "  -b, --minbytes SIZE       smallest size, K/M/G suffixes (default 32M)\n"
    "  -e, --maxbytes SIZE       largest size (default 32M)\n"
    "  -i, --stepbytes SIZE      add this between sizes (default 1M; unless -f)\n"
    "  -f, --stepfactor F        multiply by F between sizes\n"
    "  -n, --iters N             timed runs per size (default " STR(DEFAULT_ITERS) ")\n"
    "  -w, --warmup_iters N      untimed runs first (default " STR(DEFAULT_WARMUP) "), rounded up to whole timed\n"
    "                            calls (N runs become ceil(N / iters) calls of -n runs; of 1\n"
    "                            with -z): the timed calls then replay the CUDA graph the\n"
    "                            warm-up captured, and no capture is timed\n"
    "  -c, --check N             check N runs on fresh inputs after timing (default 1; 0: not\n"
    "                            checked, #wrong is N/A)\n"
    "  -g, --ngpus G             GPUs to use: G x --ranks-per-gpu ranks (default: every rank on\n"
    "                            the GPUs this machine has, as cdslrun places them)\n"
    "  -d, --datatype T          float, half, bfloat16, int32, uint32 or all (default float; also\n"
    "                            cdsl's names f32 f16 bf16 s32 u32)\n"
    "  -o, --op OP               sum (or all): cdsl programs reduce with sum\n"
    "  -r, --root R              the root rank of a broadcast or reduce (default 0); other\n"
    "                            collectives have none (their rows say root -1)\n"
    "  -G, --cudagraph N         replay the timed runs N times and average (p2p replays its\n"
    "                            repeated runs as one CUDA graph anyway)\n"
    "  -z, --blocking 0|1|2|3    0: timed runs back to back; 1-3: each run waited for before the\n"
    "                            next (cdsl runs every rank together, so 1, 2 and 3 are alike)\n"
    "  -T, --timeout S           fail (exit 4) a size whose runs take over S seconds; one\n"
    "                            process per rank: every wait's bound (default 0: the backend's)\n"
    "  -h, --help\n"
    "  nccl-tests' other options (-t -m -N -p -y -C -S -a -R -x -D -V -M -u -I -K -J) are\n"
    "  accepted at their default values only (exit 5 otherwise: not implemented here).\n"
    "\n"
    "cdsl's options (long only, so that none takes a letter of nccl-tests'):\n"
    "  --nranks N                ranks (default: -g x --ranks-per-gpu, else 8)\n"
    "  --backend B               @BACKENDS@ (default: p2p when the GPUs can run it, else\n"
    "                            sim; never nvls unless asked for)\n"
    "  --ranks-per-gpu K         p2p/nvls: ranks sharing one GPU\n"
    "  --program NAME            the program to run when the file holds several\n"
    "  --define NAME=VALUE       set a program parameter (cdslrun's -D)\n"
    "  --include DIR             search DIR for imports (cdslrun's -I)\n"
    "  --no-in-place             run the out-of-place group only (the in-place columns say N/A)\n"
    "  -F, --output-file FILE    also write the results to FILE: JSON (.json) or CSV (.csv), with\n"
    "                            the devices, driver, cdsl version, time and, per row, the first\n"
    "                            wrong element\n"
    "  --seed S, --jitter US     sim: shake the schedule with random delays (as cdslrun)\n"
    "  --spin-limit N            polls before a wait gives up\n"
    "  --list                    list the stdlib's programs: name, collective, what it does\n"
    "  --version\n"
    "  --unchecked               debugging: run without the checker (sim only), as cdslrun\n";

/* C11 promises string literals of 4095 characters only: the help is two of them. */
static const char usage_notes[] =
    "\n"
    "Rows: size is the larger of one rank's input and output in bytes, count the per-rank count\n"
    "nccl-tests passes to NCCL (allgather: the input's elements; reducescatter: the output's;\n"
    "allreduce, alltoall, broadcast, reduce: all), busbw = algbw x (n-1)/n (allgather,\n"
    "reducescatter, alltoall), 2(n-1)/n (allreduce) or 1 (broadcast, reduce).\n"
    "A size that does not split into the program's chunks of whole 4-byte words runs at the\n"
    "nearest size below (a note on stderr); one below the smallest the program takes is a row of\n"
    "size 0 whose columns are N/A (nccl-tests prints size 0); a barrier runs one row of size 0.\n"
    "The in-place group runs the program compiled in place (cdslc --in-place); one that cannot\n"
    "run in place says why in the header, and its columns are N/A.\n"
    "\n"
    "exit status (nccl-tests' where it has one): 0 every value verified, 1 errors in the\n"
    "program, 2 system (no GPU, out of memory, a failed write), 4 a run failed (a wait ran out\n"
    "of its bound), 5 an option or value cdsl-perf does not have, 6 bad usage (also a program\n"
    "file that cannot be read), 7 wrong values or an average bus bandwidth below\n"
    "NCCL_TESTS_MIN_BW\n"
    "\n"
    "Under mpirun, srun or torchrun (OMPI_COMM_WORLD_*, PMI_*, SLURM_*, or WORLD_SIZE and RANK) with\n"
    "-g 1, each process runs its own rank through the per-rank engines (--backend sim: CPU\n"
    "processes), rank 0's unique id reaching the others through a file (CDSL_ID_FILE, else one in\n"
    "TMPDIR named after the launcher's job); rank 0 prints the rows (the ranks' mean time, their\n"
    "summed #wrong) and writes -F; every rank exits with the same status.\n"
    "environment: NCCL_TESTS_MIN_BW (GB/s: fail below 0.9 x it, as nccl-tests), NCCL_TESTS_DEVICE\n"
    "  (the first GPU used), CDSL_PATH, and the JIT cache's (CDSL_CACHE_DIR, CDSL_NO_CACHE=1,\n"
    "  CDSL_CACHE_MAXSIZE, CDSL_CACHE_VERBOSE=1) as in cdslc --help\n";

/* ---- arguments ---------------------------------------------------------------------------------- */

static int usage(const char *fmt, const char *arg)
{
    char shown[1024];
    cdsl_escape(arg, shown, sizeof shown);
    fputs("cdsl-perf: error: ", stderr);
    fprintf(stderr, fmt, shown);
    fputs("\n(see cdsl-perf --help)\n", stderr);
    return EXIT_USAGE;
}

static int not_implemented(const char *fmt, const char *arg)
{
    usage(fmt, arg);
    return EXIT_NOT_IMPLEMENTED;
}

/* nccl-tests' sizes: a number, maybe with a fraction, and K, M or G (powers of 1024). */
static bool parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0 || !isfinite(v))
        return false;
    double unit = 1;
    switch (*end) {
    case 'k': case 'K': unit = 1024.0; end++; break;
    case 'm': case 'M': unit = 1024.0 * 1024; end++; break;
    case 'g': case 'G': unit = 1024.0 * 1024 * 1024; end++; break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || v * unit >= 18446744073709551615.0)
        return false;
    *out = (size_t)(v * unit);
    return true;
}

static bool parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 0);
    if (end == s || *end || errno || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

static int parse_type(Opts *o, const char *v)
{
    static const char *const nccl_only[] = {"int8", "uint8", "int64", "uint64", "double", "f8e4m3", "f8e5m2", "char", "int"};
    if (!strcmp(v, "all")) {
        for (int i = 0; i < MAX_TYPES; i++)
            o->types[i] = perf_types()[i].t;
        o->ntypes = MAX_TYPES;
        return 0;
    }
    for (int i = 0; i < MAX_TYPES; i++)
        if (!strcmp(v, perf_types()[i].nccl) || !strcmp(v, perf_types()[i].cdsl)) {
            o->types[0] = perf_types()[i].t;
            o->ntypes = 1;
            return 0;
        }
    for (size_t i = 0; i < sizeof nccl_only / sizeof *nccl_only; i++)
        if (!strcmp(v, nccl_only[i]))
            return not_implemented("-d %s: cdsl runs float, half, bfloat16, int32 and uint32", v);
    return usage("-d expects float, half, bfloat16, int32, uint32 or all, not '%s'", v);
}

static int parse_op(const char *v)
{
    if (!strcmp(v, "sum") || !strcmp(v, "all"))
        return 0;
    if (!strcmp(v, "prod") || !strcmp(v, "max") || !strcmp(v, "min") || !strcmp(v, "avg") || !strcmp(v, "mulsum"))
        return not_implemented("-o %s: cdsl programs reduce with sum only", v);
    return usage("-o expects sum (or all), not '%s'", v);
}

/* nccl-tests' options cdsl-perf does not have: accepted at nccl-tests' default value, so that
 * a script that spells the default out still runs. */
static const struct { int letter; const char *name, *dflt; } foreign[] = {
    {'t', "nthreads", "1"},        {'m', "agg_iters", "1"},         {'N', "run_cycles", "1"},
    {'p', "parallel_init", "0"},   {'y', "stream_null", "0"},
    {'C', "report_cputime", "0"},    {'S', "report_timestamps", "0"},
    {'a', "average", "1"},         {'R', "local_register", "0"},    {'x', "cta_policy", "-1"},
    {'D', "device_implementation", "0"}, {'V', "device_cta_count", "16"}, {'M', "memory", "0"},
    {'u', "unalign", "0"},         {'I', "per_iter_timing", "0"},   {'K', "per_iter_skip", "0"},
    {'J', "output_file", NULL},
};

static int parse_foreign(int c, const char *v)
{
    for (size_t i = 0; i < sizeof foreign / sizeof *foreign; i++) {
        if (foreign[i].letter != c)
            continue;
        if (foreign[i].dflt && !strcmp(v, foreign[i].dflt))
            return 0;
        char what[192];
        snprintf(what, sizeof what, "-%c (--%s) %%s: an nccl-tests option cdsl-perf has at its default only%s", c,
                 foreign[i].name, c == 'J' ? " (-F FILE writes JSON or CSV)" : "");
        if (c == 'J')
            snprintf(what, sizeof what, "-J (--output_file) %%s: nccl-tests' JSON is not written here; -F FILE "
                     "writes cdsl-perf's JSON or CSV");
        return not_implemented(what, v);
    }
    return -1;
}

enum {
    OPT_NRANKS = 256, OPT_BACKEND, OPT_RPG, OPT_PROGRAM, OPT_DEFINE, OPT_INCLUDE, OPT_NO_IN_PLACE, OPT_SEED,
    OPT_JITTER, OPT_SPIN, OPT_VERSION, OPT_UNCHECKED, OPT_LIST,
};

static const struct option long_options[] = {
    {"minbytes", required_argument, 0, 'b'},   {"maxbytes", required_argument, 0, 'e'},
    {"stepbytes", required_argument, 0, 'i'},  {"stepfactor", required_argument, 0, 'f'},
    {"iters", required_argument, 0, 'n'},      {"warmup_iters", required_argument, 0, 'w'},
    {"check", required_argument, 0, 'c'},      {"ngpus", required_argument, 0, 'g'},
    {"datatype", required_argument, 0, 'd'},   {"op", required_argument, 0, 'o'},
    {"cudagraph", required_argument, 0, 'G'},  {"blocking", required_argument, 0, 'z'},
    {"help", no_argument, 0, 'h'},             {"output-file", required_argument, 0, 'F'},
    {"nthreads", required_argument, 0, 't'},   {"agg_iters", required_argument, 0, 'm'},
    {"run_cycles", required_argument, 0, 'N'}, {"parallel_init", required_argument, 0, 'p'},
    {"root", required_argument, 0, 'r'},       {"stream_null", required_argument, 0, 'y'},
    {"timeout", required_argument, 0, 'T'},    {"report_cputime", required_argument, 0, 'C'},
    {"report_timestamps", required_argument, 0, 'S'}, {"average", required_argument, 0, 'a'},
    {"local_register", required_argument, 0, 'R'}, {"cta_policy", required_argument, 0, 'x'},
    {"device_implementation", required_argument, 0, 'D'}, {"device_cta_count", required_argument, 0, 'V'},
    {"memory", required_argument, 0, 'M'},     {"unalign", required_argument, 0, 'u'},
    {"per_iter_timing", required_argument, 0, 'I'}, {"per_iter_skip", required_argument, 0, 'K'},
    {"output_file", required_argument, 0, 'J'},
    {"nranks", required_argument, 0, OPT_NRANKS}, {"backend", required_argument, 0, OPT_BACKEND},
    {"ranks-per-gpu", required_argument, 0, OPT_RPG}, {"program", required_argument, 0, OPT_PROGRAM},
    {"define", required_argument, 0, OPT_DEFINE}, {"include", required_argument, 0, OPT_INCLUDE},
    {"no-in-place", no_argument, 0, OPT_NO_IN_PLACE}, {"seed", required_argument, 0, OPT_SEED},
    {"jitter", required_argument, 0, OPT_JITTER}, {"spin-limit", required_argument, 0, OPT_SPIN},
    {"version", no_argument, 0, OPT_VERSION},  {"unchecked", no_argument, 0, OPT_UNCHECKED},
    {"list", no_argument, 0, OPT_LIST},
    {0, 0, 0, 0},
};

static const char short_options[] = ":b:e:i:f:n:w:c:g:d:o:G:z:hF:t:m:N:p:r:y:T:C:S:a:R:x:D:V:M:u:I:K:J:";

static int add_to_list(const char **list, int *n, const char *v, const char *flag)
{
    if (*n == MAX_LIST)
        return usage("too many %s options", flag);
    list[(*n)++] = v;
    return 0;
}

/* nccl-tests' own options. -1: not one of them. */
static int parse_nccl_option(Opts *o, int c, const char *v)
{
    switch (c) {
    case 'b': return parse_size(v, &o->min_bytes) ? 0 : usage("invalid size specified for 'minbytes': '%s'", v);
    case 'e': return parse_size(v, &o->max_bytes) ? 0 : usage("invalid size specified for 'maxbytes': '%s'", v);
    case 'i': return parse_size(v, &o->step_bytes) && o->step_bytes ? 0 : usage("invalid size specified for 'stepbytes': '%s'", v);
    case 'f': {
        int f;
        if (!parse_int(v, 1, 1 << 20, &f))
            return usage("-f expects a whole step factor (1 or more), not '%s'", v);
        o->step_factor = (size_t)f;
        return 0;
    }
    case 'n': return parse_int(v, 1, INT_MAX, &o->iters) ? 0 : usage("-n expects a number of iterations (1 or more), not '%s'", v);
    case 'w': return parse_int(v, 0, INT_MAX, &o->warmup) ? 0 : usage("-w expects a number of iterations, not '%s'", v);
    case 'c': return parse_int(v, 0, 1000, &o->check) ? 0 : usage("-c expects a number of checked runs (0 .. 1000), not '%s'", v);
    case 'g': return parse_int(v, 1, CDSL_MAX_RANKS, &o->ngpus) ? 0 : usage("-g expects a number of GPUs, not '%s'", v);
    case 'G': return parse_int(v, 0, 1 << 20, &o->graph) ? 0 : usage("-G expects a number of graph launches, not '%s'", v);
    case 'z': return parse_int(v, 0, 3, &o->blocking) ? 0 : usage("-z expects 0, 1, 2 or 3, not '%s'", v);
    case 'r': return parse_int(v, 0, CDSL_MAX_RANKS - 1, &o->root) ? 0 : usage("-r expects a root rank, not '%s'", v);
    case 'T': {
        int t;
        if (!parse_int(v, 0, 86400, &t))
            return usage("-T expects a timeout in whole seconds (0: the default), not '%s'", v);
        o->timeout_s = t;
        return 0;
    }
    case 'd': return parse_type(o, v);
    case 'o': return parse_op(v);
    case 'F':
        o->output_file = v;
        return perf_file_kind_ok(v) ? 0 : usage("-F %s: the results file is JSON (.json) or CSV (.csv)", v);
    }
    return -1;
}

static int parse_cdsl_option(Opts *o, int c, const char *v)
{
    cdsl_backend b;
    unsigned long long u;
    char *end;
    switch (c) {
    case OPT_NRANKS:
        return parse_int(v, 1, CDSL_MAX_RANKS, &o->nranks) ? 0 : usage("--nranks expects 1 .. 1024 ranks, not '%s'", v);
    case OPT_BACKEND:
        if (cdsl_backend_parse(v, &b))
            return cli_usage_names("cdsl-perf", "--backend is", CDSL_LIST_BACKENDS, v);
        o->comm.backend = (int)b;
        return 0;
    case OPT_RPG:
        return parse_int(v, 1, CDSL_MAX_RANKS, &o->comm.ranks_per_gpu) ? 0 : usage("--ranks-per-gpu expects a number of ranks, not '%s'", v);
    case OPT_PROGRAM: o->copts.program = v; return 0;
    case OPT_DEFINE: return add_to_list(o->defines, &o->copts.ndefines, v, "--define");
    case OPT_INCLUDE: return add_to_list(o->includes, &o->copts.ninclude_dirs, v, "--include");
    case OPT_NO_IN_PLACE: o->in_place = false; return 0;
    case OPT_UNCHECKED: o->unchecked = true; return 0;
    case OPT_LIST: o->list = true; return 0;
    case OPT_SEED:
        errno = 0;
        u = strtoull(v, &end, 10);
        if (!*v || *end || errno || u > UINT_MAX || *v == '-')
            return usage("--seed expects a whole number, not '%s'", v);
        o->comm.seed = (unsigned)u;
        return 0;
    case OPT_JITTER: return parse_int(v, 0, 1000000, &o->comm.jitter_us) ? 0 : usage("--jitter expects microseconds, not '%s'", v);
    case OPT_SPIN:
        errno = 0;
        u = strtoull(v, &end, 10);
        if (!*v || *end || errno || !u || *v == '-')
            return usage("--spin-limit expects a positive number of polls, not '%s'", v);
        o->comm.spin_limit = u;
        return 0;
    }
    return -1;
}

static void default_opts(Opts *o)
{
    memset(o, 0, sizeof *o);
    o->min_bytes = o->max_bytes = (size_t)32 << 20;
    o->step_bytes = (size_t)1 << 20;
    o->step_factor = 1;
    o->iters = DEFAULT_ITERS;
    o->warmup = DEFAULT_WARMUP;
    o->check = 1;
    o->root = -1;
    o->types[0] = CDSL_F32;
    o->ntypes = 1;
    o->in_place = true;
    o->copts.color = -1;
    o->copts.stop_after = CDSL_STAGE_CHECK;
    cdsl_comm_opts_init(&o->comm);
}

/* NCCL_TESTS_DEVICE: the first GPU used. */
static int first_device(Opts *o)
{
    const char *dev = getenv("NCCL_TESTS_DEVICE");
    int first;
    if (dev && *dev && !parse_int(dev, 0, 1 << 16, &first))
        return usage("NCCL_TESTS_DEVICE='%s' is not a device number", dev);
    if (dev && *dev)
        o->comm.first_device = first;
    return 0;
}

/* Under a launcher: one rank per process, on one GPU, as nccl-tests runs under mpirun. */
static int launched_placement(Opts *o)
{
    char text[160];
    snprintf(text, sizeof text, "%d processes (%s)", launch.size, launch.launcher);
    if (o->ngpus > 1)
        return usage("-g above 1 under %s: each process runs one rank on one GPU; give -g 1", text);
    if (o->nranks && o->nranks != launch.size)
        return usage("--nranks under %s: the processes are the ranks; leave --nranks out", text);
    if (o->comm.ranks_per_gpu > 1)
        return usage("--ranks-per-gpu under %s: one rank per process; start more processes instead", text);
    if (o->unchecked)
        return usage("--unchecked under %s: the per-rank engines run checked programs only", text);
    o->nranks = launch.size;
    return first_device(o);
}

/* -g, --nranks and --ranks-per-gpu, reconciled; NCCL_TESTS_DEVICE. */
static int finish_placement(Opts *o)
{
    if (launch.launcher)
        return launched_placement(o);
    int rpg = o->comm.ranks_per_gpu;
    char text[64];
    snprintf(text, sizeof text, "--nranks %d, -g %d", o->nranks, o->ngpus);
    if (o->ngpus && o->nranks && (o->nranks % o->ngpus || (rpg && o->nranks != o->ngpus * rpg)))
        return usage("%s: the ranks do not spread evenly over the GPUs (or --ranks-per-gpu says otherwise)", text);
    if (o->ngpus && !o->nranks)
        o->nranks = o->ngpus * (rpg ? rpg : 1);
    if (o->ngpus && !rpg)
        o->comm.ranks_per_gpu = o->nranks / o->ngpus;
    if (!o->nranks)
        o->nranks = DEFAULT_RANKS;
    if (o->nranks > CDSL_MAX_RANKS)
        return usage("-g x --ranks-per-gpu is more than 1024 ranks%s", "");
    return first_device(o);
}

static int finish_opts(Opts *o)
{
    if (!o->arg)
        return usage("no program to run (the last argument: a .cdsl file or a stdlib name)%s", "");
    if (o->min_bytes > o->max_bytes)
        return usage("invalid sizes for 'minbytes' and 'maxbytes': %s", "minbytes > maxbytes");
    int rc = finish_placement(o);
    if (rc)
        return rc;
    if (o->unchecked) {
        if (o->comm.backend != CDSL_BACKEND_AUTO && o->comm.backend != CDSL_BACKEND_SIM)
            return usage("--unchecked runs on the sim backend only%s", "");
        o->comm.backend = CDSL_BACKEND_SIM;
        o->copts.stop_after = CDSL_STAGE_EVAL;
        fputs("cdsl-perf: warning: --unchecked: the program was not checked; races and deadlocks show up, if at "
              "all, at run time\n", stderr);
    }
    o->copts.nranks = o->nranks;
    o->copts.defines = o->defines;
    o->copts.include_dirs = o->includes;
    o->comm.nranks = o->nranks;
    return 0;
}

/* 0: go on; -1: done (--help, --version); otherwise the exit status. */
static int parse_args(Opts *o, int argc, char **argv)
{
    default_opts(o);
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, short_options, long_options, NULL)) != -1) {
        if (c == 'h') {
            cli_help(usage_text, stdout);
            fputs(usage_notes, stdout);
            return -1;
        }
        if (c == OPT_VERSION) {
            printf("cdsl-perf %s\n", cdsl_version());
            return -1;
        }
        if (c == '?')
            return usage("unknown option '%s'", argv[optind - 1]);
        if (c == ':')
            return usage("%s needs a value", argv[optind - 1]);
        int rc = parse_nccl_option(o, c, optarg);
        if (rc < 0)
            rc = parse_cdsl_option(o, c, optarg);
        if (rc < 0)
            rc = parse_foreign(c, optarg);
        if (rc)
            return rc;
    }
    if (optind < argc)
        o->arg = argv[optind++];
    if (optind < argc)
        return usage("more than one program ('%s'): the program is the last argument", argv[optind]);
    if (o->list && o->arg)
        return usage("--list takes no program ('%s')", o->arg);
    if (o->list)
        return cli_list("cdsl-perf") ? EXIT_SYSTEM : -1;
    return finish_opts(o);
}

/* ---- the program ---------------------------------------------------------------------------------- */

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* A file as named; else a bare name is the stdlib program of that name, found as cdslrun
 * finds it (cdsl_find_program); a name found nowhere stays as typed, and cdsl_compile says
 * it cannot read it. */
static void resolve_program(Opts *o)
{
    o->by_name = !is_file(o->arg) && !strchr(o->arg, '/') && cdsl_find_program(o->arg, o->path, sizeof o->path) == CDSL_OK;
    if (!o->by_name)
        snprintf(o->path, sizeof o->path, "%s", o->arg);
}

/* The in-place form; when it does not compile, the first line of its diagnostics is why. */
static void compile_in_place(Bench *B)
{
    Opts *o = B->o;
    const char *coll = cdsl_program_collective(B->prog[0]);
    if (!o->in_place) {
        snprintf(B->why_not, sizeof B->why_not, "not run (--no-in-place)");
        return;
    }
    if (!cdsl_collective_in_place(cdsl_collective_find(coll))) {
        snprintf(B->why_not, sizeof B->why_not, "a %s program has no in-place form", coll);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *diag = open_memstream(&text, &len);
    cdsl_compile_opts ip = o->copts;
    ip.in_place = 1;
    ip.diag = diag;
    ip.color = 0;
    int rc = diag ? cdsl_compile(&ip, &B->prog[1]) : CDSL_ERR_SYSTEM;
    if (diag)
        fclose(diag);
    if (rc) {
        cdsl_program_destroy(B->prog[1]);
        B->prog[1] = NULL;
        const char *msg = text ? strstr(text, "error: ") : NULL;
        snprintf(B->why_not, sizeof B->why_not, "%.*s", msg ? (int)strcspn(msg + 7, "\n") : 30,
                 msg ? msg + 7 : "it does not compile in place");
    }
    free(text);
}

/* ---- sizes -------------------------------------------------------------------------------------------- */

static bool moves_data(const cdsl_program *p)
{
    return cdsl_program_buf_chunks(p, CDSL_BUF_INPUT) > 0 || cdsl_program_buf_chunks(p, CDSL_BUF_OUTPUT) > 0;
}

/* A size the program's chunks do not take: what runs instead (down), or that none does. */
static void note_rounded(const cdsl_program *p, int nranks, size_t size, size_t down, size_t granule)
{
    if (down)
        fprintf(stderr, "cdsl-perf: note: %zu bytes does not split into whole chunks; running %zu bytes, the nearest "
                "size below that %s at %d ranks takes (a multiple of %zu bytes)\n", size, down, cdsl_program_name(p),
                nranks, granule);
    else
        fprintf(stderr, "cdsl-perf: note: %zu bytes is below the smallest size %s at %d ranks takes (%zu bytes); "
                "its row has size 0\n", size, cdsl_program_name(p), nranks, granule);
}

/* nccl-tests' sweep, each size rounded down to what the program's chunks allow (with a note),
 * repeats after rounding dropped; a barrier: one size, 0. */
static int plan_sizes(Bench *B)
{
    const Opts *o = B->o;
    const cdsl_program *p = B->prog[0];
    if (!moves_data(p)) {
        B->sizes[B->nsizes++] = 0;
        return 0;
    }
    size_t chunk, granule;
    cdsl_chunk_bytes(p, 4, &chunk, &granule);
    for (size_t s = o->min_bytes; s <= o->max_bytes && B->nsizes < MAX_SIZES;) {
        size_t down = s / granule * granule;
        if (down != s)
            note_rounded(p, o->nranks, s, down, granule);
        if (B->nsizes == 0 || B->sizes[B->nsizes - 1] != down)
            B->sizes[B->nsizes++] = down;       /* 0: below the smallest, a row that says so */
        size_t next = o->step_factor > 1 ? s * o->step_factor : s + o->step_bytes;
        if (next <= s)
            break;
        s = next;
    }
    return 0;
}

/* ---- running ---------------------------------------------------------------------------------------- */

/* nccl-tests' count: the element count it passes to NCCL, per rank (allgather: the input's;
 * reducescatter: the output's; allreduce, alltoall, broadcast, reduce: either). */
static size_t row_count(const cdsl_program *p, size_t size, cdsl_dtype t)
{
    if (!size)
        return 0;
    size_t chunk;
    cdsl_chunk_bytes(p, size, &chunk, NULL);
    int in = cdsl_program_buf_chunks(p, CDSL_BUF_INPUT), out = cdsl_program_buf_chunks(p, CDSL_BUF_OUTPUT);
    int fewer = in > 0 && (out <= 0 || in < out) ? in : out;
    return (size_t)fewer * chunk / cdsl_dtype_size(t);
}

/* The timed runs: -n back to back (or each waited for, -z), -G times over; the mean of one. */
static int timed_runs(Bench *B, cdsl_program *p, cdsl_dtype t, double *us)
{
    const Opts *o = B->o;
    int reps = o->graph > 0 ? o->graph : 1, rc = CDSL_OK;
    double sum = 0, one;
    for (int g = 0; !rc && g < reps; g++) {
        if (!o->blocking) {
            rc = cdsl_run(B->comm, p, t, o->iters, &one);
            sum += one * o->iters;
            continue;
        }
        for (int i = 0; !rc && i < o->iters; i++) {
            rc = cdsl_run(B->comm, p, t, 1, &one);
            sum += one;
        }
    }
    *us = sum / ((double)reps * o->iters);
    return rc;
}

/* The runs one timed call makes: the warm-up makes calls of exactly this many, because the
 * GPU backends capture one CUDA graph per call length. */
static int call_runs(const Opts *o)
{
    return o->blocking ? 1 : o->iters;
}

/* Untimed runs before each size's timed ones: -w rounded up to whole calls. */
static int warmup_runs(const Opts *o)
{
    return (o->warmup + call_runs(o) - 1) / call_runs(o) * call_runs(o);
}

/* -T in one process: a cell that takes longer ends cdsl-perf as nccl-tests' timeout does
 * (the per-rank engines bound each wait by -T themselves, naming the rank). */
static void timed_out(int sig)
{
    static const char msg[] = "cdsl-perf: error: a run took longer than -T seconds; stopping\n";
    (void)sig;
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0)
        _exit(EXIT_RUN);
    _exit(EXIT_RUN);
}

/* One placement at one size, every rank through the per-rank engine of this process's rank. */
static int run_cell_per_rank(Bench *B, int placement, size_t size, cdsl_dtype t, PerfCell *cell)
{
    const Opts *o = B->o;
    PerfRunPlan plan = {.warmup_runs = warmup_runs(o), .call_runs = call_runs(o), .iters = o->iters,
                        .graph = o->graph, .blocking = o->blocking, .check = o->check};
    return perf_rank_cell(B->rank, B->prog[placement], size, t, &plan, cell);
}

/* One placement at one size, every rank in this process: warm up, time, then check -c runs on
 * fresh inputs. */
static int run_cell_here(Bench *B, cdsl_program *p, size_t size, cdsl_dtype t, PerfCell *cell)
{
    const Opts *o = B->o;
    size_t chunk = 4;   /* size 0 (a barrier): chunks of 4 bytes for any scratch */
    int rc = size ? cdsl_chunk_bytes(p, size, &chunk, NULL) : CDSL_OK;
    if (!rc)
        rc = cdsl_comm_alloc(B->comm, p, chunk);
    for (int k = 0; !rc && k < warmup_runs(o); k += call_runs(o))
        rc = cdsl_run(B->comm, p, t, call_runs(o), NULL);
    if (!rc)
        rc = timed_runs(B, p, t, &cell->us);
    for (int c = 0; !rc && c < o->check; c++) {
        rc = cdsl_fill(B->comm, p, t);
        if (!rc)
            rc = cdsl_run(B->comm, p, t, 1, NULL);
        if (!rc)
            rc = cdsl_check_detail(B->comm, p, t, &cell->check);
    }
    return rc;
}

/* One placement at one size, here or through this process's rank; its bandwidth. */
static int run_cell(Bench *B, int placement, size_t size, cdsl_dtype t, PerfCell *cell)
{
    const Opts *o = B->o;
    cdsl_program *p = B->prog[placement];
    *cell = (PerfCell){.ran = true, .check = {.rank = -1}};
    if (o->timeout_s > 0 && !B->rank)
        alarm((unsigned)o->timeout_s);
    int rc = B->rank ? run_cell_per_rank(B, placement, size, t, cell) : run_cell_here(B, p, size, t, cell);
    alarm(0);
    cell->checked = o->check > 0 && collective_has_postcondition(p);
    if (!rc || rc == CDSL_ERR_VERIFY) {
        cell->algbw = cell->us > 0 ? (double)size / cell->us / 1e3 : 0;
        cell->busbw = cell->algbw * collective_busbw_factor(p);
    }
    cell->status = rc;
    return rc;
}

/* ---- nccl-tests' text --------------------------------------------------------------------------------- */

/* A figure in `width` columns: two decimals when they fit, then one, then none, then an
 * exponent (nccl-tests' rule, so that wide figures keep their columns). */
static void figure(double v, int width, char *out, size_t len)
{
    static const char *const fmts[] = {"%*.2f", "%*.1f", "%*.0f"};
    for (int i = 0; i < 3; i++)
        if (snprintf(out, len, fmts[i], width, v) <= width)
            return;
    snprintf(out, len, width >= 7 ? "%*.1e" : "%*.0e", width, v);
}

static void print_cell(const Bench *B, const PerfCell *c)
{
    char t[32] = "N/A", a[32] = "N/A", b[32] = "N/A";
    if (!c->ran) {
        printf("  %7s  %6s  %6s    N/A", t, a, b);
        return;
    }
    if (B->measured) {
        figure(c->us, 7, t, sizeof t);
        figure(c->algbw, 6, a, sizeof a);
        figure(c->busbw, 6, b, sizeof b);
    }
    if (c->checked && (c->status == CDSL_OK || c->status == CDSL_ERR_VERIFY))
        printf("  %7s  %6s  %6s  %6g", t, a, b, (double)c->check.wrong);
    else
        printf("  %7s  %6s  %6s    N/A", t, a, b);
}

static const char *redop_name(const cdsl_program *p)
{
    return collective_sums(p) ? "sum" : "none";
}

static void print_header(const Bench *B)
{
    const Opts *o = B->o;
    const cdsl_program *p = B->prog[0];
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    printf("# cdsl-perf version %s, printed as nccl-tests 2.19 prints\n", cdsl_version());
    printf("# Collective test starting: %s\n", cdsl_program_name(p));
    printf("# nThread 1 nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d agg iters: 1 "
           "validation: %d graph: %d unalign: 0\n",
           o->nranks, o->min_bytes, o->max_bytes, o->step_factor > 1 ? o->step_factor : o->step_bytes,
           o->step_factor > 1 ? "factor" : "bytes", o->warmup, o->iters, o->check, o->graph);
    if (warmup_runs(o) != o->warmup)
        printf("# cdsl: -w %d warms up with %d runs: whole calls of %d runs, as the timed ones\n", o->warmup,
               warmup_runs(o), call_runs(o));
    if (o->blocking)
        printf("# Blocking Enabled: wait after each run\n");
    printf("# cdsl: %s implements %s (%s), %d ranks on %s", cdsl_program_name(p), cdsl_program_collective(p), o->path,
           o->nranks, B->backend);
    if (B->measured)
        printf(", %d per GPU", B->ranks_per_gpu);
    if (B->rank)
        printf(", one process each (%s; rank 0 prints, times are the ranks' mean, #wrong their sum)", launch.launcher);
    printf("; nGpus counts ranks\n");
    if (!B->measured)
        printf("# sim: CPU %s; times are not measurements: time, algbw and busbw are N/A\n", B->rank ? "processes" : "threads");
    if (!B->prog[1])
        printf("# in-place: %s: %s; its columns are N/A\n", cdsl_program_name(p), B->why_not);
    printf("#\n# Using devices\n");
    for (int r = 0; r < o->nranks; r++) {
        const cdsl_device_info *d = &B->devices[r];
        int pid = (int)getpid();
        const char *on = host;
        if (B->rank)
            d = perf_rank_device(B->rank, r, &pid, &on);
        printf("#  Rank %2d Group  0 Pid %6d on %10s device %2d [%04x:%02x:%02x] %s\n", r, pid, on, d->device,
               (unsigned)d->pci_domain, (unsigned)d->pci_bus, (unsigned)d->pci_device, d->name);
    }
    printf("#\n");
    printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
           "", "", "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count", "type", "redop",
           "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)", "(elements)", "", "", "",
           "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    fflush(stdout);
}

static void print_row(const Bench *B, const PerfRow *r)
{
    printf("%12zu  %12zu  %8s  %6s  %6d", r->size, r->count, perf_type_name(r->dtype), redop_name(B->prog[0]),
           cdsl_program_root(B->prog[0]));
    for (int k = 0; k < 2; k++)
        print_cell(B, &r->cell[k]);
    printf("\n");
    fflush(stdout);
}

static void print_footer(const Bench *B, const PerfReport *rep)
{
    printf("# %-20s : %d %s\n", "Out of bounds values", rep->errors, rep->errors ? "FAILED" : "OK");
    if (!B->measured)
        printf("# %-20s : N/A (sim: not a measurement)\n", "Avg bus bandwidth");
    else
        printf("# %-20s : %g %s\n", "Avg bus bandwidth", rep->avg_busbw,
               rep->min_busbw < 0 ? "" : rep->avg_busbw < 0.9 * rep->min_busbw ? "FAILED" : "OK");
    printf("#\n# Collective test concluded: %s\n#\n\n", cdsl_program_name(B->prog[0]));
}

/* ---- the sweep --------------------------------------------------------------------------------------- */

static int exit_for(int status)
{
    switch (status) {
    case CDSL_OK: return EXIT_OK;
    case CDSL_ERR_PROGRAM: return EXIT_PROGRAM;
    case CDSL_ERR_USAGE: return EXIT_USAGE;
    case CDSL_ERR_RUNTIME: return EXIT_RUN;
    case CDSL_ERR_VERIFY: return EXIT_WRONG;
    }
    return EXIT_SYSTEM;
}

/* Every type and size, both placements, each row printed as soon as it is done. A failed run
 * (not a wrong value) ends the sweep: later ones would fail the same way. */
static void sweep(Bench *B)
{
    const Opts *o = B->o;
    for (int ti = 0; ti < o->ntypes; ti++)
        for (int si = 0; si < B->nsizes; si++) {
            PerfRow *r = &B->rows[B->nrows++];
            *r = (PerfRow){.size = B->sizes[si], .dtype = o->types[ti]};
            r->count = row_count(B->prog[0], r->size, r->dtype);
            for (int k = 0; k < 2; k++) {
                if (!B->prog[k] || (!r->size && moves_data(B->prog[0])))  /* below the smallest: N/A */
                    continue;
                int rc = run_cell(B, k, r->size, r->dtype, &r->cell[k]);
                if (rc && rc != CDSL_ERR_VERIFY) {
                    print_row(B, r);
                    fprintf(stderr, "cdsl-perf: error: the run at %zu bytes (%s, %s) failed; stopping\n", r->size,
                            perf_type_name(r->dtype), k ? "in place" : "out of place");
                    B->status = rc;
                    return;
                }
            }
            print_row(B, r);
        }
}

static void summarise(const Bench *B, PerfReport *rep)
{
    double sum = 0;
    int n = 0;
    for (int i = 0; i < B->nrows; i++)
        for (int k = 0; k < 2; k++) {
            const PerfCell *c = &B->rows[i].cell[k];
            if (!c->ran)
                continue;
            rep->errors += c->check.wrong > 0;
            if (c->status == CDSL_OK || c->status == CDSL_ERR_VERIFY) {
                sum += c->busbw;
                n++;
            }
        }
    rep->avg_busbw = n ? sum / n : 0;
    const char *min = getenv("NCCL_TESTS_MIN_BW");
    rep->min_busbw = min && *min ? atof(min) : -1;
}

static void describe(const Bench *B, PerfReport *rep, int argc, char **argv)
{
    const Opts *o = B->o;
    const cdsl_program *p = B->prog[0];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(rep->timestamp, sizeof rep->timestamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    gethostname(rep->host, sizeof rep->host - 1);
    rep->argc = argc;
    rep->argv = argv;
    rep->file = o->path;
    rep->program = cdsl_program_name(p);
    rep->collective = cdsl_program_collective(p);
    rep->backend = B->backend;
    rep->redop = redop_name(p);
    rep->nranks = o->nranks;
    rep->ranks_per_gpu = B->ranks_per_gpu;
    rep->chunks = cdsl_program_chunks(p);
    rep->root = cdsl_program_root(p);
    rep->measured = B->measured;
    rep->devices = B->devices;
    rep->in_place_unsupported = B->prog[1] ? NULL : B->why_not;
    rep->min_bytes = o->min_bytes;
    rep->max_bytes = o->max_bytes;
    rep->step_bytes = o->step_bytes;
    rep->step_factor = o->step_factor;
    rep->iters = o->iters;
    rep->warmup = o->warmup;
    rep->warmup_runs = warmup_runs(o);
    rep->check = o->check;
    rep->graph = o->graph;
    rep->blocking = o->blocking;
    rep->rows = B->rows;
    rep->nrows = B->nrows;
}

/* -r: the define root=R when the program's collective has a root (learnt from a parse alone);
 * nccl-tests ignores -r for the others, and so does this. */
static int add_root(Opts *o)
{
    if (o->root < 0)
        return 0;
    cdsl_compile_opts parse = o->copts;
    parse.stop_after = CDSL_STAGE_PARSE;
    parse.diag = fopen("/dev/null", "w");
    cdsl_program *p = NULL;
    int rc = parse.diag ? cdsl_compile(&parse, &p) : CDSL_ERR_SYSTEM;
    bool rooted = !rc && cdsl_collective_has_root(collective_of(p));
    cdsl_program_destroy(p);
    if (parse.diag)
        fclose(parse.diag);
    if (!rooted)   /* errors, if any, come from the real compile */
        return 0;
    snprintf(o->root_define, sizeof o->root_define, "root=%d", o->root);
    return add_to_list(o->defines, &o->copts.ndefines, o->root_define, "--define");
}

/* Under a launcher rank 0 speaks for every rank: the others print nothing on stdout, and
 * nothing on stderr until they join (a usage or program error is the same on every rank). */
static int quiet_err = -1;

static void quiet_other_ranks(void)
{
    if (!launch.launcher || launch.rank == 0)
        return;
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null < 0)
        return;
    fflush(stdout);
    fflush(stderr);
    dup2(null, STDOUT_FILENO);
    quiet_err = dup(STDERR_FILENO);
    dup2(null, STDERR_FILENO);
    close(null);
}

static void speak_again(void)
{
    if (quiet_err < 0)
        return;
    fflush(stderr);
    dup2(quiet_err, STDERR_FILENO);
    close(quiet_err);
    quiet_err = -1;
}

/* This process's rank joins the others; every rank's device, as they reported it. */
static int set_up_per_rank(Bench *B)
{
    Opts *o = B->o;
    speak_again();
    int rc = perf_rank_open(&B->rank, &launch, o->comm.backend, o->timeout_s, &o->comm);
    if (rc)
        return exit_for(rc);
    B->backend = perf_rank_engine(B->rank);
    B->measured = perf_rank_measured(B->rank);
    B->devices = calloc((size_t)o->nranks, sizeof *B->devices);
    B->rows = calloc((size_t)B->nsizes * (size_t)o->ntypes, sizeof *B->rows);
    if (!B->devices || !B->rows) {
        fprintf(stderr, "cdsl-perf: error: out of memory\n");
        return EXIT_SYSTEM;
    }
    int ndev = 0, pid;
    const char *host;
    for (int r = 0; r < o->nranks; r++) {
        B->devices[r] = *perf_rank_device(B->rank, r, &pid, &host);
        ndev += r == 0 || B->devices[r].device != B->devices[r - 1].device;
    }
    B->ranks_per_gpu = B->measured ? o->nranks / ndev : 0;
    return 0;
}

static int set_up(Bench *B)
{
    Opts *o = B->o;
    resolve_program(o);
    struct stat in;
    if (stat(o->path, &in) == 0 && cli_same_file(o->output_file, &in))   /* a plan is .json too */
        return usage("-F '%s' is the program file; refusing to overwrite it", o->output_file);
    o->copts.path = o->path;
    int rc = add_root(o);
    if (rc)
        return rc;
    rc = cdsl_compile(&o->copts, &B->prog[0]);
    if (rc && !o->by_name)
        cli_name_advice("cdsl-perf", o->arg);
    if (rc)
        return exit_for(rc);
    compile_in_place(B);
    if ((rc = plan_sizes(B)))
        return rc;
    if (launch.launcher)
        return set_up_per_rank(B);
    if ((rc = cdsl_comm_create(&o->comm, &B->comm)))
        return exit_for(rc);
    B->backend = cdsl_backend_name(cdsl_comm_backend(B->comm));
    B->measured = cdsl_comm_backend(B->comm) != CDSL_BACKEND_SIM;
    B->devices = calloc((size_t)o->nranks, sizeof *B->devices);
    B->rows = calloc((size_t)B->nsizes * (size_t)o->ntypes, sizeof *B->rows);
    if (!B->devices || !B->rows) {
        fprintf(stderr, "cdsl-perf: error: out of memory\n");
        return EXIT_SYSTEM;
    }
    int ndev = 0;
    for (int r = 0; r < o->nranks; r++) {
        if ((rc = cdsl_comm_device_info(B->comm, r, &B->devices[r])))
            return exit_for(rc);
        ndev += r == 0 || B->devices[r].device != B->devices[r - 1].device;  /* ranks fill GPUs in order */
    }
    B->ranks_per_gpu = B->measured ? o->nranks / ndev : 0;
    return 0;
}

int main(int argc, char **argv)
{
    static Opts o;
    static Bench B;
    char why[512];
    if (!perf_launch_detect(&launch, why, sizeof why) && why[0])
        return usage("the launcher's environment: %s", why);
    quiet_other_ranks();
    int rc = parse_args(&o, argc, argv);
    if (rc)
        return rc < 0 ? 0 : rc;
    if (o.timeout_s > 0)
        signal(SIGALRM, timed_out);
    B.o = &o;
    rc = set_up(&B);
    PerfReport rep = {.min_busbw = -1};
    if (!rc) {
        print_header(&B);
        sweep(&B);
        summarise(&B, &rep);
        print_footer(&B, &rep);
        rc = exit_for(B.status);
        if (!rc && rep.errors)
            rc = EXIT_WRONG;
        if (!rc && B.measured && rep.min_busbw >= 0 && rep.avg_busbw < 0.9 * rep.min_busbw)
            rc = EXIT_WRONG;
        rep.exit_status = rc;
        describe(&B, &rep, argc, argv);
        if (o.output_file && launch.rank == 0 && perf_write_file(&rep, o.output_file, stderr))
            rc = rc ? rc : EXIT_SYSTEM;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "cdsl-perf: error: cannot write to standard output: %s\n", strerror(errno ? errno : EIO));
        rc = rc ? rc : EXIT_SYSTEM;
    }
    cdsl_comm_destroy(B.comm);
    perf_rank_close(B.rank);
    cdsl_program_destroy(B.prog[0]);
    cdsl_program_destroy(B.prog[1]);
    free(B.devices);
    free(B.rows);
    return rc;
}
