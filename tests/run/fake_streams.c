/*
 * fake_streams.c - a stand-in libcuda.so.1 whose streams really are streams: for
 * tests/run/ce_fake.sh, on machines without a GPU.
 *
 * Device memory is host memory. Every stream is a thread that runs its operations in order:
 * copies (cuMemcpyAsync, piece by piece with a yield between pieces, so that a reader that
 * is not ordered after a copy sees it half done), memsets, stream write-value (a sequentially
 * consistent store: the memory barrier before it) and wait-value (polls until the cyclic
 * greater-or-equal holds; like the hardware it never gives up), event records and waits
 * (a wait waits for the record that was the event's latest when the wait was enqueued, as
 * CUDA's does), and kernels (the allgather_nvls program through the argument block, switch
 * counted in aggregate on the sync words, as the p2p flavour does). Stream capture records
 * what the captured streams enqueue (a stream joins a capture by waiting on an event recorded
 * in it) and checks that every stream that joined is joined back before the capture ends; a
 * graph launch enqueues the recorded operations again on their streams, after the launching
 * stream's earlier work and before its later work.
 *
 * Checks, reported as "FAKE-CUDA VIOLATION" and exit 99: a copy or a word outside every
 * allocation, an operation on a stream of a device that is not current, a flush flag the
 * device does not offer, an unjoined capture; with FAKE_STRICT=1 also every write-value that
 * does not store exactly one more than the word held (counters grow by one per signal; a write of
 * zero is not a count, and neither checked nor counted).
 * Knobs: FAKE_NGPU (2), FAKE_JITTER=US (one copy in four, at random, starts US microseconds
 * late: orders that nothing enforces then come out differently), FAKE_SEED, FAKE_FLUSH=1 (the device offers CU_STREAM_WAIT_VALUE_FLUSH),
 * FAKE_NO_MEMOPS=1 (it has no 64-bit stream memory operations),
 * FAKE_NO_PEER_WRITE=1 (a write-value into another device's memory is refused), FAKE_FAIL_WAIT=K
 * (the K-th cuStreamWaitValue64 call fails: the rest of a run is never enqueued), FAKE_DROP_WRITE=K (the K-th
 * write-value of the process is lost, and every later one to the same word: a signaller that
 * stops, so that some wait never completes). At exit it prints what is
 * still alive ("fake-cuda: alive: mem 0 streams 0 events 0 ...").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi.h"

typedef int R;
typedef unsigned long long U;

static void die(const char *what)
{
    fprintf(stderr, "FAKE-CUDA VIOLATION: %s\n", what);
    fflush(stderr);
    _exit(99);
}

static int env_int(const char *n, int def)
{
    const char *v = getenv(n);
    return v && *v ? atoi(v) : def;
}

static __thread int cur;    /* the current context: device + 1, 0 = none */
static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static long mem, streams, events, modules, graphs, execs, ctxs;
static long writes_done, kernels_run, copies_run, waits_run, flush_waits;

__attribute__((destructor)) static void report(void)
{
    fprintf(stderr, "fake-cuda: ran %ld kernels, %ld copies, %ld write-values, %ld wait-values (%ld with FLUSH)\n",
            kernels_run, copies_run, writes_done, waits_run, flush_waits);
    fprintf(stderr, "fake-cuda: alive: mem %ld streams %ld events %ld modules %ld graphs %ld execs %ld contexts %ld\n",
            mem, streams, events, modules, graphs, execs, ctxs);
}

/* ---- allocations ------------------------------------------------------------------------------ */

typedef struct Alloc {
    char *p;
    size_t n;
    int dev;
} Alloc;
static Alloc allocs[4096];

/* The device (context) of the allocation that holds [addr, addr + n); dies when none does. */
static int inside(U addr, size_t n, const char *what)
{
    pthread_mutex_lock(&big);
    for (int i = 0; i < 4096; i++)
        if (allocs[i].p && (char *)(uintptr_t)addr >= allocs[i].p &&
            (char *)(uintptr_t)addr + n <= allocs[i].p + allocs[i].n) {
            int dev = allocs[i].dev;
            pthread_mutex_unlock(&big);
            return dev;
        }
    pthread_mutex_unlock(&big);
    die(what);
    return 0;
}

