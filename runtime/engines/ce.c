/*
 * ce.c - running a program's copy-engine plan (compiler/lower/ce_plan.h, made through program.h's
 * code generator) on the p2p backend (see ce.h).
 *
 * What a run enqueues, rank by rank in the plan's order (a wait is enqueued only after the
 * write it waits for, so no stream's wait can sit in a hardware queue ahead of the write that
 * would release it):
 *   memops (the default)  each rank's words zeroed on its stream (cuMemsetD8Async) and an
 *                         event recorded; every rank's stream waits for every other rank's
 *                         event, so no write of this chain can land before a word is zeroed;
 *                         then the steps of every run of the chain (copies: cuMemcpyAsync,
 *                         writes: cuStreamWriteValue64 with its memory barrier, waits:
 *                         cuStreamWaitValue64 GEQ, with FLUSH for an acquire where the device
 *                         has it); last each rank sets its DONE word.
 *   events                the same copies; a signal records its event on the rank's stream,
 *                         and a wait is cuStreamWaitEvent on the events of the signals it
 *                         matches (no words, no reset, nothing that can hang).
 * Captured into a graph, the memops chain replays from zeroed words every time (the reset is
 * part of the graph), which is why the values can be immediates.
 *
 * The watchdog. A kernel's wait counts its polls and gives up; a stream's wait-value cannot.
 * So the host waits for the run with cuEventQuery, reading every rank's words (on a stream of
 * its own per device) whenever nothing has finished for the bound (spin_limit, taken as
 * microseconds: 2^22 is about 4 s). Words that did not change for a whole bound mean a stuck
 * wait: each rank that is not DONE is stuck at its first wait, across the chain, whose word
 * is below what it waits for, which names the .cdsl line. The watchdog then releases every
 * wait (every rank's words set to 0x7f7f..., above any awaited value) so that the streams
 * drain, and the run reports CDSL_ERR_RUNTIME; the next run zeroes the words anyway. For
 * cdsl_run_async the same watch runs on a thread, joined by ce_status.
 */
#include "ce.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "program.h"

#define CE_MIN_BYTES_DEFAULT (8L << 20)
#define CE_RESCUES 256              /* releases before the watchdog gives up on a run */
#define CE_RESCUE_WINDOW_S 0.05     /* no progress for this long after a release: release again */
#define CE_TIMEOUT_MIN_S 0.02

typedef struct CeRank {
    CUstream lane[CE_MAX_LANES];    /* lane[0] stays NULL: lane 0 is the run's own stream */
    CUevent join[CE_MAX_LANES];
    CUevent fork, reset, done;
    CUevent *sig;                   /* events mode: one per signal of the plan */
    int nsig;
    CUdeviceptr words;              /* CE_WORDS(n) u64 */
} CeRank;

typedef struct CeStuck {
    int rank, step, run;
} CeStuck;

/* What a watch found; printed by the thread that asked (ce_wait, ce_status). */
typedef struct CeVerdict {
    int status;
    CeStuck *stuck;                 /* [nranks] */
    int nstuck;
    double bound_s;
    CUresult error;                 /* a driver call that failed, and which */
    char what[96];
    bool undrained;                 /* the streams did not finish even after the releases */
} CeVerdict;

struct CeState {
    const IrProgram *ir;
    const ProgramCodegen *code;     /* what made the plan, and frees it */
    CePlan *plan;                   /* NULL: the program has none (why says why) */
    char why[512];
    bool said_why;
    bool events;                    /* CDSL_CE_SYNC=events, or memops_refused */
    bool memops_refused;            /* a write-value into another GPU's memory was refused */
    int lanes;                      /* CDSL_CE_LANES */
    bool tried, ready;              /* the resources below were made (or could not be) */
    CeRank *ranks;
    CUstream *rescue;               /* [ndev]: the watchdog's reads and releases */
    int *flush;                     /* [ndev]: CU_STREAM_WAIT_VALUE_FLUSH is supported */
    pthread_t thread;
    bool watching;
    CeVerdict verdict;
};

/* ---- Choosing --------------------------------------------------------------------------------- */

/* CDSL_CE: -1 auto, 0 off, 1 on. */
static int ce_mode(void)
{
    const char *v = getenv("CDSL_CE");
    if (!v || !*v)
        return -1;
    if (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "no"))
        return 0;
    if (!strcmp(v, "1") || !strcmp(v, "on") || !strcmp(v, "yes"))
        return 1;
    return -1;
}

