/*
 * sim.c - the sim backend: every rank a CPU thread, every buffer host memory.
 *
 * Each unit's thread executes exactly the operations the checker saw, in order ("what you
 * check is what you run"): copy/reduce on its own buffers, put/get into and from a peer's,
 * packets as flagged words in the receiver's slots (section "packets" below),
 * signal/wait on per-pair (and per-channel) arrival counters, and the switch operations as
 * loops over every rank's buffers (store to all, sum over all, both) and a counting barrier
 * that counts as the GPUs do: one counter per rank, which every rank's arrivals increment.
 * Counters follow abi.h: they only grow, across iterations and runs, and the k-th wait
 * completes once the k-th arrival is there. A unit is a rank for a .cdsl program and one
 * thread block of an imported plan (ir.h); a plan's barrier is a counter per rank and id that
 * its blocks' k-th uses fill to k times their number. The rank's start (below) happens in
 * its first unit before any of its units begins, and the rank's end after all have ended.
 *
 * Data operations proceed in blocks of SIM_BLOCK_BYTES; between blocks a rank checks whether
 * the run was stopped, counts progress, and (with a seed) may sleep or yield, which shakes the
 * interleaving of ranks so that a race shows up as a wrong result. Waits spin, then yield,
 * then sleep; a wait gives up once no rank has made progress for the bound (5 s, or
 * spin_limit polls), which stops every rank. After the threads are joined, every rank still
 * stuck in a wait is reported with the .cdsl location of the wait and the counter's state.
 *
 * The start and end of a rank's program stand for the work before and after the collective
 * (docs/language.md), and the sim plays both parts. With a seed, every rank starts each iteration
 * by rewriting its output and scratch buffers with all-ones bytes (the work before may write
 * them), after a random delay: a peer that writes into a rank before that rank has started
 * then loses its data, and a program that reads scratch it has not written reads all-ones.
 * A rank's end is where the work after the collective reads its buffers, so when a rank
 * finishes its last operation it copies its output aside, and reading the output back after
 * a run returns that copy: what the rank's caller would have seen. A program that lets a rank
 * leave before a peer's write into it has landed (a race the checker reports) then gives a
 * wrong result here too, when the schedule (or jitter) lets the rank leave early.
 *
 * Buffers are the sim's own (calloc) or the caller's (cdsl_comm_register, host memory, never
 * freed here). cdsl_run_async runs the program before it returns: there are no streams to
 * enqueue on; its failure is kept for cdsl_comm_status, as a GPU backend reports it there.
 *
 * Memory order: signals are release increments and waits acquire loads, also for `relaxed`
 * ones. C11 has no order that is "execution only": a read on one rank followed by a relaxed
 * signal, and a peer's write after the matching relaxed wait (which the language allows,
 * rule 1) would be a data race in C11 and a report under ThreadSanitizer. On the host the
 * difference is not observable anyway; the checker is what holds programs to acquire/release.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "backend.h"
#include "mem_limit.h"
#include "program.h"
#include "sim.h"
#include "verify.h"

enum {
    SIM_BLOCK_BYTES = 256 * 1024,   /* unit of a data operation between checks */
    SIM_BLOCK_ELEMS = SIM_BLOCK_BYTES / 4,
    SIM_SPIN_POLLS = 64,            /* polls that only spin, then ... */
    SIM_YIELD_POLLS = 1024,         /* ... polls that yield, then polls that sleep */
    SIM_SLEEP_US = 50,
    SIM_DEFAULT_JITTER_US = 20,
    SIM_STALL_SECONDS = 5,          /* default bound: no progress anywhere for this long */
    SIM_STACK_BYTES = 1 << 20,
    SIM_WATCH_POLLS = 32,           /* sleeping polls between two looks at the peers' processes */
};

typedef struct SimRank {
    char *buf[IR_MAX_BUFS];
    _Atomic uint64_t *chan_arrivals; /* [(c - 1) * n + p]: channels c >= 1 of a plan */
    uint64_t *chan_consumed;         /* [(c - 1) * n + p] (private) */
    _Atomic uint64_t bar[IR_MAX_BARRIERS];   /* a plan's barriers: arrivals of the rank's blocks */
    _Atomic uint64_t started;        /* iterations whose start the rank has made */
    _Atomic uint64_t units_done;     /* unit-iterations ended */
    /* The rank's words (SIM_RANK_WORDS(n) of them, in Sim.own_words or, for sim_mp.c, in
     * memory shared between processes): */
    _Atomic uint64_t *arrivals;     /* [n]: arrivals[p] = signals rank p made for this rank */
    _Atomic uint64_t *sw_counter;   /* this rank's copy of the switch counter: every rank's
                                       arrivals land in it (switch_rounds.c says why that is exact) */
    _Atomic uint64_t *sw_made;      /* arrivals this rank made, for the stuck report only */
    _Atomic uint64_t *port_arrivals; /* [n]: on IR_PORT_CHAN, the port channel of a .cdsl program,
                                       which processes share as they share arrivals */
    _Atomic uint64_t *runs_done;    /* [1]: launches this rank completed: the packets' epoch, and
                                       for a peer process, whether this rank's exit fails its run */
    uint64_t *consumed;             /* [n]: waits this rank completed on each peer (private) */
    uint64_t *port_consumed;        /* [n]: the same on IR_PORT_CHAN (private) */
    uint64_t sw_waited;             /* switch waits this rank completed (private) */
    char *final_out;                /* the output as it stood at this rank's end */
    bool final_valid;               /* final_out holds the last run's end state */
} SimRank;

/* A unit's thread: where it was stopped, if it was. */
typedef struct SimUnit {
    int rank, tb, first, end;       /* its ops, [first, end) of its rank's list */
    int stuck_op;                   /* a wait this unit was stopped in, or -1 */
    int stuck_iter;
    uint64_t stuck_want;            /* the arrivals that wait needed (packets: the flag) */
    _Atomic uint64_t *stuck_word;   /* packets: the word whose flag did not come */
    uint64_t bar_uses[IR_MAX_BARRIERS];
} SimUnit;

typedef struct Sim {
    RtConfig cfg;
    int n;
    SimRank *ranks;
    int nbufs;
    size_t bytes[IR_MAX_BUFS];
    bool registered;                /* buf[] are the caller's (cdsl_comm_register): not freed */
    char nothing[16];               /* the address of a registered buffer of no bytes */
    int pending;                    /* a cdsl_run_async failure, for cdsl_comm_status */
    const IrProgram *ir;            /* the loaded program (borrowed) */
    SimUnit *units;                 /* [nunits] of the loaded program */
    int nunits, nchan;              /* nchan: channels per pair the program uses */
    cdsl_dtype dtype;
    int jitter_us;                  /* 0: no jitter */
    int pkt_buf;                    /* the packet slots' buffer (ir_packet_buf), or -1 */
    /* The current run: */
    size_t chunk;
    int iters;
    _Atomic uint64_t *stop;         /* set when a wait gives up: every rank stops */
    _Atomic uint64_t *progress;     /* operations and blocks completed by any rank */
    _Atomic uint64_t *dead_word;    /* a view: 1 + the first rank found dead, or 0 */
    _Atomic uint64_t *own_words;    /* every rank's words and the two above; NULL in a view */
    int (*watch)(void *ctx);        /* a view: a rank whose process has died, or -1 */
    void *watch_ctx;

    pthread_mutex_t gate_mu;        /* the start gate, so that timing starts with all ranks */
    pthread_cond_t gate_cv;
    bool gate_open;
} Sim;

typedef struct SimWorker {
    Sim *s;
    int rank, unit;
    uint64_t rng;
    void *acc;                      /* a block of sums in f32 or u32 */
    char *out;                      /* the same block converted back to the dtype */
    const char **srcs;              /* [n] operand pointers of the current operation */
    char **dsts;                    /* [n] */
    uint64_t want;                  /* arrivals the current wait needs */
    _Atomic uint64_t *pkt_word;     /* the packet word the current recv polls */
    uint64_t epoch;                 /* the launch this unit is in, counted over runs */
    pthread_t thread;
} SimWorker;

/* ---- small helpers ------------------------------------------------------------------------ */

