/*
 * sim_mp.c - the sim engine of the per-rank API: one process per rank on the CPU, so that
 * the one-process-per-GPU path runs, and is tested, on machines without a GPU.
 *
 * Memory. Every rank makes its own shared memory and gives it to the others, as a GPU rank
 * exports its VMM memory: an anonymous memfd (no name anywhere, so nothing can leak), sent
 * to every rank over the control plane's socket (SCM_RIGHTS, ctl.h), mapped by each, and
 * closed right after: the mappings keep the memory alive, and it goes away with the last
 * process. Each rank has two: its words (arrival counters, the switch counter, and on rank 0
 * the run's stop flag and progress count) made at init, and its symmetric region (the
 * program's buffers, laid out at the same offsets on every rank) made and remade as it grows.
 *
 * Running. A view of the sim (sim.h) points every rank's words and buffers at those mappings
 * and runs this rank's operations alone, on the calling thread: the same code, and so the same
 * semantics, as the threaded sim, including the switch's aggregate arrival counting. A wait
 * that sleeps looks at the peers' processes (pidfds, ctl.c) and stops the run when one has
 * died; a wait that runs out of its bound sets the shared stop flag, which stops every rank.
 * The caller's input is copied into the symmetric input before the rank starts, and the
 * symmetric output into the caller's output when the rank ends, which is the moment the
 * threaded sim keeps a rank's end-state copy for. A run that failed is cdsl_rank_status's
 * answer, as on a GPU.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rank.h"
#include "sim.h"

typedef struct SimMp {
    RtCtl *ctl;
    Sim *sim;
    int n, me;
    size_t words_len;
    void **words;                   /* [n] every rank's words, mapped here */
    size_t region_len;
    char **region;                  /* [n] every rank's symmetric region, mapped here */
    int pending;                    /* the last run's failure, for cdsl_rank_status */
} SimMp;

static SimMp *smp(cdsl_rank_comm *r)
{
    return r->engine;
}

static size_t smp_page(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

static void smp_unmap(void **maps, int n, size_t len)
{
    for (int q = 0; maps && q < n; q++) {
        if (maps[q] && maps[q] != MAP_FAILED)
            munmap(maps[q], len);
        maps[q] = NULL;
    }
}

/* Every rank makes `len` bytes of zeroed shared memory and maps every rank's: maps[q]. */
static int smp_share(cdsl_rank_comm *r, const char *what, size_t len, void **maps)
{
    SimMp *s = smp(r);
    int *fds = malloc((size_t)s->n * sizeof *fds);
    int fd = memfd_create("cdsl-sim", MFD_CLOEXEC);
    if (!fds || fd < 0 || ftruncate(fd, (off_t)len) != 0) {
        rt_error(r->log, "rank %d: cannot make %zu bytes of shared memory for %s: %s", r->rank, len, what,
                 !fds ? "out of memory" : strerror(errno));
        free(fds);
        if (fd >= 0)
            close(fd);
        return CDSL_ERR_SYSTEM;
    }
    char none = 0;
    int st = rt_ctl_allgather(s->ctl, what, &none, 0, &none, fd, fds);
    fds[s->me] = fd;
    for (int q = 0; !st && q < s->n; q++) {
        maps[q] = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fds[q], 0);
        if (maps[q] == MAP_FAILED) {
            maps[q] = NULL;
            rt_error(r->log, "rank %d: cannot map rank %d's shared memory (%zu bytes): %s", r->rank, q, len,
                     strerror(errno));
            st = CDSL_ERR_SYSTEM;
        }
    }
    for (int q = 0; q < s->n; q++)     /* the mappings keep the memory; the descriptors go */
        if (fds[q] >= 0)
            close(fds[q]);
    free(fds);
    if (st)
        smp_unmap(maps, s->n, len);
    return st;
}

/* Whether rank q's exit fails the run this rank is in: q had not completed it. Both counts grow
   by one per run on every rank, so q past ours has done its part of ours; its writes came before
   its count (release), and the count before its exit, which the watch saw first. */
static bool smp_unfinished(void *ctx, int q)
{
    SimMp *s = ctx;
    return sim_view_runs_done(s->sim, q) <= sim_view_runs_done(s->sim, s->me);
}

static int smp_watch(void *ctx)
{
    return rt_ctl_dead_among(((SimMp *)ctx)->ctl, smp_unfinished, ctx);
}

static void smp_destroy(cdsl_rank_comm *r)
{
    SimMp *s = smp(r);
    if (!s)
        return;
    if (s->sim)
        rt_backend_sim.destroy(s->sim);
    smp_unmap(s->words, s->n, s->words_len);
    smp_unmap((void **)s->region, s->n, s->region_len);
    free(s->words);
    free(s->region);
    rt_ctl_close(s->ctl);
    free(s);
    r->engine = NULL;
}