static void ce_join_watch(CeState *ce)
{
    if (ce && ce->watching) {
        pthread_join(ce->thread, NULL);
        ce->watching = false;
    }
}

int ce_load(GpuComm *g, const cdsl_program *p)
{
    if (g->flavour != CDSL_BACKEND_P2P)
        return CDSL_OK;
    if (!g->ce && !(g->ce = calloc(1, sizeof *g->ce))) {
        rt_error(g->cfg.log, "out of memory");
        return CDSL_ERR_SYSTEM;
    }
    CeState *ce = g->ce;
    ce_join_watch(ce);          /* it reads the plan */
    const char *sync = getenv("CDSL_CE_SYNC");
    bool events = (sync && !strcmp(sync, "events")) || ce->memops_refused;
    int lanes = (int)gpu_env_long("CDSL_CE_LANES", CE_MAX_LANES);
    if (events != ce->events || lanes != ce->lanes)
        g->generation++;        /* a graph captured with the other choice is stale */
    const IrProgram *ir = program_ir(p);
    ce->said_why = ce->said_why && ce->ir == ir;
    if (ce->code)
        ce->code->ce_plan_free(ce->plan);
    ce->plan = NULL;
    ce->ir = ir;
    ce->code = program_codegen(p);
    ce->events = events;
    ce->lanes = lanes;
    int st = ce->code->ce_plan(ir, lanes, &ce->plan, ce->why, sizeof ce->why);
    if (st == CDSL_ERR_SYSTEM) {
        rt_error(g->cfg.log, "out of memory planning the copy-engine path");
        return st;
    }
    return CDSL_OK;
}

static void ce_warn(GpuComm *g, const char *fmt, const char *a, const char *b)
{
    fprintf(g->cfg.log, "cdsl: warning: ");
    fprintf(g->cfg.log, fmt, a, b);
    fprintf(g->cfg.log, "\n");
}

/* Every device can do 64-bit stream memory operations (memops); the flush flag where it can. */
static CUdeviceptr ce_word(const GpuComm *g, int rank, int word);

static int ce_check_devices(GpuComm *g)
{
    CeState *ce = g->ce;
    for (int d = 0; d < g->ndev; d++) {
        int ops = 0;
        GPU_TRY(g, d, g->cu->DeviceGetAttribute(&ops, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS,
                                                g->devs[d].dev), "asking for stream memory operations");
        if (g->cu->DeviceGetAttribute(&ce->flush[d], CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES,
                                      g->devs[d].dev) != CUDA_SUCCESS)
            ce->flush[d] = 0;
        if (!ops && !ce->events) {
            char name[160];
            snprintf(name, sizeof name, "GPU %d (%s)", g->devs[d].ordinal, g->devs[d].name);
            ce_warn(g, "%s has no 64-bit stream memory operations: the copy-engine path is off%s", name, "");
            return CDSL_ERR_SYSTEM;
        }
    }
    return CDSL_OK;
}

static int ce_make_rank(GpuComm *g, int q)
{
    CeRank *cr = &g->ce->ranks[q];
    int d = g->ranks[q].device, st = gpu_use(g, d);
    if (st)
        return st;
    size_t bytes = (size_t)CE_WORDS(g->nranks) * 8;
    GPU_TRY(g, d, g->cu->MemAlloc(&cr->words, bytes), "allocating rank %d's copy-engine words", q);
    GPU_TRY(g, d, g->cu->MemsetD8(cr->words, 0, bytes), "zeroing rank %d's copy-engine words", q);
    GPU_TRY(g, d, g->cu->EventCreate(&cr->fork, CU_EVENT_DISABLE_TIMING), "creating an event");
    GPU_TRY(g, d, g->cu->EventCreate(&cr->reset, CU_EVENT_DISABLE_TIMING), "creating an event");
    GPU_TRY(g, d, g->cu->EventCreate(&cr->done, CU_EVENT_DISABLE_TIMING), "creating an event");
    return CDSL_OK;
}

/* A write-value from each GPU into another GPU's words, on the watchdog's streams: a driver that
 * refuses stream memory operations on peer memory leaves the copy engine to events. */
