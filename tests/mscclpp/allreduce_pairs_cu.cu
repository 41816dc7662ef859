// CUDA for the MSCCL++ plan allreduce_pairs (allreduce), imported and checked by cdslc:
// 2 ranks, flavour p2p (peer memory, switch emulated), element type f32.
// plan_<r>_<t>() is thread block t of rank r: the block's checked ops in order, each
// under a comment with the plan's line:col. Self-contained for NVRTC: no headers.

typedef unsigned int u32;
typedef unsigned long long u64;

/* The kernel's argument block: runtime/abi.h, ABI version 1. */
typedef struct CdslArgs {
    unsigned long long chunk_bytes;   /* bytes per chunk, a multiple of 4 */
    unsigned long long spin_limit;    /* polls before a wait gives up */
    int rank, nranks;
    char *buf[8];                     /* this rank's buffers (input, output, scratch) */
    char *const *peer_buf;            /* [nranks*8]: rank q's buffer b at q*8+b */
    char *mc_buf[8];                  /* nvls: multicast address of each buffer */
    unsigned long long *sync;         /* this rank's sync words */
    unsigned long long *const *peer_sync; /* [nranks]: every rank's sync words */
    unsigned long long *mc_sync;      /* nvls: multicast address of the sync words */
    unsigned long long *state;        /* this rank's private state words */
    unsigned int *error;              /* the error record */
} CdslArgs;
static_assert(sizeof(CdslArgs) == 200, "CdslArgs differs from runtime/abi.h");

#define CDSL_NRANKS 2
enum {
    CDSL_SYNC_SWITCH = 0,   /* sync words: switch arrivals from every rank */
    CDSL_SYNC_PEER = 1,     /* + p: arrivals rank p made for this rank */
    CDSL_STATE_SWITCH = 0,  /* state words: switch arrivals consumed so far */
    CDSL_STATE_PEER = 1,    /* + p: arrivals from p consumed so far */
    CDSL_STATE_GRID = 3,    /* + 0: block arrivals this launch, + 1: blocks out */
};

/* Helpers return false when the rank has failed (a bounded wait ran out); the rank's code
   then returns at once, so that the whole grid leaves instead of hanging. */
#define CDSL_TRY(call) do { if (!(call)) return false; } while (0)

enum CdslOrder { CDSL_RELEASE, CDSL_ACQUIRE, CDSL_RELAXED };
#define CDSL_GRID_COUNTER 0xffffffffu   /* error[3] when the rank's own grid barrier ran out */

/* ---- Memory-order primitives (PTX) ---------------------------------------------------------- */

