/*
 * cdsl_p2p.cuh - the switch, p2p flavour: emulated with unicast loads, stores and system-scope
 * atomics through the peer mappings. It must contain no multimem instruction (tests/emit/
 * nvrtc_all.sh checks the PTX). Included by cdsl_device.cuh when the program defines
 * CDSL_FLAVOUR_P2P; not for use on its own.
 */
#ifndef CDSL_P2P_CUH
#define CDSL_P2P_CUH

/* ---- The switch, p2p flavour: emulated over peer memory -------------------------------------
   What the switch does in one instruction is done here with unicast loads, stores and
   system-scope atomics on every rank's memory through the peer mappings, with the same
   meaning: a store lands on every rank, a reduction sums every rank's copy, an arrival counts
   on every rank's switch counter. */

/* Up to 16 ranks the loops over ranks unroll fully and keep every address in registers; with
   more, addresses are looked up per use. A constant, not a macro, for #pragma unroll: nvcc
   does not expand macros there. */
#if CDSL_NRANKS <= 16
constexpr int cdsl_rank_unroll = CDSL_NRANKS;

struct CdslRanks {      /* the same byte range of buffer b on every rank, addresses kept */
    char *p[CDSL_NRANKS];
    __device__ __forceinline__ CdslRanks(const CdslArgs &a, int b, u64 off)
    {
#pragma unroll (cdsl_rank_unroll)
        for (int q = 0; q < CDSL_NRANKS; q++)
            p[q] = cdsl_rank_buf(a, q, b) + off;
    }
    __device__ __forceinline__ char *at(int q) const { return p[q]; }
};
#else
constexpr int cdsl_rank_unroll = 4;

struct CdslRanks {      /* the same byte range of buffer b on every rank, looked up per use */
    const CdslArgs *a;
    int b;
    u64 off;
    __device__ __forceinline__ CdslRanks(const CdslArgs &args, int buf, u64 o) : a(&args), b(buf), off(o) {}
    __device__ __forceinline__ char *at(int q) const { return cdsl_rank_buf(*a, q, b) + off; }
};
#endif

/* The switch's source and destination (cdsl_device.cuh's switch operations): unicast
   accesses only. */
#define CDSL_SWITCH_MULTICAST 0

struct CdslSwitchSum {  /* the sum over every rank, rank 0 first */
    CdslRanks r;
    __device__ __forceinline__ CdslSwitchSum(const CdslArgs &a, int b, int c) : r(a, b, cdsl_at(a, c)) {}
    template <typename W> __device__ __forceinline__ W load(u64 off) const
    {
        CdslSum<W> s;
        s.first(*(const W *)(r.at(0) + off));
#pragma unroll (cdsl_rank_unroll)
        for (int q = 1; q < CDSL_NRANKS; q++)
            s.add(*(const W *)(r.at(q) + off));
        return s.get();
    }
};

struct CdslSwitchStore {    /* the same value stored on every rank */
    CdslRanks r;
    __device__ __forceinline__ CdslSwitchStore(const CdslArgs &a, int b, int c) : r(a, b, cdsl_at(a, c)) {}
    template <typename W> __device__ __forceinline__ void store(u64 off, W v) const
    {
#pragma unroll (cdsl_rank_unroll)
        for (int q = 0; q < CDSL_NRANKS; q++)
            *(W *)(r.at(q) + off) = v;
    }
};

/* Before a switch wait polls: nothing here (the arrivals came through the unicast mappings). */
__device__ __forceinline__ void cdsl_switch_before_poll()
{
}

#ifdef CDSL_PLAN
/* An imported plan's switch signal: one arrival on every rank's switch counter (one word,
   abi.h), by threads 0 .. nranks-1 of the calling block, one rank each: a fence (for a
   release; one instruction for a warp) then a relaxed red, so the arrivals go out in parallel.
   The block's threads have met since its data operations: plan_blocks.c asks for a nop there. */
__device__ __forceinline__ void cdsl_tb_switch_signal(const CdslArgs &a, CdslOrder order)
{
    for (int q = threadIdx.x; q < CDSL_NRANKS; q += blockDim.x) {
        if (order == CDSL_RELEASE)
            cdsl_fence_sys();
        cdsl_red_sys(q == a.rank ? &a.sync[CDSL_SYNC_SWITCH] : &cdsl_rank_sync(a, q)[CDSL_SYNC_SWITCH]);
    }
}
#else
/* A .cdsl program's switch.signal(): one arrival on every rank's switch words (abi.h:
   CDSL_SYNC_BLOCK), block by block or for all blocks (cdsl_device.cuh, cdsl_arrive). */
__device__ __forceinline__ void cdsl_switch_signal(const CdslArgs &a, CdslOrder order, CdslArrive how)
{
    cdsl_arrive(how, CDSL_NRANKS, order, [&](u32 q, u32 w) {
        u64 *words = (int)q == a.rank ? a.sync : cdsl_rank_sync(a, (int)q);
        cdsl_red_sys(&words[CDSL_SYNC_BLOCK(CDSL_NRANKS, 0, w)]);
    });
}
#endif

#endif /* CDSL_P2P_CUH */