static void ce_probe_peers(GpuComm *g)
{
    CeState *ce = g->ce;
    for (int d = 0; d < g->ndev && !ce->events; d++)
        for (int q = 0; q < g->nranks && !ce->events; q++) {
            int e = g->ranks[q].device;
            if (e == d || g->cu->CtxSetCurrent(g->devs[d].ctx) != CUDA_SUCCESS)
                continue;
            CUresult r = g->cu->StreamWriteValue64(ce->rescue[d], ce_word(g, q, CE_WORD_DONE(g->nranks)), 0,
                                                   CU_STREAM_WRITE_VALUE_DEFAULT);
            if (r == CUDA_SUCCESS)
                r = g->cu->StreamSynchronize(ce->rescue[d]);
            if (r == CUDA_SUCCESS)
                continue;
            char what[160];
            snprintf(what, sizeof what, "GPU %d's stream write-value into GPU %d's memory failed (%s)",
                     g->devs[d].ordinal, g->devs[e].ordinal, cu_error_string(g->cu, r));
            ce_warn(g, "%s: the copy engine's signals and waits use events%s", what, "");
            ce->memops_refused = ce->events = true;
            g->generation++;
        }
}

/* The words, events and watchdog streams of every rank and device: once per communicator. */
static int ce_make(GpuComm *g)
{
    CeState *ce = g->ce;
    if (!cu_has_ce(g->cu)) {
        ce_warn(g, "the CUDA driver here lacks cuMemcpyAsync or the stream memory operations: the "
                   "copy-engine path is off%s%s", "", "");
        return CDSL_ERR_SYSTEM;
    }
    ce->ranks = calloc((size_t)g->nranks, sizeof *ce->ranks);
    ce->rescue = calloc((size_t)g->ndev, sizeof *ce->rescue);
    ce->flush = calloc((size_t)g->ndev, sizeof *ce->flush);
    if (!ce->ranks || !ce->rescue || !ce->flush) {
        rt_error(g->cfg.log, "out of memory");
        return CDSL_ERR_SYSTEM;
    }
    int st = ce_check_devices(g);
    for (int d = 0; !st && d < g->ndev; d++) {
        if ((st = gpu_use(g, d)))
            break;
        GPU_TRY(g, d, g->cu->StreamCreate(&ce->rescue[d], CU_STREAM_NON_BLOCKING), "creating a stream");
    }
    for (int q = 0; !st && q < g->nranks; q++)
        st = ce_make_rank(g, q);
    if (!st)
        ce_probe_peers(g);
    return st;
}

bool ce_chosen(GpuComm *g, size_t chunk_bytes)
{
    CeState *ce = g->ce;
    int mode = ce_mode();
    if (!ce || mode == 0 || g->flavour != CDSL_BACKEND_P2P)
        return false;
    if (!ce->plan) {
        if (mode == 1 && !ce->said_why)
            ce_warn(g, "CDSL_CE=on, but %s runs on the SMs: %s", ce->ir->name, ce->why);
        ce->said_why = true;
        return false;
    }
    if (mode < 0 && (long long)chunk_bytes < (long long)gpu_env_long("CDSL_CE_MIN_BYTES", CE_MIN_BYTES_DEFAULT))
        return false;
    if (!ce->tried) {
        ce->tried = true;
        ce->ready = ce_make(g) == CDSL_OK;
    }
    return ce->ready;
}

/* ---- Enqueueing ------------------------------------------------------------------------------- */

/* Lanes and signal events for the loaded plan (made once, kept for later plans). */
static int ce_fit(GpuComm *g)
{
    CeState *ce = g->ce;
    for (int q = 0; q < g->nranks; q++) {
        CeRank *cr = &ce->ranks[q];
        const CeRankPlan *rp = &ce->plan->ranks[q];
        int d = g->ranks[q].device, st = gpu_use(g, d);
        if (st)
            return st;
        for (int l = 1; l < rp->nlanes; l++) {
            if (cr->lane[l])
                continue;
            GPU_TRY(g, d, g->cu->StreamCreate(&cr->lane[l], CU_STREAM_NON_BLOCKING), "creating a stream");
            GPU_TRY(g, d, g->cu->EventCreate(&cr->join[l], CU_EVENT_DISABLE_TIMING), "creating an event");
        }
        if (!ce->events || cr->nsig >= rp->nsigs)
            continue;
        CUevent *sig = realloc(cr->sig, (size_t)rp->nsigs * sizeof *sig);
        if (!sig) {
            rt_error(g->cfg.log, "out of memory");
            return CDSL_ERR_SYSTEM;
        }
        cr->sig = sig;
        for (; cr->nsig < rp->nsigs; cr->nsig++)
            GPU_TRY(g, d, g->cu->EventCreate(&cr->sig[cr->nsig], CU_EVENT_DISABLE_TIMING), "creating an event");
    }
    return CDSL_OK;
}