R cuMemAlloc_v2(U *p, size_t n)
{
    if (!cur)
        die("alloc without a context");
    char *m = aligned_alloc(256, (n + 255) / 256 * 256);
    pthread_mutex_lock(&big);
    for (int i = 0; i < 4096; i++)
        if (!allocs[i].p) {
            allocs[i] = (Alloc){m, n, cur};
            break;
        }
    mem++;
    pthread_mutex_unlock(&big);
    *p = (U)(uintptr_t)m;
    return 0;
}

R cuMemFree_v2(U p)
{
    pthread_mutex_lock(&big);
    for (int i = 0; i < 4096; i++)
        if (allocs[i].p == (char *)(uintptr_t)p)
            allocs[i].p = NULL;
    mem--;
    pthread_mutex_unlock(&big);
    free((void *)(uintptr_t)p);
    return 0;
}

/* ---- streams: a thread each ---------------------------------------------------------------------- */

typedef struct Event {
    int dev;
    U enqueued, done;           /* records enqueued / executed */
    struct Graph *captured_in;  /* recorded in a capture: waiting on it joins that capture */
} Event;

typedef enum { OP_COPY, OP_SET, OP_WRITE, OP_WAIT, OP_RECORD, OP_WAITEV, OP_KERNEL } OpKind;

typedef struct Op {
    OpKind kind;
    U dst, src, value;
    size_t n;
    Event *ev;
    CdslArgs args;
    unsigned blocks;
    struct Stream *stream;      /* in a graph: where it was captured */
} Op;

typedef struct Stream {
    int dev;
    pthread_t thread;
    Op *q;
    int head, tail, cap;
    int busy, quit;
    struct Graph *capture;
} Stream;

typedef struct Graph {
    Op *ops;
    int n, cap;
    Stream *origin;
    Event **launched;           /* the events each launch made, freed with the graph */
    int nlaunched;
} Graph;

static Stream *all_streams[1024];   /* every stream, for cuCtxSynchronize */

static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;   /* any stream or event moved */

/* Piece by piece, with a yield between pieces; with FAKE_JITTER one copy in four starts that
 * late, so that it takes much longer than the stream operations around it (and than the other
 * copies), as a bulk copy does. */
static void copy_slowly(U dst, U src, size_t n, unsigned *seed, int jitter)
{
    if (jitter && seed && rand_r(seed) % 4 == 0)
        usleep((unsigned)jitter);
    for (size_t off = 0; off < n; off += 4096) {
        size_t k = n - off < 4096 ? n - off : 4096;
        memmove((char *)(uintptr_t)dst + off, (char *)(uintptr_t)src + off, k);
        sched_yield();
    }
}

static int geq(U have, U want)
{
    return (long long)(have - want) >= 0;
}

static void kernel(const CdslArgs *a);

static void run_op(Stream *s, Op *op, unsigned *seed, int jitter)
{
    (void)s;
    switch (op->kind) {
    case OP_COPY:
        __atomic_add_fetch(&copies_run, 1, __ATOMIC_SEQ_CST);
        copy_slowly(op->dst, op->src, op->n, seed, jitter);
        break;
    case OP_SET:
        memset((void *)(uintptr_t)op->dst, (int)op->value, op->n);
        break;
    case OP_WRITE: {
        U *w = (U *)(uintptr_t)op->dst;
        if (op->value == 0) {   /* not a count (the library's probe of peer memory): as it is */
            __atomic_store_n(w, op->value, __ATOMIC_SEQ_CST);
            break;
        }
        long k = __atomic_add_fetch(&writes_done, 1, __ATOMIC_SEQ_CST);
        static U lost;          /* the word whose writes are lost from FAKE_DROP_WRITE on */
        if (k == env_int("FAKE_DROP_WRITE", 0))
            __atomic_store_n(&lost, op->dst, __ATOMIC_SEQ_CST);
        if (op->dst == __atomic_load_n(&lost, __ATOMIC_SEQ_CST))
            break;
        if (getenv("FAKE_STRICT") && __atomic_load_n(w, __ATOMIC_SEQ_CST) + 1 != op->value) {
            char m[128];
            snprintf(m, sizeof m, "a write-value stores %llu into a word holding %llu", op->value,
                     __atomic_load_n(w, __ATOMIC_SEQ_CST));
            die(m);
        }
        __atomic_store_n(w, op->value, __ATOMIC_SEQ_CST);
        break;
    }
    case OP_WAIT:
        __atomic_add_fetch(&waits_run, 1, __ATOMIC_SEQ_CST);
        while (!geq(__atomic_load_n((U *)(uintptr_t)op->dst, __ATOMIC_SEQ_CST), op->value))
            usleep(20);
        break;
    case OP_RECORD:
        pthread_mutex_lock(&big);
        if (op->value > op->ev->done)
            op->ev->done = op->value;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&big);
        break;
    case OP_WAITEV:
        pthread_mutex_lock(&big);
        while (op->ev->done < op->value)
            pthread_cond_wait(&changed, &big);
        pthread_mutex_unlock(&big);
        break;
    case OP_KERNEL:
        __atomic_add_fetch(&kernels_run, 1, __ATOMIC_SEQ_CST);
        kernel(&op->args);
        break;
    }
}

