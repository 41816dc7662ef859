/*
 * mp_probe.c - the per-rank API (cdsl.h, "One process per rank") in real processes, for
 * tests/mp/mp.sh: the parent makes a unique id and forks one process per rank; every child
 * uses nothing but cdsl.h, as a user's program would, and writes its messages to a file of
 * its own, which the parent prints in rank order ("[rank 1] cdsl: error: ...") after every
 * child has ended, with each child's exit status ("rank 1: exit 4", "rank 1: killed by
 * signal 9"). The parent gives the children a hard deadline and kills them past it (then
 * prints "HANG" and exits 99), so a hang is a failure with a name, never a stuck test.
 *
 *     mp_probe CASE NRANKS FILE.cdsl [FILE2.cdsl]
 *
 * PROBE_ENGINE=ipc|nccl makes the id for another engine (default sim); PROBE_FLAVOUR=nvls asks
 * for the nvls flavour.
 *
 * CASE is what the children do (the ones not named do the normal thing, "ok"):
 *   ok        every dtype that suits the collective, three sizes, the caller's buffers
 *             (staged) and the symmetric ones (in place), every output checked
 *   nranks    rank 1 says nranks + 1            absent    the last rank never calls init
 *   absent0   rank 0 never calls init           dup       the last rank says it is rank 1
 *   program   rank 1 runs FILE2                 dtype     rank 1 runs another element type
 *   die       rank 1 dies (SIGKILL) before its second run, after the first one
 *   small     rank 1's output buffer is one chunk too small
 *   order     rank 1 calls cdsl_rank_alloc where the others run
 *   badid     rank 1's id is damaged            corrupt   rank 1 flips a bit of its result
 *   inplace   as ok, with the program compiled in place: the caller's input is its part of the
 *             caller's output (reducescatter: the output its part of the input), as NCCL's
 *             in-place calls pass them, and the symmetric input is the symmetric output's part
 *   alias     every rank gives an out-of-place program an input that shares the output's memory
 *   leave     a last run repeats the one before (so no collective comes before it), and rank
 *             1 starts it 1 s late: a rank whose part needs nothing from rank 1 (a reduce's last
 *             rank) ends its part and exits first, and the others must still verify (a peer
 *             that exited after its part of the run is no failure)
 * Every child also checks that destroying the communicator leaves it with the descriptors it
 * had before init ("rank 1: descriptors leaked").
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cdsl.h"

enum { MAX_RANKS = 64 };

typedef struct Probe {
    const char *what, *file, *file2;
    int nranks, rank;
    cdsl_unique_id id;
} Probe;

static int late_run;     /* "leave": this rank starts the run it is about to make late */

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static cdsl_program *compile(const char *file, int nranks, int in_place)
{
    cdsl_compile_opts o = {.path = file, .nranks = nranks, .stop_after = CDSL_STAGE_CHECK, .color = 0,
                           .in_place = in_place};
    cdsl_program *p = NULL;
    if (cdsl_compile(&o, &p) != CDSL_OK) {
        cdsl_program_destroy(p);
        return NULL;
    }
    return p;
}

/* The types a collective can be checked on: sums need exact small integers in every type.
 * On another engine than sim (the stand-in driver of tests/mp/ipc.sh), f32 alone. */
static int dtypes_for(const cdsl_program *p, cdsl_dtype *out)
{
    int n = 0;
    out[n++] = CDSL_F32;
    if (getenv("PROBE_ENGINE") && strcmp(getenv("PROBE_ENGINE"), "sim"))
        return n;
    out[n++] = CDSL_U32;
    if (strcmp(cdsl_program_collective(p), "barrier")) {
        out[n++] = CDSL_F16;
        out[n++] = CDSL_BF16;
    }
    return n;
}

/* Where the caller's buffers of an in-place run are: one block, the input inside the output
 * at this rank's part (reducescatter: the output inside the input), as NCCL's in-place calls
 * take them; where input and output are one size (allreduce, alltoall), the input is the
 * output. */
static void in_place_buffers(const Probe *pr, const cdsl_program *p, size_t chunk, char *block, char **in, char **out)
{
    const char *coll = cdsl_program_collective(p);
    bool whole = cdsl_program_buf_chunks(p, CDSL_BUF_INPUT) == cdsl_program_buf_chunks(p, CDSL_BUF_OUTPUT);
    size_t at = whole ? 0 : (size_t)pr->rank * (size_t)cdsl_program_chunks(p) * chunk;
    bool rs = !strcmp(coll, "reducescatter");
    *in = rs ? block : block + at;
    *out = rs ? block + at : block;
}