static CUstream ce_lane0(const GpuComm *g, const CUstream *streams, int q)
{
    return streams && streams[q] ? streams[q] : g->ranks[q].stream;
}

/* Every rank's words zeroed, and every rank's stream after every zeroing. */
static int ce_reset(GpuComm *g, const CUstream *streams)
{
    CeState *ce = g->ce;
    size_t bytes = (size_t)CE_WORDS(g->nranks) * 8;
    for (int q = 0; q < g->nranks; q++) {
        int d = g->ranks[q].device, st = gpu_use(g, d);
        if (st)
            return st;
        GPU_TRY(g, d, g->cu->MemsetD8Async(ce->ranks[q].words, 0, bytes, ce_lane0(g, streams, q)),
                "zeroing rank %d's copy-engine words", q);
        GPU_TRY(g, d, g->cu->EventRecord(ce->ranks[q].reset, ce_lane0(g, streams, q)), "recording an event");
    }
    for (int q = 0; q < g->nranks; q++) {
        int d = g->ranks[q].device, st = gpu_use(g, d);
        if (st)
            return st;
        for (int p = 0; p < g->nranks; p++)
            if (p != q)
                GPU_TRY(g, d, g->cu->StreamWaitEvent(ce_lane0(g, streams, q), ce->ranks[p].reset, 0),
                        "ordering rank %d after rank %d's zeroed words", q, p);
    }
    return CDSL_OK;
}

static CUdeviceptr ce_addr(const GpuComm *g, CePlace at, size_t chunk_bytes)
{
    return g->ranks[at.rank].buf[at.buf] + (CUdeviceptr)at.first * chunk_bytes;
}

static CUdeviceptr ce_word(const GpuComm *g, int rank, int word)
{
    return g->ce->ranks[rank].words + (CUdeviceptr)word * 8;
}

static int ce_fork_join(GpuComm *g, int q, const CeStep *s, CUstream lane0)
{
    CeRank *cr = &g->ce->ranks[q];
    int d = g->ranks[q].device;
    if (s->kind == CE_FORK)
        GPU_TRY(g, d, g->cu->EventRecord(cr->fork, lane0), "recording rank %d's fork", q);
    for (int l = 1; l <= s->lane; l++) {
        if (s->kind == CE_FORK) {
            GPU_TRY(g, d, g->cu->StreamWaitEvent(cr->lane[l], cr->fork, 0), "forking rank %d's lane %d", q, l);
        } else {
            GPU_TRY(g, d, g->cu->EventRecord(cr->join[l], cr->lane[l]), "recording rank %d's lane %d", q, l);
            GPU_TRY(g, d, g->cu->StreamWaitEvent(lane0, cr->join[l], 0), "joining rank %d's lane %d", q, l);
        }
    }
    return CDSL_OK;
}

static int ce_signal(GpuComm *g, int q, const CeStep *s, unsigned long long value, CUstream lane0)
{
    CeState *ce = g->ce;
    int d = g->ranks[q].device;
    if (ce->events) {
        if (s->sig >= 0)
            GPU_TRY(g, d, g->cu->EventRecord(ce->ranks[q].sig[s->sig], lane0), "recording rank %d's signal", q);
        return CDSL_OK;
    }
    GPU_TRY(g, d, g->cu->StreamWriteValue64(lane0, ce_word(g, s->word_rank, s->word), value,
                                            CU_STREAM_WRITE_VALUE_DEFAULT),
            "writing rank %d's signal to rank %d", q, s->word_rank);
    return CDSL_OK;
}

