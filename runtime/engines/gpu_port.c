/*
 * gpu_port.c - the host's proxy for port channels on the GPU, and its transport on one host
 * (gpu_port.h says what it does and why).
 *
 * One thread per loaded program with port channels and per process (of every rank it serves,
 * PortSite). It sleeps until a launch posts a pass, then
 * walks every proxy unit as far as it can without blocking, round after round, until each unit
 * has walked all its ops; then it waits for every lane to drain and ends the pass. The counts it
 * keeps (requests served, flushes done, signals sent per channel) grow across passes, as the
 * kernel's do, and start again from zero only with the port words (gpu_ports_reset).
 */
#include "gpu_port.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "cdsl.h"
#include "log.h"

typedef unsigned long long u64;

/* While a pass waits for the kernels, the thread polls without sleeping (a sleep costs tens of
   microseconds of latency per request: a nanosleep lasts at least the timer slack, 50 us), then
   yields the core between polls, and after a long wait naps, as MSCCL++'s proxy busy-polls its
   FIFO. */
#define PORT_YIELD_AFTER_S 200e-6
#define PORT_NAP_AFTER_S 20e-3

typedef struct PortUnit {
    int rank, k;                /* the issuing rank and its proxy index k */
    IrOp *ops;                  /* a copy of the unit's ops (the IR may be replaced between runs) */
    char **site;                /* per op: "file:line:col (ctx)", for reports */
    int nops;
    int pos;                    /* the next op of this pass */
    int marking;                /* a flush's mark is on the lane, not reached yet */
    unsigned flag;              /* a plan with packets: the packet flag of the latest request's launch */
    int dirty;                  /* copies or signals on the lane since its last reached mark */
    u64 served, flushed;        /* requests taken and flushes done, over all passes */
} PortUnit;

struct GpuPorts {
    PortSite site;
    const PortTransport *tp;
    int n, npairs, nprox;
    int pkt_buf, pkt_half;      /* a plan's packet buffer, and the chunk of its upper half (0: one half) */
    CUdeviceptr *words;         /* [n]: each rank's port words (device memory) */
    u64 **host;                 /* [n]: each rank's port host words (pinned) */
    CUdeviceptr *host_dev;      /* [n]: the same, as the device reaches them */
    u64 *sent;                  /* [(from * n + to) * npairs + pair]: signals made */
    PortUnit *units;
    int nunits;
    CUstream *lanes;            /* [nunits], on the issuing rank's device */
    CUevent *marks;             /* [nunits] */
    double bound_s;             /* no progress for this long: the pass gives up */
    int copy_signals;           /* a write-value into a peer was refused: signals are copies */
    int owned_words;            /* the proxy made the port words (else the site's, see words()) */
    CUevent started;            /* of the posted pass: reached once the launch's stream got to it (or 0) */
    pthread_t thread;
    int have_thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    u64 posted, ended;          /* passes */
    size_t chunk_bytes;         /* of the posted pass */
    int stop, abandon;          /* abandon: read by the thread without the lock (atomics) */
    int status;                 /* the first failed pass's, until a drain takes it */
};

static double port_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- The transport on one host: copies and write-values between peer-mapped memory -------- */

/* The driver calls of a lane run in its issuing rank's context; a failure names that rank. */
static int lane_use(const GpuPorts *pp, int lane)
{
    return pp->site.use(pp->site.self, pp->units[lane].rank);
}

