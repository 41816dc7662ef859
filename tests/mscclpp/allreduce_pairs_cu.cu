// CUDA for the MSCCL++ plan allreduce_pairs (allreduce), imported and checked by cdslc:
// 2 ranks, flavour p2p (peer memory, switch emulated), element type f32.
// plan_<r>_<t>() is thread block t of rank r: the block's checked ops in order, each
// under a comment with the plan's line:col and a #line naming it. The helpers are
// cdsl's device library, cdsl_device.cuh with CDSL_PLAN (NVRTC gets it by name;
// cdslc --emit-cuda --standalone pastes it in for nvcc).

#define CDSL_NRANKS 2
#define CDSL_FLAVOUR_P2P 1
#define CDSL_ELEM_F32 1
#define CDSL_PLAN 1
#define CDSL_PLAN_CHANNELS 2  // channels per pair of ranks: the runtime allocates CDSL_SYNC_WORDS(CDSL_NRANKS, 2) sync words
#define CDSL_INLINE 1  // 16 helper calls: inlined
#include "cdsl_device.cuh"  // runtime/device/: the device library
static_assert(sizeof(CdslArgs) == 1368, "CdslArgs differs from the host's runtime/abi.h");

/* ---- The plan's buffers ---- */

enum { B_input = 0, B_output = 1, B_scratch = 2 };

/* ---- rank 0: 2 thread blocks, 24 operations */

__device__ bool plan_0_0(const CdslArgs &a)
{
    // 41:23  nop  (threadblock 0)
#line 41 "allreduce_pairs_cu.json"
    __syncthreads();
    // 44:23  signal peer 1 channel 0  (threadblock 0)
#line 44 "allreduce_pairs_cu.json"
    cdsl_tb_signal(a, 1, 1, CDSL_RELAXED);
    // 51:23  nop  (threadblock 0)
#line 51 "allreduce_pairs_cu.json"
    __syncthreads();
    // 54:23  wait peer 1 channel 0  (threadblock 0)
#line 54 "allreduce_pairs_cu.json"
    CDSL_TRY(cdsl_wait_word(a, &a.sync[2], 2, 1, CDSL_RELAXED, 54, 2));
    // 61:23  nop  (threadblock 0)
#line 61 "allreduce_pairs_cu.json"
    __syncthreads();
    // 64:23  reduce peer 1 output[0] <- output[0] + output[0]  (threadblock 0)
#line 64 "allreduce_pairs_cu.json"
    cdsl_tb_reduce(a, B_output, 0, B_output, 0, 1, B_output, 0, 1);
    // 64:23  put peer 1 output[0] <- output[0]  (threadblock 0)
#line 64 "allreduce_pairs_cu.json"
    cdsl_tb_put(a, 1, B_output, 0, B_output, 0, 1);
    // 93:23  nop  (threadblock 0)
#line 93 "allreduce_pairs_cu.json"
    __syncthreads();
    // 96:23  signal peer 1 channel 0  (threadblock 0)
#line 96 "allreduce_pairs_cu.json"
    cdsl_tb_signal(a, 1, 1, CDSL_RELEASE);
    // 103:23  nop  (threadblock 0)
#line 103 "allreduce_pairs_cu.json"
    __syncthreads();
    // 106:23  wait peer 1 channel 0  (threadblock 0)
#line 106 "allreduce_pairs_cu.json"
    CDSL_TRY(cdsl_wait_word(a, &a.sync[2], 2, 2, CDSL_ACQUIRE, 106, 2));
    // 113:23  nop  (threadblock 0)
#line 113 "allreduce_pairs_cu.json"
    __syncthreads();
#line 62 "allreduce_pairs_p2p_f32.cu"
    return true;
}

__device__ bool plan_0_1(const CdslArgs &a)
{
    // 137:23  nop  (threadblock 1)
#line 137 "allreduce_pairs_cu.json"
    __syncthreads();
    // 140:23  signal peer 1 channel 1  (threadblock 1)
#line 140 "allreduce_pairs_cu.json"
    cdsl_tb_signal(a, 1, 771, CDSL_RELAXED);
    // 147:23  nop  (threadblock 1)
#line 147 "allreduce_pairs_cu.json"
    __syncthreads();
    // 150:23  wait peer 1 channel 1  (threadblock 1)
#line 150 "allreduce_pairs_cu.json"
    CDSL_TRY(cdsl_wait_chan(a, &a.sync[772], 2238, 1, CDSL_RELAXED, 150, 772));
    // 157:23  nop  (threadblock 1)
#line 157 "allreduce_pairs_cu.json"
    __syncthreads();
    // 160:23  reduce peer 1 output[1] <- output[1] + output[1]  (threadblock 1)
#line 160 "allreduce_pairs_cu.json"
    cdsl_tb_reduce(a, B_output, 1, B_output, 1, 1, B_output, 1, 1);
    // 160:23  put peer 1 output[1] <- output[1]  (threadblock 1)
#line 160 "allreduce_pairs_cu.json"
    cdsl_tb_put(a, 1, B_output, 1, B_output, 1, 1);
    // 189:23  nop  (threadblock 1)
#line 189 "allreduce_pairs_cu.json"
    __syncthreads();
    // 192:23  signal peer 1 channel 1  (threadblock 1)
#line 192 "allreduce_pairs_cu.json"
    cdsl_tb_signal(a, 1, 771, CDSL_RELEASE);
    // 199:23  nop  (threadblock 1)
#line 199 "allreduce_pairs_cu.json"
    __syncthreads();
    // 202:23  wait peer 1 channel 1  (threadblock 1)
#line 202 "allreduce_pairs_cu.json"
    CDSL_TRY(cdsl_wait_chan(a, &a.sync[772], 2238, 2, CDSL_ACQUIRE, 202, 772));
    // 209:23  nop  (threadblock 1)
#line 209 "allreduce_pairs_cu.json"
    __syncthreads();
#line 104 "allreduce_pairs_p2p_f32.cu"
    cdsl_tb_chan_leave(a, 2238, 2);  // from rank 1, channel 1
    return true;
}

