/*
 * port_proxy.c - the host's port-channel proxy (runtime/engines/gpu_port.c) without a GPU, for
 * tests/run/port_proxy.sh.
 *
 *   port_proxy PROGRAM NRANKS [per-rank][-][refuse-write-values | refuse-write-values-no-copy]
 *
 * With per-rank, every rank has a proxy of its own that serves only its blocks and reaches its
 * peers' buffers and port words through the site, as the per-rank engines' proxies do (one
 * process per rank); the port words are the site's, and hold garbage until the proxy zeroes them.
 * With refuse-write-values, every rank is on a GPU of its own and the driver refuses a
 * write-value (as one may into another GPU's memory): the proxy's signals must then be copies of
 * the count from host memory, as MSCCL++'s updateAndSync's are, and every launch still verify;
 * with -no-copy the driver has no such copy either, and the pass must fail with a report.
 *
 * The proxy runs as it does on the GPU, against a stand-in driver table whose memory is host
 * memory and whose streams are queues that a thread of their own works through, a copy in
 * pieces with a yield between them (so that a reader not ordered after a copy sees it half
 * done), write-values after the copies before them, events as positions in a queue. The
 * blocks' side is played by a thread per thread block that does what the emitted code does
 * (compiler/emit/emit_port.c, runtime/device/cdsl_device.cuh): local copies, requests counted in
 * the host words with a release store, flush waits and semaphore waits on the port words.
 * A plan's packets are played as cdsl_packets.cuh does them (LL8 words {data, flag}, the flag of
 * the launch, the half of a double scratch buffer that the flag picks). Checked, printing
 * [PASS]/[FAIL]: three launches in a row verify (an allgather's output, a plan's run to its end,
 * both halves of a double scratch buffer in turn); a block that stops before a request makes the pass give up with a
 * report naming the proxy's wait and its place; after gpu_ports_reset the next launch
 * verifies; a launch whose kernel starts after twice the bound runs clean when its pass has the
 * event recorded before the kernel, and gives up without it; destroy frees what load made (the
 * ASan build would say otherwise).
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "abi.h"
#include "cdsl.h"
#include "emit_port.h"
#include "gpu_common.h"
#include "gpu_port.h"
#include "program.h"

typedef unsigned long long u64;
static int failures;

static void expect(int ok, const char *what, const char *why)
{
    printf("[%s] %s%s%s\n", ok ? "PASS" : "FAIL", what, ok ? "" : ": ", ok ? "" : why);
    failures += !ok;
}

/* ---- The stand-in driver: lanes are queues served by a thread each ----------------------- */

enum { OP_COPY, OP_WRITE, OP_MARK };
typedef struct LaneOp {
    int kind;
    char *dst;
    const char *src;
    size_t n;
    u64 value;
    u64 seq;
} LaneOp;

typedef struct Lane {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    LaneOp *q;
    int head, tail, cap, stop;
    u64 issued, done;           /* marks */
    unsigned seed;
} Lane;

typedef struct Event {
    Lane *lane;
    u64 seq;
} Event;

static void lane_do(Lane *l, LaneOp *op)
{
    if (rand_r(&l->seed) % 4 == 0)
        sched_yield();
    if (op->kind == OP_COPY) {
        for (size_t off = 0; off < op->n; off += 64) {   /* in pieces: a reader that is early sees half */
            memcpy(op->dst + off, op->src + off, op->n - off < 64 ? op->n - off : 64);
            if ((off & 1023) == 0)
                sched_yield();
        }
    } else if (op->kind == OP_WRITE) {
        __atomic_store_n((u64 *)op->dst, op->value, __ATOMIC_RELEASE);  /* after the copies: the barrier */
    } else {
        __atomic_store_n(&l->done, op->seq, __ATOMIC_RELEASE);
    }
}