static int port_fail(const GpuPorts *pp, int q, CUresult r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int port_fail(const GpuPorts *pp, int q, CUresult r, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return pp->site.fail(pp->site.self, q, r, what);
}

#define PORT_TRY(pp, q, call, ...) CU_TRY_OR(call, port_fail((pp), (q), cu_r_, __VA_ARGS__))

static int one_host_put(void *self, int lane, int from, int to, int dbuf, size_t doff, int sbuf, size_t soff,
                        size_t bytes)
{
    GpuPorts *pp = self;
    const PortSite *ps = &pp->site;
    int st = lane_use(pp, lane);
    if (st || !bytes)
        return st;
    CUdeviceptr dst = ps->buf(ps->self, to, dbuf) + doff, src = ps->buf(ps->self, from, sbuf) + soff;
    PORT_TRY(pp, from, ps->cu->MemcpyAsync(dst, src, bytes, pp->lanes[lane]),
             "the port proxy's put of %zu bytes from rank %d to rank %d", bytes, from, to);
    return CDSL_OK;
}

/* A signal is the count written after the lane's copies: a write-value, or where the driver
   refuses one into another GPU's memory, a copy of the count from pageable host memory on the
   lane, which is what MSCCL++'s CudaIpcConnection::updateAndSync does (connection.cc:159-170,
   context.cc:32-37). A copy from pageable memory takes its source before it returns, so the
   count may live on this stack; it may wait for the lane, which only costs latency. */
static int one_host_signal(void *self, int lane, int to, int word, u64 value)
{
    GpuPorts *pp = self;
    const PortSite *ps = &pp->site;
    int from = pp->units[lane].rank, st = lane_use(pp, lane);
    if (st)
        return st;
    CUdeviceptr at = pp->words[to] + 8 * (CUdeviceptr)word;
    if (!pp->copy_signals) {
        CUresult r = ps->cu->StreamWriteValue64(pp->lanes[lane], at, value, CU_STREAM_WRITE_VALUE_DEFAULT);
        if (r == CUDA_SUCCESS)
            return CDSL_OK;
        if (!(r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_INVALID_VALUE) || !ps->cu->MemcpyHtoDAsync ||
            ps->same_device(ps->self, from, to))
            return port_fail(pp, from, r, "the port proxy's signal to rank %d", to);
        pp->copy_signals = 1;
        log_msg(LOG_INFO, "port proxy: rank %d's GPU refused a write-value into rank %d's memory (%s); signals are "
                "copies from now on", from, to, cu_error_string(ps->cu, r));
    }
    PORT_TRY(pp, from, ps->cu->MemcpyHtoDAsync(at, &value, sizeof value, pp->lanes[lane]),
             "the port proxy's signal to rank %d (a copy of its count)", to);
    return CDSL_OK;
}

static int one_host_mark(void *self, int lane)
{
    GpuPorts *pp = self;
    int st = lane_use(pp, lane);
    if (st)
        return st;
    PORT_TRY(pp, pp->units[lane].rank, pp->site.cu->EventRecord(pp->marks[lane], pp->lanes[lane]),
             "marking a port proxy's lane");
    return CDSL_OK;
}

static int one_host_reached(void *self, int lane)
{
    GpuPorts *pp = self;
    CUresult r = pp->site.cu->EventQuery(pp->marks[lane]);
    if (r == CUDA_SUCCESS)
        return 1;
    if (r == CUDA_ERROR_NOT_READY)
        return 0;
    return -port_fail(pp, pp->units[lane].rank, r, "a port proxy's copies");
}

static const PortTransport one_host = {
    "one host (CUDA copies and stream write-values between peer-mapped memory)",
    one_host_put, one_host_signal, one_host_mark, one_host_reached,
};

/* ---- One pass ------------------------------------------------------------------------------ */

static bool is_request(const PortUnit *u, const IrOp *op)
{
    return op->kind == IR_WAIT && op->peer == u->rank;
}

/* The unit's ops from its position on, as far as they go without waiting; *moved when one did. */
static int unit_step(GpuPorts *pp, PortUnit *u, int lane, size_t chunk, int *moved)
{
    const PortTransport *tp = pp->tp;
    for (; u->pos < u->nops; u->pos++, *moved = 1) {
        const IrOp *op = &u->ops[u->pos];
        int st = CDSL_OK;
        if (is_request(u, op)) {
            u64 made = __atomic_load_n(&pp->host[u->rank][CDSL_PORT_HOST_REQ(u->k)], __ATOMIC_ACQUIRE);
            if ((long long)(made - (u->served + 1)) < 0)
                return CDSL_OK;
            u->served++;
            if (pp->pkt_buf)    /* stored before the count, so read after it */
                u->flag = (unsigned)__atomic_load_n(&pp->host[u->rank][CDSL_PORT_HOST_FLAG(u->k)], __ATOMIC_ACQUIRE);
        } else if (op->kind == IR_PUT) {
            st = tp->put(pp, lane, u->rank, op->peer, op->dst.buf, (size_t)op->dst.first * chunk, op->src.buf,
                         (size_t)op->src.first * chunk, (size_t)op->dst.count * chunk);
            u->dirty = 1;
        } else if (op->kind == IR_MPKT_PUT) {   /* packets of this launch, flags and all (rppkt) */
            size_t half = pp->pkt_half && (u->flag & 1u) == 0 ? (size_t)pp->pkt_half * chunk : 0;
            st = tp->put(pp, lane, u->rank, op->peer, op->dst.buf, half + 2 * (size_t)op->dst.first * chunk, op->src.buf,
                         half + 2 * (size_t)op->src.first * chunk, 2 * (size_t)op->dst.count * chunk);
            u->dirty = 1;
        } else if (op->kind == IR_SIGNAL && op->peer != u->rank) {
            int pair = op->chan - IR_PORT_CHAN;
            u64 *count = &pp->sent[((size_t)u->rank * (size_t)pp->n + (size_t)op->peer) * (size_t)pp->npairs + (size_t)pair];
            st = tp->signal(pp, lane, op->peer, CDSL_PORT_ARRIVED(pp->n, pair, u->rank), ++*count);
            u->dirty = 1;
        } else if (op->kind == IR_SIGNAL) {     /* the flush's "done", once the lane has drained to here */
            if (!u->marking && (st = tp->mark(pp, lane)) == CDSL_OK)
                u->marking = 1;
            int r = st ? 0 : tp->reached(pp, lane);
            if (r < 0)
                st = -r;
            else if (!st && r == 0)
                return CDSL_OK;
            if (!st) {
                u->marking = u->dirty = 0;
                __atomic_store_n(&pp->host[u->rank][CDSL_PORT_HOST_FLUSHED(u->k)], ++u->flushed, __ATOMIC_RELEASE);
            }
        } else {
            rt_error(pp->site.log, "internal: the port proxy of rank %d cannot run %s at %s", u->rank,
                     ir_kind_name(op->kind), u->site[u->pos]);
            st = CDSL_ERR_RUNTIME;
        }
        if (st)
            return st;
    }
    return CDSL_OK;
}

/* Every unit that has not finished: what it waits for, and where. */
static int pass_stuck(GpuPorts *pp, double waited)
{
    int said = 0;
    for (int i = 0; i < pp->nunits; i++) {
        PortUnit *u = &pp->units[i];
        if (u->pos >= u->nops)
            continue;
        if (said++ == 4) {
            rt_error(pp->site.log, "... and other port proxies as well");
            break;
        }
        const IrOp *op = &u->ops[u->pos];
        if (is_request(u, op))
            rt_error(pp->site.log, "rank %d's port proxy %d gave up waiting at %s for its thread block's request "
                     "(request %llu; none came for %.1f s)", u->rank, u->k, u->site[u->pos], u->served + 1, waited);
        else
            rt_error(pp->site.log, "rank %d's port proxy %d gave up at %s: its copies before the flush did not "
                     "complete in %.1f s", u->rank, u->k, u->site[u->pos], waited);
    }
    return CDSL_ERR_RUNTIME;
}

/* Every lane drained (what the pass put there has landed), bounded; a lane with nothing since
   its last flush has nothing to wait for. */
static int pass_drain(GpuPorts *pp)
{
    for (int i = 0; i < pp->nunits; i++) {
        int st = pp->units[i].dirty ? pp->tp->mark(pp, i) : CDSL_OK;
        if (st)
            return st;
    }
    double start = port_now();
    for (int i = 0; i < pp->nunits;) {
        if (!pp->units[i].dirty) {
            i++;
            continue;
        }
        int r = pp->tp->reached(pp, i);
        if (r < 0)
            return -r;
        if (r) {
            pp->units[i++].dirty = 0;
            continue;
        }
        if (port_now() - start > pp->bound_s) {
            rt_error(pp->site.log, "rank %d's port proxy %d: its copies did not complete in %.1f s",
                     pp->units[i].rank, pp->units[i].k, pp->bound_s);
            return CDSL_ERR_RUNTIME;
        }
        sched_yield();
    }
    return CDSL_OK;
}

/* Whether the launch of the pass has begun: until its stream reaches the event recorded before
   the kernel, the blocks cannot have asked anything, however long the caller's earlier work on
   that stream takes, so the wait for a request is not counted yet. 1 begun, 0 not yet, else -status. */
static int pass_begun(GpuPorts *pp, CUevent started)
{
    int st = pp->site.use(pp->site.self, pp->site.first);
    if (st)
        return -st;
    CUresult r = pp->site.cu->EventQuery(started);
    if (r == CUDA_SUCCESS)
        return 1;
    if (r == CUDA_ERROR_NOT_READY)
        return 0;
    return -port_fail(pp, pp->site.first, r, "the start of the port proxy's launch");
}

static int port_pass(GpuPorts *pp, size_t chunk, CUevent started)
{
    for (int i = 0; i < pp->nunits; i++)
        pp->units[i].pos = 0;
    double last = port_now();
    for (;;) {
        int left = 0, moved = 0;
        for (int i = 0; i < pp->nunits; i++) {
            int st = unit_step(pp, &pp->units[i], i, chunk, &moved);
            if (st)
                return st;
            left += pp->units[i].pos < pp->units[i].nops;
        }
        if (!left)
            return pass_drain(pp);
        if (__atomic_load_n(&pp->abandon, __ATOMIC_ACQUIRE))
            return CDSL_ERR_RUNTIME;
        double now = port_now();
        if (moved)
            started = 0;
        int begun = started ? pass_begun(pp, started) : 1;
        if (begun < 0)
            return -begun;
        if (begun)
            started = 0;
        if (moved || !begun) {
            last = now;
        } else if (now - last > pp->bound_s) {
            return pass_stuck(pp, now - last);
        } else if (now - last > PORT_NAP_AFTER_S) {    /* a long wait: give the core back */
            struct timespec nap = {0, 50000};
            nanosleep(&nap, NULL);
        } else if (now - last > PORT_YIELD_AFTER_S) {
            sched_yield();
        }
    }
}

static void *port_thread(void *arg)
{
    GpuPorts *pp = arg;
    pthread_mutex_lock(&pp->mu);
    for (;;) {
        while (!pp->stop && pp->ended == pp->posted)
            pthread_cond_wait(&pp->cv, &pp->mu);
        if (pp->stop)
            break;
        size_t chunk = pp->chunk_bytes;
        CUevent started = pp->started;
        pthread_mutex_unlock(&pp->mu);
        int st = __atomic_load_n(&pp->abandon, __ATOMIC_ACQUIRE) ? CDSL_ERR_RUNTIME : port_pass(pp, chunk, started);
        pthread_mutex_lock(&pp->mu);
        if (st && !pp->status)
            pp->status = st;
        pp->ended++;
        pthread_cond_broadcast(&pp->cv);
    }
    pthread_mutex_unlock(&pp->mu);
    return NULL;
}

/* ---- Making and unmaking ------------------------------------------------------------------- */

static char *op_site(const IrOp *op)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s:%d:%d%s%s%s", op->loc.src ? op->loc.src->path : "?", op->loc.line, op->loc.col,
             op->ctx ? " (" : "", op->ctx ? op->ctx : "", op->ctx ? ")" : "");
    return strdup(buf);
}