__device__ __forceinline__ u64 cdsl_ld_acquire_sys(const u64 *p)
{
    u64 v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ u64 cdsl_ld_relaxed_sys(const u64 *p)
{
    u64 v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ u64 cdsl_ld_acquire_gpu(const u64 *p)
{
    u64 v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

/* One arrival on a semaphore word (this GPU's or a peer's, through its unicast address). */
__device__ __forceinline__ void cdsl_red_sys(u64 *p, CdslOrder order)
{
    if (order == CDSL_RELEASE)
        asm volatile("red.release.sys.global.add.u64 [%0], 1;" : : "l"(p) : "memory");
    else
        asm volatile("red.relaxed.sys.global.add.u64 [%0], 1;" : : "l"(p) : "memory");
}

/* ---- Bounded spins and the error record ----------------------------------------------------- */

/* The first failure of the rank wins the record; the host reads it after the launch. */
__device__ __noinline__ void cdsl_give_up(const CdslArgs &a, u32 line, u32 counter)
{
    if (atomicCAS(a.error, 0u, 1u) == 0u) {
        a.error[1] = (u32)a.rank;
        a.error[2] = line;
        a.error[3] = counter;
        __threadfence_system();
    }
}

__device__ __forceinline__ bool cdsl_failed(const CdslArgs &a)
{
    return *(volatile u32 *)a.error != 0u;
}

enum CdslPoll { CDSL_POLL_ACQUIRE_SYS, CDSL_POLL_RELAXED_SYS, CDSL_POLL_ACQUIRE_GPU };

/* Poll *word until it has reached target, wrap-safe: counters only grow and are never reset,
   so (long long)(value - target) >= 0 is right even after 2^64 arrivals. At most
   a.spin_limit polls (0: no bound); gives up early when another thread of the rank already
   failed. Returns false when it gave up. */
__device__ bool cdsl_spin(const CdslArgs &a, const u64 *word, u64 target, CdslPoll how, u32 line,
                          u32 counter)
{
    for (u64 polls = 1;; polls++) {
        u64 v = how == CDSL_POLL_ACQUIRE_SYS   ? cdsl_ld_acquire_sys(word)
                : how == CDSL_POLL_RELAXED_SYS ? cdsl_ld_relaxed_sys(word)
                                               : cdsl_ld_acquire_gpu(word);
        if ((long long)(v - target) >= 0)
            return true;
        if (a.spin_limit && polls >= a.spin_limit) {
            cdsl_give_up(a, line, counter);
            return false;
        }
        if ((polls & 255) == 0 && cdsl_failed(a))
            return false;
    }
}

/* ---- The rank's thread blocks ---------------------------------------------------------------
   All blocks of a rank are resident at once (the runtime sizes the grid for that), so they can
   wait for each other. state[CDSL_STATE_GRID] counts block arrivals during this launch: the
   k-th convergence of the launch is complete when it reaches k * gridDim.x. A block arrives at
   convergence k only after it has seen convergence k-1 complete, so no block is ever two
   convergences ahead and the count cannot be reached by early arrivals for later ones.
   state[CDSL_STATE_GRID + 1] counts blocks leaving; the last one out resets both to zero for
   the next launch. */

__device__ __noinline__ bool cdsl_blocks_meet(const CdslArgs &a, u32 k, bool everyone_waits, u32 line)
{
    u64 *count = &a.state[CDSL_STATE_GRID];
    const u64 blocks = gridDim.x;
    int bad = 0;
    __syncthreads(); /* this block's share of the data operations is done */
    if (threadIdx.x == 0) {
        bad = !cdsl_spin(a, count, (k - 1) * blocks, CDSL_POLL_ACQUIRE_GPU, line, CDSL_GRID_COUNTER);
        if (!bad) {
            __threadfence(); /* release this block's writes to the block that goes on */
            atomicAdd(count, 1ull);
            if (everyone_waits || blockIdx.x == 0)
                bad = !cdsl_spin(a, count, k * blocks, CDSL_POLL_ACQUIRE_GPU, line, CDSL_GRID_COUNTER);
        }
    }
    return !__syncthreads_or(bad);
}

/* Grid barrier, the k-th convergence of this launch: no block goes on before every block of
   the rank has finished what came before. */
__device__ __forceinline__ bool cdsl_grid_barrier(const CdslArgs &a, u32 k, u32 line)
{
    return cdsl_blocks_meet(a, k, true, line);
}

/* Convergence before a signal, the k-th of this launch: only block 0 (whose thread 0 makes the
   rank's one arrival) waits for the others; they arrive and go on. */
__device__ __forceinline__ bool cdsl_converge(const CdslArgs &a, u32 k, u32 line)
{
    return cdsl_blocks_meet(a, k, false, line);
}

/* True in exactly one thread of the rank, the last to leave; it then owns the state words. */
__device__ __noinline__ bool cdsl_last_out(const CdslArgs &a)
{
    if (threadIdx.x != 0)
        return false;
    __threadfence();
    if (atomicAdd(&a.state[CDSL_STATE_GRID + 1], 1ull) != gridDim.x - 1)
        return false;
    __threadfence();
    a.state[CDSL_STATE_GRID] = 0;
    a.state[CDSL_STATE_GRID + 1] = 0;
    return true;
}

/* ---- Waits --------------------------------------------------------------------------------
   Every block's thread 0 polls the counter itself and then releases its block with
   __syncthreads(): cheaper than one poller and a grid barrier, and each block's reads after
   the wait are ordered after its own acquire. The target is the counter's value at the start
   of this launch (state word, updated only by the last block out, so every block reads the
   same) plus the arrivals this wait needs: the emitter numbers the waits of each rank. */

__device__ __noinline__ bool cdsl_wait_word(const CdslArgs &a, const u64 *word, u32 state_index,
                                             u64 need, CdslOrder order, u32 line, u32 counter)
{
    int bad = 0;
    if (threadIdx.x == 0) {
        u64 target = a.state[state_index] + need;
        bad = !cdsl_spin(a, word, target,
                         order == CDSL_RELAXED ? CDSL_POLL_RELAXED_SYS : CDSL_POLL_ACQUIRE_SYS, line,
                         counter);
    }
    return !__syncthreads_or(bad);
}

/* p.wait(): the nth arrival of rank p on this rank's semaphore for p, in this launch. */
__device__ __forceinline__ bool cdsl_peer_wait(const CdslArgs &a, int p, u32 nth, CdslOrder order, u32 line)
{
    return cdsl_wait_word(a, &a.sync[CDSL_SYNC_PEER + p], CDSL_STATE_PEER + p, nth, order, line,
                          CDSL_SYNC_PEER + p);
}

/* p.signal(): one arrival on rank p's semaphore for this rank, made by one thread after the
   rank's blocks have converged (the caller converges first). */
__device__ __forceinline__ void cdsl_peer_signal(const CdslArgs &a, int p, CdslOrder order)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        cdsl_red_sys(&a.peer_sync[p][CDSL_SYNC_PEER + a.rank], order);
}

/* ---- Element type f32: one element per 32-bit word, sums in f32 ------------------------------ */

struct CdslAcc {
    float v;
};
__device__ __forceinline__ void cdsl_acc_first(CdslAcc &s, u32 w) { s.v = __uint_as_float(w); }
__device__ __forceinline__ void cdsl_acc_add(CdslAcc &s, u32 w) { s.v = __fadd_rn(s.v, __uint_as_float(w)); }
__device__ __forceinline__ u32 cdsl_acc_word(const CdslAcc &s) { return __float_as_uint(s.v); }

/* ---- Sums of 16-byte packs and 4-byte words, element by element ---------------------------- */

template <typename W> struct CdslSum;

template <> struct CdslSum<u32> {
    CdslAcc s;
    __device__ __forceinline__ void first(u32 w) { cdsl_acc_first(s, w); }
    __device__ __forceinline__ void add(u32 w) { cdsl_acc_add(s, w); }
    __device__ __forceinline__ u32 get() const { return cdsl_acc_word(s); }
};

template <> struct CdslSum<uint4> {
    CdslAcc s[4];
    __device__ __forceinline__ void first(uint4 w)
    {
        cdsl_acc_first(s[0], w.x), cdsl_acc_first(s[1], w.y), cdsl_acc_first(s[2], w.z), cdsl_acc_first(s[3], w.w);
    }
    __device__ __forceinline__ void add(uint4 w)
    {
        cdsl_acc_add(s[0], w.x), cdsl_acc_add(s[1], w.y), cdsl_acc_add(s[2], w.z), cdsl_acc_add(s[3], w.w);
    }
    __device__ __forceinline__ uint4 get() const
    {
        return make_uint4(cdsl_acc_word(s[0]), cdsl_acc_word(s[1]), cdsl_acc_word(s[2]), cdsl_acc_word(s[3]));
    }
};

/* ---- Data movement ------------------------------------------------------------------------
   A data operation is a source (what to load at a byte offset) and a destination (where to
   store it). cdsl_apply spreads it over every thread of the rank: 16-byte packs in a
   grid-stride loop (consecutive threads take consecutive packs: coalesced), four packs per
   thread per round so that four loads are in flight, then 4-byte words for the tail.

   Which thread handles element i of a range depends only on i, the range's length and the
   launch (its grid and chunk size), never on the operation or on its other operands: two
   operations on the same range meet in the same thread, so they need no barrier between them
   (the checker's ordering pass, order.c, relies on this). Hence one choice for the whole
   launch: packs when chunk_bytes is a multiple of 16 (then every chunk offset is 16-byte
   aligned, buffers being so), 4-byte words otherwise (a chunk is only a multiple of 4).
   Each operation is one out-of-line function, compiled once however many ranks and calls
   use it: that keeps NVRTC fast. */

template <typename W, typename S, typename D>
__device__ __forceinline__ void cdsl_stream(const S &src, const D &dst, u64 first, u64 n)
{
    const u64 step = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * step < n; i += 4 * step) {
        W v0 = src.template load<W>(first + i * sizeof(W));
        W v1 = src.template load<W>(first + (i + step) * sizeof(W));
        W v2 = src.template load<W>(first + (i + 2 * step) * sizeof(W));
        W v3 = src.template load<W>(first + (i + 3 * step) * sizeof(W));
        dst.template store<W>(first + i * sizeof(W), v0);
        dst.template store<W>(first + (i + step) * sizeof(W), v1);
        dst.template store<W>(first + (i + 2 * step) * sizeof(W), v2);
        dst.template store<W>(first + (i + 3 * step) * sizeof(W), v3);
    }
    for (; i < n; i += step)
        dst.template store<W>(first + i * sizeof(W), src.template load<W>(first + i * sizeof(W)));
}

__device__ __forceinline__ u64 cdsl_at(const CdslArgs &a, int chunk)
{
    return (u64)chunk * a.chunk_bytes;
}

template <typename S, typename D>
__device__ __forceinline__ void cdsl_apply(const CdslArgs &a, const S &src, const D &dst, int chunks)
{
    u64 bytes = cdsl_at(a, chunks);
    u64 packs = (a.chunk_bytes & 15) == 0 ? bytes / 16 : 0;
    cdsl_stream<uint4>(src, dst, 0, packs);
    cdsl_stream<u32>(src, dst, packs * 16, (bytes - packs * 16) / 4);
}

/* Buffer b of rank q: our own through its local address, a peer's through its peer mapping. */
__device__ __forceinline__ char *cdsl_rank_buf(const CdslArgs &a, int q, int b)
{
    return q == a.rank ? a.buf[b] : a.peer_buf[q * 8 + b];
}

struct CdslLoad {   /* plain loads from one address range (local, or a peer's) */
    const char *p;
    template <typename W> __device__ __forceinline__ W load(u64 off) const
    {
        return *(const W *)(p + off);
    }
};

struct CdslStore {  /* plain stores into one address range (local, or a peer's) */
    char *p;
    template <typename W> __device__ __forceinline__ void store(u64 off, W v) const
    {
        *(W *)(p + off) = v;
    }
};

struct CdslLoadSum2 {   /* x + y, element-wise */
    const char *x, *y;
    template <typename W> __device__ __forceinline__ W load(u64 off) const
    {
        CdslSum<W> s;
        s.first(*(const W *)(x + off));
        s.add(*(const W *)(y + off));
        return s.get();
    }
};

/* copy(dst, src): both local. */
__device__ __noinline__ void cdsl_copy(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {a.buf[sb] + cdsl_at(a, sc)};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_apply(a, src, dst, n);
}

/* reduce(dst, x, y): all local. */
__device__ __noinline__ void cdsl_reduce(const CdslArgs &a, int db, int dc, int xb, int xc, int yb, int yc, int n)
{
    CdslLoadSum2 src = {a.buf[xb] + cdsl_at(a, xc), a.buf[yb] + cdsl_at(a, yc)};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_apply(a, src, dst, n);
}

/* p.put(dst, src): local src into dst on rank p. */
__device__ __noinline__ void cdsl_put(const CdslArgs &a, int p, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {a.buf[sb] + cdsl_at(a, sc)};
    CdslStore dst = {cdsl_rank_buf(a, p, db) + cdsl_at(a, dc)};
    cdsl_apply(a, src, dst, n);
}

/* p.get(dst, src): src on rank p into local dst. */
__device__ __noinline__ void cdsl_get(const CdslArgs &a, int p, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {cdsl_rank_buf(a, p, sb) + cdsl_at(a, sc)};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_apply(a, src, dst, n);
}

/* ---- The switch, p2p flavour: emulated over peer memory -------------------------------------
   What the switch does in one instruction is done here with unicast loads, stores and
   system-scope atomics on every rank's memory through the peer mappings, with the same
   meaning: a store lands on every rank, a reduction sums every rank's copy, an arrival counts
   on every rank's switch counter. */

#define CDSL_RANK_UNROLL 2

struct CdslRanks {      /* the same byte range of buffer b on every rank, addresses kept */
    char *p[CDSL_NRANKS];
    __device__ __forceinline__ CdslRanks(const CdslArgs &a, int b, u64 off)
    {
#pragma unroll CDSL_RANK_UNROLL
        for (int q = 0; q < CDSL_NRANKS; q++)
            p[q] = cdsl_rank_buf(a, q, b) + off;
    }
    __device__ __forceinline__ char *at(int q) const { return p[q]; }
};

struct CdslRanksLoadSum {   /* the sum over every rank, rank 0 first */
    CdslRanks r;
    template <typename W> __device__ __forceinline__ W load(u64 off) const
    {
        CdslSum<W> s;
        s.first(*(const W *)(r.at(0) + off));
#pragma unroll CDSL_RANK_UNROLL
        for (int q = 1; q < CDSL_NRANKS; q++)
            s.add(*(const W *)(r.at(q) + off));
        return s.get();
    }
};

struct CdslRanksStore {     /* the same value stored on every rank */
    CdslRanks r;
    template <typename W> __device__ __forceinline__ void store(u64 off, W v) const
    {
#pragma unroll CDSL_RANK_UNROLL
        for (int q = 0; q < CDSL_NRANKS; q++)
            *(W *)(r.at(q) + off) = v;
    }
};

/* switch.store(dst, src): local src into dst on every rank. */
__device__ __noinline__ void cdsl_switch_store(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {a.buf[sb] + cdsl_at(a, sc)};
    CdslRanksStore dst = {CdslRanks(a, db, cdsl_at(a, dc))};
    cdsl_apply(a, src, dst, n);
}

/* switch.reduce(dst, src): local dst = the sum over every rank of src. */
__device__ __noinline__ void cdsl_switch_reduce(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslRanksLoadSum src = {CdslRanks(a, sb, cdsl_at(a, sc))};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_apply(a, src, dst, n);
}

/* switch.reduce_store(dst, src): the sum over every rank of src, into dst on every rank. */
__device__ __noinline__ void cdsl_switch_reduce_store(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslRanksLoadSum src = {CdslRanks(a, sb, cdsl_at(a, sc))};
    CdslRanksStore dst = {CdslRanks(a, db, cdsl_at(a, dc))};
    cdsl_apply(a, src, dst, n);
}

/* switch.signal(): one arrival, made once by the rank after its blocks converged: one
   system-scope atomic add on every rank's switch counter. */
__device__ __forceinline__ void cdsl_switch_signal(const CdslArgs &a, CdslOrder order)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    for (int q = 0; q < CDSL_NRANKS; q++)
        cdsl_red_sys(q == a.rank ? &a.sync[CDSL_SYNC_SWITCH] : &a.peer_sync[q][CDSL_SYNC_SWITCH], order);
}