/* One run on the caller's (staged) or the symmetric buffers (no copies), checked. */
static int run_checked(const Probe *pr, cdsl_rank_comm *c, cdsl_program *p, cdsl_dtype t, size_t chunk, int staged,
                       size_t out_short)
{
    int in_chunks = cdsl_program_buf_chunks(p, CDSL_BUF_INPUT), out_chunks = cdsl_program_buf_chunks(p, CDSL_BUF_OUTPUT);
    size_t in_bytes = in_chunks > 0 ? (size_t)in_chunks * chunk : 0;
    size_t out_bytes = out_chunks > 0 ? (size_t)out_chunks * chunk : 0;
    bool aliased = !strcmp(pr->what, "inplace") || !strcmp(pr->what, "alias");
    char *block = aliased ? malloc((in_bytes > out_bytes ? in_bytes : out_bytes) + 1) : NULL;
    char *in = aliased ? NULL : malloc(in_bytes + 1), *out = aliased ? NULL : malloc(out_bytes + 1);
    if (block)
        in_place_buffers(pr, p, chunk, block, &in, &out);
    cdsl_rank_io io = {in, in_bytes, out, out_bytes - out_short};
    int st = in && out ? CDSL_OK : CDSL_ERR_SYSTEM;
    if (!st && !staged) {      /* the symmetric buffers: fill the input, read the output */
        void *sym_in = NULL;
        st = cdsl_rank_alloc(c, p, chunk);
        if (!st && in_bytes)
            st = cdsl_rank_buffer(c, CDSL_BUF_INPUT, &sym_in);
        if (!st && in_bytes)
            st = cdsl_pattern_fill(p, t, pr->rank, chunk, sym_in, in_bytes);
    } else if (!st) {
        if (!aliased || in != block)    /* the output first: in place, the input is part of it */
            memset(out, 0xAB, out_bytes);
        st = cdsl_pattern_fill(p, t, pr->rank, chunk, in, in_bytes);
    }
    if (!st && late_run)    /* a repeated run has no handshake: the others are in the run already */
        nanosleep(&(struct timespec){1, 0}, NULL);
    if (!st)
        st = cdsl_rank_run(c, p, t, chunk, staged ? &io : NULL, NULL);
    if (!st)
        st = cdsl_rank_status(c);
    if (!st && !staged && out_bytes) {
        void *sym_out = NULL;
        st = cdsl_rank_buffer(c, CDSL_BUF_OUTPUT, &sym_out);
        if (!st)
            memcpy(out, sym_out, out_bytes);
    }
    if (!st && !strcmp(pr->what, "corrupt") && pr->rank == 1 && out_bytes)
        out[out_bytes / 2] ^= 1;    /* a wrong result must be seen */
    if (!st)
        st = cdsl_pattern_check(p, t, pr->rank, chunk, out, out_bytes, NULL, stderr);
    if (block) {
        free(block);
    } else {
        free(in);
        free(out);
    }
    return st;
}

static int run_all(const Probe *pr, cdsl_rank_comm *c, cdsl_program *p, cdsl_program *other)
{
    static const size_t chunks[] = {64, 4096, 1 << 20};
    cdsl_dtype ts[4];
    int nt = dtypes_for(p, ts), runs = 0, st = CDSL_OK;
    for (int k = 0; !st && k < 3; k++)
        for (int i = 0; !st && i < nt; i++)
            for (int staged = 1; !st && staged >= 0; staged--) {
                cdsl_dtype t = ts[i];
                if (!strcmp(pr->what, "dtype") && pr->rank == 1)
                    t = t == CDSL_F32 ? CDSL_U32 : CDSL_F32;
                if (!strcmp(pr->what, "die") && runs == 1) {
                    if (pr->rank == 1)      /* the others are in the run, past its handshake */
                        raise(SIGKILL);
                    staged = 1;             /* the same run again: no collective before it */
                }
                if (!strcmp(pr->what, "order") && pr->rank == 1)
                    return cdsl_rank_alloc(c, p, chunks[k]);
                size_t out_short = !strcmp(pr->what, "small") && pr->rank == 1 ? chunks[k] : 0;
                st = run_checked(pr, c, other ? other : p, t, chunks[k], staged, out_short);
                runs++;
            }
    if (!st && !strcmp(pr->what, "leave")) {  /* the last run once more: no collective before it */
        late_run = pr->rank == 1;
        st = run_checked(pr, c, p, ts[nt - 1], chunks[2], 1, 0);
        runs++;
    }
    if (!st)
        fprintf(stderr, "rank %d: verified %d runs\n", pr->rank, runs);
    return st;
}