static void *lane_main(void *arg)
{
    Lane *l = arg;
    pthread_mutex_lock(&l->mu);
    for (;;) {
        while (!l->stop && l->head == l->tail)
            pthread_cond_wait(&l->cv, &l->mu);
        if (l->head == l->tail && l->stop)
            break;
        LaneOp op = l->q[l->head % l->cap];
        pthread_mutex_unlock(&l->mu);
        lane_do(l, &op);
        pthread_mutex_lock(&l->mu);
        l->head++;
        pthread_cond_broadcast(&l->cv);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

static void lane_push(Lane *l, LaneOp op)
{
    pthread_mutex_lock(&l->mu);
    if (l->tail - l->head == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        LaneOp *q = malloc((size_t)cap * sizeof *q);
        for (int i = l->head; i < l->tail; i++)
            q[i % cap] = l->q[i % l->cap];
        free(l->q);
        l->q = q;
        l->cap = cap;
    }
    l->q[l->tail++ % l->cap] = op;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

static CUresult f_ok(void) { return CUDA_SUCCESS; }
static CUresult f_ctx(CUcontext c) { (void)c; return CUDA_SUCCESS; }
static CUresult f_alloc(CUdeviceptr *p, size_t n)
{
    *p = (CUdeviceptr)(uintptr_t)calloc(1, n);
    return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult f_free(CUdeviceptr p) { free((void *)(uintptr_t)p); return CUDA_SUCCESS; }
static CUresult f_memset(CUdeviceptr p, unsigned char v, size_t n) { memset((void *)(uintptr_t)p, v, n); return CUDA_SUCCESS; }
static CUresult f_host_alloc(void **p, size_t n, unsigned flags) { (void)flags; *p = calloc(1, n); return CUDA_SUCCESS; }
static CUresult f_host_free(void *p) { free(p); return CUDA_SUCCESS; }
static CUresult f_host_dev(CUdeviceptr *dp, void *p, unsigned flags) { (void)flags; *dp = (CUdeviceptr)(uintptr_t)p; return CUDA_SUCCESS; }
static CUresult f_stream(CUstream *s, unsigned flags)
{
    (void)flags;
    Lane *l = calloc(1, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->cv, NULL);
    l->seed = 7;
    pthread_create(&l->thread, NULL, lane_main, l);
    *s = (CUstream)l;
    return CUDA_SUCCESS;
}
static CUresult f_stream_sync(CUstream s)
{
    Lane *l = (Lane *)s;
    if (!l)
        return CUDA_SUCCESS;    /* the legacy stream: the stand-in's memsets are done already */
    pthread_mutex_lock(&l->mu);
    while (l->head != l->tail)
        pthread_cond_wait(&l->cv, &l->mu);
    pthread_mutex_unlock(&l->mu);
    return CUDA_SUCCESS;
}
static CUresult f_stream_destroy(CUstream s)
{
    Lane *l = (Lane *)s;
    pthread_mutex_lock(&l->mu);
    l->stop = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    pthread_join(l->thread, NULL);
    free(l->q);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
    return CUDA_SUCCESS;
}
static CUresult f_copy(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
    lane_push((Lane *)st, (LaneOp){OP_COPY, (char *)(uintptr_t)d, (const char *)(uintptr_t)s, n, 0, 0});
    return CUDA_SUCCESS;
}
static int refuse_write_values;  /* the driver refuses every write-value (the ranks' GPUs are all different) */
static int write_values_refused, signal_copies;
static CUresult f_write(CUstream st, CUdeviceptr a, u64 v, unsigned flags)
{
    (void)flags;
    if (refuse_write_values) {
        write_values_refused++;
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    lane_push((Lane *)st, (LaneOp){OP_WRITE, (char *)(uintptr_t)a, NULL, 0, v, 0});
    return CUDA_SUCCESS;
}
/* A copy from pageable host memory: the driver takes the source now (so the value is read at the
   call), and it lands in the lane's order, after the copies before it. */
static CUresult f_htod_async(CUdeviceptr a, const void *src, size_t n, CUstream st)
{
    u64 v = 0;
    memcpy(&v, src, n < sizeof v ? n : sizeof v);
    signal_copies++;
    lane_push((Lane *)st, (LaneOp){OP_WRITE, (char *)(uintptr_t)a, NULL, 0, v, 0});
    return CUDA_SUCCESS;
}
static CUresult f_event(CUevent *e, unsigned flags) { (void)flags; *e = (CUevent)calloc(1, sizeof(Event)); return CUDA_SUCCESS; }
static CUresult f_event_destroy(CUevent e) { free(e); return CUDA_SUCCESS; }
static CUresult f_record(CUevent e, CUstream st)
{
    Event *ev = (Event *)e;
    Lane *l = (Lane *)st;
    ev->lane = l;
    ev->seq = ++l->issued;
    lane_push(l, (LaneOp){OP_MARK, NULL, NULL, 0, 0, ev->seq});
    return CUDA_SUCCESS;
}
/* The event recorded before a launch's kernel (gpu_ports_post's `started`): reached once the
   test says the launch's stream got there. */
static Event launch_started;
static int launch_started_reached;
static CUresult f_query(CUevent e)
{
    Event *ev = (Event *)e;
    if (ev == &launch_started)
        return __atomic_load_n(&launch_started_reached, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    return __atomic_load_n(&ev->lane->done, __ATOMIC_ACQUIRE) >= ev->seq ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}
static CUresult f_name(CUresult r, const char **s) { (void)r; *s = "FAKE_ERROR"; return CUDA_SUCCESS; }

static CuDrv fake_driver(void)
{
    CuDrv cu;
    memset(&cu, 0, sizeof cu);
    cu.GetErrorName = f_name;
    cu.GetErrorString = f_name;
    cu.CtxSetCurrent = f_ctx;
    cu.CtxSynchronize = (CUresult(*)(void))f_ok;
    cu.MemAlloc = f_alloc;
    cu.MemFree = f_free;
    cu.MemsetD8 = f_memset;
    cu.MemHostAlloc = f_host_alloc;
    cu.MemFreeHost = f_host_free;
    cu.MemHostGetDevicePointer = f_host_dev;
    cu.StreamCreate = f_stream;
    cu.StreamDestroy = f_stream_destroy;
    cu.StreamSynchronize = f_stream_sync;
    cu.MemcpyAsync = f_copy;
    cu.StreamWriteValue64 = f_write;
    cu.MemcpyHtoDAsync = f_htod_async;
    cu.EventCreate = f_event;
    cu.EventDestroy = f_event_destroy;
    cu.EventRecord = f_record;
    cu.EventQuery = f_query;
    return cu;
}

/* ---- The ranks' memory, and the proxies' site ------------------------------------------------ */

/* Every rank's buffers and device; in per-rank mode also its port words, which a per-rank
   engine keeps in the rank's symmetric region, and one proxy per rank that reaches its peers'
   memory only through the site, as a process of its own would. */
typedef struct World {
    CuDrv *cu;
    FILE *log;
    int n;
    int per_rank;
    CUdeviceptr (*buf)[IR_MAX_BUFS];
    int *device;
    CUdeviceptr *words;
    GpuPorts **proxy;           /* [n] in per-rank mode (rank r's), else [1] */
    int nproxies;
} World;

static int w_use(void *self, int q) { (void)self, (void)q; return CDSL_OK; }
static int w_fail(void *self, int q, CUresult r, const char *what)
{
    World *w = self;
    fprintf(w->log, "rank %d: %s failed: %d\n", q, what, (int)r);
    return CDSL_ERR_SYSTEM;
}
static CUdeviceptr w_buf(void *self, int q, int b) { return ((World *)self)->buf[q][b]; }
static CUdeviceptr w_words(void *self, int q)
{
    World *w = self;
    return w->per_rank ? w->words[q] : 0;
}
static bool w_same_device(void *self, int p, int q) { return ((World *)self)->device[p] == ((World *)self)->device[q]; }

static GpuPorts *proxy_of(const World *w, int r)
{
    return w->proxy[w->per_rank ? r : 0];
}

static int world_load(World *w, const IrProgram *ir)
{
    w->nproxies = w->per_rank ? w->n : 1;
    w->proxy = calloc((size_t)w->nproxies, sizeof *w->proxy);
    int st = CDSL_OK;
    for (int i = 0; i < w->nproxies && !st; i++) {
        PortSite site = {.cu = w->cu, .log = w->log, .first = w->per_rank ? i : 0, .last = w->per_rank ? i : w->n - 1,
                         .spin_limit = 150000, /* the pass gives up after 0.3 s without progress */
                         .self = w, .use = w_use, .fail = w_fail, .buf = w_buf, .words = w_words,
                         .same_device = w_same_device};
        st = gpu_ports_load(&site, ir, &w->proxy[i]);
        if (!st && !w->proxy[i])
            st = CDSL_ERR_USAGE;
    }
    return st;
}

static int world_reset(World *w)
{
    int st = CDSL_OK;
    for (int i = 0; i < w->nproxies; i++) {
        int one = w->proxy[i] ? gpu_ports_reset(w->proxy[i]) : CDSL_OK;
        st = st ? st : one;
    }
    return st;
}

/* ---- The blocks' side, as the emitted code does it ---------------------------------------- */

typedef struct Block {
    const IrProgram *ir;
    World *w;
    CdslArgs a;
    int rank, tb;
    size_t chunk;
    unsigned flag;              /* the launch's packet flag (cdsl_packets.cuh: CDSL_PKT_FLAG) */
    int stop_before_request;    /* > 0: stop (as a block that gave up) before this request */
    int ok;
} Block;

/* Where data chunk c's packets start in rank q's packet buffer this launch (cdsl_msc_packets). */
static u64 *packets_at(const Block *b, int q, int c)
{
    const IrProgram *ir = b->ir;
    size_t half = ir->msc_halves == 2 && (b->flag & 1u) == 0 ? (size_t)(ir->bufs[ir->msc_packets].nchunks / 2) * b->chunk : 0;
    return (u64 *)((char *)(uintptr_t)b->w->buf[q][ir->msc_packets] + half + 2 * (size_t)c * b->chunk);
}

/* A bounded wait, as a kernel's: 2 s. */
static int spin_until(const u64 *word, u64 target)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0;; i++) {
        if ((long long)(__atomic_load_n(word, __ATOMIC_ACQUIRE) - target) >= 0)
            return 1;
        if (i > 1000)
            sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec >= 2)
            return 0;
    }
}

static void *block_main(void *arg)
{
    Block *b = arg;
    const IrProgram *ir = b->ir;
    int n = ir->nranks, npairs, nprox, requests = 0;
    ir_port_shape(ir, &npairs, &nprox);
    const IrSeq *s = &ir->ranks[b->rank];
    const CUdeviceptr *bufs = b->w->buf[b->rank];
    b->ok = 1;
    for (int i = 0; i < s->nops && b->ok; i++) {
        const IrOp *op = &s->ops[i];
        if (op->tb != b->tb || op->thread < 0)
            continue;
        int k = (op->chan - IR_PORT_REQ_CHAN) / 2, pair = op->chan - IR_PORT_CHAN;
        switch (emit_port_kind(op, b->rank)) {
        case EMIT_PORT_REQUEST: {
            if (++requests == b->stop_before_request)
                return NULL;
            if (ir->msc_packets)    /* cdsl_port_request_flag: the flag before the count */
                __atomic_store_n(&b->a.port_host[CDSL_PORT_HOST_FLAG(k)], (u64)b->flag, __ATOMIC_RELAXED);
            u64 v = ++b->a.port[CDSL_PORT_REQ_MADE(n, npairs, k)];
            __atomic_store_n(&b->a.port_host[CDSL_PORT_HOST_REQ(k)], v, __ATOMIC_RELEASE);
            continue;
        }
        case EMIT_PORT_FLUSH_WAIT: {
            u64 v = ++b->a.port[CDSL_PORT_FLUSH_MADE(n, npairs, k)];
            b->ok = spin_until(&b->a.port_host[CDSL_PORT_HOST_FLUSHED(k)], v);
            continue;
        }
        case EMIT_PORT_WAIT: {
            u64 v = b->a.port[CDSL_PORT_CONSUMED(n, npairs, pair, op->peer)] + 1;
            b->ok = spin_until(&b->a.port[CDSL_PORT_ARRIVED(n, pair, op->peer)], v);
            b->a.port[CDSL_PORT_CONSUMED(n, npairs, pair, op->peer)] = v;
            continue;
        }
        case EMIT_PORT_NONE:
            break;
        }
        if (op->kind == IR_COPY) {
            memcpy((char *)(uintptr_t)bufs[op->dst.buf] + (size_t)op->dst.first * b->chunk,
                   (char *)(uintptr_t)bufs[op->src.buf] + (size_t)op->src.first * b->chunk,
                   (size_t)op->dst.count * b->chunk);
        } else if (op->kind == IR_MPKT_PUT) {     /* cdsl_tb_msc_put_packets */
            u64 *dst = packets_at(b, op->peer, op->dst.first);
            size_t words = (size_t)op->dst.count * b->chunk / 4;
            const u64 *from = op->src.buf == ir->msc_packets ? packets_at(b, b->rank, op->src.first) : NULL;
            const unsigned *src = (const unsigned *)((char *)(uintptr_t)bufs[op->src.buf] + (size_t)op->src.first * b->chunk);
            for (size_t j = 0; j < words; j++)
                __atomic_store_n(&dst[j], (u64)b->flag << 32 | (from ? (unsigned)from[j] : src[j]), __ATOMIC_RELAXED);
        } else if (op->kind == IR_MPKT_READ) {    /* cdsl_tb_msc_read_packets: poll, then copy the data out */
            const u64 *pk = packets_at(b, b->rank, op->src.first);
            size_t words = (size_t)op->src.count * b->chunk / 4;
            unsigned *dst = op->dst.buf == ir->msc_packets ? NULL
                          : (unsigned *)((char *)(uintptr_t)bufs[op->dst.buf] + (size_t)op->dst.first * b->chunk);
            for (size_t j = 0; j < words && b->ok; j++) {
                struct timespec t0, t;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                u64 w;
                while ((unsigned)((w = __atomic_load_n(&pk[j], __ATOMIC_ACQUIRE)) >> 32) != b->flag) {
                    clock_gettime(CLOCK_MONOTONIC, &t);
                    if (t.tv_sec - t0.tv_sec >= 2) {
                        b->ok = 0;
                        break;
                    }
                    sched_yield();
                }
                if (dst)
                    dst[j] = (unsigned)w;
            }
        } else if (op->kind != IR_NOP) {
            fprintf(stderr, "port_proxy: the stand-in blocks cannot run %s\n", ir_kind_name(op->kind));
            b->ok = 0;
        }
    }
    return NULL;
}

/* One launch: a pass posted by every proxy, every block of every rank run, the passes drained.
   late_s > 0: the blocks start that late; with `started`, the passes are told when they do. */
static int launch(World *w, const IrProgram *ir, size_t chunk, int stop_rank, int *blocks_ok, double late_s,
                  int started)
{
    static unsigned launches;   /* the packet epoch: every launch advances it, as the kernels' does */
    unsigned flag = CDSL_PKT_FLAG(launches++);
    __atomic_store_n(&launch_started_reached, 0, __ATOMIC_RELEASE);
    int st = CDSL_OK;
    for (int i = 0; i < w->nproxies && !st; i++)
        st = gpu_ports_post(w->proxy[i], chunk, started ? (CUevent)&launch_started : NULL);
    if (st)
        return st;
    if (late_s > 0) {
        struct timespec t = {(time_t)late_s, (long)((late_s - (double)(time_t)late_s) * 1e9)};
        nanosleep(&t, NULL);
    }
    __atomic_store_n(&launch_started_reached, 1, __ATOMIC_RELEASE);
    int total = 0;
    for (int r = 0; r < ir->nranks; r++)
        total += ir_block_units(ir, r);
    Block *b = calloc((size_t)total, sizeof *b);
    pthread_t *t = calloc((size_t)total, sizeof *t);
    for (int r = 0, i = 0; r < ir->nranks; r++)
        for (int tb = 0; tb < ir_block_units(ir, r); tb++, i++) {
            b[i] = (Block){ir, w, {0}, r, tb, chunk, flag, r == stop_rank && tb == 0 ? 1 : 0, 0};
            gpu_ports_args(proxy_of(w, r), r, &b[i].a);
            pthread_create(&t[i], NULL, block_main, &b[i]);
        }
    *blocks_ok = 1;
    for (int i = 0; i < total; i++) {
        pthread_join(t[i], NULL);
        *blocks_ok &= b[i].ok || b[i].stop_before_request;
    }
    free(b);
    free(t);
    for (int i = 0; i < w->nproxies; i++) {
        int one = gpu_ports_drain(w->proxy[i]);
        st = st ? st : one;
    }
    return st;
}

static void fill(World *w, const IrProgram *ir, size_t chunk, int pass)
{
    for (int r = 0; r < ir->nranks; r++)
        for (int buf = 0; buf < ir->nbufs; buf++) {
            if (buf == ir->msc_packets && buf)
                continue;       /* packets stay from launch to launch, as on the GPU: the flag tells them apart */
            unsigned char *p = (unsigned char *)(uintptr_t)w->buf[r][buf];
            for (size_t i = 0; i < (size_t)ir->bufs[buf].nchunks * chunk; i++)
                p[i] = buf == IR_INPUT ? (unsigned char)(pass * 31 + r * 7 + i) : 0;
        }
}

/* An allgather's output: chunk c of every rank is rank c's input. */
static int allgathered(World *w, const IrProgram *ir, size_t chunk)
{
    for (int r = 0; r < ir->nranks; r++)
        for (int c = 0; c < ir->nranks; c++)
            if (memcmp((char *)(uintptr_t)w->buf[r][IR_OUTPUT] + (size_t)c * chunk,
                       (char *)(uintptr_t)w->buf[c][IR_INPUT], chunk) != 0)
                return 0;
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4)
        return 2;
    int n = atoi(argv[2]);
    const char *mode = argc == 4 ? argv[3] : "";
    int per_rank = !strncmp(mode, "per-rank", 8);
    if (per_rank)
        mode += strlen(mode) > 8 ? 9 : 8;   /* "per-rank" or "per-rank-REST" */
    refuse_write_values = !strncmp(mode, "refuse-write-values", 19);
    int no_copy = !strcmp(mode, "refuse-write-values-no-copy");
    cdsl_compile_opts o = {.path = argv[1], .nranks = n, .stop_after = CDSL_STAGE_CHECK, .color = 0};
    cdsl_program *prog = NULL;
    if (cdsl_compile(&o, &prog) != CDSL_OK || !prog) {
        printf("[FAIL] %s compiles\n", argv[1]);
        return 1;
    }
    const IrProgram *ir = program_ir(prog);
    n = ir->nranks;
    size_t chunk = 4096;
    char *logbuf = NULL;
    size_t loglen = 0;
    FILE *log = open_memstream(&logbuf, &loglen);
    CuDrv cu = fake_driver();
    if (no_copy)
        cu.MemcpyHtoDAsync = NULL;
    World w = {.cu = &cu, .log = log, .n = n, .per_rank = per_rank};
    w.buf = calloc((size_t)n, sizeof *w.buf);
    w.device = calloc((size_t)n, sizeof *w.device);
    w.words = calloc((size_t)n, sizeof *w.words);
    int npairs, nprox;
    ir_port_shape(ir, &npairs, &nprox);
    for (int r = 0; r < n; r++) {
        w.device[r] = refuse_write_values ? r : 0;  /* refusing: a GPU per rank, so every signal crosses GPUs */
        for (int b = 0; b < ir->nbufs; b++)
            w.buf[r][b] = (CUdeviceptr)(uintptr_t)calloc((size_t)ir->bufs[b].nchunks, chunk);
        /* a per-rank engine's port words, in the rank's region: not zero when the proxy comes */
        w.words[r] = (CUdeviceptr)(uintptr_t)malloc(8 * (size_t)CDSL_PORT_WORDS(n, npairs, nprox) + 8);
        memset((void *)(uintptr_t)w.words[r], 0x5a, 8 * (size_t)CDSL_PORT_WORDS(n, npairs, nprox) + 8);
    }
    int st = world_load(&w, ir);
    char what[256], why[512];
    snprintf(why, sizeof why, "status %d", st);
    snprintf(what, sizeof what, "%s for a program with port channels",
             per_rank ? "a proxy per rank loads, each serving its own rank's blocks" : "the proxy loads");
    expect(st == CDSL_OK, what, why);
    int ok = st == CDSL_OK;
    int gather = ir->coll == COLL_ALLGATHER;
    if (ok && no_copy) {    /* a refused write-value and nothing to fall back on: a named failure */
        int blocks_ok = 0;
        fill(&w, ir, chunk, 0);
        st = launch(&w, ir, chunk, -1, &blocks_ok, 0, 0);
        fflush(log);
        snprintf(why, sizeof why, "status %d, log: %.200s", st, logbuf ? logbuf : "");
        expect(st != CDSL_OK && logbuf && strstr(logbuf, "the port proxy's signal to rank"),
               "a refused write-value with no copy to fall back on fails the pass, naming the signal", why);
        world_reset(&w);
        goto done;
    }
    for (int pass = 0; ok && pass < 3; pass++) {
        fill(&w, ir, chunk, pass);
        int blocks_ok = 0;
        st = launch(&w, ir, chunk, -1, &blocks_ok, 0, 0);
        snprintf(what, sizeof what, "launch %d of %s at %d ranks: every request served, every wait released%s", pass + 1,
                 ir->name, n, gather ? ", the allgather verified" : "");
        snprintf(why, sizeof why, "status %d, blocks %s, result %s", st, blocks_ok ? "done" : "stuck",
                 gather && !allgathered(&w, ir, chunk) ? "wrong" : "ok");
        expect(!st && blocks_ok && (!gather || allgathered(&w, ir, chunk)), what, why);
    }
    if (refuse_write_values) {
        snprintf(why, sizeof why, "%d write-values refused, %d signals copied", write_values_refused, signal_copies);
        int once = per_rank ? write_values_refused == n : write_values_refused == 1;
        expect(once && signal_copies > 0,
               "the driver refused a write-value into another GPU once per proxy; every signal after it was a copy of "
               "its count", why);
    }
    if (ok && n >= 2) {
        int blocks_ok = 0;
        fill(&w, ir, chunk, 5);
        st = launch(&w, ir, chunk, 1, &blocks_ok, 0, 0);    /* rank 1's block 0 stops before its first request */
        fflush(log);
        snprintf(why, sizeof why, "status %d, log: %.200s", st, logbuf ? logbuf : "");
        expect(st == CDSL_ERR_RUNTIME && logbuf && strstr(logbuf, "rank 1's port proxy") &&
                   strstr(logbuf, "gave up waiting at") && strstr(logbuf, "for its thread block's request"),
               "a block that stops before a request: the pass gives up, naming rank 1's proxy and where it waited", why);
        st = world_reset(&w);
        expect(st == CDSL_OK, "gpu_ports_reset after it", "failed");
        fill(&w, ir, chunk, 6);
        st = launch(&w, ir, chunk, -1, &blocks_ok, 0, 0);
        snprintf(what, sizeof what, "after the reset, the next launch of %s runs clean%s", ir->name,
                 gather ? " and verifies" : "");
        expect(!st && blocks_ok && (!gather || allgathered(&w, ir, chunk)), what, "it did not");
        /* A launch whose stream reaches the kernel late (the caller's earlier work on it): the
           pass told when it starts waits; one not told gives up, as the bound says. */
        fill(&w, ir, chunk, 7);
        st = launch(&w, ir, chunk, -1, &blocks_ok, 0.6, 1);
        snprintf(why, sizeof why, "status %d, blocks %s", st, blocks_ok ? "done" : "stuck");
        expect(!st && blocks_ok && (!gather || allgathered(&w, ir, chunk)),
               "a launch whose kernel starts 0.6 s after its pass (twice the bound) runs clean: the wait counts from "
               "the event before the kernel", why);
        fill(&w, ir, chunk, 8);
        st = launch(&w, ir, chunk, -1, &blocks_ok, 0.6, 0);
        expect(st == CDSL_ERR_RUNTIME, "without that event, the same late launch's pass gives up after its bound",
               "it did not");
        world_reset(&w);
    }
    /* A kernel's wait that gave up on port words names its place and what it waited for. */
    bool seen[EMIT_PORT_WAIT + 1] = {0};
    for (int i = 0; n >= 2 && i < ir->ranks[1].nops; i++) {
        const IrOp *op = &ir->ranks[1].ops[i];
        EmitPortKind kind = emit_port_kind(op, 1);
        if ((kind != EMIT_PORT_WAIT && kind != EMIT_PORT_FLUSH_WAIT) || seen[kind])
            continue;
        seen[kind] = true;
        unsigned rec[CDSL_ERROR_WORDS] = {1, 1, (unsigned)op->loc.line,
                                          kind == EMIT_PORT_WAIT ? CDSL_PORT_SEM_COUNTER(op->peer)
                                                                 : CDSL_PORT_FLUSH_COUNTER((op->chan - IR_PORT_REQ_CHAN) / 2)};
        char *text = NULL, want[160];
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        gpu_report_record(f, ir, n, 1, rec, 100);
        fclose(f);
        if (kind == EMIT_PORT_WAIT)
            snprintf(want, sizeof want, ":%d:%d (a port channel's signal from rank %d's proxy)", op->loc.line, op->loc.col,
                     op->peer);
        else
            snprintf(want, sizeof want, ":%d:%d (a flush of its port proxy %d)", op->loc.line, op->loc.col,
                     (op->chan - IR_PORT_REQ_CHAN) / 2);
        snprintf(what, sizeof what, "a kernel's %s that gave up is reported at its line:col, naming what it waited for",
                 kind == EMIT_PORT_WAIT ? "port wait" : "flush wait");
        snprintf(why, sizeof why, "wanted '%s' in: %.200s", want, text ? text : "");
        expect(text && strstr(text, want) && strstr(text, "rank 1 gave up waiting at"), what, why);
        free(text);
    }
done:
    for (int i = 0; w.proxy && i < w.nproxies; i++)
        gpu_ports_destroy(w.proxy[i]);
    free(w.proxy);
    for (int r = 0; r < n; r++) {
        for (int b = 0; b < ir->nbufs; b++)
            free((void *)(uintptr_t)w.buf[r][b]);
        free((void *)(uintptr_t)w.words[r]);
    }
    free(w.buf);
    free(w.device);
    free(w.words);
    fclose(log);
    free(logbuf);
    cdsl_program_destroy(prog);
    return failures != 0;
}