/* switch.wait(): the nth wait of this launch completes when every rank has made its nth
   arrival, i.e. this rank's counter has grown by nth * nranks. */
__device__ __forceinline__ bool cdsl_switch_wait(const CdslArgs &a, u32 nth, CdslOrder order, u32 line)
{
    return cdsl_wait_word(a, &a.sync[CDSL_SYNC_SWITCH], CDSL_STATE_SWITCH, (u64)nth * CDSL_NRANKS,
                          order, line, CDSL_SYNC_SWITCH);
}

/*
 * plan_blocks.cu - device helpers for an imported MSCCL++ plan, whose ranks run one op list
 * per thread block (ir.h's units). Appended by compiler/emit_blocks.c after the prelude that
 * every emitted source has (emit_prelude.c: the argument block, orders, bounded spins, waits,
 * the element type's sums, CdslLoad/CdslStore and the switch's load and store forms of the
 * flavour). Not compiled on its own.
 *
 * A plan block's data op is spread over the block's own threads: element i of a range goes
 * to thread i mod blockDim.x, whatever the op, as in MSCCL++'s executor, so two ops of a
 * block on the same place of the same range meet in one thread (compiler/blocks.c relies on
 * that). A signal or wait is thread 0's; a nop is __syncthreads(); a barrier is a count in
 * the rank's state words that the k-th use by each of its n blocks brings to k * n.
 */