/* Every rank's words, shared: the counters start at zero and only grow (abi.h's rule). */
static int smp_words(cdsl_rank_comm *r)
{
    SimMp *s = smp(r);
    size_t words = SIM_RANK_WORDS(s->n) + SIM_CONTROL_WORDS, page = smp_page();
    s->words_len = (words * sizeof(uint64_t) + page - 1) / page * page;
    int st = smp_share(r, "init: the shared counters", s->words_len, s->words);
    if (st)
        return st;
    for (int q = 0; q < s->n; q++)
        sim_view_words(s->sim, q, (_Atomic uint64_t *)s->words[q]);
    sim_view_control(s->sim, (_Atomic uint64_t *)s->words[0] + SIM_RANK_WORDS(s->n));
    return CDSL_OK;
}

static int smp_init(cdsl_rank_comm *r, const RtId *id)
{
    SimMp *s = rt_engine_new(r, sizeof *s);
    if (!s)
        return CDSL_ERR_SYSTEM;
    s->n = r->nranks;
    s->me = r->rank;
    s->words = calloc((size_t)s->n, sizeof *s->words);
    s->region = calloc((size_t)s->n, sizeof *s->region);
    if (!s->words || !s->region) {
        rt_error(r->log, "out of memory");
        return CDSL_ERR_SYSTEM;
    }
    RtConfig cfg = {.nranks = s->n, .seed = r->cfg.seed, .jitter_us = r->cfg.jitter_us,
                    .spin_limit = r->cfg.spin_limit, .log = r->log};
    int st = rt_ctl_open(&s->ctl, &id->ctl, r->rank, r->nranks, r->cfg.timeout_s, r->log);
    if (!st)
        st = sim_view_create(&cfg, &s->sim);
    if (st)
        return st;
    sim_view_watch(s->sim, smp_watch, s);
    return smp_words(r);
}

static int smp_exchange(cdsl_rank_comm *r, const char *what, const void *mine, size_t len, void *all)
{
    return rt_ctl_allgather(smp(r)->ctl, what, mine, len, all, -1, NULL);
}

static int smp_reserve(cdsl_rank_comm *r, size_t bytes)
{
    SimMp *s = smp(r);
    char **fresh = calloc((size_t)s->n, sizeof *fresh);
    size_t page = smp_page(), len = (bytes + page - 1) / page * page;
    if (!fresh) {
        rt_error(r->log, "out of memory");
        return CDSL_ERR_SYSTEM;
    }
    int st = smp_share(r, "cdsl_rank_alloc: the symmetric buffers", len, (void **)fresh);
    if (st) {
        free(fresh);
        return st;
    }
    size_t zero[IR_MAX_BUFS] = {0};
    char *none[IR_MAX_BUFS] = {0};
    for (int q = 0; q < s->n; q++)
        sim_view_buffers(s->sim, q, none, zero, 0);
    smp_unmap((void **)s->region, s->n, s->region_len);
    free(s->region);
    s->region = fresh;
    s->region_len = len;
    return CDSL_OK;
}

static int smp_layout(cdsl_rank_comm *r, const size_t *off, const size_t *bytes, int nbufs)
{
    SimMp *s = smp(r);
    for (int q = 0; q < s->n; q++) {
        char *bufs[IR_MAX_BUFS] = {0};
        for (int b = 0; b < nbufs; b++)
            bufs[b] = s->region[q] + off[b];
        sim_view_buffers(s->sim, q, bufs, bytes, nbufs);
    }
    return CDSL_OK;
}

static void *smp_address(cdsl_rank_comm *r, int b)
{
    SimMp *s = smp(r);
    return s->region[s->me] + (b < 0 ? 0 : r->off[b]);
}

static int smp_load(cdsl_rank_comm *r, cdsl_program *p, cdsl_dtype dtype)
{
    return rt_backend_sim.load(smp(r)->sim, p, dtype);
}

static int smp_run(cdsl_rank_comm *r, size_t chunk, const void *in, size_t in_bytes, void *out, size_t out_bytes,
                   void *stream)
{
    SimMp *s = smp(r);
    (void)stream;
    char *sym_in = in_bytes ? smp_address(r, IR_INPUT) : NULL, *sym_out = out_bytes ? smp_address(r, IR_OUTPUT) : NULL;
    if (in && sym_in && in != sym_in)
        memmove(sym_in, in, in_bytes);
    int st = sim_run_rank(s->sim, s->me, chunk, NULL);
    if (st == CDSL_ERR_RUNTIME) {
        s->pending = st;     /* as on a GPU: the run was started; its failure is the status */
        return CDSL_OK;
    }
    if (!st && out && sym_out && out != sym_out)
        memmove(out, sym_out, out_bytes);
    return st;
}

static int smp_status(cdsl_rank_comm *r)
{
    SimMp *s = smp(r);
    int st = s->pending;
    s->pending = CDSL_OK;
    return st;
}

static int smp_zero(cdsl_rank_comm *r, void *at, size_t bytes)
{
    (void)r;
    memset(at, 0, bytes); /* the run is over when sim_run_rank returns */
    return CDSL_OK;
}

const RtRankOps rt_engine_sim = {
    .init = smp_init,
    .destroy = smp_destroy,
    .exchange = smp_exchange,
    .reserve = smp_reserve,
    .layout = smp_layout,
    .address = smp_address,
    .load = smp_load,
    .run = smp_run,
    .status = smp_status,
    .zero = smp_zero,
};
