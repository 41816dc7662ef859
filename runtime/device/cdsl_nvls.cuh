/*
 * cdsl_nvls.cuh - the switch, nvls flavour: multimem instructions on the multicast mappings,
 * and the alias fence between the multicast and the unicast mappings. Included by
 * cdsl_device.cuh when the program defines CDSL_FLAVOUR_NVLS; not for use on its own.
 */
#ifndef CDSL_NVLS_CUH
#define CDSL_NVLS_CUH

/* ---- The switch, nvls flavour: multimem instructions on the multicast mappings --------------
   a.mc_buf[b] maps buffer b of every rank at once (a multicast object); a.mc_sync the sync
   words. A multicast address takes multimem.* only.

   The alias rule (CUDA C++ Programming Guide, virtual aliasing; PTX ISA, memory consistency
   model, proxies and proxy-preserved causality): two accesses to the same bytes through the
   multicast and a unicast mapping, one of them a write, are not ordered unless
   fence.proxy.alias lies on the path between them.
   This program's emitter knows which bytes go through which mapping, so it places the fence
   exactly: each thread executes it before an operation that accesses through one mapping
   bytes that an access through the other may have touched (one of the two a write, by any
   rank), after a wait before the first multicast access (for the other ranks' work before
   the collective), and before the end of the rank if a multicast access may remain unfenced.
   A fence after the waits that made the accesses visible lies on every such path. */

__device__ __forceinline__ void cdsl_fence_alias()
{
    asm volatile("fence.proxy.alias;" : : : "memory");
}

/* multimem.ld_reduce's type for the element type: a 16-byte pack (CDSL_MC_V4, where the type
   has a vector form) and a 4-byte word (CDSL_MC_W). f16 and bf16 sum in f32 (.acc::f32); the
   integers have no vector form, so their pack is four scalar loads. */
#if defined(CDSL_ELEM_F32)
#define CDSL_MC_V4 "v4.f32"
#define CDSL_MC_W "f32"
#elif defined(CDSL_ELEM_F16)
#define CDSL_MC_V4 "acc::f32.v4.f16x2"
#define CDSL_MC_W "acc::f32.f16x2"
#elif defined(CDSL_ELEM_BF16)
#define CDSL_MC_V4 "acc::f32.v4.bf16x2"
#define CDSL_MC_W "acc::f32.bf16x2"
#elif defined(CDSL_ELEM_U32)
#define CDSL_MC_W "u32"
#elif defined(CDSL_ELEM_S32)
#define CDSL_MC_W "s32"
#endif

template <typename W> __device__ __forceinline__ W cdsl_mc_sum(const char *mc);
template <> __device__ __forceinline__ u32 cdsl_mc_sum<u32>(const char *mc)
{
    u32 v;
    asm volatile("multimem.ld_reduce.global.add." CDSL_MC_W " %0, [%1];" : "=r"(v) : "l"(mc) : "memory");
    return v;
}
template <> __device__ __forceinline__ uint4 cdsl_mc_sum<uint4>(const char *mc)
{
#ifdef CDSL_MC_V4
    uint4 v;
    asm volatile("multimem.ld_reduce.global.add." CDSL_MC_V4 " {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(mc) : "memory");
    return v;
#else
    return make_uint4(cdsl_mc_sum<u32>(mc), cdsl_mc_sum<u32>(mc + 4), cdsl_mc_sum<u32>(mc + 8),
                      cdsl_mc_sum<u32>(mc + 12));
#endif
}

/* multimem.st of bit patterns: .v4.f32 for a 16-byte pack, .f32 for a word, whatever the
   element type (a store does not look at the bits; there is no 1- or 2-byte form). */
template <typename W> __device__ __forceinline__ void cdsl_mc_put(char *mc, W v);
template <> __device__ __forceinline__ void cdsl_mc_put<uint4>(char *mc, uint4 v)
{
    asm volatile("multimem.st.global.v4.f32 [%0], {%1, %2, %3, %4};"
                 : : "l"(mc), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}
template <> __device__ __forceinline__ void cdsl_mc_put<u32>(char *mc, u32 v)
{
    asm volatile("multimem.st.global.f32 [%0], %1;" : : "l"(mc), "r"(v) : "memory");
}

/* One relaxed arrival on every rank's copy of a sync word, through its multicast address. */
__device__ __forceinline__ void cdsl_mc_arrive(u64 *mc)
{
    asm volatile("multimem.red.relaxed.sys.global.add.u64 [%0], %1;" : : "l"(mc), "l"(1ull) : "memory");
}

/* The switch's source and destination (cdsl_device.cuh's switch operations): multicast
   accesses, which fence.proxy.alias separates from unicast ones. */
#define CDSL_SWITCH_MULTICAST 1

struct CdslSwitchSum {  /* the sum over every rank, from the multicast address */
    const char *mc;
    __device__ __forceinline__ CdslSwitchSum(const CdslArgs &a, int b, int c) : mc(a.mc_buf[b] + cdsl_at(a, c)) {}
    template <typename W> __device__ __forceinline__ W load(u64 off) const
    {
        return cdsl_mc_sum<W>(mc + off);
    }
};

struct CdslSwitchStore {    /* one store that lands on every rank */
    char *mc;
    __device__ __forceinline__ CdslSwitchStore(const CdslArgs &a, int b, int c) : mc(a.mc_buf[b] + cdsl_at(a, c)) {}
    template <typename W> __device__ __forceinline__ void store(u64 off, W v) const
    {
        cdsl_mc_put<W>(mc + off, v);
    }
};

/* Before a switch wait polls: the arrivals came through the multicast mapping and are polled
   through the unicast one, so the poller puts fence.proxy.alias between them, as the CUDA
   guide's multicast barrier does. */
__device__ __forceinline__ void cdsl_switch_before_poll()
{
    if (threadIdx.x == 0)
        cdsl_fence_alias();
}

#ifdef CDSL_PLAN
/* An imported plan's switch signal: one arrival of the rank, by the block's thread 0: a single
   multimem.red adds 1 to every rank's copy of the switch counter (one word, abi.h); a release
   puts one fence before it. */
__device__ __forceinline__ void cdsl_tb_switch_signal(const CdslArgs &a, CdslOrder order)
{
    if (threadIdx.x == 0) {
        if (order == CDSL_RELEASE)
            cdsl_fence_sys();
        cdsl_mc_arrive(&a.mc_sync[CDSL_SYNC_SWITCH]);
    }
}
#else
/* A .cdsl program's switch.signal(): one multimem.red per switch word (abi.h: CDSL_SYNC_BLOCK)
   adds 1 to that word on every rank, block by block or for all blocks (cdsl_device.cuh,
   cdsl_arrive). */
__device__ __forceinline__ void cdsl_switch_signal(const CdslArgs &a, CdslOrder order, CdslArrive how)
{
    cdsl_arrive(how, 1, order, [&](u32, u32 w) { cdsl_mc_arrive(&a.mc_sync[CDSL_SYNC_BLOCK(CDSL_NRANKS, 0, w)]); });
}
#endif

#endif /* CDSL_NVLS_CUH */