/* ---- Data movement inside one block ------------------------------------------------------ */

template <typename W, typename S, typename D>
__device__ __forceinline__ void cdsl_tb_stream(const S &src, const D &dst, u64 first, u64 n)
{
    const u64 step = blockDim.x;
    u64 i = threadIdx.x;
    for (; i + 3 * step < n; i += 4 * step) {
        W v0 = src.template load<W>(first + i * sizeof(W));
        W v1 = src.template load<W>(first + (i + step) * sizeof(W));
        W v2 = src.template load<W>(first + (i + 2 * step) * sizeof(W));
        W v3 = src.template load<W>(first + (i + 3 * step) * sizeof(W));
        dst.template store<W>(first + i * sizeof(W), v0);
        dst.template store<W>(first + (i + step) * sizeof(W), v1);
        dst.template store<W>(first + (i + 2 * step) * sizeof(W), v2);
        dst.template store<W>(first + (i + 3 * step) * sizeof(W), v3);
    }
    for (; i < n; i += step)
        dst.template store<W>(first + i * sizeof(W), src.template load<W>(first + i * sizeof(W)));
}

/* A plan's chunks are multiples of its buffer alignment (16 bytes or more): 16-byte packs. */
template <typename S, typename D>
__device__ __forceinline__ void cdsl_tb_apply(const CdslArgs &a, const S &src, const D &dst, int chunks)
{
    u64 bytes = cdsl_at(a, chunks);
    u64 packs = (a.chunk_bytes & 15) == 0 ? bytes / 16 : 0;
    cdsl_tb_stream<uint4>(src, dst, 0, packs);
    cdsl_tb_stream<u32>(src, dst, packs * 16, (bytes - packs * 16) / 4);
}