static int ce_await(GpuComm *g, int q, const CeStep *s, unsigned long long value, CUstream lane0)
{
    CeState *ce = g->ce;
    int d = g->ranks[q].device;
    if (ce->events) {
        GPU_TRY(g, d, g->cu->StreamWaitEvent(lane0, ce->ranks[s->from_rank].sig[s->from_sig], 0),
                "ordering rank %d after rank %d's signal", q, s->from_rank);
        return CDSL_OK;
    }
    unsigned flags = CU_STREAM_WAIT_VALUE_GEQ | (s->ordered && ce->flush[d] ? CU_STREAM_WAIT_VALUE_FLUSH : 0);
    GPU_TRY(g, d, g->cu->StreamWaitValue64(lane0, ce_word(g, q, s->word), value, flags),
            "enqueueing rank %d's wait", q);
    return CDSL_OK;
}

/* One step of rank q in run `run` of the chain. */
static int ce_step(GpuComm *g, int q, const CeStep *s, int run, size_t chunk_bytes, CUstream lane0)
{
    unsigned long long value = s->value + (unsigned long long)run * s->per_run;
    int d = g->ranks[q].device;
    switch (s->kind) {
    case CE_COPY: {
        CUstream st = s->lane ? g->ce->ranks[q].lane[s->lane] : lane0;
        size_t bytes = (size_t)s->count * chunk_bytes;
        GPU_TRY(g, d, g->cu->MemcpyAsync(ce_addr(g, s->dst, chunk_bytes), ce_addr(g, s->src, chunk_bytes), bytes, st),
                "enqueueing rank %d's copy of %zu bytes", q, bytes);
        return CDSL_OK;
    }
    case CE_WRITE:
        return ce_signal(g, q, s, value, lane0);
    case CE_WAIT:
        return ce_await(g, q, s, value, lane0);
    case CE_FORK:
    case CE_JOIN:
        return ce_fork_join(g, q, s, lane0);
    }
    return CDSL_OK;
}

static int ce_runs(GpuComm *g, size_t chunk_bytes, int iters, const CUstream *streams)
{
    const CePlan *plan = g->ce->plan;
    for (int run = 0; run < iters; run++)
        for (int k = 0; k < plan->norder; k++) {
            const CeSegment *seg = &plan->order[k];
            int st = gpu_use(g, g->ranks[seg->rank].device);
            for (int i = seg->begin; !st && i < seg->end; i++)
                st = ce_step(g, seg->rank, &plan->ranks[seg->rank].steps[i], run, chunk_bytes,
                             ce_lane0(g, streams, seg->rank));
            if (st)
                return st;
        }
    return CDSL_OK;
}

static bool ce_release(GpuComm *g, CeVerdict *v);

/* Each rank's DONE word, last on its stream: the watchdog skips ranks that got there. */
static int ce_mark_done(GpuComm *g, const CUstream *streams)
{
    for (int q = 0; q < g->nranks; q++) {
        int d = g->ranks[q].device, st = gpu_use(g, d);
        if (st)
            return st;
        GPU_TRY(g, d, g->cu->StreamWriteValue64(ce_lane0(g, streams, q), ce_word(g, q, CE_WORD_DONE(g->nranks)), 1,
                                                CU_STREAM_WRITE_VALUE_DEFAULT),
                "marking rank %d's runs done", q);
    }
    return CDSL_OK;
}

/* After an enqueue that failed half way: some rank may wait for a write that was never
 * enqueued. Release the waits until every rank's streams are idle (or a capture, which runs
 * nothing, refuses to say), so that nothing is left in flight. */