/* The units of rank r: its units after its blocks, each a run of ops with thread < 0. */
static int units_of(GpuPorts *pp, const IrProgram *ir, int r)
{
    const IrSeq *s = &ir->ranks[r];
    for (int i = 0; i < s->nops;) {
        if (s->ops[i].thread >= 0) {
            i++;
            continue;
        }
        int j = i;
        while (j < s->nops && s->ops[j].tb == s->ops[i].tb)
            j++;
        PortUnit *u = &pp->units[pp->nunits++];
        u->rank = r;
        u->k = -1;
        u->nops = j - i;
        u->ops = malloc((size_t)u->nops * sizeof *u->ops);
        u->site = calloc((size_t)u->nops, sizeof *u->site);
        if (!u->ops || !u->site)
            return CDSL_ERR_SYSTEM;
        for (int m = 0; m < u->nops; m++) {
            const IrOp *op = &s->ops[i + m];
            bool packets = op->kind == IR_MPKT_PUT && op->src.buf == ir->msc_packets && op->dst.buf == ir->msc_packets;
            if (!packets && op->kind != IR_PUT && !ir_is_chan_sync(op->kind)) {
                rt_error(pp->site.log, "%s:%d:%d: %s (%s)", op->loc.src ? op->loc.src->path : "?", op->loc.line,
                         op->loc.col, IR_PORT_PACKETS_GPU_REFUSAL, ir_kind_name(op->kind));
                return CDSL_ERR_USAGE;
            }
            u->ops[m] = *op;
            if (!(u->site[m] = op_site(op)))
                return CDSL_ERR_SYSTEM;
            if (is_request(u, op))
                u->k = (op->chan - IR_PORT_REQ_CHAN) / 2;
        }
        i = j;
    }
    return CDSL_OK;
}