static double sim_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void sim_sleep_us(unsigned us)
{
    struct timespec ts = {us / 1000000u, (long)(us % 1000000u) * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void sim_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* splitmix64: a tiny generator per rank, so jitter needs no shared state. */
static uint64_t sim_rand(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* With a seed: one time in `odds` sleep up to jitter_us, one time in `odds` yield. */
static void sim_jitter(SimWorker *w, unsigned odds)
{
    if (!w->s->jitter_us)
        return;
    uint64_t r = sim_rand(&w->rng);
    unsigned pick = (unsigned)(r % odds);
    if (pick == 0)
        sim_sleep_us((unsigned)((r >> 32) % ((uint64_t)w->s->jitter_us + 1)));
    else if (pick == 1)
        sched_yield();
}

static bool sim_stopped(Sim *s)
{
    return atomic_load_explicit(s->stop, memory_order_relaxed) != 0;
}

/* One block or operation done: progress for the wait bound, a chance of jitter. */
static void sim_advance(SimWorker *w, unsigned odds)
{
    atomic_fetch_add_explicit(w->s->progress, 1, memory_order_relaxed);
    sim_jitter(w, odds);
}

static char *sim_ptr(const Sim *s, int rank, IrRange r)
{
    return s->ranks[rank].buf[r.buf] + (size_t)r.first * s->chunk;
}

static void sim_fmt_bytes(size_t b, char *out, size_t len)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    snprintf(out, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

static void sim_note(const Sim *s, const char *msg)
{
    FILE *out = s->cfg.log ? s->cfg.log : stderr;
    fprintf(out, "cdsl: note: %s\n", msg);
    fflush(out);
}

/* ---- element arithmetic: sums in f32 for the float types, wrapping u32 otherwise ---------- */

static void sim_acc(cdsl_dtype t, void *acc, const char *src, size_t n, bool first)
{
    if (t == CDSL_U32 || t == CDSL_S32) {
        uint32_t *a = acc;
        for (size_t i = 0; i < n; i++) {
            uint32_t v;
            memcpy(&v, src + 4 * i, 4);
            a[i] = first ? v : a[i] + v; /* s32 wraps as two's complement, like u32 */
        }
        return;
    }
    float *a = acc;
    if (t == CDSL_F32) {
        for (size_t i = 0; i < n; i++) {
            float v;
            memcpy(&v, src + 4 * i, 4);
            a[i] = first ? v : a[i] + v;
        }
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, 2);
        float v = t == CDSL_F16 ? rt_f16_to_f32(h) : rt_bf16_to_f32(h);
        a[i] = first ? v : a[i] + v;
    }
}

static void sim_acc_store(cdsl_dtype t, char *dst, const void *acc, size_t n)
{
    if (t == CDSL_F32 || t == CDSL_U32 || t == CDSL_S32) {
        memcpy(dst, acc, 4 * n);
        return;
    }
    const float *a = acc;
    for (size_t i = 0; i < n; i++) {
        uint16_t h = t == CDSL_F16 ? rt_f32_to_f16(a[i]) : rt_f32_to_bf16(a[i]);
        memcpy(dst + 2 * i, &h, 2);
    }
}

/* ---- data operations ------------------------------------------------------------------------ */

/* dsts[k] = src for every k, len bytes, block by block. memmove: an unchecked program may
 * overlap a local copy's operands. */
static bool sim_move(SimWorker *w, char *const *dsts, int ndst, const char *src, size_t len)
{
    for (size_t off = 0; off < len; off += SIM_BLOCK_BYTES) {
        if (sim_stopped(w->s))
            return false;
        size_t n = len - off < SIM_BLOCK_BYTES ? len - off : SIM_BLOCK_BYTES;
        for (int k = 0; k < ndst; k++)
            memmove(dsts[k] + off, src + off, n);
        sim_advance(w, 16);
    }
    return true;
}

/* dsts[k] = srcs[0] + ... + srcs[nsrc-1] element-wise, summed in that order. Every source of
 * a block is read before any destination of it is written, so dst may equal a source. */
static bool sim_combine(SimWorker *w, const char *const *srcs, int nsrc, char *const *dsts, int ndst,
                        size_t len)
{
    cdsl_dtype t = w->s->dtype;
    size_t es = cdsl_dtype_size(t), total = len / es;
    for (size_t e = 0; e < total; e += SIM_BLOCK_ELEMS) {
        if (sim_stopped(w->s))
            return false;
        size_t n = total - e < SIM_BLOCK_ELEMS ? total - e : SIM_BLOCK_ELEMS;
        for (int k = 0; k < nsrc; k++)
            sim_acc(t, w->acc, srcs[k] + e * es, n, k == 0);
        if (ndst == 1) {
            sim_acc_store(t, dsts[0] + e * es, w->acc, n);
        } else {
            sim_acc_store(t, w->out, w->acc, n);
            for (int k = 0; k < ndst; k++)
                memcpy(dsts[k] + e * es, w->out, n * es);
        }
        sim_advance(w, 16);
    }
    return true;
}

/* ---- synchronisation --------------------------------------------------------------------- */

static void sim_backoff(unsigned long long polls)
{
    if (polls < SIM_SPIN_POLLS)
        sim_cpu_relax();
    else if (polls < SIM_YIELD_POLLS)
        sched_yield();
    else
        sim_sleep_us(SIM_SLEEP_US);
}

/* Whether a wait that has seen no progress for `idle` polls, since `since_us`, gives up. */
static bool sim_bound_reached(const Sim *s, unsigned long long idle, double since_us)
{
    if (s->cfg.spin_limit)
        return idle >= s->cfg.spin_limit;
    return sim_now_us() - since_us >= SIM_STALL_SECONDS * 1e6;
}

/* A view: a peer's process has died. The first rank found dead is kept in the shared control
 * words, so that every rank names that one, not a rank that left after reporting it. */
static void sim_peer_died(Sim *s, int q)
{
    uint64_t none = 0;
    atomic_compare_exchange_strong(s->dead_word, &none, (uint64_t)q + 1);
    atomic_store_explicit(s->stop, 1, memory_order_relaxed);
}

/* Whether the word a wait polls holds what it waits for. */
static bool sim_word_ready(_Atomic uint64_t *ctr, uint64_t want, bool flag)
{
    uint64_t v = atomic_load_explicit(ctr, flag ? memory_order_relaxed : memory_order_acquire);
    return flag ? v >> 32 == want : v >= want;
}

/* Wait until *ctr >= want. False when the run stopped, or when this wait reached the bound
 * (then it stops the run). Progress by any rank restarts the bound, so a slow rank in a long
 * reduction never makes its peers give up. */
static bool sim_poll(SimWorker *w, _Atomic uint64_t *ctr, uint64_t want, bool flag);

static bool sim_wait(SimWorker *w, _Atomic uint64_t *ctr, uint64_t want)
{
    return sim_poll(w, ctr, want, false);
}

/* sim_wait's loop; with `flag`, until the word's high half (a packet's flag) equals want. */
static bool sim_poll(SimWorker *w, _Atomic uint64_t *ctr, uint64_t want, bool flag)
{
    Sim *s = w->s;
    uint64_t seen = atomic_load_explicit(s->progress, memory_order_relaxed);
    unsigned long long idle = 0;
    double since = 0;
    for (unsigned long long polls = 0;; polls++) {
        if (sim_word_ready(ctr, want, flag))
            return true;
        if (sim_stopped(s))
            return false;
        sim_backoff(polls);
        if (s->watch && polls >= SIM_YIELD_POLLS && polls % SIM_WATCH_POLLS == 0) {
            int q = s->watch(s->watch_ctx);
            /* A peer that made its arrival and then left (its part done) is no failure: its
               arrival came before its exit, so a poll after seeing the exit sees it. */
            if (q >= 0 && sim_word_ready(ctr, want, flag))
                return true;
            if (q >= 0) {
                sim_peer_died(s, q);
                return false;
            }
        }
        uint64_t now = atomic_load_explicit(s->progress, memory_order_relaxed);
        if (now != seen) {
            seen = now;
            idle = 0;
            continue;
        }
        if (idle++ == 0 && !s->cfg.spin_limit)
            since = sim_now_us();
        if (sim_bound_reached(s, idle, since)) {
            atomic_store_explicit(s->stop, 1, memory_order_relaxed);
            return false;
        }
    }
}

/* The k-th switch wait passes once this rank's copy of the counter holds k * nranks arrivals,
 * counted over all ranks together: what the nvls and p2p flavours do, and MSCCL++'s switch
 * channel. The checker's round rule (switch_rounds.c) makes that the language's per-rank meaning. */
static bool sim_switch_wait(SimWorker *w)
{
    Sim *s = w->s;
    SimRank *self = &s->ranks[w->rank];
    w->want = ++self->sw_waited * (uint64_t)s->n;
    return sim_wait(w, self->sw_counter, w->want);
}

/* One arrival: one increment on every rank's copy of the counter, as the multimem.red does. */
static void sim_switch_signal(SimWorker *w)
{
    Sim *s = w->s;
    atomic_fetch_add_explicit(s->ranks[w->rank].sw_made, 1, memory_order_relaxed);
    for (int q = 0; q < s->n; q++)
        atomic_fetch_add_explicit(s->ranks[q].sw_counter, 1, memory_order_release);
}

/* ---- packets -------------------------------------------------------------------------------
 *
 * What the GPUs do (docs/language.md, "Packets"), on host words: every 4 bytes of data travel
 * in one 64-bit word with a 32-bit flag beside them (MSCCL++'s LL8 packet), written with one
 * relaxed atomic store, so a reader that sees the flag sees the data next to it and nothing
 * else is ordered. The flag is the sender's launch number + 1 (never the 0 of fresh memory).
 * The slots are the receiver's internal buffer, laid out by compiler/lower/packet_layout.c (the
 * emitted CUDA uses the same layout): each pair's place there, the two launch parities
 * interleaved word by word. The receiver polls each word until its flag is this launch's,
 * bounded like every wait, and copies the data out. The checker's rule (packet_rules.c) is what
 * keeps a sender from writing a parity's slot again before the receiver read it. The epoch is
 * the rank's count of launches, kept across runs (in each process, for sim_mp.c's views). */

enum { SIM_PKT_BLOCK_WORDS = 4096 };   /* words between two looks at the stop flag */

static bool sim_has_packets(const IrProgram *ir)
{
    for (int r = 0; r < ir->nranks; r++)
        for (int i = 0; i < ir->ranks[r].nops; i++)
            if (ir_is_packet(ir->ranks[r].ops[i].kind))
                return true;
    return false;
}

/* Data word w of op i's packets, for this launch's parity, in receiver `to`'s slots
 * (compiler/lower/packet_layout.c: parities interleaved word by word). */
static _Atomic uint64_t *sim_pkt_word(const Sim *s, int to, const IrOp *op, uint64_t epoch, size_t w)
{
    _Atomic uint64_t *slots = (_Atomic uint64_t *)(void *)s->ranks[to].buf[s->pkt_buf];
    return &slots[2 * ((size_t)op->slot * (s->chunk / 4) + w) + (epoch & 1)];
}

static bool sim_pkt_send(SimWorker *w, const IrOp *op)
{
    Sim *s = w->s;
    const char *src = sim_ptr(s, w->rank, op->src);
    uint64_t flag = CDSL_PKT_FLAG(w->epoch);
    size_t words = (size_t)op->src.count * (s->chunk / 4);
    for (size_t j = 0; j < words; j++) {
        uint32_t v;
        memcpy(&v, src + 4 * j, 4);
        atomic_store_explicit(sim_pkt_word(s, op->peer, op, w->epoch, j), flag << 32 | v, memory_order_relaxed);
        if ((j + 1) % SIM_PKT_BLOCK_WORDS == 0) {
            if (sim_stopped(s))
                return false;
            sim_advance(w, 16);
        }
    }
    return true;
}

static bool sim_pkt_recv(SimWorker *w, const IrOp *op)
{
    Sim *s = w->s;
    char *dst = sim_ptr(s, w->rank, op->dst);
    w->want = CDSL_PKT_FLAG(w->epoch);
    size_t words = (size_t)op->dst.count * (s->chunk / 4);
    for (size_t j = 0; j < words; j++) {
        w->pkt_word = sim_pkt_word(s, w->rank, op, w->epoch, j);
        if (!sim_poll(w, w->pkt_word, w->want, true))
            return false;
        uint32_t v = (uint32_t)atomic_load_explicit(w->pkt_word, memory_order_relaxed);
        memcpy(dst + 4 * j, &v, 4);
        if ((j + 1) % SIM_PKT_BLOCK_WORDS == 0)
            sim_advance(w, 16);
    }
    return true;
}

/* ---- a plan's packets (MSCCL++ LL) -----------------------------------------------------------
 *
 * As the executor runs them (docs/mscclpp.md, "Packets"): packets live in the plan's packet
 * buffer (the scratch) at twice the data's offset, each 8-byte word {4 bytes of data, 4 of
 * flag}; an LL16 packet is two such words (each with its flag, read and checked together), so
 * LL16 and LL8 lay out alike. The flag is the launch's (the executor's per-launch counter,
 * starting at 1), and with the double scratch buffer the flag's parity picks the half. A read
 * polls each word until its flag is this launch's. */

static _Atomic uint64_t *sim_mpkt_words(const Sim *s, int rank, IrRange at, uint32_t flag)
{
    const IrProgram *ir = s->ir;
    size_t half = (size_t)ir->bufs[ir->msc_packets].nchunks / (size_t)ir->msc_halves * s->chunk;
    char *base = s->ranks[rank].buf[ir->msc_packets] + (ir->msc_halves == 2 && flag % 2 == 0 ? half : 0);
    return (_Atomic uint64_t *)(void *)(base + 2 * (size_t)at.first * s->chunk);
}

/* Polls the words of `at` on this rank until each holds this launch's flag; copies their data
   into out (NULL: none). */
static bool sim_mpkt_poll(SimWorker *w, IrRange at, char *out)
{
    Sim *s = w->s;
    uint32_t flag = CDSL_PKT_FLAG(w->epoch);
    _Atomic uint64_t *words = sim_mpkt_words(s, w->rank, at, flag);
    size_t n = (size_t)at.count * (s->chunk / 4);
    w->want = flag;
    for (size_t j = 0; j < n; j++) {
        w->pkt_word = &words[j];
        if (!sim_poll(w, w->pkt_word, flag, true))
            return false;
        uint32_t v = (uint32_t)atomic_load_explicit(&words[j], memory_order_relaxed);
        if (out)
            memcpy(out + 4 * j, &v, 4);
        if ((j + 1) % SIM_PKT_BLOCK_WORDS == 0)
            sim_advance(w, 16);
    }
    return true;
}

static bool sim_mpkt_put(SimWorker *w, const IrOp *op)
{
    Sim *s = w->s;
    uint32_t flag = CDSL_PKT_FLAG(w->epoch);
    bool from_packets = op->src.buf == s->ir->msc_packets; /* rppkt, gstorepkt: polled just before */
    const char *src = from_packets ? NULL : sim_ptr(s, w->rank, op->src);
    _Atomic uint64_t *in = from_packets ? sim_mpkt_words(s, w->rank, op->src, flag) : NULL;
    _Atomic uint64_t *out = sim_mpkt_words(s, op->peer, op->dst, flag);
    size_t n = (size_t)op->dst.count * (s->chunk / 4);
    for (size_t j = 0; j < n; j++) {
        uint32_t v;
        if (in)
            v = (uint32_t)atomic_load_explicit(&in[j], memory_order_relaxed);
        else
            memcpy(&v, src + 4 * j, 4);
        atomic_store_explicit(&out[j], (uint64_t)flag << 32 | v, memory_order_relaxed);
        if ((j + 1) % SIM_PKT_BLOCK_WORDS == 0) {
            if (sim_stopped(s))
                return false;
            sim_advance(w, 16);
        }
    }
    return true;
}

static bool sim_mpkt_read(SimWorker *w, const IrOp *op)
{
    Sim *s = w->s;
    if (op->kind == IR_MPKT_READ)
        return sim_mpkt_poll(w, op->src, op->dst.buf == s->ir->msc_packets ? NULL : sim_ptr(s, w->rank, op->dst));
    size_t len = (size_t)op->dst.count * s->chunk;
    char *got = malloc(len ? len : 1), *dst = sim_ptr(s, w->rank, op->dst);
    if (!got) {
        rt_error(s->cfg.log, "out of memory for %zu bytes of packets", len);
        atomic_store_explicit(s->stop, 1, memory_order_relaxed);
        return false;
    }
    const char *ab[2] = {sim_ptr(s, w->rank, op->src), got};
    bool ok = sim_mpkt_poll(w, op->src2, got) && sim_combine(w, ab, 2, &dst, 1, len);
    free(got);
    return ok;
}

/* ---- one operation ------------------------------------------------------------------------ */

/* Arrivals rank `from` made on `at`'s semaphore for it, on channel c; and those `at` consumed. */
static _Atomic uint64_t *sim_arrivals(Sim *s, int at, int from, int c)
{
    if (c == IR_PORT_CHAN)
        return &s->ranks[at].port_arrivals[from];
    return c == 0 ? &s->ranks[at].arrivals[from] : &s->ranks[at].chan_arrivals[(size_t)(c - 1) * (size_t)s->n + (size_t)from];
}

static uint64_t *sim_consumed(Sim *s, int at, int from, int c)
{
    if (c == IR_PORT_CHAN)
        return &s->ranks[at].port_consumed[from];
    return c == 0 ? &s->ranks[at].consumed[from] : &s->ranks[at].chan_consumed[(size_t)(c - 1) * (size_t)s->n + (size_t)from];
}

static bool sim_switch_data(SimWorker *w, const IrOp *op, size_t len)
{
    Sim *s = w->s;
    for (int q = 0; q < s->n; q++) {
        w->srcs[q] = sim_ptr(s, q, op->src);
        w->dsts[q] = sim_ptr(s, q, op->dst);
    }
    char *local = sim_ptr(s, w->rank, op->dst);
    switch (op->kind) {
    case IR_SW_STORE: return sim_move(w, w->dsts, s->n, sim_ptr(s, w->rank, op->src), len);
    case IR_SW_REDUCE: return sim_combine(w, w->srcs, s->n, &local, 1, len);
    default: return sim_combine(w, w->srcs, s->n, w->dsts, s->n, len);
    }
}

static bool sim_exec(SimWorker *w, const IrOp *op)
{
    Sim *s = w->s;
    int me = w->rank;
    SimRank *self = &s->ranks[me];
    size_t len = op->dst.buf >= 0 ? (size_t)op->dst.count * s->chunk : 0;
    char *dst;
    switch (op->kind) {
    case IR_COPY:
        dst = sim_ptr(s, me, op->dst);
        return sim_move(w, &dst, 1, sim_ptr(s, me, op->src), len);
    case IR_PUT:
        dst = sim_ptr(s, op->peer, op->dst);
        return sim_move(w, &dst, 1, sim_ptr(s, me, op->src), len);
    case IR_GET:
        dst = sim_ptr(s, me, op->dst);
        return sim_move(w, &dst, 1, sim_ptr(s, op->peer, op->src), len);
    case IR_REDUCE: { /* a plan's read-reduce takes src2 from rank `peer` */
        const char *ab[2] = {sim_ptr(s, me, op->src), sim_ptr(s, op->peer >= 0 ? op->peer : me, op->src2)};
        dst = sim_ptr(s, me, op->dst);
        return sim_combine(w, ab, 2, &dst, 1, len);
    }
    case IR_SIGNAL:
    case IR_SEM_RELEASE: /* a semaphore is the rank's own counter: peer is the rank itself */
        atomic_fetch_add_explicit(sim_arrivals(s, op->peer, me, op->chan), 1, memory_order_release);
        return true;
    case IR_WAIT:
    case IR_SEM_ACQUIRE:
        w->want = ++*sim_consumed(s, me, op->peer, op->chan);
        return sim_wait(w, sim_arrivals(s, me, op->peer, op->chan), w->want);
    case IR_SW_SIGNAL:
        sim_switch_signal(w);
        return true;
    case IR_SW_WAIT:
        return sim_switch_wait(w);
    case IR_SW_STORE:
    case IR_SW_REDUCE:
    case IR_SW_REDUCE_STORE:
        return sim_switch_data(w, op, len);
    case IR_NOP:       /* the block's threads meet: the sim's unit is one thread already */
        return true;
    case IR_PKT_SEND:
        return sim_pkt_send(w, op);
    case IR_PKT_RECV:
        return sim_pkt_recv(w, op);
    case IR_MPKT_PUT:
        return sim_mpkt_put(w, op);
    case IR_MPKT_READ:
    case IR_MPKT_REDUCE:
        return sim_mpkt_read(w, op);
    case IR_BARRIER:
        w->want = ++s->units[w->unit].bar_uses[op->barrier] * (uint64_t)op->blocks;
        atomic_fetch_add_explicit(&self->bar[op->barrier], 1, memory_order_acq_rel);
        return sim_wait(w, &self->bar[op->barrier], w->want);
    case IR_PORT_PUT:    /* evaluation lowered these (port_proxy.h); sim_op_ok refused them */
    case IR_PORT_SIGNAL:
    case IR_PORT_WAIT:
    case IR_PORT_FLUSH:
        return false;
    }
    return true;
}

/* ---- a rank's thread --------------------------------------------------------------------- */

/* With a seed: the work before the collective, which may write this rank's output and scratch
 * buffers, happens now. A correct program never has a peer write into them before this. In
 * place, the caller's input is part of those buffers: that part (and the aliased buffer, which
 * is memory of the holder when the caller registered it so) keeps its contents. */
static void sim_start_rank(SimWorker *w)
{
    Sim *s = w->s;
    if (!s->jitter_us)
        return;
    sim_jitter(w, 2);
    int aliased = -1, holder = -1;
    ir_in_place(s->ir, &aliased, &holder);
    for (int b = IR_OUTPUT; b < s->nbufs; b++) {
        char *buf = s->ranks[w->rank].buf[b];
        if (b == aliased || b == s->pkt_buf) /* the packet slots are the runtime's */
            continue;
        if (b != holder) {
            memset(buf, VF_POISON_BYTE, s->bytes[b]);
            continue;
        }
        /* Clamped to the holder: the communicator refuses a window that does not fit
           (program_layout.c, rt_comm_layout_matches), and a fill must not write past the end if one
           ever slips through. */
        size_t lo = (size_t)ir_in_place_first(s->ir, w->rank) * s->chunk;
        size_t hi = lo + (size_t)s->ir->bufs[aliased].nchunks * s->chunk;
        lo = lo < s->bytes[b] ? lo : s->bytes[b];
        hi = hi < s->bytes[b] ? hi : s->bytes[b];
        memset(buf, VF_POISON_BYTE, lo);
        memset(buf + hi, VF_POISON_BYTE, s->bytes[b] - hi);
    }
}

static void sim_gate_wait(Sim *s)
{
    pthread_mutex_lock(&s->gate_mu);
    while (!s->gate_open)
        pthread_cond_wait(&s->gate_cv, &s->gate_mu);
    pthread_mutex_unlock(&s->gate_mu);
}

static void sim_gate_open(Sim *s)
{
    pthread_mutex_lock(&s->gate_mu);
    s->gate_open = true;
    pthread_cond_broadcast(&s->gate_cv);
    pthread_mutex_unlock(&s->gate_mu);
}

/* Iteration `it` of a unit begins after its rank's start: the rank's first unit makes the start,
 * once every unit has ended the iteration before (the rank's end comes before its next start). */
static bool sim_unit_begin(SimWorker *w, int it, int nunits)
{
    Sim *s = w->s;
    SimRank *rk = &s->ranks[w->rank];
    const SimUnit *u = &s->units[w->unit];
    if (u->tb == 0) {
        if (it > 0 && nunits > 1 && !sim_wait(w, &rk->units_done, (uint64_t)nunits * (uint64_t)it))
            return false;
        sim_start_rank(w);
        atomic_store_explicit(&rk->started, (uint64_t)it + 1, memory_order_release);
        return true;
    }
    return sim_wait(w, &rk->started, (uint64_t)it + 1);
}

static void *sim_rank_main(void *arg)
{
    SimWorker *w = arg;
    Sim *s = w->s;
    SimRank *self = &s->ranks[w->rank];
    SimUnit *u = &s->units[w->unit];
    const IrSeq *seq = &s->ir->ranks[w->rank];
    int nunits = ir_ntbs(s->ir, w->rank);
    sim_gate_wait(s);
    for (int it = 0; it < s->iters; it++) {
        if (!sim_unit_begin(w, it, nunits))
            return NULL;
        w->epoch = atomic_load_explicit(self->runs_done, memory_order_relaxed) + (uint64_t)it;
        for (int i = u->first; i < u->end; i++) {
            if (sim_stopped(s))
                return NULL;
            sim_jitter(w, 4);
            if (!sim_exec(w, &seq->ops[i])) {
                IrKind k = seq->ops[i].kind;
                if (k == IR_WAIT || k == IR_SW_WAIT || k == IR_BARRIER || k == IR_PKT_RECV ||
                    k == IR_MPKT_READ || k == IR_MPKT_REDUCE || k == IR_SEM_ACQUIRE) {
                    u->stuck_op = i;
                    u->stuck_iter = it;
                    u->stuck_want = w->want;
                    u->stuck_word = w->pkt_word;
                }
                return NULL;
            }
            atomic_fetch_add_explicit(s->progress, 1, memory_order_relaxed);
        }
        /* the last unit of the rank out of the last iteration is the rank's end */
        uint64_t done = atomic_fetch_add_explicit(&self->units_done, 1, memory_order_acq_rel) + 1;
        if (it == s->iters - 1 && done == (uint64_t)nunits * (uint64_t)s->iters && self->final_out) {
            memcpy(self->final_out, self->buf[IR_OUTPUT], s->bytes[IR_OUTPUT]);
            self->final_valid = true;
        }
    }
    return NULL;
}

/* ---- after a stop: who was stuck where ----------------------------------------------------- */

static void sim_where(const Sim *s, const IrOp *op, int iter, char *out, size_t len)
{
    const char *path = op->loc.src ? op->loc.src->path : "<program>";
    int n = snprintf(out, len, "%s:%d:%d", path, op->loc.line, op->loc.col);
    if (n < 0 || (size_t)n >= len)
        return;
    if (op->ctx)
        n += snprintf(out + n, len - (size_t)n, " (%s)", op->ctx);
    if (s->iters > 1 && n >= 0 && (size_t)n < len)
        snprintf(out + n, len - (size_t)n, " in iteration %d", iter + 1);
}

/* Reports unit u if its wait is still unsatisfied now that every thread has stopped. */
static bool sim_report_rank(Sim *s, int u)
{
    const SimUnit *un = &s->units[u];
    int r = un->rank;
    const SimRank *rk = &s->ranks[r];
    const IrOp *op = &s->ir->ranks[r].ops[un->stuck_op];
    char where[512];
    sim_where(s, op, un->stuck_iter, where, sizeof where);
    unsigned long long want = un->stuck_want;
    if (op->kind == IR_MPKT_READ || op->kind == IR_MPKT_REDUCE) {
        unsigned long long flag = atomic_load(un->stuck_word) >> 32;
        if (flag == want)
            return false;
        rt_error(s->cfg.log, "rank %d gave up waiting at %s for rank %d's packets in its scratch (a packet's flag "
                 "reads %llu; this launch's is %llu)", r, where, op->peer, flag, want);
        return true;
    }
    if (op->kind == IR_PKT_RECV) {
        unsigned long long flag = atomic_load(un->stuck_word) >> 32;
        if (flag == want)
            return false;
        rt_error(s->cfg.log, "rank %d gave up waiting at %s for rank %d's packets (a packet's flag reads %llu; "
                 "this launch's is %llu)", r, where, op->peer, flag, want);
        return true;
    }
    if (op->kind == IR_WAIT) {
        unsigned long long have = atomic_load(sim_arrivals(s, r, op->peer, op->chan));
        if (have >= want)
            return false;
        rt_error(s->cfg.log, "rank %d gave up waiting at %s for rank %d's signal (counter peer %d: %llu of %llu arrivals)",
                 r, where, op->peer, op->peer, have, want);
        return true;
    }
    if (op->kind == IR_SEM_ACQUIRE) {
        unsigned long long have = atomic_load(sim_arrivals(s, r, r, op->chan));
        if (have >= want)
            return false;
        rt_error(s->cfg.log, "rank %d gave up waiting at %s for a release of its semaphore %d (%llu of %llu releases)",
                 r, where, op->chan, have, want);
        return true;
    }
    if (op->kind == IR_BARRIER) {
        unsigned long long have = atomic_load(&rk->bar[op->barrier]);
        if (have >= want)
            return false;
        rt_error(s->cfg.log, "rank %d gave up waiting at %s for its barrier %d (%llu of %llu arrivals)", r, where,
                 op->barrier, have, want);
        return true;
    }
    unsigned long long have = atomic_load(rk->sw_counter);
    if (have >= want)
        return false;
    /* The counter does not say whose arrival is missing; the ranks' own counts do. */
    unsigned long long round = want / (unsigned long long)s->n;
    for (int q = 0; q < s->n; q++) {
        unsigned long long made = atomic_load(s->ranks[q].sw_made);
        if (made < round) {
            rt_error(s->cfg.log,
                     "rank %d gave up waiting at %s for rank %d's switch arrival (counter switch: %llu of %llu arrivals)",
                     r, where, q, have, want);
            return true;
        }
    }
    rt_error(s->cfg.log, "rank %d gave up waiting at %s for the switch (counter switch: %llu of %llu arrivals)", r,
             where, have, want);
    return true;
}

static void sim_report_stuck(Sim *s)
{
    int reported = 0;
    for (int u = 0; u < s->nunits; u++)
        if (s->units[u].stuck_op >= 0)
            reported += sim_report_rank(s, u);
    if (!reported)
        rt_error(s->cfg.log, "a wait ran out of its bound, then was satisfied as the ranks stopped");
    char msg[160];
    if (s->cfg.spin_limit)
        snprintf(msg, sizeof msg, "no rank made progress for %llu polls, the spin limit", s->cfg.spin_limit);
    else
        snprintf(msg, sizeof msg, "no rank made progress for %d seconds, the sim's wait bound", SIM_STALL_SECONDS);
    sim_note(s, msg);
}

/* Counters start over after a stopped run: what they held no longer matches any program point. */
static void sim_reset_counters(Sim *s)
{
    for (int r = 0; r < s->n; r++) {
        SimRank *rk = &s->ranks[r];
        for (int p = 0; p < s->n; p++) {
            atomic_store(&rk->arrivals[p], 0);
            atomic_store(&rk->port_arrivals[p], 0);
            rk->consumed[p] = rk->port_consumed[p] = 0;
        }
        atomic_store(rk->sw_counter, 0);
        atomic_store(rk->sw_made, 0);
        rk->sw_waited = 0;
        for (size_t k = 0; rk->chan_arrivals && k < (size_t)(s->nchan - 1) * (size_t)s->n; k++) {
            atomic_store(&rk->chan_arrivals[k], 0);
            rk->chan_consumed[k] = 0;
        }
        for (int b = 0; b < IR_MAX_BARRIERS; b++)
            atomic_store(&rk->bar[b], 0);
        atomic_store(rk->runs_done, 0);
        if (s->pkt_buf >= 0 && s->pkt_buf < s->nbufs && rk->buf[s->pkt_buf]) /* no flag matches launch 0 */
            memset(rk->buf[s->pkt_buf], 0, s->bytes[s->pkt_buf]);
    }
    for (int u = 0; u < s->nunits; u++)
        memset(s->units[u].bar_uses, 0, sizeof s->units[u].bar_uses);
}

/* ---- the backend's entry points ------------------------------------------------------------ */

static void sim_free_bufs(Sim *s)
{
    for (int r = 0; r < s->n; r++) {
        for (int b = 0; b < IR_MAX_BUFS; b++) {
            if (!s->registered)
                free(s->ranks[r].buf[b]);
            s->ranks[r].buf[b] = NULL;
        }
        free(s->ranks[r].final_out);
        s->ranks[r].final_out = NULL;
        s->ranks[r].final_valid = false;
    }
    s->nbufs = 0;
    s->registered = false;
    memset(s->bytes, 0, sizeof s->bytes);
}

static void sim_destroy(void *state)
{
    Sim *s = state;
    if (!s)
        return;
    if (s->ranks) {
        sim_free_bufs(s);
        for (int r = 0; r < s->n; r++) {
            free(s->ranks[r].consumed);
            free(s->ranks[r].port_consumed);
            free(s->ranks[r].chan_arrivals);
            free(s->ranks[r].chan_consumed);
        }
    }
    free(s->units);
    free(s->own_words);
    free(s->ranks);
    pthread_cond_destroy(&s->gate_cv);
    pthread_mutex_destroy(&s->gate_mu);
    free(s);
}

void sim_view_words(Sim *s, int rank, _Atomic uint64_t *words)
{
    SimRank *rk = &s->ranks[rank];
    rk->arrivals = words;
    rk->sw_counter = words + s->n;
    rk->sw_made = words + s->n + 1;
    rk->port_arrivals = words + s->n + 2;
    rk->runs_done = words + 2 * s->n + 2;
}

uint64_t sim_view_runs_done(const Sim *s, int q)
{
    return atomic_load_explicit(s->ranks[q].runs_done, memory_order_acquire);
}

void sim_view_control(Sim *s, _Atomic uint64_t *control)
{
    s->stop = control;
    s->progress = control + 1;
    s->dead_word = control + 2;
}

/* A sim of cfg->nranks ranks with private counters, and with words of its own (the threaded
 * sim) or without (a view: sim_mp.c points them at shared memory). */
static int sim_new(const RtConfig *cfg, bool own_words, Sim **out)
{
    *out = NULL;
    if (cfg->nranks < 1 || cfg->nranks > IR_MAX_RANKS) {
        rt_error(cfg->log, "the sim runs 1 to %d ranks, not %d", IR_MAX_RANKS, cfg->nranks);
        return CDSL_ERR_USAGE;
    }
    Sim *s = calloc(1, sizeof *s);
    if (!s || pthread_mutex_init(&s->gate_mu, NULL) || pthread_cond_init(&s->gate_cv, NULL)) {
        free(s);
        rt_error(cfg->log, "out of memory setting up the sim");
        return CDSL_ERR_SYSTEM;
    }
    s->cfg = *cfg;
    s->n = cfg->nranks;
    s->jitter_us = cfg->seed ? (cfg->jitter_us > 0 ? cfg->jitter_us : SIM_DEFAULT_JITTER_US) : 0;
    s->pkt_buf = -1;
    s->ranks = calloc((size_t)s->n, sizeof *s->ranks);
    size_t per = SIM_RANK_WORDS(s->n), nwords = per * (size_t)s->n + SIM_CONTROL_WORDS;
    /* calloc'd zeros are valid _Atomic uint64_t zeros on every platform we build for */
    if (own_words)
        s->own_words = calloc(nwords, sizeof *s->own_words);
    bool ok = s->ranks != NULL && (!own_words || s->own_words);
    for (int r = 0; ok && r < s->n; r++) {
        SimRank *rk = &s->ranks[r];
        rk->consumed = calloc((size_t)s->n, sizeof *rk->consumed);
        rk->port_consumed = calloc((size_t)s->n, sizeof *rk->port_consumed);
        ok = rk->consumed != NULL && rk->port_consumed != NULL;
        if (ok && own_words)
            sim_view_words(s, r, s->own_words + per * (size_t)r);
    }
    if (!ok) {
        sim_destroy(s);
        rt_error(cfg->log, "out of memory setting up the sim for %d ranks", cfg->nranks);
        return CDSL_ERR_SYSTEM;
    }
    if (own_words)
        sim_view_control(s, s->own_words + per * (size_t)s->n);
    *out = s;
    return CDSL_OK;
}

static int sim_create(const RtConfig *cfg, void **state)
{
    Sim *s;
    int rc = sim_new(cfg, true, &s);
    *state = s;
    return rc;
}

/* What the sim may take for buffers: three quarters of what this process may still take
 * (mem_limit.c: the machine, its memory cgroup, ulimit -v). Beyond that, calloc might still
 * succeed (overcommit) and the run be killed when the pages are touched. */
static size_t sim_memory_budget(void)
{
    size_t lim = rt_memory_limit();
    return lim == SIZE_MAX ? SIZE_MAX : lim / 4 * 3;
}

static int sim_out_of_memory(Sim *s, size_t total)
{
    char need[32], have[32];
    sim_fmt_bytes(total, need, sizeof need);
    sim_fmt_bytes(sim_memory_budget(), have, sizeof have);
    rt_error(s->cfg.log, "out of memory: the sim's buffers for %d ranks need %s; it may use %s here", s->n,
             need, have);
    return CDSL_ERR_SYSTEM;
}

static int sim_alloc(void *state, const size_t *bytes, int nbufs)
{
    Sim *s = state;
    if (nbufs < 0 || nbufs > IR_MAX_BUFS) {
        rt_error(s->cfg.log, "the sim allocates 0 to %d buffers, not %d", IR_MAX_BUFS, nbufs);
        return CDSL_ERR_USAGE;
    }
    sim_free_bufs(s);
    size_t per_rank = 0, total;
    for (int b = 0; b <= nbufs; b++) { /* and once more for the output's end-state copy */
        size_t add = b < nbufs ? bytes[b] : nbufs > IR_OUTPUT ? bytes[IR_OUTPUT] : 0;
        if (add > SIZE_MAX - per_rank)
            return sim_out_of_memory(s, SIZE_MAX);
        per_rank += add;
    }
    if (per_rank > SIZE_MAX / (size_t)s->n)
        return sim_out_of_memory(s, SIZE_MAX);
    total = per_rank * (size_t)s->n;
    if (total > sim_memory_budget())
        return sim_out_of_memory(s, total);
    for (int r = 0; r < s->n; r++) {
        SimRank *rk = &s->ranks[r];
        bool ok = true;
        /* At least one byte, so that every buffer has an address (offset 0 of nothing). */
        for (int b = 0; b < nbufs; b++)
            ok &= (rk->buf[b] = calloc(1, bytes[b] ? bytes[b] : 1)) != NULL;
        if (nbufs > IR_OUTPUT)
            ok &= (rk->final_out = malloc(bytes[IR_OUTPUT] ? bytes[IR_OUTPUT] : 1)) != NULL;
        if (!ok) {
            sim_free_bufs(s);
            return sim_out_of_memory(s, total);
        }
    }
    s->nbufs = nbufs;
    memcpy(s->bytes, bytes, (size_t)nbufs * sizeof *bytes);
    return CDSL_OK;
}

/* The caller's host buffers (cdsl_comm_register); only the output's end-state copy is ours. */
static int sim_attach(void *state, const size_t *bytes, int nbufs, void *const *ptrs)
{
    Sim *s = state;
    if (nbufs < 0 || nbufs > IR_MAX_BUFS) {
        rt_error(s->cfg.log, "the sim takes 0 to %d buffers, not %d", IR_MAX_BUFS, nbufs);
        return CDSL_ERR_USAGE;
    }
    sim_free_bufs(s);
    s->registered = true;
    bool ok = true;
    for (int r = 0; r < s->n; r++) {
        SimRank *rk = &s->ranks[r];
        for (int b = 0; b < nbufs; b++)
            rk->buf[b] = ptrs[r * nbufs + b] ? ptrs[r * nbufs + b] : s->nothing;
        if (nbufs > IR_OUTPUT)
            ok &= (rk->final_out = malloc(bytes[IR_OUTPUT] ? bytes[IR_OUTPUT] : 1)) != NULL;
    }
    if (!ok) {
        sim_free_bufs(s);
        rt_error(s->cfg.log, "out of memory: %d copies of %zu bytes for the sim's ranks", s->n, bytes[IR_OUTPUT]);
        return CDSL_ERR_SYSTEM;
    }
    s->nbufs = nbufs;
    memcpy(s->bytes, bytes, (size_t)nbufs * sizeof *bytes);
    return CDSL_OK;
}

static int sim_bad_access(Sim *s, const char *what, int rank, int buf, size_t bytes)
{
    rt_error(s->cfg.log, "cannot %s %zu bytes of rank %d's buffer %d: out of range", what, bytes, rank, buf);
    return CDSL_ERR_USAGE;
}

static bool sim_access_ok(const Sim *s, int rank, int buf, size_t bytes)
{
    return rank >= 0 && rank < s->n && buf >= 0 && buf < s->nbufs && bytes <= s->bytes[buf];
}

static int sim_write(void *state, int rank, int buf, const void *src, size_t bytes)
{
    Sim *s = state;
    if (!sim_access_ok(s, rank, buf, bytes))
        return sim_bad_access(s, "write", rank, buf, bytes);
    if (bytes)
        memcpy(s->ranks[rank].buf[buf], src, bytes);
    if (buf == IR_OUTPUT)
        s->ranks[rank].final_valid = false;
    return CDSL_OK;
}

static int sim_buffer(void *state, int rank, int buf, void **ptr)
{
    Sim *s = state;
    if (!sim_access_ok(s, rank, buf, 0))
        return sim_bad_access(s, "address", rank, buf, 0);
    *ptr = s->ranks[rank].buf[buf];
    return CDSL_OK;
}

static int sim_read(void *state, int rank, int buf, void *dst, size_t bytes)
{
    Sim *s = state;
    if (!sim_access_ok(s, rank, buf, bytes))
        return sim_bad_access(s, "read", rank, buf, bytes);
    const SimRank *rk = &s->ranks[rank];
    const char *from = buf == IR_OUTPUT && rk->final_valid ? rk->final_out : rk->buf[buf];
    if (bytes)
        memcpy(dst, from, bytes);
    return CDSL_OK;
}

static bool sim_range_ok(const IrProgram *ir, IrRange r)
{
    return r.buf >= 0 && r.buf < ir->nbufs && r.first >= 0 && r.count >= 0 &&
           r.first <= ir->bufs[r.buf].nchunks - r.count;
}

/* A packet op's place in its receiver's slots lies inside them (4 slot chunks a data chunk). */
static bool sim_slot_ok(const IrProgram *ir, const IrOp *op, int count)
{
    int b = ir_packet_buf(ir);
    return b >= 0 && op->slot >= 0 && (long long)op->slot + count <= ir->bufs[b].nchunks / 4;
}

/* A plan's packet op: its packets within the packet buffer's data chunks, the rest in bounds. */
static bool sim_mpkt_ok(const IrProgram *ir, int rank, const IrOp *op)
{
    int b = ir->msc_packets;
    if (b <= 0 || b >= ir->nbufs || ir->msc_halves < 1 || ir->msc_halves > 2)
        return false;
    int data = ir->bufs[b].nchunks / (2 * ir->msc_halves);
    const IrRange *at = op->kind == IR_MPKT_PUT ? &op->dst : op->kind == IR_MPKT_READ ? &op->src : &op->src2;
    bool in = at->buf == b && at->first >= 0 && at->count >= 0 && at->first <= data - at->count;
    bool peer_ok = op->peer >= 0 && op->peer < ir->nranks;
    const IrRange *other = op->kind == IR_MPKT_PUT ? &op->src : &op->dst;
    bool other_ok = other->buf == b ? other->first >= 0 && other->first <= data - other->count
                                    : sim_range_ok(ir, *other);
    return in && peer_ok && other_ok && other->count == at->count &&
           (op->kind != IR_MPKT_REDUCE || (sim_range_ok(ir, op->src) && op->src.count == at->count));
}

/* The IR is trusted to come from evaluation, which checks bounds (rule 3); this re-check
 * keeps a hand-made or corrupt IrProgram from writing outside the sim's buffers. */
static bool sim_op_ok(const IrProgram *ir, int rank, const IrOp *op)
{
    bool peer_ok = op->peer >= 0 && op->peer < ir->nranks && op->peer != rank;
    switch (op->kind) {
    case IR_COPY:
        return sim_range_ok(ir, op->dst) && sim_range_ok(ir, op->src) && op->dst.count == op->src.count;
    case IR_REDUCE:
        return sim_range_ok(ir, op->dst) && sim_range_ok(ir, op->src) && sim_range_ok(ir, op->src2) &&
               op->dst.count == op->src.count && op->dst.count == op->src2.count && (op->peer < 0 || peer_ok);
    case IR_PUT:
    case IR_GET:
        return peer_ok && sim_range_ok(ir, op->dst) && sim_range_ok(ir, op->src) &&
               op->dst.count == op->src.count;
    case IR_SIGNAL:
    case IR_WAIT: /* to the rank itself: between a thread block and its port channel's proxy */
        return (peer_ok || op->peer == rank) && op->chan >= 0 && op->chan < 4096;
    case IR_SEM_RELEASE:
    case IR_SEM_ACQUIRE:
        return op->peer == rank && op->chan >= 0 && op->chan < 4096;
    case IR_SW_STORE:
    case IR_SW_REDUCE:
    case IR_SW_REDUCE_STORE:
        return sim_range_ok(ir, op->dst) && sim_range_ok(ir, op->src) && op->dst.count == op->src.count;
    case IR_SW_SIGNAL:
    case IR_SW_WAIT:
        return true;
    case IR_NOP:
        return true;
    case IR_PKT_SEND:
        return peer_ok && sim_range_ok(ir, op->src) && sim_slot_ok(ir, op, op->src.count);
    case IR_PKT_RECV:
        return peer_ok && sim_range_ok(ir, op->dst) && sim_slot_ok(ir, op, op->dst.count);
    case IR_BARRIER:
        return op->barrier >= 0 && op->barrier < IR_MAX_BARRIERS && op->blocks >= 1;
    case IR_PORT_PUT:    /* lowered by evaluation into the block's requests and its proxy's ops */
    case IR_PORT_SIGNAL:
    case IR_PORT_WAIT:
    case IR_PORT_FLUSH:
        return false;
    case IR_MPKT_PUT:
    case IR_MPKT_READ:
    case IR_MPKT_REDUCE:
        return sim_mpkt_ok(ir, rank, op);
    }
    return false;
}

/* A rank's ops are grouped by unit, in order (ir.h). */
static bool sim_units_ok(const IrProgram *ir, int rank)
{
    const IrSeq *s = &ir->ranks[rank];
    for (int i = 0; i < s->nops; i++)
        if (s->ops[i].tb < 0 || s->ops[i].tb >= ir_ntbs(ir, rank) || (i && s->ops[i].tb < s->ops[i - 1].tb))
            return false;
    return ir_ntbs(ir, rank) >= 1;
}

/* The program's units (ir.h: a plan's thread blocks; else one per rank) with their op ranges,
 * and counters for the channels beyond the first that a plan's ranks use between them. */
static int sim_load_units(Sim *s, const IrProgram *ir)
{
    int nunits = 0, nchan = 1;
    for (int r = 0; r < ir->nranks; r++) {
        nunits += ir_ntbs(ir, r);
        for (int i = 0; i < ir->ranks[r].nops; i++)
            if ((ir->ranks[r].ops[i].kind == IR_SIGNAL || ir->ranks[r].ops[i].kind == IR_WAIT ||
                 ir_is_semaphore(ir->ranks[r].ops[i].kind)) &&
                ir->ranks[r].ops[i].chan >= nchan)
                nchan = ir->ranks[r].ops[i].chan + 1;
    }
    SimUnit *units = calloc((size_t)nunits, sizeof *units);
    bool ok = units != NULL;
    for (int r = 0; ok && r < s->n; r++) {
        SimRank *rk = &s->ranks[r];
        free(rk->chan_arrivals);
        free(rk->chan_consumed);
        rk->chan_arrivals = NULL;
        rk->chan_consumed = NULL;
        if (nchan > 1) {
            rk->chan_arrivals = calloc((size_t)(nchan - 1) * (size_t)s->n, sizeof *rk->chan_arrivals);
            rk->chan_consumed = calloc((size_t)(nchan - 1) * (size_t)s->n, sizeof *rk->chan_consumed);
            ok = rk->chan_arrivals && rk->chan_consumed;
        }
        for (int b = 0; b < IR_MAX_BARRIERS; b++)
            atomic_store(&rk->bar[b], 0);
    }
    if (!ok) {
        free(units);
        rt_error(s->cfg.log, "out of memory loading %s into the sim", ir->name);
        return CDSL_ERR_SYSTEM;
    }
    for (int r = 0, u = 0; r < ir->nranks; r++) {
        const IrSeq *seq = &ir->ranks[r];
        for (int t = 0, i = 0; t < ir_ntbs(ir, r); t++, u++) {
            units[u] = (SimUnit){.rank = r, .tb = t, .first = i, .stuck_op = -1};
            while (i < seq->nops && seq->ops[i].tb == t)
                i++;
            units[u].end = i;
        }
    }
    free(s->units);
    s->units = units;
    s->nunits = nunits;
    s->nchan = nchan;
    return CDSL_OK;
}

static int sim_load(void *state, cdsl_program *p, cdsl_dtype dtype)
{
    Sim *s = state;
    const IrProgram *ir = program_ir(p);
    if (!ir) {
        rt_error(s->cfg.log, "the program was not evaluated; there is nothing to run");
        return CDSL_ERR_USAGE;
    }
    if (ir->nranks != s->n) {
        rt_error(s->cfg.log, "%s was compiled for %d ranks; the sim has %d", ir->name, ir->nranks, s->n);
        return CDSL_ERR_USAGE;
    }
    for (int r = 0; r < ir->nranks; r++)
        if (!sim_units_ok(ir, r)) {
            rt_error(s->cfg.log, "internal error: rank %d's operations are not grouped by thread block", r);
            return CDSL_ERR_USAGE;
        }
    for (int r = 0; r < ir->nranks; r++)
        for (int i = 0; i < ir->ranks[r].nops; i++)
            if (!sim_op_ok(ir, r, &ir->ranks[r].ops[i])) {
                rt_error(s->cfg.log, "internal error: rank %d's operation %d (%s) is malformed", r, i,
                         ir_kind_name(ir->ranks[r].ops[i].kind));
                return CDSL_ERR_USAGE;
            }
    int rc = sim_load_units(s, ir);
    if (rc)
        return rc;
    s->pkt_buf = ir_packet_buf(ir);
    if (sim_has_packets(ir) && s->pkt_buf < 0) {
        rt_error(s->cfg.log, "internal error: %s has packets but no packet slots", ir->name);
        return CDSL_ERR_USAGE;
    }
    s->ir = ir;
    s->dtype = dtype;
    return CDSL_OK;
}

/* The loaded program's buffers fit the allocation at this chunk size. */
static bool sim_layout_fits(const Sim *s, size_t chunk)
{
    if (s->ir->nbufs > s->nbufs)
        return false;
    for (int b = 0; b < s->ir->nbufs; b++) {
        size_t c = (size_t)s->ir->bufs[b].nchunks;
        if (c && chunk > s->bytes[b] / c)
            return false;
    }
    return true;
}

static void sim_worker_free(SimWorker *w)
{
    free(w->acc);
    free(w->out);
    free(w->srcs);
    free(w->dsts);
}

static void sim_workers_free(SimWorker *ws, int n)
{
    for (int r = 0; ws && r < n; r++)
        sim_worker_free(&ws[r]);
    free(ws);
}

/* The worker of unit u (for a .cdsl program, u is the rank). */
static bool sim_worker_init(Sim *s, SimWorker *w, int u)
{
    w->s = s;
    w->unit = u;
    w->rank = s->units[u].rank;
    w->rng = s->cfg.seed * 0x100000001B3ull + (uint64_t)u * 0x9E3779B97F4A7C15ull;
    w->acc = malloc(SIM_BLOCK_ELEMS * 4);
    w->out = malloc(SIM_BLOCK_ELEMS * 4);
    w->srcs = malloc((size_t)s->n * sizeof *w->srcs);
    w->dsts = malloc((size_t)s->n * sizeof *w->dsts);
    return w->acc && w->out && w->srcs && w->dsts;
}

static SimWorker *sim_workers_new(Sim *s)
{
    SimWorker *ws = calloc((size_t)s->nunits, sizeof *ws);
    bool ok = ws != NULL;
    for (int u = 0; ok && u < s->nunits; u++)
        ok = sim_worker_init(s, &ws[u], u);
    if (!ok) {
        sim_workers_free(ws, ws ? s->nunits : 0);
        return NULL;
    }
    return ws;
}

static void sim_run_reset(Sim *s, size_t chunk, int iters)
{
    s->chunk = chunk;
    s->iters = iters;
    s->gate_open = false;
    atomic_store(s->stop, 0);
    atomic_store(s->progress, 0);
    for (int r = 0; r < s->n; r++) {
        s->ranks[r].final_valid = false;
        atomic_store(&s->ranks[r].started, 0);
        atomic_store(&s->ranks[r].units_done, 0);
    }
    for (int u = 0; u < s->nunits; u++)
        s->units[u].stuck_op = -1;
}

/* Starts every unit's thread, opens the gate, joins them. Returns the threads started. */
static int sim_run_threads(Sim *s, SimWorker *ws, int *err, double *elapsed_us)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, SIM_STACK_BYTES);
    int started = 0;
    *err = 0;
    while (started < s->nunits &&
           !(*err = pthread_create(&ws[started].thread, &attr, sim_rank_main, &ws[started])))
        started++;
    pthread_attr_destroy(&attr);
    if (*err)
        atomic_store(s->stop, 1); /* the started ones leave at their first operation */
    sim_gate_open(s);
    double t0 = sim_now_us();
    for (int r = 0; r < started; r++)
        pthread_join(ws[r].thread, NULL);
    *elapsed_us = sim_now_us() - t0;
    return started;
}

static bool sim_run_ready(Sim *s, size_t chunk_bytes, int iters)
{
    if (!s->ir || iters < 1 || chunk_bytes % 4 || !sim_layout_fits(s, chunk_bytes)) {
        rt_error(s->cfg.log, "internal error: sim run without a loaded program that fits the buffers");
        return false;
    }
    return true;
}

static int sim_run(void *state, size_t chunk_bytes, int iters, double *us_per_iter)
{
    Sim *s = state;
    if (!sim_run_ready(s, chunk_bytes, iters))
        return CDSL_ERR_USAGE;
    SimWorker *ws = sim_workers_new(s);
    if (!ws) {
        rt_error(s->cfg.log, "out of memory starting the sim's %d ranks", s->n);
        return CDSL_ERR_SYSTEM;
    }
    sim_run_reset(s, chunk_bytes, iters);
    int err;
    double us;
    int started = sim_run_threads(s, ws, &err, &us);
    sim_workers_free(ws, s->nunits);
    if (err) {
        rt_error(s->cfg.log, "cannot start the sim's %d threads (started %d): %s", s->nunits, started, strerror(err));
        sim_reset_counters(s);
        return CDSL_ERR_SYSTEM;
    }
    if (atomic_load(s->stop)) {
        sim_report_stuck(s);
        sim_reset_counters(s);
        return CDSL_ERR_RUNTIME;
    }
    for (int r = 0; r < s->n; r++)
        atomic_fetch_add(s->ranks[r].runs_done, (uint64_t)iters);
    if (us_per_iter)
        *us_per_iter = us / iters;
    return CDSL_OK;
}

/* cdsl_run_async: the sim has no streams, so the run is over when this returns. As on a GPU,
 * a run that failed is cdsl_comm_status's answer (its report is printed now); only what kept
 * the run from starting is returned here. */
static int sim_launch(void *state, size_t chunk_bytes, void *const *streams)
{
    Sim *s = state;
    (void)streams;
    int rc = sim_run(s, chunk_bytes, 1, NULL);
    if (rc != CDSL_ERR_RUNTIME)
        return rc;
    s->pending = rc;
    return CDSL_OK;
}

static int sim_status(void *state)
{
    Sim *s = state;
    int rc = s->pending;
    s->pending = CDSL_OK;
    return rc;
}

const RtBackendOps rt_backend_sim = {
    .create = sim_create,
    .alloc = sim_alloc,
    .write = sim_write,
    .read = sim_read,
    .load = sim_load,
    .run = sim_run,
    .destroy = sim_destroy,
    .attach = sim_attach,
    .buffer = sim_buffer,
    .launch = sim_launch,
    .status = sim_status,
};

/* ---- a view: one rank of a sim whose memory other processes share (sim_mp.c) --------------- */

int sim_view_create(const RtConfig *cfg, Sim **out)
{
    return sim_new(cfg, false, out);
}

void sim_view_watch(Sim *s, int (*watch)(void *ctx), void *ctx)
{
    s->watch = watch;
    s->watch_ctx = ctx;
}

void sim_view_buffers(Sim *s, int rank, char *const *bufs, const size_t *bytes, int nbufs)
{
    SimRank *rk = &s->ranks[rank];
    for (int b = 0; b < IR_MAX_BUFS; b++)
        rk->buf[b] = b < nbufs ? bufs[b] : NULL;
    s->registered = true;   /* the caller's memory: never freed here */
    s->nbufs = nbufs;
    memcpy(s->bytes, bytes, (size_t)nbufs * sizeof *bytes);
}

/* Why this rank stopped, when its own wait is not what ran out. */
static void sim_report_view(Sim *s, int rank)
{
    const SimUnit *rk = &s->units[rank]; /* one unit per rank: sim_run_rank takes no plans */
    char where[512] = "";
    int dead = (int)atomic_load(s->dead_word) - 1;
    if (rk->stuck_op >= 0) {
        sim_where(s, &s->ir->ranks[rank].ops[rk->stuck_op], rk->stuck_iter, where, sizeof where);
        if (dead >= 0) {
            rt_error(s->cfg.log, "rank %d stopped waiting at %s: rank %d's process has exited", rank, where, dead);
            return;
        }
        if (sim_report_rank(s, rank))
            return;
    }
    if (dead >= 0)
        rt_error(s->cfg.log, "rank %d stopped: rank %d's process has exited", rank, dead);
    else
        rt_error(s->cfg.log, "rank %d stopped%s%s: another rank gave up waiting (its message says where)", rank,
                 where[0] ? " at " : "", where);
}

/* Rank r's units: its thread blocks, or for a .cdsl program the rank and its port channels'
   proxies. Their workers, or NULL after a message; *first and *n say which units. */
static SimWorker *sim_rank_workers(Sim *s, int rank, int *first, int *n)
{
    *first = -1, *n = 0;
    for (int u = 0; u < s->nunits; u++)
        if (s->units[u].rank == rank) {
            *first = *first < 0 ? u : *first;
            ++*n;
        }
    SimWorker *ws = calloc((size_t)*n, sizeof *ws);
    bool ok = ws != NULL;
    for (int k = 0; ok && k < *n; k++)
        ok = sim_worker_init(s, &ws[k], *first + k);
    if (!ok) {
        sim_workers_free(ws, ws ? *n : 0);
        rt_error(s->cfg.log, "out of memory starting the sim's rank %d", rank);
        return NULL;
    }
    return ws;
}

/* The rank's first unit on this thread, the others (port proxies) on threads of their own. */
static int sim_rank_threads(Sim *s, SimWorker *ws, int n)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, SIM_STACK_BYTES);
    int started = 1, err = 0;
    while (started < n && !(err = pthread_create(&ws[started].thread, &attr, sim_rank_main, &ws[started])))
        started++;
    pthread_attr_destroy(&attr);
    if (err)
        atomic_store(s->stop, 1);
    sim_rank_main(&ws[0]);
    for (int k = 1; k < started; k++)
        pthread_join(ws[k].thread, NULL);
    if (err)
        rt_error(s->cfg.log, "cannot start the sim's %d threads for one rank: %s", n, strerror(err));
    return err ? CDSL_ERR_SYSTEM : CDSL_OK;
}