static void *worker(void *arg)
{
    Stream *s = arg;
    unsigned seed = (unsigned)(uintptr_t)s ^ (unsigned)env_int("FAKE_SEED", 1);
    int jitter = env_int("FAKE_JITTER", 0);
    pthread_mutex_lock(&big);
    for (;;) {
        while (s->head == s->tail && !s->quit)
            pthread_cond_wait(&changed, &big);
        if (s->head == s->tail)
            break;
        Op op = s->q[s->head % s->cap];
        s->busy = 1;
        pthread_mutex_unlock(&big);
        run_op(s, &op, &seed, jitter);
        pthread_mutex_lock(&big);
        s->head++;
        s->busy = 0;
        pthread_cond_broadcast(&changed);
    }
    pthread_mutex_unlock(&big);
    return NULL;
}

static void graph_add(Graph *g, const Op *op)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 64;
        g->ops = realloc(g->ops, (size_t)g->cap * sizeof *g->ops);
    }
    g->ops[g->n++] = *op;
}

/* Enqueue (or, while the stream is captured, record) one operation; with big held. */
static void push_locked(Stream *s, Op op)
{
    if (s->capture) {
        op.stream = s;
        graph_add(s->capture, &op);
        return;
    }
    if (s->tail - s->head == s->cap) {
        int cap = s->cap ? s->cap * 2 : 64;
        Op *q = malloc((size_t)cap * sizeof *q);
        for (int i = s->head; i < s->tail; i++)
            q[i % cap] = s->q[i % s->cap];
        free(s->q);
        s->q = q;
        s->cap = cap;
    }
    s->q[s->tail++ % s->cap] = op;
    pthread_cond_broadcast(&changed);
}

static Stream *legacy[64];

static Stream *new_stream(int dev)
{
    Stream *s = calloc(1, sizeof *s);
    s->dev = dev;
    pthread_create(&s->thread, NULL, worker, s);
    pthread_mutex_lock(&big);
    for (int i = 0; i < 1024; i++)
        if (!all_streams[i]) {
            all_streams[i] = s;
            break;
        }
    pthread_mutex_unlock(&big);
    return s;
}

/* NULL and CU_STREAM_LEGACY: one stream per device, made on first use. */
static Stream *stream_of(void *h)
{
    if (h && (uintptr_t)h != 1)
        return h;
    pthread_mutex_lock(&big);
    if (!legacy[cur])
        legacy[cur] = new_stream(cur);
    Stream *s = legacy[cur];
    pthread_mutex_unlock(&big);
    return s;
}

static Stream *current_stream(void *h, const char *what)
{
    Stream *s = stream_of(h);
    if (s->dev != cur)
        die(what);
    return s;
}

static void push(Stream *s, Op op)
{
    pthread_mutex_lock(&big);
    push_locked(s, op);
    pthread_mutex_unlock(&big);
}

static void drain_locked(Stream *s)
{
    while (s->head != s->tail || s->busy)
        pthread_cond_wait(&changed, &big);
}

R cuStreamCreate(void **s, unsigned f)
{
    (void)f;
    if (!cur)
        die("stream without a context");
    *s = new_stream(cur);
    __atomic_add_fetch(&streams, 1, __ATOMIC_SEQ_CST);
    return 0;
}