/* copy: both local. */
__device__ __noinline__ void cdsl_tb_copy(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {a.buf[sb] + cdsl_at(a, sc)};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_tb_apply(a, src, dst, n);
}

/* dst = x + y, x local, y on rank yq (this rank's own: local). */
__device__ __noinline__ void cdsl_tb_reduce(const CdslArgs &a, int db, int dc, int xb, int xc, int yq, int yb, int yc,
                                            int n)
{
    CdslLoadSum2 src = {a.buf[xb] + cdsl_at(a, xc), cdsl_rank_buf(a, yq, yb) + cdsl_at(a, yc)};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_tb_apply(a, src, dst, n);
}

/* put: local src into dst on rank p. */
__device__ __noinline__ void cdsl_tb_put(const CdslArgs &a, int p, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {a.buf[sb] + cdsl_at(a, sc)};
    CdslStore dst = {cdsl_rank_buf(a, p, db) + cdsl_at(a, dc)};
    cdsl_tb_apply(a, src, dst, n);
}

/* get: src on rank p into local dst. */
__device__ __noinline__ void cdsl_tb_get(const CdslArgs &a, int p, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {cdsl_rank_buf(a, p, sb) + cdsl_at(a, sc)};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_tb_apply(a, src, dst, n);
}

/* ---- The switch, inside one block ------------------------------------------------------------ */

