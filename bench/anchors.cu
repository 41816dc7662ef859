/*
 * anchors.cu - the physical anchors bench/compare.sh sets cdsl's figures against, measured in
 * the same device call, because figures move between machine sessions (about +-0.3 us at small
 * sizes on 2 x H200) and only figures of one call compare.
 *
 *     nvcc -O2 -arch=sm_90 -o build/anchors bench/anchors.cu && build/anchors [ITERS]
 *
 * With two GPUs (the first two; peer access enabled both ways):
 *   memcpy_peer_GBps          cudaMemcpyPeerAsync GPU0 -> GPU1, 1 GiB
 *   memcpy_peer_bidir_GBps    the same both ways at once (each way's rate)
 *   peer_write_GBps           a kernel on GPU0 reading its own memory and storing into GPU1's
 *   peer_write_bidir_GBps     that kernel on both GPUs at once (each way's rate)
 * With one GPU the same four are measured inside it and named local_*: device-to-device copies
 * and stores within one GPU, labelled as such, NOT comparable with the two-GPU targets.
 * On both:
 *   empty_graph_us            an empty kernel per side, in a CUDA graph of ITERS launches per
 *                             side forked from and joined to one stream, as cdsl's harness
 *                             captures (runtime/gpu_common.c): one graph launch's floor
 *   barrier_release_graph_us  the same graph of one-round barrier kernels: red.release.sys to
 *                             the peer's counter, then ld.acquire.sys polls on its own
 *   barrier_relaxed_graph_us  the same with fence.acq_rel.sys + red.relaxed.sys
 *   barrier_release_round_us  one bare round, ITERS rounds inside one kernel (no launch)
 *   barrier_relaxed_round_us  the same, fence + relaxed red
 * The two sides of a barrier are two GPUs, or on one GPU two grids of one block each, resident
 * together (two graph branches). Graph figures are the median over 5 timed replays (after one
 * untimed) of one graph of ITERS launches per side (default 200), i.e. per launch as
 * `cdslrun --bench` times one replay of its 200-run chain.
 *
 * Output: one `anchor NAME VALUE UNIT` line per figure, `anchor gpus N count` first; comment
 * lines start with '#'. A failed step prints `# NAME failed: why` and the rest go on; the exit
 * status is 0 only when every anchor was measured. No multicast object is made here.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr size_t kBytes = size_t(1) << 30;     // the 1 GiB of the bandwidth anchors
constexpr int kBwIters = 10, kReplays = 5;
constexpr unsigned long long kSpinLimit = 1ull << 20;  // polls before a side gives up (about 1 s)

int g_failures = 0;

bool ok(cudaError_t e, const char *name, const char *what)
{
    if (e == cudaSuccess)
        return true;
    std::printf("# %s failed: %s: %s\n", name, what, cudaGetErrorString(e));
    g_failures++;
    cudaGetLastError();     // clear a non-sticky error, so that the next anchor can run
    return false;
}

#define TRY(call, what) \
    do { if (!ok((call), name, what)) return false; } while (0)

void anchor(const char *name, double value, const char *unit)
{
    std::printf("anchor %s %.3f %s\n", name, value, unit);
    std::fflush(stdout);
}

// ---- kernels ----------------------------------------------------------------------------------

__global__ void empty_kernel() {}

// Grid-stride 16-byte copy: local loads, stores wherever dst lives (a peer GPU or here).
__global__ void write_kernel(int4 *__restrict__ dst, const int4 *__restrict__ src, size_t n)
{
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        dst[i] = src[i];
}

// One side of a two-party barrier, `rounds` rounds: arrive on the peer's counter, then poll our
// own until the peer's arrival of this round is there. The epoch lives in memory, so that graph
// replays continue where the last one ended (NCCL's LSA barrier keeps it the same way). Once a
// side has given up, the launches after it in the chain return at once (its load overlaps the
// epoch's), so that a failure costs one spin bound, not one per launch.
template <bool Relaxed>
__global__ void barrier_kernel(unsigned long long *peer_cnt, unsigned long long *own_cnt,
                               unsigned long long *epoch, int rounds, int *gave_up)
{
    if (threadIdx.x != 0)
        return;
    unsigned long long e = *epoch;
    if (*gave_up)
        return;
    for (int r = 0; r < rounds; r++) {
        e++;
        if (Relaxed)
            asm volatile("fence.acq_rel.sys;\n\tred.relaxed.sys.global.add.u64 [%0], 1;" ::"l"(peer_cnt) : "memory");
        else
            asm volatile("red.release.sys.global.add.u64 [%0], 1;" ::"l"(peer_cnt) : "memory");
        unsigned long long v = 0, polls = 0;
        do {
            asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(own_cnt) : "memory");
        } while (v < e && ++polls < kSpinLimit);
        if (v < e) {
            *gave_up = 1;
            return;
        }
    }
    *epoch = e;
}

// ---- the two sides --------------------------------------------------------------------------------

struct Side {
    int dev;
    cudaStream_t stream;
    void *src, *dst;                    // 1 GiB each on this side's GPU
    unsigned long long *cnt, *epoch;    // barrier words on this side's GPU
    int *gave_up;
};

struct Bench {
    int ngpus;                           // 2: sides on GPU 0 and 1; 1: both on GPU 0
    Side side[2];
    cudaEvent_t start, stop, fork, join;
    int iters;
    int sms;
};

bool setup(Bench &b)
{
    const char *name = "setup";
    int n = 0;
    TRY(cudaGetDeviceCount(&n), "counting GPUs");
    b.ngpus = n >= 2 ? 2 : 1;
    if (b.ngpus == 2) {
        int can01 = 0, can10 = 0;
        TRY(cudaDeviceCanAccessPeer(&can01, 0, 1), "asking for peer access");
        TRY(cudaDeviceCanAccessPeer(&can10, 1, 0), "asking for peer access");
        if (!can01 || !can10) {
            std::printf("# GPUs 0 and 1 have no peer access: both sides on GPU 0\n");
            b.ngpus = 1;
        }
    }
    for (int s = 0; s < 2; s++) {
        Side &d = b.side[s];
        d.dev = b.ngpus == 2 ? s : 0;
        TRY(cudaSetDevice(d.dev), "selecting a GPU");
        if (b.ngpus == 2) {
            cudaError_t e = cudaDeviceEnablePeerAccess(1 - s, 0);
            if (e != cudaErrorPeerAccessAlreadyEnabled)
                TRY(e, "enabling peer access");
        }
        TRY(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking), "creating a stream");
        TRY(cudaMalloc(&d.src, kBytes), "allocating 1 GiB");
        TRY(cudaMalloc(&d.dst, kBytes), "allocating 1 GiB");
        TRY(cudaMemset(d.src, s + 1, kBytes), "filling 1 GiB");
        TRY(cudaMalloc(&d.cnt, 2 * sizeof(unsigned long long)), "allocating the barrier words");
        TRY(cudaMemset(d.cnt, 0, 2 * sizeof(unsigned long long)), "zeroing the barrier words");
        d.epoch = d.cnt + 1;
        TRY(cudaMalloc(&d.gave_up, sizeof(int)), "allocating a flag");
        TRY(cudaMemset(d.gave_up, 0, sizeof(int)), "zeroing a flag");
    }
    TRY(cudaSetDevice(0), "selecting GPU 0");
    TRY(cudaDeviceGetAttribute(&b.sms, cudaDevAttrMultiProcessorCount, 0), "reading the SM count");
    TRY(cudaEventCreate(&b.start), "creating an event");
    TRY(cudaEventCreate(&b.stop), "creating an event");
    TRY(cudaEventCreateWithFlags(&b.fork, cudaEventDisableTiming), "creating an event");
    TRY(cudaSetDevice(b.side[1].dev), "selecting a GPU");   // join is recorded on side 1's stream
    TRY(cudaEventCreateWithFlags(&b.join, cudaEventDisableTiming), "creating an event");
    TRY(cudaSetDevice(0), "selecting GPU 0");
    return true;
}

// What one side does in a step: a copy engine's copy, or the write kernel.
enum Work { kMemcpy, kWrite };

bool enqueue(Bench &b, Work w, int s, const char *name)
{
    Side &me = b.side[s], &peer = b.side[1 - s];
    TRY(cudaSetDevice(me.dev), "selecting a GPU");
    if (w == kMemcpy)
        TRY(cudaMemcpyPeerAsync(peer.dst, peer.dev, me.src, me.dev, kBytes, me.stream), "cudaMemcpyPeerAsync");
    else {
        write_kernel<<<b.sms * 2, 512, 0, me.stream>>>((int4 *)peer.dst, (const int4 *)me.src, kBytes / sizeof(int4));
        TRY(cudaGetLastError(), "launching the write kernel");
    }
    return true;
}

// GB/s of each way: kBwIters steps between events on side 0's stream, side 1 forked and joined.
bool bandwidth(Bench &b, Work w, bool both, const char *name)
{
    Side &a = b.side[0], &c = b.side[1];
    for (int pass = 0; pass < 2; pass++) {      // pass 0 warms up
        TRY(cudaSetDevice(a.dev), "selecting a GPU");
        TRY(cudaEventRecord(b.start, a.stream), "recording the start");
        TRY(cudaEventRecord(b.fork, a.stream), "recording the fork");
        if (both) {
            TRY(cudaSetDevice(c.dev), "selecting a GPU");
            TRY(cudaStreamWaitEvent(c.stream, b.fork, 0), "waiting on the fork");
        }
        for (int i = 0; i < kBwIters; i++) {
            if (!enqueue(b, w, 0, name) || (both && !enqueue(b, w, 1, name)))
                return false;
        }
        if (both) {
            TRY(cudaSetDevice(c.dev), "selecting a GPU");
            TRY(cudaEventRecord(b.join, c.stream), "recording the join");
            TRY(cudaSetDevice(a.dev), "selecting a GPU");
            TRY(cudaStreamWaitEvent(a.stream, b.join, 0), "waiting on the join");
        }
        TRY(cudaSetDevice(a.dev), "selecting a GPU");
        TRY(cudaEventRecord(b.stop, a.stream), "recording the stop");
        TRY(cudaEventSynchronize(b.stop), "running the copies");
    }
    float ms = 0;
    TRY(cudaEventElapsedTime(&ms, b.start, b.stop), "reading the time");
    anchor(name, double(kBytes) * kBwIters / (ms * 1e-3) / 1e9, "GB/s");
    return true;
}

// One graph: iters launches per side, side 1 forked from side 0's stream and joined back.
// kind 0: empty kernel; 1: release barrier round; 2: relaxed barrier round.
bool capture(Bench &b, int kind, cudaGraphExec_t *exec, const char *name)
{
    Side &a = b.side[0], &c = b.side[1];
    cudaGraph_t graph;
    TRY(cudaSetDevice(a.dev), "selecting a GPU");
    TRY(cudaStreamBeginCapture(a.stream, cudaStreamCaptureModeThreadLocal), "beginning a capture");
    TRY(cudaEventRecord(b.fork, a.stream), "recording the fork");
    TRY(cudaSetDevice(c.dev), "selecting a GPU");
    TRY(cudaStreamWaitEvent(c.stream, b.fork, 0), "waiting on the fork");
    for (int i = 0; i < b.iters; i++) {
        for (int s = 0; s < 2; s++) {
            Side &me = b.side[s], &peer = b.side[1 - s];
            TRY(cudaSetDevice(me.dev), "selecting a GPU");
            if (kind == 0)
                empty_kernel<<<1, 32, 0, me.stream>>>();
            else if (kind == 1)
                barrier_kernel<false><<<1, 32, 0, me.stream>>>(peer.cnt, me.cnt, me.epoch, 1, me.gave_up);
            else
                barrier_kernel<true><<<1, 32, 0, me.stream>>>(peer.cnt, me.cnt, me.epoch, 1, me.gave_up);
            TRY(cudaGetLastError(), "launching into the capture");
        }
    }
    TRY(cudaSetDevice(c.dev), "selecting a GPU");
    TRY(cudaEventRecord(b.join, c.stream), "recording the join");
    TRY(cudaSetDevice(a.dev), "selecting a GPU");
    TRY(cudaStreamWaitEvent(a.stream, b.join, 0), "waiting on the join");
    TRY(cudaStreamEndCapture(a.stream, &graph), "ending the capture");
    TRY(cudaGraphInstantiate(exec, graph, 0), "instantiating the graph");
    TRY(cudaGraphUpload(*exec, a.stream), "uploading the graph");
    cudaGraphDestroy(graph);
    return true;
}

bool gave_up(Bench &b, const char *name)
{
    for (int s = 0; s < 2; s++) {
        int flag = 0;
        TRY(cudaSetDevice(b.side[s].dev), "selecting a GPU");
        TRY(cudaMemcpy(&flag, b.side[s].gave_up, sizeof flag, cudaMemcpyDeviceToHost), "reading a flag");
        if (flag) {
            std::printf("# %s failed: side %d's poll ran out (the two sides were not resident together)\n", name, s);
            g_failures++;
            return true;
        }
    }
    return false;
}

// Microseconds per launch: the median of kReplays timed replays (one untimed first).
bool graph_anchor(Bench &b, int kind, const char *name)
{
    cudaGraphExec_t exec;
    if (!capture(b, kind, &exec, name))
        return false;
    Side &a = b.side[0];
    std::vector<float> ms;
    for (int r = 0; r <= kReplays; r++) {
        TRY(cudaEventRecord(b.start, a.stream), "recording the start");
        TRY(cudaGraphLaunch(exec, a.stream), "launching the graph");
        TRY(cudaEventRecord(b.stop, a.stream), "recording the stop");
        TRY(cudaEventSynchronize(b.stop), "replaying the graph");
        float t = 0;
        TRY(cudaEventElapsedTime(&t, b.start, b.stop), "reading the time");
        if (r > 0)
            ms.push_back(t);
    }
    cudaGraphExecDestroy(exec);
    if (kind != 0 && gave_up(b, name))
        return false;
    std::sort(ms.begin(), ms.end());
    anchor(name, ms[ms.size() / 2] * 1e3 / b.iters, "us");
    return true;
}

// Microseconds per bare round: iters rounds in one kernel per side (both launched, then timed
// from side 0's start to both done), once untimed, then timed.
bool round_anchor(Bench &b, bool relaxed, const char *name)
{
    Side &a = b.side[0], &c = b.side[1];
    float ms = 0;
    for (int pass = 0; pass < 2; pass++) {
        TRY(cudaSetDevice(a.dev), "selecting a GPU");
        TRY(cudaEventRecord(b.start, a.stream), "recording the start");
        for (int s = 0; s < 2; s++) {
            Side &me = b.side[s], &peer = b.side[1 - s];
            TRY(cudaSetDevice(me.dev), "selecting a GPU");
            if (relaxed)
                barrier_kernel<true><<<1, 32, 0, me.stream>>>(peer.cnt, me.cnt, me.epoch, b.iters, me.gave_up);
            else
                barrier_kernel<false><<<1, 32, 0, me.stream>>>(peer.cnt, me.cnt, me.epoch, b.iters, me.gave_up);
            TRY(cudaGetLastError(), "launching the barrier kernel");
        }
        TRY(cudaSetDevice(c.dev), "selecting a GPU");
        TRY(cudaEventRecord(b.join, c.stream), "recording the join");
        TRY(cudaSetDevice(a.dev), "selecting a GPU");
        TRY(cudaStreamWaitEvent(a.stream, b.join, 0), "waiting on the join");
        TRY(cudaEventRecord(b.stop, a.stream), "recording the stop");
        TRY(cudaEventSynchronize(b.stop), "running the barrier");
        TRY(cudaEventElapsedTime(&ms, b.start, b.stop), "reading the time");
    }
    if (gave_up(b, name))
        return false;
    anchor(name, ms * 1e3 / b.iters, "us");
    return true;
}

}  // namespace

int main(int argc, char **argv)
{
    Bench b{};
    b.iters = argc > 1 ? std::atoi(argv[1]) : 200;
    if (b.iters < 1) {
        std::fprintf(stderr, "usage: anchors [ITERS]   (ITERS >= 1, default 200)\n");
        return 2;
    }
    if (!setup(b))
        return 3;
    std::printf("anchor gpus %d count\n", b.ngpus);
    for (int s = 0; s < b.ngpus; s++) {
        cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, s) == cudaSuccess)
            std::printf("# GPU %d: %s, %d SMs\n", s, p.name, p.multiProcessorCount);
    }
    if (b.ngpus == 1)
        std::printf("# one GPU: local_* are copies and stores within it, not comparable with the two-GPU targets\n");
    bool two = b.ngpus == 2;
    bandwidth(b, kMemcpy, false, two ? "memcpy_peer_GBps" : "local_memcpy_GBps");
    bandwidth(b, kMemcpy, true, two ? "memcpy_peer_bidir_GBps" : "local_memcpy_bidir_GBps");
    bandwidth(b, kWrite, false, two ? "peer_write_GBps" : "local_write_GBps");
    bandwidth(b, kWrite, true, two ? "peer_write_bidir_GBps" : "local_write_bidir_GBps");
    graph_anchor(b, 0, "empty_graph_us");
    graph_anchor(b, 1, "barrier_release_graph_us");
    graph_anchor(b, 2, "barrier_relaxed_graph_us");
    round_anchor(b, false, "barrier_release_round_us");
    round_anchor(b, true, "barrier_relaxed_round_us");
    return g_failures ? 4 : 0;
}