R cuStreamDestroy_v2(void *h)
{
    Stream *s = h;
    pthread_mutex_lock(&big);
    drain_locked(s);
    for (int i = 0; i < 1024; i++)
        if (all_streams[i] == s)
            all_streams[i] = NULL;
    s->quit = 1;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&big);
    pthread_join(s->thread, NULL);
    free(s->q);
    free(s);
    __atomic_sub_fetch(&streams, 1, __ATOMIC_SEQ_CST);
    return 0;
}

R cuStreamSynchronize(void *h)
{
    Stream *s = stream_of(h);
    pthread_mutex_lock(&big);
    if (s->capture)
        die("cuStreamSynchronize on a capturing stream");
    drain_locked(s);
    pthread_mutex_unlock(&big);
    return 0;
}

R cuStreamQuery(void *h)
{
    Stream *s = stream_of(h);
    pthread_mutex_lock(&big);
    int idle = s->head == s->tail && !s->busy;
    pthread_mutex_unlock(&big);
    return idle ? 0 : 600;
}

/* ---- events --------------------------------------------------------------------------------------- */

R cuEventCreate(void **e, unsigned f)
{
    (void)f;
    Event *ev = calloc(1, sizeof *ev);
    ev->dev = cur;
    *e = ev;
    __atomic_add_fetch(&events, 1, __ATOMIC_SEQ_CST);
    return 0;
}

R cuEventDestroy_v2(void *e)
{
    free(e);
    __atomic_sub_fetch(&events, 1, __ATOMIC_SEQ_CST);
    return 0;
}

R cuEventRecord(void *e, void *h)
{
    Event *ev = e;
    Stream *s = current_stream(h, "record on a stream of another device");
    if (ev->dev != s->dev)
        die("record of an event of another device");
    pthread_mutex_lock(&big);
    ev->captured_in = s->capture;   /* a captured record changes nothing until a launch */
    push_locked(s, (Op){.kind = OP_RECORD, .ev = ev, .value = s->capture ? 0 : ++ev->enqueued});
    pthread_mutex_unlock(&big);
    return 0;
}

R cuStreamWaitEvent(void *h, void *e, unsigned f)
{
    (void)f;
    Event *ev = e;
    Stream *s = current_stream(h, "wait on a stream of another device");
    pthread_mutex_lock(&big);
    if (ev->captured_in && !s->capture)
        s->capture = ev->captured_in;       /* the stream joins the capture */
    push_locked(s, (Op){.kind = OP_WAITEV, .ev = ev, .value = ev->enqueued});
    pthread_mutex_unlock(&big);
    return 0;
}

R cuEventQuery(void *e)
{
    Event *ev = e;
    pthread_mutex_lock(&big);
    int done = ev->done >= ev->enqueued;
    pthread_mutex_unlock(&big);
    return done ? 0 : 600;
}

R cuEventSynchronize(void *e)
{
    Event *ev = e;
    pthread_mutex_lock(&big);
    U want = ev->enqueued;
    while (ev->done < want)
        pthread_cond_wait(&changed, &big);
    pthread_mutex_unlock(&big);
    return 0;
}

R cuEventElapsedTime_v2(float *ms, void *a, void *b)
{
    (void)a;
    (void)b;
    *ms = 1;
    return 0;
}

/* ---- copies and memory operations ------------------------------------------------------------------- */

R cuMemcpyAsync(U d, U s, size_t n, void *h)
{
    Stream *st = current_stream(h, "copy on a stream of another device");
    inside(d, n, "cuMemcpyAsync writes outside every allocation");
    inside(s, n, "cuMemcpyAsync reads outside every allocation");
    push(st, (Op){.kind = OP_COPY, .dst = d, .src = s, .n = n});
    return 0;
}

R cuMemcpyDtoHAsync_v2(void *d, U s, size_t n, void *h)
{
    Stream *st = current_stream(h, "copy on a stream of another device");
    inside(s, n, "cuMemcpyDtoHAsync reads outside every allocation");
    push(st, (Op){.kind = OP_COPY, .dst = (U)(uintptr_t)d, .src = s, .n = n});
    return 0;
}

R cuMemcpyDtoDAsync_v2(U d, U s, size_t n, void *h) { return cuMemcpyAsync(d, s, n, h); }

R cuMemsetD8Async(U d, unsigned char v, size_t n, void *h)
{
    Stream *st = current_stream(h, "memset on a stream of another device");
    inside(d, n, "cuMemsetD8Async writes outside every allocation");
    push(st, (Op){.kind = OP_SET, .dst = d, .value = v, .n = n});
    return 0;
}