#ifdef CDSL_PLAN_NVLS
/* multimem accesses through the multicast mappings; fence.proxy.alias around them, by every
   thread, since the plan says nothing about where unicast accesses meet them. */
__device__ __noinline__ void cdsl_tb_switch_store(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {a.buf[sb] + cdsl_at(a, sc)};
    CdslMcStore dst = {a.mc_buf[db] + cdsl_at(a, dc)};
    cdsl_fence_alias();
    cdsl_tb_apply(a, src, dst, n);
    cdsl_fence_alias();
}

__device__ __noinline__ void cdsl_tb_switch_reduce(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslMcLoadSum src = {a.mc_buf[sb] + cdsl_at(a, sc)};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_fence_alias();
    cdsl_tb_apply(a, src, dst, n);
    cdsl_fence_alias();
}

__device__ __noinline__ void cdsl_tb_switch_reduce_store(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslMcLoadSum src = {a.mc_buf[sb] + cdsl_at(a, sc)};
    CdslMcStore dst = {a.mc_buf[db] + cdsl_at(a, dc)};
    cdsl_fence_alias();
    cdsl_tb_apply(a, src, dst, n);
    cdsl_fence_alias();
}

/* One arrival of the rank on the switch barrier, made by this block's thread 0. */
__device__ __forceinline__ void cdsl_tb_switch_signal(const CdslArgs &a, CdslOrder order)
{
    if (threadIdx.x != 0)
        return;
    u64 *mc = &a.mc_sync[CDSL_SYNC_SWITCH];
    if (order == CDSL_RELEASE)
        asm volatile("multimem.red.release.sys.global.add.u64 [%0], %1;" : : "l"(mc), "l"(1ull) : "memory");
    else
        asm volatile("multimem.red.relaxed.sys.global.add.u64 [%0], %1;" : : "l"(mc), "l"(1ull) : "memory");
}

__device__ __forceinline__ void cdsl_tb_after_wait()
{
    cdsl_fence_alias();
}
#else
__device__ __noinline__ void cdsl_tb_switch_store(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {a.buf[sb] + cdsl_at(a, sc)};
    CdslRanksStore dst = {CdslRanks(a, db, cdsl_at(a, dc))};
    cdsl_tb_apply(a, src, dst, n);
}

__device__ __noinline__ void cdsl_tb_switch_reduce(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslRanksLoadSum src = {CdslRanks(a, sb, cdsl_at(a, sc))};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_tb_apply(a, src, dst, n);
}

__device__ __noinline__ void cdsl_tb_switch_reduce_store(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslRanksLoadSum src = {CdslRanks(a, sb, cdsl_at(a, sc))};
    CdslRanksStore dst = {CdslRanks(a, db, cdsl_at(a, dc))};
    cdsl_tb_apply(a, src, dst, n);
}

/* One arrival of the rank on the switch barrier, made by this block's thread 0: one
   system-scope add on every rank's switch counter. */
__device__ __forceinline__ void cdsl_tb_switch_signal(const CdslArgs &a, CdslOrder order)
{
    if (threadIdx.x != 0)
        return;
    for (int q = 0; q < CDSL_NRANKS; q++)
        cdsl_red_sys(q == a.rank ? &a.sync[CDSL_SYNC_SWITCH] : &a.peer_sync[q][CDSL_SYNC_SWITCH], order);
}