static int child(Probe *pr)
{
    int fds = count_fds();
    const char *w = pr->what;
    int last = pr->nranks - 1;
    if ((!strcmp(w, "absent") && pr->rank == last) || (!strcmp(w, "absent0") && pr->rank == 0))
        return 0;
    cdsl_program *p = compile(pr->file, pr->nranks, !strcmp(w, "inplace")), *other = NULL;
    if (!p)
        return 1;
    if (!strcmp(w, "program") && pr->rank == 1 && !(other = compile(pr->file2, pr->nranks, 0)))
        return 1;
    int nranks = !strcmp(w, "nranks") && pr->rank == 1 ? pr->nranks + 1 : pr->nranks;
    int rank = !strcmp(w, "dup") && pr->rank == last ? 1 : pr->rank;
    if (!strcmp(w, "badid") && pr->rank == 1)
        pr->id.internal[3] ^= 0x55;
    cdsl_rank_comm *c = NULL;
    cdsl_rank_config cfg;
    cdsl_rank_config_init(&cfg);
    if (getenv("PROBE_FLAVOUR") && !strcmp(getenv("PROBE_FLAVOUR"), "nvls"))
        cfg.flavour = CDSL_BACKEND_NVLS;
    int st = cdsl_comm_init_rank(&c, nranks, &pr->id, rank, &cfg);
    if (!st)
        st = run_all(pr, c, p, other);
    cdsl_rank_comm_destroy(c);
    cdsl_program_destroy(p);
    cdsl_program_destroy(other);
    if (count_fds() != fds)
        fprintf(stderr, "rank %d: descriptors leaked: %d before init, %d after destroy\n", pr->rank, fds,
                count_fds());
    return st;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wait for every child until the deadline; kill the rest after it. */
static int reap(pid_t *pids, int *status, int n, double deadline)
{
    int left = n, hang = 0;
    while (left > 0) {
        for (int r = 0; r < n; r++) {
            if (pids[r] <= 0)
                continue;
            pid_t w = waitpid(pids[r], &status[r], WNOHANG);
            if (w == pids[r]) {
                pids[r] = 0;
                left--;
            }
        }
        if (left && now_s() > deadline) {
            hang = 1;
            for (int r = 0; r < n; r++)
                if (pids[r] > 0)
                    kill(pids[r], SIGKILL);
            deadline = now_s() + 1e9;
        }
        if (left) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    return hang;
}

static void report(const char *dir, const int *status, int n)
{
    for (int r = 0; r < n; r++) {
        if (WIFEXITED(status[r]))
            printf("rank %d: exit %d\n", r, WEXITSTATUS(status[r]));
        else if (WIFSIGNALED(status[r]))
            printf("rank %d: killed by signal %d\n", r, WTERMSIG(status[r]));
        char path[4200], line[4096];
        snprintf(path, sizeof path, "%s/rank%d.log", dir, r);
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f))
            printf("[rank %d] %s", r, line);
        if (f)
            fclose(f);
    }
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: mp_probe CASE NRANKS FILE.cdsl [FILE2.cdsl]\n");
        return 2;
    }
    Probe pr = {.what = argv[1], .nranks = atoi(argv[2]), .file = argv[3], .file2 = argc > 4 ? argv[4] : argv[3]};
    if (pr.nranks < 2 || pr.nranks > MAX_RANKS)
        return 2;
    const char *dir = getenv("PROBE_DIR") ? getenv("PROBE_DIR") : ".";
    cdsl_engine engine = CDSL_ENGINE_SIM;
    if (getenv("PROBE_ENGINE") && cdsl_engine_parse(getenv("PROBE_ENGINE"), &engine))
        return 2;
    if (cdsl_get_unique_id_engine(engine, &pr.id))
        return 3;
    const char *t = getenv("CDSL_TIMEOUT");
    double bound = 3 * (t ? atof(t) : 60) + 20;
    pid_t pids[MAX_RANKS];
    int status[MAX_RANKS] = {0};
    fflush(NULL);
    for (int r = 0; r < pr.nranks; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            char path[4200];
            snprintf(path, sizeof path, "%s/rank%d.log", dir, r);
            if (!freopen(path, "w", stderr))
                _exit(98);
            setvbuf(stderr, NULL, _IOLBF, 0);
            pr.rank = r;
            char rank_text[16];
            snprintf(rank_text, sizeof rank_text, "%d", r);
            setenv("PROBE_RANK", rank_text, 1);  /* for a stand-in driver that treats ranks unlike */
            int st = child(&pr);
            exit(st);       /* not _exit: a stand-in driver reports what is left at exit */
        }
    }
    int hang = reap(pids, status, pr.nranks, now_s() + bound);
    report(dir, status, pr.nranks);
    if (hang) {
        printf("HANG: killed after %.0f s\n", bound);
        return 99;
    }
    return 0;
}
