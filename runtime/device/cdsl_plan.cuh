/*
 * cdsl_plan.cuh - device helpers for an imported MSCCL++ plan, whose ranks run one op list
 * per thread block (ir.h's units). Included by cdsl_device.cuh after everything else when the
 * program defines CDSL_PLAN (compiler/emit_blocks.c does), so it builds on the argument block,
 * orders, bounded spins, waits, the element type's sums, CdslLoad/CdslStore and the switch's
 * load and store forms of the flavour. Not for use on its own.
 *
 * A plan block's data op is spread over the block's own threads: element i of a range goes
 * to thread i mod blockDim.x, whatever the op, as in MSCCL++'s executor, so two ops of a
 * block on the same place of the same range meet in one thread (compiler/blocks.c relies on
 * that). A signal or wait is thread 0's; a nop is __syncthreads(); a barrier is a counter in
 * the rank's state words that the k-th use by each of its n blocks grows by k * n this launch.
 */
#ifndef CDSL_PLAN_CUH
#define CDSL_PLAN_CUH

/* ---- Data movement inside one block ------------------------------------------------------ */

/* A plan's chunks are multiples of its buffer alignment (16 bytes or more): 16-byte packs,
   spread over the block's own threads. */
template <typename S, typename D>
__device__ __forceinline__ void cdsl_tb_apply(const CdslArgs &a, const S &src, const D &dst, int chunks)
{
    cdsl_apply_by(a, src, dst, chunks, threadIdx.x, blockDim.x);
}

/* copy: both local. */
__device__ CDSL_OUTLINE void cdsl_tb_copy(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {a.buf[sb] + cdsl_at(a, sc)};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_tb_apply(a, src, dst, n);
}

/* dst = x + y, x local, y on rank yq (this rank's own: local). */
__device__ CDSL_OUTLINE void cdsl_tb_reduce(const CdslArgs &a, int db, int dc, int xb, int xc, int yq, int yb, int yc,
                                            int n)
{
    CdslLoadSum2 src = {a.buf[xb] + cdsl_at(a, xc), cdsl_rank_buf(a, yq, yb) + cdsl_at(a, yc)};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_tb_apply(a, src, dst, n);
}

/* put: local src into dst on rank p. */
__device__ CDSL_OUTLINE void cdsl_tb_put(const CdslArgs &a, int p, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {a.buf[sb] + cdsl_at(a, sc)};
    CdslStore dst = {cdsl_rank_buf(a, p, db) + cdsl_at(a, dc)};
    cdsl_tb_apply(a, src, dst, n);
}

/* get: src on rank p into local dst. */
__device__ CDSL_OUTLINE void cdsl_tb_get(const CdslArgs &a, int p, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {cdsl_rank_buf(a, p, sb) + cdsl_at(a, sc)};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_tb_apply(a, src, dst, n);
}

/* ---- The switch, inside one block ------------------------------------------------------------ */

#if defined(CDSL_FLAVOUR_NVLS)
/* multimem accesses through the multicast mappings; fence.proxy.alias around them, by every
   thread, since the plan says nothing about where unicast accesses meet them. */
__device__ CDSL_OUTLINE void cdsl_tb_switch_store(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {a.buf[sb] + cdsl_at(a, sc)};
    CdslMcStore dst = {a.mc_buf[db] + cdsl_at(a, dc)};
    cdsl_fence_alias();
    cdsl_tb_apply(a, src, dst, n);
    cdsl_fence_alias();
}

__device__ CDSL_OUTLINE void cdsl_tb_switch_reduce(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslMcLoadSum src = {a.mc_buf[sb] + cdsl_at(a, sc)};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_fence_alias();
    cdsl_tb_apply(a, src, dst, n);
    cdsl_fence_alias();
}

__device__ CDSL_OUTLINE void cdsl_tb_switch_reduce_store(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
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
    if (threadIdx.x == 0)
        cdsl_switch_arrive_one(a, order);
}

__device__ __forceinline__ void cdsl_tb_after_wait()
{
    cdsl_fence_alias();
}
#else
__device__ CDSL_OUTLINE void cdsl_tb_switch_store(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslLoad src = {a.buf[sb] + cdsl_at(a, sc)};
    CdslRanksStore dst = {CdslRanks(a, db, cdsl_at(a, dc))};
    cdsl_tb_apply(a, src, dst, n);
}

__device__ CDSL_OUTLINE void cdsl_tb_switch_reduce(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslRanksLoadSum src = {CdslRanks(a, sb, cdsl_at(a, sc))};
    CdslStore dst = {a.buf[db] + cdsl_at(a, dc)};
    cdsl_tb_apply(a, src, dst, n);
}

__device__ CDSL_OUTLINE void cdsl_tb_switch_reduce_store(const CdslArgs &a, int db, int dc, int sb, int sc, int n)
{
    CdslRanksLoadSum src = {CdslRanks(a, sb, cdsl_at(a, sc))};
    CdslRanksStore dst = {CdslRanks(a, db, cdsl_at(a, dc))};
    cdsl_tb_apply(a, src, dst, n);
}

/* One arrival of the rank on the switch barrier, made by this block: one system-scope add on
   every rank's switch counter, by one thread each (the block's threads have met since its
   data operations: blocks.c asks for a nop there). */
__device__ __forceinline__ void cdsl_tb_switch_signal(const CdslArgs &a, CdslOrder order)
{
    cdsl_switch_arrive(a, order);
}

__device__ __forceinline__ void cdsl_tb_after_wait()
{
}
#endif

/* ---- Signals and barriers of one block ---------------------------------------------------- */

/* One arrival on rank p's word `w` (the counter of this rank's channel to p), by thread 0. */
__device__ __forceinline__ void cdsl_tb_signal(const CdslArgs &a, int p, int w, CdslOrder order)
{
    if (threadIdx.x == 0) {
        if (order == CDSL_RELEASE)
            cdsl_fence_sys();
        cdsl_red_sys(&cdsl_rank_sync(a, p)[w]);
    }
}

/* The k-th use of barrier id by each of its n blocks: thread 0 arrives on the barrier's
   counter (which only grows) and waits until it has grown by want = k * n since the launch
   began; the block meets before and after. */
__device__ CDSL_OUTLINE bool cdsl_tb_barrier(const CdslArgs &a, u32 id, u64 want, u32 line)
{
    int bad = 0;
    __syncthreads();
    if (threadIdx.x == 0) {
        u64 *count = &a.state[CDSL_STATE_LIVE(CDSL_NRANKS) + 1 + id];
        cdsl_fence_gpu();
        cdsl_red_gpu(count);
        bad = !cdsl_spin(a, count, cdsl_base(a, CDSL_STATE_BARRIER(CDSL_NRANKS) + id) + want, CDSL_GPU,
                         CDSL_ACQUIRE, line, CDSL_GRID_COUNTER);
    }
    return !__syncthreads_or(bad);
}

#endif /* CDSL_PLAN_CUH */