int sim_run_rank(Sim *s, int rank, size_t chunk_bytes, double *us)
{
    if (!sim_run_ready(s, chunk_bytes, 1) || rank < 0 || rank >= s->n)
        return CDSL_ERR_USAGE;
    if (s->ir->plan) {
        rt_error(s->cfg.log, "%s is an MSCCL++ plan; one process per rank runs .cdsl programs only (the threaded "
                 "sim runs plans)", s->ir->name);
        return CDSL_ERR_USAGE;
    }
    int first, n;
    SimWorker *ws = sim_rank_workers(s, rank, &first, &n);
    if (!ws)
        return CDSL_ERR_SYSTEM;
    s->chunk = chunk_bytes;
    s->iters = 1;
    s->gate_open = true;
    for (int k = 0; k < n; k++)
        s->units[first + k].stuck_op = -1;
    s->ranks[rank].final_valid = false;
    atomic_store(&s->ranks[rank].started, 0);
    atomic_store(&s->ranks[rank].units_done, 0);
    double t0 = sim_now_us();
    int rc = sim_rank_threads(s, ws, n);
    if (us)
        *us = sim_now_us() - t0;
    sim_workers_free(ws, n);
    if (rc != CDSL_OK)
        return rc;
    if (!sim_stopped(s)) {
        /* after every write of this rank's part: a peer that sees the count and then this
           process gone knows that nothing of this run is missing */
        atomic_fetch_add_explicit(s->ranks[rank].runs_done, 1, memory_order_release);
        return CDSL_OK;
    }
    sim_report_view(s, rank);
    return CDSL_ERR_RUNTIME;
}