__device__ __forceinline__ void cdsl_tb_after_wait()
{
}
#endif

/* ---- Signals and barriers of one block ---------------------------------------------------- */

/* One arrival on rank p's word `w` (the counter of this rank's channel to p), by thread 0. */
__device__ __forceinline__ void cdsl_tb_signal(const CdslArgs &a, int p, int w, CdslOrder order)
{
    if (threadIdx.x == 0)
        cdsl_red_sys(&a.peer_sync[p][w], order);
}

/* The k-th use of a barrier by each of its n blocks: thread 0 arrives and waits for k * n
   arrivals (this launch's, in state word s; the last block out zeroes it), the block meets
   before and after. */
__device__ __noinline__ bool cdsl_tb_barrier(const CdslArgs &a, u32 s, u64 want, u32 line)
{
    int bad = 0;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(&a.state[s], 1ull);
        bad = !cdsl_spin(a, &a.state[s], want, CDSL_POLL_ACQUIRE_GPU, line, CDSL_GRID_COUNTER);
    }
    return !__syncthreads_or(bad);
}

/* ---- The plan's buffers ---- */

enum { B_input = 0, B_output = 1, B_scratch = 2 };

/* ---- rank 0: 2 thread blocks, 24 operations */

__device__ bool plan_0_0(const CdslArgs &a)
{
    // 41:23  nop  (threadblock 0)
    __syncthreads();
    // 44:23  signal peer 1 channel 0  (threadblock 0)
    cdsl_tb_signal(a, 1, 1, CDSL_RELAXED);
    // 51:23  nop  (threadblock 0)
    __syncthreads();
    // 54:23  wait peer 1 channel 0  (threadblock 0)
    CDSL_TRY(cdsl_wait_word(a, &a.sync[2], 2, 1, CDSL_RELAXED, 54, 2));
    // 61:23  nop  (threadblock 0)
    __syncthreads();
    // 64:23  reduce peer 1 output[0] <- output[0] + output[0]  (threadblock 0)
    cdsl_tb_reduce(a, B_output, 0, B_output, 0, 1, B_output, 0, 1);
    // 64:23  put peer 1 output[0] <- output[0]  (threadblock 0)
    cdsl_tb_put(a, 1, B_output, 0, B_output, 0, 1);
    // 93:23  nop  (threadblock 0)
    __syncthreads();
    // 96:23  signal peer 1 channel 0  (threadblock 0)
    cdsl_tb_signal(a, 1, 1, CDSL_RELEASE);
    // 103:23  nop  (threadblock 0)
    __syncthreads();
    // 106:23  wait peer 1 channel 0  (threadblock 0)
    CDSL_TRY(cdsl_wait_word(a, &a.sync[2], 2, 2, CDSL_ACQUIRE, 106, 2));
    // 113:23  nop  (threadblock 0)
    __syncthreads();
    return true;
}

__device__ bool plan_0_1(const CdslArgs &a)
{
    // 137:23  nop  (threadblock 1)
    __syncthreads();
    // 140:23  signal peer 1 channel 1  (threadblock 1)
    cdsl_tb_signal(a, 1, 3, CDSL_RELAXED);
    // 147:23  nop  (threadblock 1)
    __syncthreads();
    // 150:23  wait peer 1 channel 1  (threadblock 1)
    CDSL_TRY(cdsl_wait_word(a, &a.sync[4], 22, 1, CDSL_RELAXED, 150, 4));
    // 157:23  nop  (threadblock 1)
    __syncthreads();
    // 160:23  reduce peer 1 output[1] <- output[1] + output[1]  (threadblock 1)
    cdsl_tb_reduce(a, B_output, 1, B_output, 1, 1, B_output, 1, 1);
    // 160:23  put peer 1 output[1] <- output[1]  (threadblock 1)
    cdsl_tb_put(a, 1, B_output, 1, B_output, 1, 1);
    // 189:23  nop  (threadblock 1)
    __syncthreads();
    // 192:23  signal peer 1 channel 1  (threadblock 1)
    cdsl_tb_signal(a, 1, 3, CDSL_RELEASE);
    // 199:23  nop  (threadblock 1)
    __syncthreads();
    // 202:23  wait peer 1 channel 1  (threadblock 1)
    CDSL_TRY(cdsl_wait_word(a, &a.sync[4], 22, 2, CDSL_ACQUIRE, 202, 4));
    // 209:23  nop  (threadblock 1)
    __syncthreads();
    return true;
}

