/*
 * cdsl_device.cuh - the device library every kernel cdslc emits includes: the argument block
 * (runtime/abi.h, the same text the host compiles), orders and bounded spins, the error
 * record, convergence of a rank's blocks, peer signal and wait, the element type's sums, the
 * data-movement engine with the local and peer operations, and the switch operations of the
 * flavour (cdsl_nvls.cuh: multimem; cdsl_p2p.cuh: emulated over peer memory, with no multimem
 * instruction at all). Each operation is one function template over the group of threads that
 * carries it out (the rank's grid for a .cdsl program, one thread block for an imported
 * MSCCL++ plan: "Who cooperates" below), with an out-of-line instance per group that the
 * emitted code calls.
 *
 * The emitted program chooses what it needs with macros defined before the #include:
 *   CDSL_NRANKS        the rank count (required)
 *   CDSL_FLAVOUR_NVLS or CDSL_FLAVOUR_P2P   the flavour (one of them, required)
 *   CDSL_ELEM_F32, _F16, _BF16, _U32 or _S32  the element type (one of them, required)
 *   CDSL_PLAN          the program is an imported plan: its counters are a word per channel,
 *                      its operations the thread block's (a .cdsl program's: a word per block,
 *                      the grid's)
 *   CDSL_INLINE        inline every helper (below)
 *
 * The emitted kernel calls cdsl_enter() first and each rank's leave function (cdsl_leave())
 * last: between launches the counters' bases and the launch number are handed over with
 * plain stores (runtime/abi.h says how).
 *
 * The build embeds these files in libcdsl (build/gen/device_headers.c); NVRTC receives them
 * as named headers, so the emitted program stays short. cdslc --emit-cuda --standalone pastes
 * them in place of the #include for nvcc.
 *
 * Helpers that move data, wait or meet are CDSL_OUTLINE: out of line (__noinline__) by default,
 * so that each is compiled once however many ranks call it, which keeps NVRTC's time well under
 * a second for eight ranks (inlining them all took it from 0.3 s to 5 s for allgather_mesh at
 * -n 8); inlined (__forceinline__) when the program defines CDSL_INLINE, as the emitter does
 * for small programs, where a call and its generic addressing cost more than they save.
 */
#ifndef CDSL_DEVICE_CUH
#define CDSL_DEVICE_CUH

#ifndef CDSL_NRANKS
#error "define CDSL_NRANKS (the rank count) before including cdsl_device.cuh"
#endif
#if defined(CDSL_FLAVOUR_NVLS) == defined(CDSL_FLAVOUR_P2P)
#error "define exactly one of CDSL_FLAVOUR_NVLS and CDSL_FLAVOUR_P2P before including cdsl_device.cuh"
#endif
#if defined(CDSL_ELEM_F32) + defined(CDSL_ELEM_F16) + defined(CDSL_ELEM_BF16) + defined(CDSL_ELEM_U32) + \
        defined(CDSL_ELEM_S32) != 1
#error "define exactly one of CDSL_ELEM_F32, _F16, _BF16, _U32, _S32 before including cdsl_device.cuh"
#endif

#ifdef CDSL_INLINE
#define CDSL_OUTLINE __forceinline__
#else
#define CDSL_OUTLINE __noinline__
#endif

typedef unsigned int u32;
typedef unsigned long long u64;

/* The kernel's argument block and the word layout: the host's own header. */
#include "abi.h"

static_assert(sizeof(CdslArgs) <= 4096, "a kernel's parameters are at most 4 KiB");

/* Rank q's sync words: through the argument block up to CDSL_ARGS_RANKS ranks, else the table. */
__device__ __forceinline__ u64 *cdsl_rank_sync(const CdslArgs &a, int q)
{
#if CDSL_NRANKS <= CDSL_ARGS_RANKS
    return a.peer_syncs[q];
#else
    return a.peer_sync[q];
#endif
}

/* Helpers return false when the rank has failed (a bounded wait ran out); the rank's code
   then returns at once, so that the whole grid leaves instead of hanging. */
#define CDSL_TRY(call) do { if (!(call)) return false; } while (0)

enum CdslOrder { CDSL_RELEASE, CDSL_ACQUIRE, CDSL_RELAXED };
#define CDSL_GRID_COUNTER 0xffffffffu   /* error[3] when the rank's own grid barrier ran out */

/* ---- Memory-order primitives (PTX) ----------------------------------------------------------
   A release is one fence.acq_rel then relaxed reductions, an acquire relaxed polls then one
   fence.acq_rel (PTX's release and acquire patterns): red.release.sys would be a full
   MEMBAR.ALL.SYS per arrival and ld.acquire.sys an L1 invalidate per poll. */

__device__ __forceinline__ void cdsl_fence_sys()
{
    asm volatile("fence.acq_rel.sys;" : : : "memory");
}

__device__ __forceinline__ void cdsl_fence_gpu()
{
    asm volatile("fence.acq_rel.gpu;" : : : "memory");
}