static void ce_unblock(GpuComm *g, const CUstream *streams)
{
    CeVerdict v;
    memset(&v, 0, sizeof v);
    for (int k = 0; k < CE_RESCUES && ce_release(g, &v); k++) {
        bool idle = true;
        for (int q = 0; q < g->nranks && idle && g->cu->StreamQuery; q++) {
            const CeRank *cr = &g->ce->ranks[q];
            g->cu->CtxSetCurrent(g->devs[g->ranks[q].device].ctx);
            for (int l = 0; l < CE_MAX_LANES && idle; l++) {
                CUstream s = l ? cr->lane[l] : ce_lane0(g, streams, q);
                idle = !s || g->cu->StreamQuery(s) != CUDA_ERROR_NOT_READY;
            }
        }
        if (idle)
            return;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

int ce_enqueue(GpuComm *g, size_t chunk_bytes, int iters, const CUstream *streams)
{
    CeState *ce = g->ce;
    ce_join_watch(ce);
    int st = ce_fit(g);
    if (!st && !ce->events)
        st = ce_reset(g, streams);
    if (!st)
        st = ce_runs(g, chunk_bytes, iters, streams);
    if (!st && !ce->events)
        st = ce_mark_done(g, streams);
    if (st && !ce->events)
        ce_unblock(g, streams);
    return st;
}

/* ---- The watchdog ------------------------------------------------------------------------------ */

static double ce_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void ce_nap(long *us)
{
    struct timespec ts = {0, *us * 1000};
    nanosleep(&ts, NULL);
    if (*us < 1000)
        *us *= 2;
}

static bool ce_failed(CeVerdict *v, CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return false;
    if (v->error == CUDA_SUCCESS) {
        v->error = r;
        snprintf(v->what, sizeof v->what, "%s", what);
    }
    v->status = CDSL_ERR_RUNTIME;
    return true;
}

/* 1 when every event has completed, 0 while one has not, -1 on an error (in v). */
static int ce_finished(GpuComm *g, const CUevent *ev, const int *dev, int nev, CeVerdict *v)
{
    for (int i = 0; i < nev; i++) {
        if (ce_failed(v, g->cu->CtxSetCurrent(g->devs[dev[i]].ctx), "making a context current"))
            return -1;
        CUresult r = g->cu->EventQuery(ev[i]);
        if (r == CUDA_ERROR_NOT_READY)
            return 0;
        if (ce_failed(v, r, "running the copy-engine streams"))
            return -1;
    }
    return 1;
}

/* The watchdog's streams have finished what it gave them. */
static bool ce_rescue_sync(GpuComm *g, CeVerdict *v, const char *what)
{
    for (int d = 0; d < g->ndev; d++)
        if (ce_failed(v, g->cu->CtxSetCurrent(g->devs[d].ctx), "making a context current") ||
            ce_failed(v, g->cu->StreamSynchronize(g->ce->rescue[d]), what))
            return false;
    return true;
}

/* Every rank's words, read on the watchdog's streams (they wait for nothing of the run's). */
static bool ce_snapshot(GpuComm *g, unsigned long long *snap, CeVerdict *v)
{
    size_t w = (size_t)CE_WORDS(g->nranks);
    for (int q = 0; q < g->nranks; q++) {
        int d = g->ranks[q].device;
        if (ce_failed(v, g->cu->CtxSetCurrent(g->devs[d].ctx), "making a context current") ||
            ce_failed(v, g->cu->MemcpyDtoHAsync(snap + (size_t)q * w, g->ce->ranks[q].words, w * 8, g->ce->rescue[d]),
                      "reading the copy-engine words"))
            return false;
    }
    return ce_rescue_sync(g, v, "reading the copy-engine words");
}

/* Each rank that is not DONE: its first wait, over the runs of the chain, whose word is below
 * what it waits for. Values grow with every run, so the search ends. */
static bool ce_diagnose(GpuComm *g, const unsigned long long *snap, CeVerdict *v)
{
    size_t w = (size_t)CE_WORDS(g->nranks);
    v->nstuck = 0;
    for (int q = 0; q < g->nranks; q++) {
        const unsigned long long *row = snap + (size_t)q * w;
        const CeRankPlan *rp = &g->ce->plan->ranks[q];
        bool waits = false;
        for (int i = 0; i < rp->nsteps && !waits; i++)
            waits = rp->steps[i].kind == CE_WAIT;
        if (row[CE_WORD_DONE(g->nranks)] || !waits)
            continue;
        for (int run = 0, found = 0; !found; run++)
            for (int i = 0; i < rp->nsteps && !found; i++) {
                const CeStep *s = &rp->steps[i];
                unsigned long long need = s->value + (unsigned long long)run * s->per_run;
                if (s->kind == CE_WAIT && (long long)(row[s->word] - need) < 0) {
                    v->stuck[v->nstuck++] = (CeStuck){q, i, run};
                    found = 1;
                }
            }
    }
    return v->nstuck > 0;
}

/* Every wait released: the peer and switch words of every rank set far above any count. */
static bool ce_release(GpuComm *g, CeVerdict *v)
{
    size_t bytes = (size_t)CE_WORD_DONE(g->nranks) * 8;
    for (int q = 0; q < g->nranks; q++) {
        int d = g->ranks[q].device;
        if (ce_failed(v, g->cu->CtxSetCurrent(g->devs[d].ctx), "making a context current") ||
            ce_failed(v, g->cu->MemsetD8Async(g->ce->ranks[q].words, 0x7f, bytes, g->ce->rescue[d]),
                      "releasing the copy-engine waits"))
            return false;
    }
    return ce_rescue_sync(g, v, "releasing the copy-engine waits");
}

static double ce_bound_s(const GpuComm *g)
{
    double s = (double)g->spin_limit * 1e-6;
    return s < CE_TIMEOUT_MIN_S ? CE_TIMEOUT_MIN_S : s;
}

/* Until the events complete: look at the words whenever the bound passes without an end. */
static void ce_watch(GpuComm *g, const CUevent *ev, const int *dev, int nev, CeVerdict *v)
{
    size_t words = (size_t)g->nranks * (size_t)CE_WORDS(g->nranks);
    unsigned long long *snap = malloc(words * 8), *prev = malloc(words * 8);
    free(v->stuck);
    memset(v, 0, sizeof *v);
    v->bound_s = ce_bound_s(g);
    v->stuck = calloc((size_t)g->nranks, sizeof *v->stuck);
    if (!snap || !prev || !v->stuck) {
        ce_failed(v, CUDA_ERROR_OUT_OF_MEMORY, "watching the copy-engine run");
        free(snap);
        free(prev);
        return;
    }
    int releases = 0;
    bool have = false;
    long pause = 20;
    double end = ce_now() + v->bound_s;
    while (ce_finished(g, ev, dev, nev, v) == 0) {
        if (ce_now() < end) {
            ce_nap(&pause);
            continue;
        }
        if (!ce_snapshot(g, snap, v))
            break;
        if (!have || memcmp(snap, prev, words * 8)) {
            memcpy(prev, snap, words * 8);
            have = true;
            end = ce_now() + (releases ? CE_RESCUE_WINDOW_S : v->bound_s);
            continue;
        }
        if (!releases && !ce_diagnose(g, snap, v)) {
            end = ce_now() + v->bound_s;    /* no wait is behind: a long copy, not a hang */
            continue;
        }
        v->status = CDSL_ERR_RUNTIME;
        if (releases == CE_RESCUES) {
            v->undrained = true;
            break;
        }
        if (!ce_release(g, v))
            break;
        releases++;
        have = false;
        end = ce_now() + CE_RESCUE_WINDOW_S;
    }
    free(snap);
    free(prev);
}

/* "rank 1 gave up waiting at f.cdsl:5:12 (the switch barrier): ..." for each stuck rank. */
static void ce_report(GpuComm *g, const CeVerdict *v)
{
    for (int k = 0; k < v->nstuck; k++) {
        const CeStuck *s = &v->stuck[k];
        const CeStep *step = &g->ce->plan->ranks[s->rank].steps[s->step];
        const IrOp *op = &g->ce->ir->ranks[s->rank].ops[step->op];
        char path[256] = "", what[64];
        if (op->loc.src)
            cdsl_escape(op->loc.src->path, path, sizeof path);
        if (step->word < g->nranks)
            snprintf(what, sizeof what, "peer %d's semaphore", step->word);
        else
            snprintf(what, sizeof what, "the switch barrier");
        rt_error(g->cfg.log, "rank %d gave up waiting at %s%s%d:%d (%s): no arrival in %.2f s (copy engine, run %d "
                 "of the chain; its wait was released so that the streams could finish)", s->rank, path,
                 *path ? ":" : "line ", op->loc.line, op->loc.col, what, v->bound_s, s->run + 1);
    }
    if (v->error != CUDA_SUCCESS)
        rt_error(g->cfg.log, "%s failed: %s", v->what, cu_error_string(g->cu, v->error));
    if (v->undrained)
        rt_error(g->cfg.log, "the copy-engine streams did not finish even after %d releases of their waits",
                 CE_RESCUES);
}

int ce_wait(GpuComm *g, CUevent stop)
{
    CeState *ce = g->ce;
    if (ce->events) {
        GPU_TRY(g, 0, g->cu->EventSynchronize(stop), "running the copy-engine streams");
        return CDSL_OK;
    }
    int dev0 = 0;
    ce_watch(g, &stop, &dev0, 1, &ce->verdict);
    ce_report(g, &ce->verdict);
    int st = ce->verdict.status;
    ce->verdict.status = CDSL_OK;
    ce->verdict.nstuck = 0;
    ce->verdict.error = CUDA_SUCCESS;
    ce->verdict.undrained = false;
    return st;
}

/* ---- Asynchronous runs --------------------------------------------------------------------------- */

static void *ce_watch_thread(void *arg)
{
    GpuComm *g = arg;
    int n = g->nranks;
    CUevent *ev = malloc((size_t)n * sizeof *ev);
    int *dev = malloc((size_t)n * sizeof *dev);
    if (!ev || !dev) {
        ce_failed(&g->ce->verdict, CUDA_ERROR_OUT_OF_MEMORY, "watching the copy-engine run");
    } else {
        for (int q = 0; q < n; q++) {
            ev[q] = g->ce->ranks[q].done;
            dev[q] = g->ranks[q].device;
        }
        ce_watch(g, ev, dev, n, &g->ce->verdict);
    }
    free(ev);
    free(dev);
    return NULL;
}

/* A stream being captured into the caller's graph runs later, from the graph: nothing to watch. */
static bool ce_capturing(GpuComm *g, const CUstream *streams)
{
    for (int q = 0; g->cu->StreamIsCapturing && q < g->nranks; q++) {
        int status = CU_STREAM_CAPTURE_STATUS_NONE;
        if (g->cu->StreamIsCapturing(ce_lane0(g, streams, q), &status) == CUDA_SUCCESS &&
            status != CU_STREAM_CAPTURE_STATUS_NONE)
            return true;
    }
    return false;
}

int ce_launch(GpuComm *g, size_t chunk_bytes, const CUstream *streams)
{
    CeState *ce = g->ce;
    int st = ce_enqueue(g, chunk_bytes, 1, streams);
    for (int q = 0; !st && q < g->nranks; q++) {
        int d = g->ranks[q].device;
        if ((st = gpu_use(g, d)))
            break;
        GPU_TRY(g, d, g->cu->EventRecord(ce->ranks[q].done, ce_lane0(g, streams, q)), "recording an event");
    }
    if (st || ce->events || ce_capturing(g, streams))
        return st;
    if (pthread_create(&ce->thread, NULL, ce_watch_thread, g) != 0) {
        rt_error(g->cfg.log, "could not start the copy-engine watchdog thread");
        return CDSL_ERR_SYSTEM;
    }
    ce->watching = true;
    return CDSL_OK;
}

int ce_status(GpuComm *g)
{
    CeState *ce = g->ce;
    if (!ce)
        return CDSL_OK;
    ce_join_watch(ce);
    if (!ce->plan || !ce->ir)
        return CDSL_OK;
    ce_report(g, &ce->verdict);
    int st = ce->verdict.status;
    free(ce->verdict.stuck);
    memset(&ce->verdict, 0, sizeof ce->verdict);
    return st;
}

/* ---- Teardown --------------------------------------------------------------------------------------- */

static void ce_free_rank(GpuComm *g, CeRank *cr)
{
    for (int l = 1; l < CE_MAX_LANES; l++) {
        if (cr->lane[l])
            g->cu->StreamDestroy(cr->lane[l]);
        if (cr->join[l])
            g->cu->EventDestroy(cr->join[l]);
    }
    for (int i = 0; i < cr->nsig; i++)
        g->cu->EventDestroy(cr->sig[i]);
    free(cr->sig);
    CUevent ev[] = {cr->fork, cr->reset, cr->done};
    for (size_t i = 0; i < sizeof ev / sizeof *ev; i++)
        if (ev[i])
            g->cu->EventDestroy(ev[i]);
    if (cr->words)
        g->cu->MemFree(cr->words);
}

void ce_destroy(GpuComm *g)
{
    CeState *ce = g->ce;
    if (!ce)
        return;
    ce_join_watch(ce);
    for (int q = 0; ce->ranks && q < g->nranks; q++)
        if (g->cu->CtxSetCurrent(g->devs[g->ranks[q].device].ctx) == CUDA_SUCCESS)
            ce_free_rank(g, &ce->ranks[q]);
    for (int d = 0; ce->rescue && d < g->ndev; d++)
        if (ce->rescue[d] && g->cu->CtxSetCurrent(g->devs[d].ctx) == CUDA_SUCCESS)
            g->cu->StreamDestroy(ce->rescue[d]);
    if (ce->code)
        ce->code->ce_plan_free(ce->plan);
    free(ce->verdict.stuck);
    free(ce->ranks);
    free(ce->rescue);
    free(ce->flush);
    free(ce);
    g->ce = NULL;
}
