// CUDA for the MSCCL++ plan port_pwsf_reuse_ok (allgather), imported and checked by cdslc:
// 2 ranks, flavour p2p (peer memory, switch emulated), element type f32.
// plan_<r>_<t>() is thread block t of rank r: the block's checked ops in order, each
// under a comment with the plan's line:col and a #line naming it. The helpers are
// cdsl's device library, cdsl_device.cuh with CDSL_PLAN (NVRTC gets it by name;
// cdslc --emit-cuda --standalone pastes it in for nvcc).

#define CDSL_NRANKS 2
#define CDSL_FLAVOUR_P2P 1
#define CDSL_ELEM_F32 1
#define CDSL_PLAN 1
#define CDSL_PLAN_CHANNELS 1  // channels per pair of ranks: the runtime allocates CDSL_SYNC_WORDS(CDSL_NRANKS, 1) sync words
#define CDSL_INLINE 1  // 18 helper calls: inlined
#include "cdsl_device.cuh"  // runtime/device/: the device library
static_assert(sizeof(CdslArgs) == 1368, "CdslArgs differs from the host's runtime/abi.h");

/* ---- The plan's buffers ---- */

enum { B_input = 0, B_output = 1, B_scratch = 2 };

/* ---- rank 0: 1 thread block, 20 operations */

__device__ bool plan_0_0(const CdslArgs &a)
{
    // 40:23  signal peer 0 channel 1024  (threadblock 0)
#line 40 "port_gpu_cu.json"
    cdsl_port_request(a, 4, 0);  // to proxy 0 (port channel to rank 1)
    // 47:23  nop  (threadblock 0)
#line 47 "port_gpu_cu.json"
    __syncthreads();
    // 50:23  wait peer 1 channel 2048  (threadblock 0)
#line 50 "port_gpu_cu.json"
    CDSL_TRY(cdsl_port_wait(a, 1, 3, 50, 0xb0000001u));  // port channel 0 from rank 1
    // 57:23  nop  (threadblock 0)
#line 57 "port_gpu_cu.json"
    __syncthreads();
    // 60:23  copy output[0] <- input[0]  (threadblock 0)
#line 60 "port_gpu_cu.json"
    cdsl_tb_copy(a, B_output, 0, B_input, 0, 1);
    // 78:23  copy scratch[0] <- input[0]  (threadblock 0)
#line 78 "port_gpu_cu.json"
    cdsl_tb_copy(a, B_scratch, 0, B_input, 0, 1);
    // 96:23  nop  (threadblock 0)
#line 96 "port_gpu_cu.json"
    __syncthreads();
    // 99:23  signal peer 0 channel 1024  (threadblock 0)
#line 99 "port_gpu_cu.json"
    cdsl_port_request(a, 4, 0);  // to proxy 0 (port channel to rank 1)
    // 99:23  wait peer 0 channel 1025  (threadblock 0)
#line 99 "port_gpu_cu.json"
    CDSL_TRY(cdsl_port_flush_wait(a, 5, 1, 99, 0xa0000000u));  // proxy 0's flush
    // 120:23  nop  (threadblock 0)
#line 120 "port_gpu_cu.json"
    __syncthreads();
    // 123:23  copy scratch[0] <- output[0]  (threadblock 0)
#line 123 "port_gpu_cu.json"
    cdsl_tb_copy(a, B_scratch, 0, B_output, 0, 1);
    // 141:23  nop  (threadblock 0)
#line 141 "port_gpu_cu.json"
    __syncthreads();
    // 144:23  wait peer 1 channel 2048  (threadblock 0)
#line 144 "port_gpu_cu.json"
    CDSL_TRY(cdsl_port_wait(a, 1, 3, 144, 0xb0000001u));  // port channel 0 from rank 1
    // 151:23  nop  (threadblock 0)
#line 151 "port_gpu_cu.json"
    __syncthreads();
#line 68 "port_pwsf_reuse_ok_p2p_f32.cu"
    return true;
}

__device__ __forceinline__ u64 plan_0_consumed(u32 w)
{
    switch (w) {
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
    default: break;
    }
    plan_0_leave(a);
}

/* ---- rank 1: 1 thread block, 20 operations */

__device__ bool plan_1_0(const CdslArgs &a)
{
    // 201:23  signal peer 1 channel 1024  (threadblock 0)
#line 201 "port_gpu_cu.json"
    cdsl_port_request(a, 4, 0);  // to proxy 0 (port channel to rank 0)
    // 208:23  nop  (threadblock 0)
#line 208 "port_gpu_cu.json"
    __syncthreads();
    // 211:23  wait peer 0 channel 2048  (threadblock 0)
#line 211 "port_gpu_cu.json"
    CDSL_TRY(cdsl_port_wait(a, 0, 2, 211, 0xb0000000u));  // port channel 0 from rank 0
    // 218:23  nop  (threadblock 0)
#line 218 "port_gpu_cu.json"
    __syncthreads();
    // 221:23  copy output[1] <- input[0]  (threadblock 0)
#line 221 "port_gpu_cu.json"
    cdsl_tb_copy(a, B_output, 1, B_input, 0, 1);
    // 239:23  copy scratch[0] <- input[0]  (threadblock 0)
#line 239 "port_gpu_cu.json"
    cdsl_tb_copy(a, B_scratch, 0, B_input, 0, 1);
    // 257:23  nop  (threadblock 0)
#line 257 "port_gpu_cu.json"
    __syncthreads();
    // 260:23  signal peer 1 channel 1024  (threadblock 0)
#line 260 "port_gpu_cu.json"
    cdsl_port_request(a, 4, 0);  // to proxy 0 (port channel to rank 0)
    // 260:23  wait peer 1 channel 1025  (threadblock 0)
#line 260 "port_gpu_cu.json"
    CDSL_TRY(cdsl_port_flush_wait(a, 5, 1, 260, 0xa0000000u));  // proxy 0's flush
    // 281:23  nop  (threadblock 0)
#line 281 "port_gpu_cu.json"
    __syncthreads();
    // 284:23  copy scratch[0] <- output[1]  (threadblock 0)
#line 284 "port_gpu_cu.json"
    cdsl_tb_copy(a, B_scratch, 0, B_output, 1, 1);
    // 302:23  nop  (threadblock 0)
#line 302 "port_gpu_cu.json"
    __syncthreads();
    // 305:23  wait peer 0 channel 2048  (threadblock 0)
#line 305 "port_gpu_cu.json"
    CDSL_TRY(cdsl_port_wait(a, 0, 2, 305, 0xb0000000u));  // port channel 0 from rank 0
    // 312:23  nop  (threadblock 0)
#line 312 "port_gpu_cu.json"
    __syncthreads();
#line 139 "port_pwsf_reuse_ok_p2p_f32.cu"
    return true;
}

__device__ __forceinline__ u64 plan_1_consumed(u32 w)
{
    switch (w) {
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