static bool served(const GpuPorts *pp, int q)
{
    return q >= pp->site.first && q <= pp->site.last;
}

static int make_lanes(GpuPorts *pp)
{
    const PortSite *ps = &pp->site;
    pp->lanes = calloc((size_t)pp->nunits, sizeof *pp->lanes);
    pp->marks = calloc((size_t)pp->nunits, sizeof *pp->marks);
    if (!pp->lanes || !pp->marks)
        return CDSL_ERR_SYSTEM;
    for (int i = 0; i < pp->nunits; i++) {
        int q = pp->units[i].rank, st = lane_use(pp, i);
        if (st)
            return st;
        PORT_TRY(pp, q, ps->cu->StreamCreate(&pp->lanes[i], CU_STREAM_NON_BLOCKING), "making a port proxy's lane");
        PORT_TRY(pp, q, ps->cu->EventCreate(&pp->marks[i], CU_EVENT_DISABLE_TIMING), "making a port proxy's mark");
    }
    return CDSL_OK;
}

static size_t words_bytes(const GpuPorts *pp)
{
    return 8 * (size_t)CDSL_PORT_WORDS(pp->n, pp->npairs, pp->nprox);
}

static size_t host_bytes(const GpuPorts *pp)
{
    return 8 * (size_t)CDSL_PORT_HOST_WORDS(pp->nprox > 0 ? pp->nprox : 1);
}