__device__ __forceinline__ u64 cdsl_ld_relaxed_sys(const u64 *p)
{
    u64 v;
    asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ u64 cdsl_ld_relaxed_gpu(const u64 *p)
{
    u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

/* One relaxed arrival on a semaphore word (this GPU's or a peer's, through its unicast
   address); a release signal puts cdsl_fence_sys() before it. */
__device__ __forceinline__ void cdsl_red_sys(u64 *p)
{
    asm volatile("red.relaxed.sys.global.add.u64 [%0], 1;" : : "l"(p) : "memory");
}

__device__ __forceinline__ void cdsl_red_gpu(u64 *p)
{
    asm volatile("red.relaxed.gpu.global.add.u64 [%0], 1;" : : "l"(p) : "memory");
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

enum CdslScope { CDSL_SYS, CDSL_GPU };

/* Poll *word (relaxed) until it has reached target, wrap-safe: counters only grow and are
   never reset, so (long long)(value - target) >= 0 is right even after 2^64 arrivals; then one
   acquire fence unless the wait is relaxed. At most a.spin_limit polls (0: no bound); gives up
   early when another thread of the rank already failed. Returns false when it gave up. */
/* A wait polls at full speed for CDSL_SPIN_FAST polls (a peer that is a few microseconds behind),
   then sleeps about CDSL_SPIN_SLEEP_NS between polls: a peer that is far behind (another
   process still busy on the host) costs no memory traffic, and the spin limit stays a bound
   of seconds however fast a relaxed poll is (2^22 polls: about 4 s or more). */
#define CDSL_SPIN_FAST 4096u
#define CDSL_SPIN_SLEEP_NS 1000u

__device__ __forceinline__ void cdsl_spin_pause(u64 polls)
{
    if (polls > CDSL_SPIN_FAST)
        __nanosleep(CDSL_SPIN_SLEEP_NS);
}

__device__ __forceinline__ bool cdsl_spin(const CdslArgs &a, const u64 *word, u64 target, CdslScope scope,
                                          CdslOrder order, u32 line, u32 counter)
{
    for (u64 polls = 1;; polls++) {
        u64 v = scope == CDSL_SYS ? cdsl_ld_relaxed_sys(word) : cdsl_ld_relaxed_gpu(word);
        if ((long long)(v - target) >= 0)
            break;
        cdsl_spin_pause(polls);
        if (a.spin_limit && polls >= a.spin_limit) {
            cdsl_give_up(a, line, counter);
            return false;
        }
        if ((polls & 255) == 0 && cdsl_failed(a))
            return false;
    }
    if (order != CDSL_RELAXED) {
        if (scope == CDSL_SYS)
            cdsl_fence_sys();
        else
            cdsl_fence_gpu();
    }
    return true;
}

/* ---- The launch number and the bases (runtime/abi.h) ----------------------------------------
   Thread 0 of each block reads the launch number L from the block's slot when the kernel
   starts (cdsl_enter); waits and convergences then count from copy L % 2 of the bases, what
   the counters held when this launch began. cdsl_leave hands over: block 0 writes copy
   (L + 1) % 2, every block writes L + 1 into its slots. Plain stores, no atomics, no fences:
   the next launch of the rank starts after this one has ended. */

__shared__ u64 cdsl_launch;

__device__ __forceinline__ void cdsl_enter(const CdslArgs &a)
{
    if (threadIdx.x == 0)
        cdsl_launch = a.state[CDSL_STATE_LAUNCH(CDSL_NRANKS) + blockIdx.x];
}

/* Word w of this launch's bases (thread 0 only: it read the launch number). */
__device__ __forceinline__ u64 cdsl_base(const CdslArgs &a, u32 w)
{
    return a.state[(cdsl_launch & 1) * CDSL_BASE_WORDS(CDSL_NRANKS) + w];
}

#ifndef CDSL_PLAN
/* The base of this block's word of counter src (0: the switch, 1 + p: peer p): a .cdsl
   program's counters have a word per block, each with its own base (runtime/abi.h). Only
   block b reads and writes slot b's bases in a launch, so one copy will do. */
__device__ __forceinline__ u64 cdsl_block_base(const CdslArgs &a, u32 src)
{
    return a.state[CDSL_STATE_BLOCK_BASE(CDSL_NRANKS, src, blockIdx.x)];
}

/* The counter whose consumption (the rank's consumed(w)) block word src counts. */
__device__ __forceinline__ u32 cdsl_block_counter(u32 src)
{
    return src == 0 ? (u32)CDSL_STATE_SWITCH : (u32)CDSL_STATE_PEER + src - 1;
}

/* Block b adds what this launch consumed (alike in every block) to its own slot's bases, after
   its waits (the caller's __syncthreads). Slots beyond the grid had no arrivals: unchanged. */
template <typename F> __device__ __forceinline__ void cdsl_leave_blocks(const CdslArgs &a, F consumed)
{
    for (u32 src = threadIdx.x; src < 1 + CDSL_NRANKS; src += blockDim.x) {
        const u64 add = consumed(cdsl_block_counter(src));
        if (add)
            a.state[CDSL_STATE_BLOCK_BASE(CDSL_NRANKS, src, blockIdx.x)] += add;
    }
}
#endif

/* What this launch consumed on the one-word counter of base word w. A .cdsl program's switch
   and peer counters are its block words (cdsl_leave_blocks): the one-word ones, an imported
   plan's, got no arrivals from it, and a plan run later on the same words must find their
   bases unchanged. */
template <typename F> __device__ __forceinline__ u64 cdsl_word_consumed(F consumed, u32 w)
{
#ifndef CDSL_PLAN
    if (w < (u32)CDSL_STATE_PEER + CDSL_NRANKS) /* CDSL_STATE_SWITCH, CDSL_STATE_PEER + p */
        return 0;
#endif
    return consumed(w);
}

/* consumed(w): the arrivals this launch consumed on the counter of base word w. */
template <typename F> __device__ __forceinline__ void cdsl_leave(const CdslArgs &a, F consumed)
{
    __syncthreads(); /* every thread sees the launch number thread 0 read */
    const u64 l = cdsl_launch;
    if (blockIdx.x == 0) {
        const u64 *from = a.state + (l & 1) * CDSL_BASE_WORDS(CDSL_NRANKS);
        u64 *to = a.state + ((l + 1) & 1) * CDSL_BASE_WORDS(CDSL_NRANKS);
        for (u32 w = threadIdx.x; w < CDSL_BASE_WORDS(CDSL_NRANKS); w += blockDim.x)
            to[w] = from[w] + cdsl_word_consumed(consumed, w);
    }
#ifndef CDSL_PLAN
    cdsl_leave_blocks(a, consumed);
#endif
    for (u32 s = blockIdx.x + threadIdx.x * gridDim.x; s < CDSL_MAX_BLOCKS; s += blockDim.x * gridDim.x)
        a.state[CDSL_STATE_LAUNCH(CDSL_NRANKS) + s] = l + 1;
}

/* ---- The rank's thread blocks ---------------------------------------------------------------
   All blocks of a rank are resident at once (the runtime sizes the grid for that), so they can
   wait for each other. The grid counter state[CDSL_STATE_LIVE] only grows; the k-th
   convergence of the launch is complete when it has grown by k * gridDim.x since the launch
   began. A block arrives at convergence k only after it has seen convergence k-1 complete, so
   no block is ever two convergences ahead and the count cannot be reached by early arrivals
   for later ones. One block is the whole rank: it only meets its own threads. */

__device__ __forceinline__ u64 cdsl_meet_arrivals(u32 meets)
{
    return gridDim.x > 1 ? (u64)meets * gridDim.x : 0;
}

__device__ CDSL_OUTLINE bool cdsl_blocks_meet(const CdslArgs &a, u32 k, bool everyone_waits, u32 line)
{
    __syncthreads(); /* this block's share of the data operations is done */
    if (gridDim.x == 1)
        return true;
    u64 *count = &a.state[CDSL_STATE_LIVE(CDSL_NRANKS)];
    const u64 blocks = gridDim.x;
    int bad = 0;
    if (threadIdx.x == 0) {
        const u64 base = cdsl_base(a, CDSL_STATE_GRID(CDSL_NRANKS));
        bad = !cdsl_spin(a, count, base + (k - 1) * blocks, CDSL_GPU, CDSL_RELAXED, line, CDSL_GRID_COUNTER);
        if (!bad) {
            cdsl_fence_gpu(); /* release this block's writes to the block that goes on */
            cdsl_red_gpu(count);
            if (everyone_waits || blockIdx.x == 0)
                bad = !cdsl_spin(a, count, base + k * blocks, CDSL_GPU, CDSL_ACQUIRE, line, CDSL_GRID_COUNTER);
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

/* Convergence before a signal, the k-th of this launch: only block 0 (whose threads make the
   rank's arrivals) waits for the others; they arrive and go on. */
__device__ __forceinline__ bool cdsl_converge(const CdslArgs &a, u32 k, u32 line)
{
    return cdsl_blocks_meet(a, k, false, line);
}

/* ---- Waits --------------------------------------------------------------------------------
   Every block's thread 0 polls the counter itself and then releases its block with
   __syncthreads(): cheaper than one poller and a grid barrier, and each block's reads after
   the wait are ordered after its own acquire. The target is the counter's base for this
   launch plus the arrivals this wait needs: the emitter numbers the waits of each rank. An
   imported plan's counters are one word each (cdsl_wait_word); a .cdsl program's have a word
   per block (cdsl_wait_block, below). */

__device__ CDSL_OUTLINE bool cdsl_wait_word(const CdslArgs &a, const u64 *word, u32 base_word, u64 need,
                                             CdslOrder order, u32 line, u32 counter)
{
    int bad = 0;
    if (threadIdx.x == 0)
        bad = !cdsl_spin(a, word, cdsl_base(a, base_word) + need, CDSL_SYS, order, line, counter);
    return !__syncthreads_or(bad);
}

/* ---- Port channels (compiler/lower/port_proxy.h; the host's proxy: runtime/engines/gpu_port.c)
   A block does not move a port channel's data: it counts a request in its host word with a
   release store at system scope (MSCCL++'s FIFO push, fifo_device.hpp:133), and the host's
   proxy serves the requests in order. The counts live in the rank's port words (abi.h), which
   only this block writes, so no base is needed across launches. */

/* A request (put, signal, flush or their fusions) to proxy k: after the block's work above. */
__device__ __forceinline__ void cdsl_port_request(const CdslArgs &a, u32 made, u32 host)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 v = a.port[made] + 1;
        a.port[made] = v;
        cdsl_fence_sys();
        asm volatile("st.relaxed.sys.global.u64 [%0], %1;" : : "l"(a.port_host + host), "l"(v) : "memory");
    }
}

/* A flush's second half: wait (acquire) until the proxy has finished this block's flushes so far
   (port_channel_device.hpp:28, waitFlush). */
__device__ CDSL_OUTLINE bool cdsl_port_flush_wait(const CdslArgs &a, u32 made, u32 host, u32 line, u32 counter)
{
    int bad = 0;
    if (threadIdx.x == 0) {
        u64 v = a.port[made] + 1;
        a.port[made] = v;
        bad = !cdsl_spin(a, a.port_host + host, v, CDSL_SYS, CDSL_ACQUIRE, line, counter);
    }
    return !__syncthreads_or(bad);
}

/* A wait on a port channel's semaphore (semaphore_device.hpp:48): one more signal than this
   rank has consumed from the peer's proxy, an acquire; only one block waits on it. */
__device__ CDSL_OUTLINE bool cdsl_port_wait(const CdslArgs &a, u32 arrived, u32 consumed, u32 line, u32 counter)
{
    int bad = 0;
    if (threadIdx.x == 0) {
        u64 v = a.port[consumed] + 1;
        bad = !cdsl_spin(a, a.port + arrived, v, CDSL_SYS, CDSL_ACQUIRE, line, counter);
        if (!bad)
            a.port[consumed] = v;
    }
    return !__syncthreads_or(bad);
}

#ifndef CDSL_PLAN
/* ---- Block-by-block arrivals (a .cdsl program) ---------------------------------------------
   Block b of a rank polls only word b of a counter (runtime/abi.h: CDSL_SYNC_BLOCK), and every
   rank runs the same grid, so block b waits for block b of its partners. A signal arrives in
   one of two ways, and every word of the grid gets exactly one arrival either way:
     CDSL_BY_BLOCK  each block adds one to word b of the partner, once its own threads are done
                    with what came before (__syncthreads): it vouches for block b's share of
                    the rank's work, which is enough when every data operation since the rank's
                    last grid barrier is reached through the same blocks on every rank
                    (compiler/lower/partition.c; docs/internals.md, "Block-by-block arrivals");
     CDSL_FOR_ALL   block 0, after the rank's blocks converged (cdsl_converge), adds one to
                    every word 0 .. G-1 of the partner: it vouches for all of them.
   A release puts one fence before each thread's relaxed reduction (one instruction per warp). */
enum CdslArrive { CDSL_BY_BLOCK, CDSL_FOR_ALL };

/* arrive(c, w): one relaxed arrival on word w of counter c, for c < counters. The calling
   block's threads take a (counter, word) each. */
template <typename F>
__device__ __forceinline__ void cdsl_arrive(CdslArrive how, u32 counters, CdslOrder order, F arrive)
{
    if (how == CDSL_BY_BLOCK)
        __syncthreads(); /* the block's share of what came before is done */
    else if (blockIdx.x != 0)
        return;
    const u32 words = how == CDSL_FOR_ALL ? gridDim.x : 1, first = how == CDSL_FOR_ALL ? 0 : blockIdx.x;
    for (u32 t = threadIdx.x; t < words * counters; t += blockDim.x) {
        if (order == CDSL_RELEASE)
            cdsl_fence_sys();
        arrive(t / words, first + t % words);
    }
}

/* Thread 0 of block b polls word b of counter src (0: the switch, 1 + p: peer p) until it has
   grown by `need` this launch. `counter` names it in the error record. */
__device__ CDSL_OUTLINE bool cdsl_wait_block(const CdslArgs &a, u32 src, u64 need, CdslOrder order, u32 line,
                                              u32 counter)
{
    int bad = 0;
    if (threadIdx.x == 0) {
        const u64 *word = &a.sync[CDSL_SYNC_BLOCK(CDSL_NRANKS, src, blockIdx.x)];
        bad = !cdsl_spin(a, word, cdsl_block_base(a, src) + need, CDSL_SYS, order, line, counter);
    }
    return !__syncthreads_or(bad);
}

/* p.wait(): the nth arrival of rank p for this block, in this launch. */
__device__ __forceinline__ bool cdsl_peer_wait(const CdslArgs &a, int p, u32 nth, CdslOrder order, u32 line)
{
    return cdsl_wait_block(a, 1 + p, nth, order, line, CDSL_SYNC_PEER + p);
}

/* p.signal(): one arrival on each of rank p's words for this rank. */
__device__ __forceinline__ void cdsl_peer_signal(const CdslArgs &a, int p, CdslOrder order, CdslArrive how)
{
    u64 *words = &cdsl_rank_sync(a, p)[CDSL_SYNC_BLOCK(CDSL_NRANKS, 1 + a.rank, 0)];
    cdsl_arrive(how, 1, order, [&](u32, u32 w) { cdsl_red_sys(&words[w]); });
}
#endif

/* ---- The element type's sums ---------------------------------------------------------------- */

#if defined(CDSL_ELEM_F32)
/* ---- Element type f32: one element per 32-bit word, sums in f32 ------------------------------ */

struct CdslAcc {
    float v;
};
__device__ __forceinline__ void cdsl_acc_first(CdslAcc &s, u32 w) { s.v = __uint_as_float(w); }
__device__ __forceinline__ void cdsl_acc_add(CdslAcc &s, u32 w) { s.v = __fadd_rn(s.v, __uint_as_float(w)); }
__device__ __forceinline__ u32 cdsl_acc_word(const CdslAcc &s) { return __float_as_uint(s.v); }

#elif defined(CDSL_ELEM_F16) || defined(CDSL_ELEM_BF16)
/* ---- Element types f16 and bf16: two elements per 32-bit word ------------------------------
   Sums are kept in f32 and rounded to the type once at the end, as the switch does for nvls
   (.acc::f32). The conversions work on the bit patterns (NVRTC has no cuda_fp16.h here): f16
   by PTX cvt; bf16 is the upper half of an f32, so widening is a shift, and narrowing rounds to
   nearest even (PTX cvt.rn.bf16.f32 from sm_80, the same rounding by hand before). */

#if defined(CDSL_ELEM_F16)
__device__ __forceinline__ float cdsl_half_to_f32(u32 bits)
{
    unsigned short h = (unsigned short)bits;
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ u32 cdsl_f32_to_half(float f)
{
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
#else
__device__ __forceinline__ float cdsl_half_to_f32(u32 bits)
{
    return __uint_as_float(bits << 16);
}

__device__ __forceinline__ u32 cdsl_f32_to_half(float f)
{
#if __CUDA_ARCH__ >= 800
    unsigned short h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    u32 u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (u >> 16) | 0x40u; /* NaN stays a (quiet) NaN */
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
#endif
}
#endif

struct CdslAcc {
    float lo, hi;
};
__device__ __forceinline__ void cdsl_acc_first(CdslAcc &s, u32 w)
{
    s.lo = cdsl_half_to_f32(w & 0xffffu);
    s.hi = cdsl_half_to_f32(w >> 16);
}
__device__ __forceinline__ void cdsl_acc_add(CdslAcc &s, u32 w)
{
    s.lo = __fadd_rn(s.lo, cdsl_half_to_f32(w & 0xffffu));
    s.hi = __fadd_rn(s.hi, cdsl_half_to_f32(w >> 16));
}
__device__ __forceinline__ u32 cdsl_acc_word(const CdslAcc &s)
{
    return cdsl_f32_to_half(s.lo) | cdsl_f32_to_half(s.hi) << 16;
}

#elif defined(CDSL_ELEM_U32) || defined(CDSL_ELEM_S32)
/* ---- Element types u32 and s32: one element per 32-bit word, sums wrap modulo 2^32 -----------
   s32 is two's complement: its sum is the same bit pattern as the unsigned sum, wrapping like
   the hardware's .s32 add, so it is computed unsigned (no signed overflow in C++). */

struct CdslAcc {
    u32 v;
};
__device__ __forceinline__ void cdsl_acc_first(CdslAcc &s, u32 w) { s.v = w; }
__device__ __forceinline__ void cdsl_acc_add(CdslAcc &s, u32 w) { s.v += w; }
__device__ __forceinline__ u32 cdsl_acc_word(const CdslAcc &s) { return s.v; }
#endif

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

/* ---- Who cooperates ------------------------------------------------------------------------
   Every operation is one function template over the group of threads that carries it out
   together, as NCCL's device API takes its Coop types (nccl_device/coop.h): the group says how
   many threads share the work (size) and which of them the calling thread is (thread_rank), so
   the same code moves a range over a whole rank or over one thread block. A group is
     CdslGrid   every thread of the rank's blocks: a .cdsl program, whose operations are spread
                over the whole grid (its meetings are the rank's grid barriers, emitted apart);
     CdslBlock  one thread block: a thread block of an imported MSCCL++ plan, which runs its own
                op list; its meeting is __syncthreads() (sync()).
   fences_alias: whether the operation itself puts fence.proxy.alias around its multicast
   accesses (nvls). The emitter of a .cdsl program places those fences exactly (emit_fence.c);
   a plan says nothing about where unicast accesses meet multicast ones, so a plan's block
   fences on both sides of each switch operation.

   The emitted code calls each operation through one out-of-line instance per group:
   cdsl_<op>(a, ...) for the grid, cdsl_tb_<op>(a, ...) for a plan's block (CDSL_OUTLINE: each
   instance is compiled once however many ranks call it). A new operation is one template here
   (or in the flavour's header for the switch's source and destination) and an instance for
   each group that uses it. */

struct CdslGrid {
    enum { fences_alias = false };  /* an enum, not a constexpr member: no global in the PTX */
    __device__ __forceinline__ u64 thread_rank() const { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }
    __device__ __forceinline__ u64 size() const { return (u64)gridDim.x * blockDim.x; }
};

struct CdslBlock {
    enum { fences_alias = true };
    __device__ __forceinline__ u64 thread_rank() const { return threadIdx.x; }
    __device__ __forceinline__ u64 size() const { return blockDim.x; }
    __device__ __forceinline__ void sync() const { __syncthreads(); }
};

/* ---- Data movement ------------------------------------------------------------------------
   A data operation is a source (what to load at a byte offset) and a destination (where to
   store it). cdsl_apply spreads it over every thread of the group: 16-byte packs in a
   group-stride loop (consecutive threads take consecutive packs: coalesced), four packs per
   thread per round so that four loads are in flight, then 4-byte words for the tail.

   Which thread handles element i of a range depends only on i, the range's length, the group
   and the launch (its grid and chunk size), never on the operation or on its other operands:
   two operations of a group on the same range meet in the same thread, so they need no
   barrier between them (the checker's ordering pass, order.c, relies on this for the grid, and
   plan_blocks.c for a plan's blocks, as in MSCCL++'s executor). Hence one choice for the whole
   launch: packs when chunk_bytes is a multiple of 16 (then every chunk offset is 16-byte
   aligned, buffers being so; a plan's chunks always are), 4-byte words otherwise (a chunk is
   only a multiple of 4). */

/* Thread `i` of `step` threads moves elements i, i + step, ... of [first, first + n) words of W. */
template <typename W, typename S, typename D>
__device__ __forceinline__ void cdsl_stream(const S &src, const D &dst, u64 first, u64 n, u64 i, u64 step)
{
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

/* `chunks` chunks moved by the threads of group g: packs, then the 4-byte tail. */
template <typename G, typename S, typename D>
__device__ __forceinline__ void cdsl_apply(G g, const CdslArgs &a, const S &src, const D &dst, int chunks)
{
    const u64 i = g.thread_rank(), step = g.size();
    u64 bytes = cdsl_at(a, chunks);
    u64 packs = (a.chunk_bytes & 15) == 0 ? bytes / 16 : 0;
    cdsl_stream<uint4>(src, dst, 0, packs, i, step);
    cdsl_stream<u32>(src, dst, packs * 16, (bytes - packs * 16) / 4, i, step);
}

/* Buffer b of rank q: our own through its local address, a peer's through its peer mapping,
   from the argument block when it has room (CDSL_ARGS_RANKS), else from the table. */
__device__ __forceinline__ char *cdsl_rank_buf(const CdslArgs &a, int q, int b)
{
#if CDSL_NRANKS <= CDSL_ARGS_RANKS
    return q == a.rank ? a.buf[b] : a.peer_bufs[q][b];  /* in the argument block */
#else
    return q == a.rank ? a.buf[b] : a.peer_buf[q * CDSL_ABI_MAX_BUFS + b];
#endif
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
template <typename G>
__device__ __forceinline__ void cdsl_copy(G g, const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {a.buf[sb] + cdsl_at(a, sc)};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_apply(g, a, src, dst, n);
}

/* reduce(dst, x, y): dst and x local, y on rank yq (a .cdsl program's is its own: local). */
template <typename G>
__device__ __forceinline__ void cdsl_reduce(G g, const CdslArgs &a, int db, int dc, int xb, int xc, int yq, int yb,
                                            int yc, int n)
{
    CdslLoadSum2 src = {a.buf[xb] + cdsl_at(a, xc), cdsl_rank_buf(a, yq, yb) + cdsl_at(a, yc)};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_apply(g, a, src, dst, n);
}

/* p.put(dst, src): local src into dst on rank p. */
template <typename G>
__device__ __forceinline__ void cdsl_put(G g, const CdslArgs &a, int p, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {a.buf[sb] + cdsl_at(a, sc)};
    CdslStore dst = {cdsl_rank_buf(a, p, db) + cdsl_at(a, dc)};
    cdsl_apply(g, a, src, dst, n);
}

/* p.get(dst, src): src on rank p into local dst. */
template <typename G>
__device__ __forceinline__ void cdsl_get(G g, const CdslArgs &a, int p, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {cdsl_rank_buf(a, p, sb) + cdsl_at(a, sc)};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_apply(g, a, src, dst, n);
}

/* ---- The switch of the flavour --------------------------------------------------------------
   The flavour's header gives the switch's source and destination from chunk c of buffer b,
   CdslSwitchSum (the sum over every rank) and CdslSwitchStore (a store that lands on every
   rank), whether they are multicast accesses (CDSL_SWITCH_MULTICAST), the arrivals of a signal
   and what comes before a wait's poll. */

#if defined(CDSL_FLAVOUR_NVLS)
#include "cdsl_nvls.cuh"
#else
#include "cdsl_p2p.cuh"
#endif

/* fence.proxy.alias around a group's switch operation, for a group that fences itself. */
template <typename G> __device__ __forceinline__ void cdsl_switch_fence(G)
{
#if CDSL_SWITCH_MULTICAST
    if (G::fences_alias)
        cdsl_fence_alias();
#endif
}

/* switch.store(dst, src): local src into dst on every rank. */
template <typename G>
__device__ __forceinline__ void cdsl_switch_store(G g, const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {a.buf[sb] + cdsl_at(a, sc)};
    CdslSwitchStore dst(a, db, dc);
    cdsl_switch_fence(g);
    cdsl_apply(g, a, src, dst, n);
    cdsl_switch_fence(g);
}

/* switch.reduce(dst, src): local dst = the sum over every rank of src. */
template <typename G>
__device__ __forceinline__ void cdsl_switch_reduce(G g, const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslSwitchSum src(a, sb, sc);
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_switch_fence(g);
    cdsl_apply(g, a, src, dst, n);
    cdsl_switch_fence(g);
}

/* switch.reduce_store(dst, src): the sum over every rank of src, into dst on every rank. */
template <typename G>
__device__ __forceinline__ void cdsl_switch_reduce_store(G g, const CdslArgs &a, int db, int dc, int sb, int sc,
                                                         int n)
{
    CdslSwitchSum src(a, sb, sc);
    CdslSwitchStore dst(a, db, dc);
    cdsl_switch_fence(g);
    cdsl_apply(g, a, src, dst, n);
    cdsl_switch_fence(g);
}

/* switch.wait(), the same in both flavours but for what goes before the poll: the nth wait of
   this launch completes when every rank has made its nth arrival, i.e. the counter has grown by
   nth * nranks. An imported plan's counter is one word; a .cdsl program's block b polls its
   word b. */
__device__ __forceinline__ bool cdsl_plan_switch_wait(const CdslArgs &a, u32 nth, CdslOrder order, u32 line)
{
    cdsl_switch_before_poll();
    return cdsl_wait_word(a, &a.sync[CDSL_SYNC_SWITCH], CDSL_STATE_SWITCH, (u64)nth * CDSL_NRANKS, order, line,
                          CDSL_SYNC_SWITCH);
}

#ifndef CDSL_PLAN
__device__ __forceinline__ bool cdsl_switch_wait(const CdslArgs &a, u32 nth, CdslOrder order, u32 line)
{
    cdsl_switch_before_poll();
    return cdsl_wait_block(a, 0, (u64)nth * CDSL_NRANKS, order, line, CDSL_SYNC_SWITCH);
}
#endif

/* ---- A .cdsl program's instances: the grid ---------------------------------------------------- */

#ifndef CDSL_PLAN
__device__ CDSL_OUTLINE void cdsl_copy(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    cdsl_copy(CdslGrid(), a, db, dc, sb, sc, n);
}

__device__ CDSL_OUTLINE void cdsl_reduce(const CdslArgs &a, int db, int dc, int xb, int xc, int yb, int yc, int n)
{
    cdsl_reduce(CdslGrid(), a, db, dc, xb, xc, a.rank, yb, yc, n);
}

__device__ CDSL_OUTLINE void cdsl_put(const CdslArgs &a, int p, int db, int dc, int sb, int sc, int n)
{
    cdsl_put(CdslGrid(), a, p, db, dc, sb, sc, n);
}

__device__ CDSL_OUTLINE void cdsl_get(const CdslArgs &a, int p, int db, int dc, int sb, int sc, int n)
{
    cdsl_get(CdslGrid(), a, p, db, dc, sb, sc, n);
}

__device__ CDSL_OUTLINE void cdsl_switch_store(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    cdsl_switch_store(CdslGrid(), a, db, dc, sb, sc, n);
}

__device__ CDSL_OUTLINE void cdsl_switch_reduce(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    cdsl_switch_reduce(CdslGrid(), a, db, dc, sb, sc, n);
}

__device__ CDSL_OUTLINE void cdsl_switch_reduce_store(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    cdsl_switch_reduce_store(CdslGrid(), a, db, dc, sb, sc, n);
}

#else
/* ---- An imported plan's instances: one thread block ------------------------------------------
   A plan's rank runs one op list per thread block (ir.h's units), as MSCCL++'s executor does
   (compiler/emit/emit_cuda.c, plan_<r>_<t>()). Its data operations are CdslBlock's; a signal or wait
   is thread 0's, on the counter of the op's channel (one word each, abi.h's plan words); a nop
   is __syncthreads(); a barrier is a counter in the rank's state words that the k-th use by
   each of its n blocks grows by k * n this launch. */

__device__ CDSL_OUTLINE void cdsl_tb_copy(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    cdsl_copy(CdslBlock(), a, db, dc, sb, sc, n);
}

__device__ CDSL_OUTLINE void cdsl_tb_reduce(const CdslArgs &a, int db, int dc, int xb, int xc, int yq, int yb, int yc,
                                            int n)
{
    cdsl_reduce(CdslBlock(), a, db, dc, xb, xc, yq, yb, yc, n);
}

__device__ CDSL_OUTLINE void cdsl_tb_put(const CdslArgs &a, int p, int db, int dc, int sb, int sc, int n)
{
    cdsl_put(CdslBlock(), a, p, db, dc, sb, sc, n);
}

__device__ CDSL_OUTLINE void cdsl_tb_get(const CdslArgs &a, int p, int db, int dc, int sb, int sc, int n)
{
    cdsl_get(CdslBlock(), a, p, db, dc, sb, sc, n);
}

__device__ CDSL_OUTLINE void cdsl_tb_switch_store(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    cdsl_switch_store(CdslBlock(), a, db, dc, sb, sc, n);
}

__device__ CDSL_OUTLINE void cdsl_tb_switch_reduce(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    cdsl_switch_reduce(CdslBlock(), a, db, dc, sb, sc, n);
}

__device__ CDSL_OUTLINE void cdsl_tb_switch_reduce_store(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    cdsl_switch_reduce_store(CdslBlock(), a, db, dc, sb, sc, n);
}

/* After a switch wait: the arrivals came through the multicast mapping (nvls), so the block's
   later unicast accesses are fenced from them, as its switch operations are. */
__device__ __forceinline__ void cdsl_tb_after_wait()
{
    cdsl_switch_fence(CdslBlock());
}

/* One arrival on rank p's word `w` (the counter of this rank's channel to p), by thread 0. */
__device__ __forceinline__ void cdsl_tb_signal(const CdslArgs &a, int p, int w, CdslOrder order)
{
    if (threadIdx.x == 0) {
        if (order == CDSL_RELEASE)
            cdsl_fence_sys();
        cdsl_red_sys(&cdsl_rank_sync(a, p)[w]);
    }
}

/* A wait on a plan's channel c >= 1 (abi.h: CDSL_SYNC_CHAN, after the fixed words): its base
   has one copy, state[base_slot], which only the one block that waits on the channel reads
   and, as it leaves, advances (cdsl_tb_chan_leave). */
__device__ CDSL_OUTLINE bool cdsl_wait_chan(const CdslArgs &a, const u64 *word, u32 base_slot, u64 need,
                                            CdslOrder order, u32 line, u32 counter)
{
    int bad = 0;
    if (threadIdx.x == 0)
        bad = !cdsl_spin(a, word, a.state[base_slot] + need, CDSL_SYS, order, line, counter);
    return !__syncthreads_or(bad);
}

/* At the end of the block that waited `consumed` times on a plan's channel c >= 1: its base
   moves on by that much for the next launch. */
__device__ __forceinline__ void cdsl_tb_chan_leave(const CdslArgs &a, u32 base_slot, u64 consumed)
{
    if (threadIdx.x == 0)
        a.state[base_slot] += consumed;
}

/* A plan's sem_release of its semaphore id (MSCCL++'s DeviceSemaphore, between the rank's
   blocks): thread 0 adds one to the semaphore's word, a release at gpu scope. */
__device__ __forceinline__ void cdsl_tb_sem_release(const CdslArgs &a, u32 id)
{
    if (threadIdx.x == 0) {
        cdsl_fence_gpu();
        cdsl_red_gpu(&a.state[CDSL_STATE_SEM_LIVE(CDSL_NRANKS, id)]);
    }
}

/* The k-th sem_acquire of semaphore id this launch: thread 0 waits (acquire) until the word
   has grown by k since the launch began, then the block goes on together (stronger than the
   executor, where only the acquiring thread waits, and so within what the checker proved). */
__device__ CDSL_OUTLINE bool cdsl_tb_sem_acquire(const CdslArgs &a, u32 id, u64 k, u32 line)
{
    int bad = 0;
    if (threadIdx.x == 0)
        bad = !cdsl_spin(a, &a.state[CDSL_STATE_SEM_LIVE(CDSL_NRANKS, id)],
                         cdsl_base(a, CDSL_STATE_SEM(CDSL_NRANKS) + id) + k, CDSL_GPU, CDSL_ACQUIRE, line,
                         CDSL_GRID_COUNTER);
    return !__syncthreads_or(bad);
}

/* The k-th use of barrier id by each of its n blocks (a group of blocks): thread 0 arrives on
   the barrier's counter (which only grows) and waits until it has grown by want = k * n since
   the launch began; the block meets before and after. */
__device__ CDSL_OUTLINE bool cdsl_tb_barrier(const CdslArgs &a, u32 id, u64 want, u32 line)
{
    int bad = 0;
    CdslBlock().sync();
    if (threadIdx.x == 0) {
        u64 *count = &a.state[CDSL_STATE_LIVE(CDSL_NRANKS) + 1 + id];
        cdsl_fence_gpu();
        cdsl_red_gpu(count);
        bad = !cdsl_spin(a, count, cdsl_base(a, CDSL_STATE_BARRIER(CDSL_NRANKS) + id) + want, CDSL_GPU,
                         CDSL_ACQUIRE, line, CDSL_GRID_COUNTER);
    }
    return !__syncthreads_or(bad);
}
#endif

#endif /* CDSL_DEVICE_CUH */