__device__ __forceinline__ u64 plan_0_consumed(u32 w)
{
    switch (w) {
    case 2: return 2;  // from rank 1, channel 0
    default: return 0;
    }
}

__device__ void plan_0_leave(const CdslArgs &a)
{
    cdsl_leave(a, plan_0_consumed);
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
#line 259 "allreduce_pairs_cu.json"
    __syncthreads();
    // 262:23  signal peer 0 channel 0  (threadblock 0)
#line 262 "allreduce_pairs_cu.json"
    cdsl_tb_signal(a, 0, 2, CDSL_RELAXED);
    // 269:23  nop  (threadblock 0)
#line 269 "allreduce_pairs_cu.json"
    __syncthreads();
    // 272:23  wait peer 0 channel 0  (threadblock 0)
#line 272 "allreduce_pairs_cu.json"
    CDSL_TRY(cdsl_wait_word(a, &a.sync[1], 1, 1, CDSL_RELAXED, 272, 1));
    // 279:23  nop  (threadblock 0)
#line 279 "allreduce_pairs_cu.json"
    __syncthreads();
    // 282:23  reduce peer 0 output[2] <- output[2] + output[2]  (threadblock 0)
#line 282 "allreduce_pairs_cu.json"
    cdsl_tb_reduce(a, B_output, 2, B_output, 2, 0, B_output, 2, 1);
    // 282:23  put peer 0 output[2] <- output[2]  (threadblock 0)
#line 282 "allreduce_pairs_cu.json"
    cdsl_tb_put(a, 0, B_output, 2, B_output, 2, 1);
    // 311:23  nop  (threadblock 0)
#line 311 "allreduce_pairs_cu.json"
    __syncthreads();
    // 314:23  signal peer 0 channel 0  (threadblock 0)
#line 314 "allreduce_pairs_cu.json"
    cdsl_tb_signal(a, 0, 2, CDSL_RELEASE);
    // 321:23  nop  (threadblock 0)
#line 321 "allreduce_pairs_cu.json"
    __syncthreads();
    // 324:23  wait peer 0 channel 0  (threadblock 0)
#line 324 "allreduce_pairs_cu.json"
    CDSL_TRY(cdsl_wait_word(a, &a.sync[1], 1, 2, CDSL_ACQUIRE, 324, 1));
    // 331:23  nop  (threadblock 0)
#line 331 "allreduce_pairs_cu.json"
    __syncthreads();
#line 172 "allreduce_pairs_p2p_f32.cu"
    return true;
}

__device__ bool plan_1_1(const CdslArgs &a)
{
    // 355:23  nop  (threadblock 1)
#line 355 "allreduce_pairs_cu.json"
    __syncthreads();
    // 358:23  signal peer 0 channel 1  (threadblock 1)
#line 358 "allreduce_pairs_cu.json"
    cdsl_tb_signal(a, 0, 772, CDSL_RELAXED);
    // 365:23  nop  (threadblock 1)
#line 365 "allreduce_pairs_cu.json"
    __syncthreads();
    // 368:23  wait peer 0 channel 1  (threadblock 1)
#line 368 "allreduce_pairs_cu.json"
    CDSL_TRY(cdsl_wait_chan(a, &a.sync[771], 2237, 1, CDSL_RELAXED, 368, 771));
    // 375:23  nop  (threadblock 1)
#line 375 "allreduce_pairs_cu.json"
    __syncthreads();
    // 378:23  reduce peer 0 output[3] <- output[3] + output[3]  (threadblock 1)
#line 378 "allreduce_pairs_cu.json"
    cdsl_tb_reduce(a, B_output, 3, B_output, 3, 0, B_output, 3, 1);
    // 378:23  put peer 0 output[3] <- output[3]  (threadblock 1)
#line 378 "allreduce_pairs_cu.json"
    cdsl_tb_put(a, 0, B_output, 3, B_output, 3, 1);
    // 407:23  nop  (threadblock 1)
#line 407 "allreduce_pairs_cu.json"
    __syncthreads();
    // 410:23  signal peer 0 channel 1  (threadblock 1)
#line 410 "allreduce_pairs_cu.json"
    cdsl_tb_signal(a, 0, 772, CDSL_RELEASE);
    // 417:23  nop  (threadblock 1)
#line 417 "allreduce_pairs_cu.json"
    __syncthreads();
    // 420:23  wait peer 0 channel 1  (threadblock 1)
#line 420 "allreduce_pairs_cu.json"
    CDSL_TRY(cdsl_wait_chan(a, &a.sync[771], 2237, 2, CDSL_ACQUIRE, 420, 771));
    // 427:23  nop  (threadblock 1)
#line 427 "allreduce_pairs_cu.json"
    __syncthreads();
#line 214 "allreduce_pairs_p2p_f32.cu"
    cdsl_tb_chan_leave(a, 2237, 2);  // from rank 0, channel 1
    return true;
}

__device__ __forceinline__ u64 plan_1_consumed(u32 w)
{
    switch (w) {
    case 1: return 2;  // from rank 0, channel 0
    default: return 0;
    }
}

__device__ void plan_1_leave(const CdslArgs &a)
{
    cdsl_leave(a, plan_1_consumed);
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
    cdsl_enter(a);  // this launch's number, for the bases of its counters
    switch (a.rank) {
    case 0: plan_0(a); break;
    case 1: plan_1(a); break;
    }
}