/* Every rank's port words as this process reaches them (the site's, or made here for the ranks
   served when the site has none), and the host words of the ranks served. */
static int make_words(GpuPorts *pp)
{
    const PortSite *ps = &pp->site;
    int n = pp->n;
    pp->words = calloc((size_t)n, sizeof *pp->words);
    pp->host = calloc((size_t)n, sizeof *pp->host);
    pp->host_dev = calloc((size_t)n, sizeof *pp->host_dev);
    pp->sent = calloc((size_t)n * (size_t)n * (size_t)(pp->npairs ? pp->npairs : 1), sizeof *pp->sent);
    if (!pp->words || !pp->host || !pp->host_dev || !pp->sent)
        return CDSL_ERR_SYSTEM;
    size_t dev_bytes = words_bytes(pp) ? words_bytes(pp) : 8;
    pp->owned_words = !ps->words(ps->self, ps->first);
    for (int q = 0; q < n; q++) {
        if (!pp->owned_words) {
            pp->words[q] = ps->words(ps->self, q);
            if (!served(pp, q))
                continue;
        } else if (!served(pp, q)) {
            continue;
        }
        int st = ps->use(ps->self, q);
        if (st)
            return st;
        if (pp->owned_words)
            PORT_TRY(pp, q, ps->cu->MemAlloc(&pp->words[q], dev_bytes), "allocating rank %d's port words", q);
        PORT_TRY(pp, q, ps->cu->MemsetD8(pp->words[q], 0, dev_bytes), "zeroing rank %d's port words", q);
        void *h = NULL;
        PORT_TRY(pp, q, ps->cu->MemHostAlloc(&h, host_bytes(pp), CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
                 "allocating rank %d's port host words", q);
        pp->host[q] = h;
        memset(h, 0, host_bytes(pp));
        PORT_TRY(pp, q, ps->cu->MemHostGetDevicePointer(&pp->host_dev[q], h, 0), "mapping rank %d's port host words",
                 q);
    }
    return CDSL_OK;
}

static int count_units(const IrProgram *ir, int r)
{
    return ir_ntbs(ir, r) - ir_block_units(ir, r);
}

int gpu_ports_load(const PortSite *site, const IrProgram *ir, GpuPorts **out)
{
    *out = NULL;
    int nunits = 0;
    for (int r = site->first; r <= site->last; r++)
        nunits += count_units(ir, r);
    if (!nunits)
        return CDSL_OK;
    if (!cu_has_port(site->cu)) {
        rt_error(site->log, "%s uses port channels, whose proxy needs pinned host memory, copies and stream "
                 "write-values, which this CUDA driver lacks", ir->name);
        return CDSL_ERR_SYSTEM;
    }
    GpuPorts *pp = calloc(1, sizeof *pp);
    if (!pp) {
        rt_error(site->log, "out of memory");
        return CDSL_ERR_SYSTEM;
    }
    pp->site = *site;
    pp->tp = &one_host;
    pp->n = ir->nranks;
    ir_port_shape(ir, &pp->npairs, &pp->nprox);
    pp->pkt_buf = ir->msc_packets;
    pp->pkt_half = ir->msc_packets && ir->msc_halves == 2 ? ir->bufs[ir->msc_packets].nchunks / 2 : 0;
    pp->bound_s = 2e-6 * (double)site->spin_limit;
    if (pp->bound_s < 0.1)
        pp->bound_s = 0.1;
    pthread_mutex_init(&pp->mu, NULL);
    pthread_cond_init(&pp->cv, NULL);
    pp->units = calloc((size_t)nunits, sizeof *pp->units);
    int st = pp->units ? CDSL_OK : CDSL_ERR_SYSTEM;
    for (int r = site->first; !st && r <= site->last; r++)
        st = units_of(pp, ir, r);
    if (!st)
        st = make_words(pp);
    if (!st)
        st = make_lanes(pp);
    if (!st) {
        if (pthread_create(&pp->thread, NULL, port_thread, pp) == 0)
            pp->have_thread = 1;
        else
            st = CDSL_ERR_SYSTEM;
    }
    if (st == CDSL_ERR_SYSTEM && !pp->have_thread)
        rt_error(site->log, "setting up the port proxy of %s failed (out of memory, or no thread)", ir->name);
    if (st) {
        gpu_ports_destroy(pp);
        return st;
    }
    log_msg(LOG_INFO, "port proxy: %d units of ranks %d to %d, %d channel ordinals per pair, transport: %s",
            pp->nunits, site->first, site->last, pp->npairs, pp->tp->name);
    *out = pp;
    return CDSL_OK;
}

void gpu_ports_destroy(GpuPorts *pp)
{
    if (!pp)
        return;
    const PortSite *ps = &pp->site;
    if (pp->have_thread) {
        pthread_mutex_lock(&pp->mu);
        pp->stop = 1;
        __atomic_store_n(&pp->abandon, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&pp->cv);
        pthread_mutex_unlock(&pp->mu);
        pthread_join(pp->thread, NULL);
    }
    for (int i = 0; pp->lanes && i < pp->nunits; i++) {
        if (lane_use(pp, i))
            continue;
        if (pp->lanes[i]) {
            ps->cu->StreamSynchronize(pp->lanes[i]);
            ps->cu->StreamDestroy(pp->lanes[i]);
        }
        if (pp->marks[i])
            ps->cu->EventDestroy(pp->marks[i]);
    }
    for (int q = 0; q < pp->n; q++) {
        if (pp->owned_words && pp->words && pp->words[q] && !ps->use(ps->self, q))
            ps->cu->MemFree(pp->words[q]);
        if (pp->host && pp->host[q])
            ps->cu->MemFreeHost(pp->host[q]);
    }
    for (int i = 0; pp->units && i < pp->nunits; i++) {
        for (int m = 0; pp->units[i].site && m < pp->units[i].nops; m++)
            free(pp->units[i].site[m]);
        free(pp->units[i].site);
        free(pp->units[i].ops);
    }
    pthread_mutex_destroy(&pp->mu);
    pthread_cond_destroy(&pp->cv);
    free(pp->units);
    free(pp->lanes);
    free(pp->marks);
    free(pp->words);
    free(pp->host);
    free(pp->host_dev);
    free(pp->sent);
    free(pp);
}

/* ---- Runs ---------------------------------------------------------------------------------- */

void gpu_ports_args(const GpuPorts *pp, int q, CdslArgs *a)
{
    a->port = (unsigned long long *)(uintptr_t)pp->words[q];
    a->port_host = (unsigned long long *)(uintptr_t)pp->host_dev[q];
}

int gpu_ports_post(GpuPorts *pp, size_t chunk_bytes, CUevent started)
{
    pthread_mutex_lock(&pp->mu);
    while (pp->ended < pp->posted)
        pthread_cond_wait(&pp->cv, &pp->mu);    /* a pass always ends: it is bounded */
    int st = pp->status;
    if (!st) {
        pp->chunk_bytes = chunk_bytes;
        pp->started = started;
        pp->posted++;
        pthread_cond_broadcast(&pp->cv);
    }
    pthread_mutex_unlock(&pp->mu);
    return st;
}

int gpu_ports_drain(GpuPorts *pp)
{
    pthread_mutex_lock(&pp->mu);
    while (pp->ended < pp->posted)
        pthread_cond_wait(&pp->cv, &pp->mu);
    int st = pp->status;
    pp->status = CDSL_OK;
    pthread_mutex_unlock(&pp->mu);
    return st;
}

int gpu_ports_reset(GpuPorts *pp)
{
    const PortSite *ps = &pp->site;
    __atomic_store_n(&pp->abandon, 1, __ATOMIC_RELEASE);
    gpu_ports_drain(pp);
    int st = CDSL_OK;
    for (int i = 0; i < pp->nunits && !st; i++) {
        if (!(st = lane_use(pp, i))) {
            CUresult r = ps->cu->StreamSynchronize(pp->lanes[i]);
            if (r != CUDA_SUCCESS)
                st = port_fail(pp, pp->units[i].rank, r, "draining a port proxy's lane");
        }
        pp->units[i].served = pp->units[i].flushed = 0;
        pp->units[i].marking = pp->units[i].dirty = 0;
    }
    for (int q = 0; q < pp->n && !st; q++) {
        if (!pp->owned_words)   /* where the site keeps them: they may have moved */
            pp->words[q] = ps->words(ps->self, q);
        if (!served(pp, q))
            continue;
        if (!(st = ps->use(ps->self, q)) && words_bytes(pp)) {
            CUresult r = ps->cu->MemsetD8(pp->words[q], 0, words_bytes(pp));
            if (r == CUDA_SUCCESS)
                r = ps->cu->StreamSynchronize(NULL);    /* zero before any peer's next signal */
            if (r != CUDA_SUCCESS)
                st = port_fail(pp, q, r, "zeroing rank %d's port words", q);
        }
        memset(pp->host[q], 0, host_bytes(pp));
    }
    memset(pp->sent, 0, (size_t)pp->n * (size_t)pp->n * (size_t)(pp->npairs ? pp->npairs : 1) * sizeof *pp->sent);
    __atomic_store_n(&pp->abandon, 0, __ATOMIC_RELEASE);
    return st;
}
