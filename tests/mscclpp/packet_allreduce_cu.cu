// CUDA for the MSCCL++ plan packet_allreduce_cu (allreduce), imported and checked by cdslc:
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
#define CDSL_INLINE 1  // 8 helper calls: inlined
#include "cdsl_device.cuh"  // runtime/device/: the device library
static_assert(sizeof(CdslArgs) == 1368, "CdslArgs differs from the host's runtime/abi.h");

#include "cdsl_packets.cuh"  // runtime/device/: packets

/* ---- The plan's buffers ---- */

enum { B_input = 0, B_output = 1, B_scratch = 2 };
enum { B_packets = 3 };  /* the plan's packets: 16 chunks */

/* ---- rank 0: 1 thread block, 4 operations */

__device__ bool plan_0_0(const CdslArgs &a)
{
    // 41:23  packet_put peer 1 packets[0] <- input[1]  (threadblock 0)
#line 41 "packet_allreduce_cu.json"
    cdsl_tb_msc_put_packets(a, 1, B_packets, 8, 0, B_input, 1, 1);
    // 62:23  packet_reduce peer 1 output[0] <- input[0] + packets[1]  (threadblock 0)
#line 62 "packet_allreduce_cu.json"
    CDSL_TRY(cdsl_tb_msc_reduce_packets(a, 1, B_packets, 8, 1, B_input, 0, B_output, 0, 1, 62));
    // 62:23  packet_put peer 1 packets[2] <- output[0]  (threadblock 0)
#line 62 "packet_allreduce_cu.json"
    cdsl_tb_msc_put_packets(a, 1, B_packets, 8, 2, B_output, 0, 1);
    // 93:23  packet_read peer 1 output[1] <- packets[3]  (threadblock 0)
#line 93 "packet_allreduce_cu.json"
    CDSL_TRY(cdsl_tb_msc_read_packets(a, 1, B_packets, 8, 3, B_output, 1, 1, 93));
#line 41 "packet_allreduce_cu_p2p_f32.cu"
    return true;
}

__device__ __forceinline__ u64 plan_0_consumed(u32 w)
{
    switch (w) {
    case CDSL_STATE_PKT_EPOCH(CDSL_NRANKS): return 1;  // the next launch's packets: the other parity
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

/* ---- rank 1: 1 thread block, 4 operations */

__device__ bool plan_1_0(const CdslArgs &a)
{
    // 157:23  packet_put peer 0 packets[1] <- input[0]  (threadblock 0)
#line 157 "packet_allreduce_cu.json"
    cdsl_tb_msc_put_packets(a, 0, B_packets, 8, 1, B_input, 0, 1);
    // 178:23  packet_reduce peer 0 output[1] <- input[1] + packets[0]  (threadblock 0)
#line 178 "packet_allreduce_cu.json"
    CDSL_TRY(cdsl_tb_msc_reduce_packets(a, 0, B_packets, 8, 0, B_input, 1, B_output, 1, 1, 178));
    // 178:23  packet_put peer 0 packets[3] <- output[1]  (threadblock 0)
#line 178 "packet_allreduce_cu.json"
    cdsl_tb_msc_put_packets(a, 0, B_packets, 8, 3, B_output, 1, 1);
    // 209:23  packet_read peer 0 output[0] <- packets[2]  (threadblock 0)
#line 209 "packet_allreduce_cu.json"
    CDSL_TRY(cdsl_tb_msc_read_packets(a, 0, B_packets, 8, 2, B_output, 0, 1, 209));
#line 83 "packet_allreduce_cu_p2p_f32.cu"
    return true;
}

__device__ __forceinline__ u64 plan_1_consumed(u32 w)
{
    switch (w) {
    case CDSL_STATE_PKT_EPOCH(CDSL_NRANKS): return 1;  // the next launch's packets: the other parity
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