R cuStreamWriteValue64_v2(void *h, U addr, U v, unsigned flags)
{
    Stream *st = current_stream(h, "write-value on a stream of another device");
    int dev = inside(addr, 8, "a write-value outside every allocation");
    if (flags)
        die("write-value flags (the v2 call takes none)");
    if (dev != st->dev && env_int("FAKE_NO_PEER_WRITE", 0))
        return 1;       /* CUDA_ERROR_INVALID_VALUE, as a driver that refuses peer memory would */
    push(st, (Op){.kind = OP_WRITE, .dst = addr, .value = v});
    return 0;
}

R cuStreamWaitValue64_v2(void *h, U addr, U v, unsigned flags)
{
    Stream *st = current_stream(h, "wait-value on a stream of another device");
    inside(addr, 8, "a wait-value outside every allocation");
    if ((flags & ~(1u << 30)) != 0)
        die("wait-value: only GEQ (with or without FLUSH) is expected");
    if ((flags & (1u << 30)) && !env_int("FAKE_FLUSH", 0))
        return 801;     /* CUDA_ERROR_NOT_SUPPORTED, as a device without the flush does */
    static long calls;
    if (__atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST) == env_int("FAKE_FAIL_WAIT", 0))
        return 999;     /* an enqueue that fails half way */
    if (flags)
        __atomic_add_fetch(&flush_waits, 1, __ATOMIC_SEQ_CST);
    push(st, (Op){.kind = OP_WAIT, .dst = addr, .value = v});
    return 0;
}

/* ---- capture and graphs ---------------------------------------------------------------------------------- */

R cuStreamBeginCapture_v2(void *h, int mode)
{
    (void)mode;
    Stream *s = stream_of(h);
    Graph *g = calloc(1, sizeof *g);
    g->origin = s;
    pthread_mutex_lock(&big);
    s->capture = g;
    pthread_mutex_unlock(&big);
    __atomic_add_fetch(&graphs, 1, __ATOMIC_SEQ_CST);
    return 0;
}

R cuStreamIsCapturing(void *h, int *status)
{
    Stream *s = stream_of(h);
    pthread_mutex_lock(&big);
    *status = s->capture ? 1 : 0;
    pthread_mutex_unlock(&big);
    return 0;
}

/* The streams of a graph with the index of their first and last operation. */
typedef struct Member {
    Stream *s;
    int first, last;
} Member;

static int members(const Graph *g, Member *m, int max)
{
    int n = 0;
    for (int i = 0; i < g->n; i++) {
        int k = 0;
        while (k < n && m[k].s != g->ops[i].stream)
            k++;
        if (k == n) {
            if (n == max)
                die("too many streams in one graph");
            m[n++] = (Member){g->ops[i].stream, i, i};
        }
        m[k].last = i;
    }
    return n;
}

/* Every stream that joined must end in a record that a joined stream waited on afterwards:
 * all of its work comes before the origin's end, directly or through other streams. */
static void check_joined(Graph *g)
{
    Member m[1024];
    int n = members(g, m, 1024), joined[1024] = {0}, grew = 1;
    for (int k = 0; k < n; k++)
        joined[k] = m[k].s == g->origin;
    while (grew) {
        grew = 0;
        for (int k = 0; k < n; k++) {
            const Op *last = &g->ops[m[k].last];
            for (int i = m[k].last + 1; !joined[k] && last->kind == OP_RECORD && i < g->n; i++)
                for (int t = 0; t < n; t++)
                    if (joined[t] && m[t].s == g->ops[i].stream && g->ops[i].kind == OP_WAITEV &&
                        g->ops[i].ev == last->ev)
                        joined[k] = grew = 1;
        }
    }
    for (int k = 0; k < n; k++)
        if (!joined[k])
            die("the capture ended with a stream that was not joined back to the origin");
}

static void end_capture_locked(Graph *g, Stream *origin)
{
    origin->capture = NULL;
    for (int i = 0; i < g->n; i++) {
        g->ops[i].stream->capture = NULL;
        if (g->ops[i].ev)
            g->ops[i].ev->captured_in = NULL;
    }
}