__device__ void plan_0_leave(const CdslArgs &a)
{
    if (cdsl_last_out(a)) {
        a.state[2] += 2;  // from rank 1, channel 0
        a.state[22] += 2;  // from rank 1, channel 1
    }
}

__device__ void plan_0(const CdslArgs &a)
{
    switch (blockIdx.x) {
    case 0: plan_0_0(a); break;
    case 1: plan_0_1(a); break;
    default: break;
    }
    plan_0_leave(a);
}

/* ---- rank 1: 2 thread blocks, 24 operations */

__device__ bool plan_1_0(const CdslArgs &a)
{
    // 259:23  nop  (threadblock 0)
    __syncthreads();
    // 262:23  signal peer 0 channel 0  (threadblock 0)
    cdsl_tb_signal(a, 0, 2, CDSL_RELAXED);
    // 269:23  nop  (threadblock 0)
    __syncthreads();
    // 272:23  wait peer 0 channel 0  (threadblock 0)
    CDSL_TRY(cdsl_wait_word(a, &a.sync[1], 1, 1, CDSL_RELAXED, 272, 1));
    // 279:23  nop  (threadblock 0)
    __syncthreads();
    // 282:23  reduce peer 0 output[2] <- output[2] + output[2]  (threadblock 0)
    cdsl_tb_reduce(a, B_output, 2, B_output, 2, 0, B_output, 2, 1);
    // 282:23  put peer 0 output[2] <- output[2]  (threadblock 0)
    cdsl_tb_put(a, 0, B_output, 2, B_output, 2, 1);
    // 311:23  nop  (threadblock 0)
    __syncthreads();
    // 314:23  signal peer 0 channel 0  (threadblock 0)
    cdsl_tb_signal(a, 0, 2, CDSL_RELEASE);
    // 321:23  nop  (threadblock 0)
    __syncthreads();
    // 324:23  wait peer 0 channel 0  (threadblock 0)
    CDSL_TRY(cdsl_wait_word(a, &a.sync[1], 1, 2, CDSL_ACQUIRE, 324, 1));
    // 331:23  nop  (threadblock 0)
    __syncthreads();
    return true;
}

__device__ bool plan_1_1(const CdslArgs &a)
{
    // 355:23  nop  (threadblock 1)
    __syncthreads();
    // 358:23  signal peer 0 channel 1  (threadblock 1)
    cdsl_tb_signal(a, 0, 4, CDSL_RELAXED);
    // 365:23  nop  (threadblock 1)
    __syncthreads();
    // 368:23  wait peer 0 channel 1  (threadblock 1)
    CDSL_TRY(cdsl_wait_word(a, &a.sync[3], 21, 1, CDSL_RELAXED, 368, 3));
    // 375:23  nop  (threadblock 1)
    __syncthreads();
    // 378:23  reduce peer 0 output[3] <- output[3] + output[3]  (threadblock 1)
    cdsl_tb_reduce(a, B_output, 3, B_output, 3, 0, B_output, 3, 1);
    // 378:23  put peer 0 output[3] <- output[3]  (threadblock 1)
    cdsl_tb_put(a, 0, B_output, 3, B_output, 3, 1);
    // 407:23  nop  (threadblock 1)
    __syncthreads();
    // 410:23  signal peer 0 channel 1  (threadblock 1)
    cdsl_tb_signal(a, 0, 4, CDSL_RELEASE);
    // 417:23  nop  (threadblock 1)
    __syncthreads();
    // 420:23  wait peer 0 channel 1  (threadblock 1)
    CDSL_TRY(cdsl_wait_word(a, &a.sync[3], 21, 2, CDSL_ACQUIRE, 420, 3));
    // 427:23  nop  (threadblock 1)
    __syncthreads();
    return true;
}

__device__ void plan_1_leave(const CdslArgs &a)
{
    if (cdsl_last_out(a)) {
        a.state[1] += 2;  // from rank 0, channel 0
        a.state[21] += 2;  // from rank 0, channel 1
    }
}

__device__ void plan_1(const CdslArgs &a)
{
    switch (blockIdx.x) {
    case 0: plan_1_0(a); break;
    case 1: plan_1_1(a); break;
    default: break;
    }
    plan_1_leave(a);
}

extern "C" __global__ void cdsl_main(const __grid_constant__ CdslArgs a)
{
    switch (a.rank) {
    case 0: plan_0(a); break;
    case 1: plan_1(a); break;
    }
}