R cuStreamEndCapture(void *h, void **out)
{
    Stream *s = stream_of(h);
    pthread_mutex_lock(&big);
    Graph *g = s->capture;
    if (!g || g->origin != s)
        die("cuStreamEndCapture on a stream that did not begin the capture");
    end_capture_locked(g, s);
    pthread_mutex_unlock(&big);
    check_joined(g);
    *out = g;
    return 0;
}

R cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long f)
{
    (void)f;
    *e = g;
    __atomic_add_fetch(&execs, 1, __ATOMIC_SEQ_CST);
    return 0;
}

R cuGraphUpload(void *e, void *s) { (void)e; (void)s; return 0; }

/* The recorded operations again, on their streams: each after the launching stream's work so
 * far, and the launching stream's later work after all of them. */
R cuGraphLaunch(void *e, void *h)
{
    Graph *g = e;
    Stream *launch = stream_of(h);
    if (launch != g->origin)
        die("a graph launched on another stream than it was captured from");
    static Member m[1024];
    int nm = members(g, m, 1024);
    Event *ends = calloc((size_t)nm + 1, sizeof *ends), *start = &ends[nm];
    pthread_mutex_lock(&big);
    g->launched = realloc(g->launched, (size_t)(g->nlaunched + 1) * sizeof *g->launched);
    g->launched[g->nlaunched++] = ends;
    push_locked(launch, (Op){.kind = OP_RECORD, .ev = start, .value = ++start->enqueued});
    for (int k = 0; k < nm; k++)
        if (m[k].s != launch)
            push_locked(m[k].s, (Op){.kind = OP_WAITEV, .ev = start, .value = start->enqueued});
    for (int i = 0; i < g->n; i++) {
        Stream *s = g->ops[i].stream;
        Op op = g->ops[i];
        if (op.kind == OP_RECORD)
            op.value = ++op.ev->enqueued;
        else if (op.kind == OP_WAITEV)
            op.value = op.ev->enqueued;
        push_locked(s, op);
    }
    for (int k = 0; k < nm; k++) {
        if (m[k].s == launch)
            continue;
        push_locked(m[k].s, (Op){.kind = OP_RECORD, .ev = &ends[k], .value = ++ends[k].enqueued});
        push_locked(launch, (Op){.kind = OP_WAITEV, .ev = &ends[k], .value = ends[k].enqueued});
    }
    pthread_mutex_unlock(&big);
    return 0;
}

R cuGraphExecDestroy(void *e) { (void)e; __atomic_sub_fetch(&execs, 1, __ATOMIC_SEQ_CST); return 0; }

R cuGraphDestroy(void *x)
{
    Graph *g = x;
    for (int i = 0; i < g->nlaunched; i++)
        free(g->launched[i]);
    free(g->launched);
    free(g->ops);
    free(g);
    __atomic_sub_fetch(&graphs, 1, __ATOMIC_SEQ_CST);
    return 0;
}

/* ---- the kernel: allgather_nvls through the argument block ----------------------------------------- */

static void arrive(const CdslArgs *a)
{
    for (int p = 0; p < a->nranks; p++)
        __atomic_fetch_add(&a->peer_sync[p][CDSL_SYNC_SWITCH], 1ull, __ATOMIC_SEQ_CST);
}

static void wait_round(const CdslArgs *a, int k)
{
    U want = a->state[CDSL_STATE_SWITCH] + (U)k * (U)a->nranks;
    while (!geq(__atomic_load_n(&a->sync[CDSL_SYNC_SWITCH], __ATOMIC_SEQ_CST), want))
        usleep(20);
}

static void kernel(const CdslArgs *a)
{
    arrive(a);
    wait_round(a, 1);
    for (int p = 0; p < a->nranks; p++)
        copy_slowly((U)(uintptr_t)(a->peer_buf[p * 8 + 1] + (size_t)a->rank * a->chunk_bytes),
                    (U)(uintptr_t)a->buf[0], a->chunk_bytes, NULL, 0);
    arrive(a);
    wait_round(a, 2);
    a->state[CDSL_STATE_SWITCH] += 2ull * (U)a->nranks;
}

R cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sm,
                 void *h, void **params, void **extra)
{
    (void)f; (void)gy; (void)gz; (void)by; (void)bz; (void)sm; (void)extra;
    if (bx % 32 || gx < 1)
        die("launch shape");
    Stream *s = current_stream(h, "launch on a stream of another device");
    push(s, (Op){.kind = OP_KERNEL, .args = *(CdslArgs *)params[0], .blocks = gx});
    return 0;
}

/* ---- the rest of the driver ------------------------------------------------------------------------------ */

R cuGetErrorName(R e, const char **s) { (void)e; *s = "CUDA_ERROR_FAKE"; return 0; }
R cuGetErrorString(R e, const char **s) { (void)e; *s = "fake"; return 0; }
R cuInit(unsigned f) { (void)f; return 0; }
R cuDriverGetVersion(int *v) { *v = 13000; return 0; }
R cuDeviceGetCount(int *c) { *c = env_int("FAKE_NGPU", 2); return 0; }
R cuDeviceGet(int *d, int o) { *d = o; return o < env_int("FAKE_NGPU", 2) ? 0 : 101; }
R cuDeviceGetName(char *n, int l, int d) { snprintf(n, (size_t)l, "Fake GPU %d", d); return 0; }
R cuDeviceGetAttribute(int *v, int a, int d)
{
    (void)d;
    *v = a == 16 ? 132 : a == 41 ? 1 : a == 75 ? 9 : a == 76 ? 0 : a == 98 ? env_int("FAKE_FLUSH", 0)
       : a == 122 ? !env_int("FAKE_NO_MEMOPS", 0) : 0;
    return 0;
}
R cuDeviceCanAccessPeer(int *c, int a, int b) { (void)a; (void)b; *c = 1; return 0; }
R cuDevicePrimaryCtxRetain(void **c, int d) { __atomic_add_fetch(&ctxs, 1, __ATOMIC_SEQ_CST); *c = (void *)(uintptr_t)(d + 1); return 0; }
R cuDevicePrimaryCtxRelease_v2(int d) { (void)d; __atomic_sub_fetch(&ctxs, 1, __ATOMIC_SEQ_CST); return 0; }
R cuCtxSetCurrent(void *c) { cur = (int)(uintptr_t)c; return 0; }
R cuCtxGetCurrent(void **c) { *c = (void *)(uintptr_t)cur; return 0; }
R cuCtxGetDevice(int *d) { if (!cur) return 201; *d = cur - 1; return 0; }
R cuCtxEnablePeerAccess(void *p, unsigned f) { (void)f; if ((uintptr_t)p == (uintptr_t)cur) die("peer access to itself"); return 0; }
R cuStreamGetCtx(void *h, void **c) { *c = (void *)(uintptr_t)stream_of(h)->dev; return 0; }

/* Every stream of the current device (the legacy one included) has finished. */
R cuCtxSynchronize(void)
{
    if (!cur)
        return 201;
    pthread_mutex_lock(&big);
    for (int i = 0; i < 1024; i++)
        if (all_streams[i] && all_streams[i]->dev == cur)
            drain_locked(all_streams[i]);
    pthread_mutex_unlock(&big);
    return 0;
}

R cuMemcpyHtoD_v2(U d, const void *s, size_t n) { inside(d, n, "cuMemcpyHtoD outside every allocation"); memcpy((void *)(uintptr_t)d, s, n); return 0; }
R cuMemcpyDtoH_v2(void *d, U s, size_t n) { inside(s, n, "cuMemcpyDtoH outside every allocation"); memcpy(d, (void *)(uintptr_t)s, n); return 0; }
R cuMemsetD8_v2(U d, unsigned char v, size_t n) { inside(d, n, "cuMemsetD8 outside every allocation"); memset((void *)(uintptr_t)d, v, n); return 0; }
R cuModuleLoadData(void **m, const void *img)
{
    if (memcmp(img, "\177ELF", 4))
        return 200;
    *m = malloc(1);
    __atomic_add_fetch(&modules, 1, __ATOMIC_SEQ_CST);
    return 0;
}
R cuModuleUnload(void *m) { free(m); __atomic_sub_fetch(&modules, 1, __ATOMIC_SEQ_CST); return 0; }
R cuModuleGetFunction(void **f, void *m, const char *n) { *f = m; return strcmp(n, "cdsl_main") ? 500 : 0; }
R cuFuncGetAttribute(int *v, int a, void *f) { (void)f; *v = a == 0 ? 1024 : 32; return 0; }
R cuOccupancyMaxActiveBlocksPerMultiprocessor(int *b, void *f, int t, size_t s) { (void)f; (void)s; *b = 2048 / t; return 0; }
