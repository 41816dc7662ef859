/*
 * ce_anchor.c - the physical anchor for bench/ce_gpu.sh: an allgather's data movement done with
 * nothing but cuMemcpyAsync, no synchronisation between ranks at all.
 *
 *     ce_anchor NRANKS RANKS_PER_GPU CHUNK_BYTES LANES [ITERS]
 *
 * Rank r (on GPU r / RANKS_PER_GPU) copies its CHUNK_BYTES input into slot r of every rank's
 * output, its own first and then rank r+1, r+2, ... (as the copy-engine plan of
 * allgather_nvls does), on LANES streams of its own (1: one after the other; more: the copies
 * spread round robin, as the plan's lanes). One iteration is every rank's copies, forked from
 * and joined to one origin stream; ITERS iterations (default 20, after 5 untimed) are timed
 * with events on it. Prints one line:
 *     anchor nranks 2 rpg 2 chunk 536870912 lanes 2: 5123.4 us per iteration, 209.6 GB/s of copies
 * The CUDA driver is loaded with dlopen, so this builds with any C compiler (no toolkit).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef unsigned long long Ptr;
typedef int (*Fn)();

static void *lib;
static Fn get(const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "ce_anchor: libcuda.so.1 has no %s\n", name);
        exit(3);
    }
    Fn f;
    *(void **)&f = p;
    return f;
}

#define CHECK(call)                                                                     \
    do {                                                                                \
        int r_ = (call);                                                                \
        if (r_) {                                                                       \
            fprintf(stderr, "ce_anchor: %s failed: CUDA error %d\n", #call, r_);        \
            exit(3);                                                                    \
        }                                                                               \
    } while (0)

enum { MAX_RANKS = 16, MAX_LANES = 8 };

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: ce_anchor NRANKS RANKS_PER_GPU CHUNK_BYTES LANES [ITERS]\n");
        return 2;
    }
    int n = atoi(argv[1]), rpg = atoi(argv[2]), lanes = atoi(argv[4]), iters = argc > 5 ? atoi(argv[5]) : 20;
    size_t chunk = (size_t)strtoull(argv[3], NULL, 10);
    if (n < 1 || n > MAX_RANKS || rpg < 1 || lanes < 1 || lanes > MAX_LANES || iters < 1 || !chunk)
        return 2;
    if (!(lib = dlopen("libcuda.so.1", RTLD_NOW))) {
        fprintf(stderr, "ce_anchor: no libcuda.so.1\n");
        return 3;
    }
    Fn Init = get("cuInit"), DeviceGet = get("cuDeviceGet"), Retain = get("cuDevicePrimaryCtxRetain"),
       SetCurrent = get("cuCtxSetCurrent"), Peer = get("cuCtxEnablePeerAccess"), Alloc = get("cuMemAlloc_v2"),
       StreamCreate = get("cuStreamCreate"), EventCreate = get("cuEventCreate"), Record = get("cuEventRecord"),
       WaitEvent = get("cuStreamWaitEvent"), Memcpy = get("cuMemcpyAsync"), Sync = get("cuEventSynchronize"),
       Elapsed = get("cuEventElapsedTime_v2"), Memset = get("cuMemsetD8_v2");
    int ngpu = (n + rpg - 1) / rpg;
    void *ctx[MAX_RANKS];
    CHECK(Init(0));
    for (int d = 0; d < ngpu; d++) {
        int dev;
        CHECK(DeviceGet(&dev, d));
        CHECK(Retain(&ctx[d], dev));
    }
    for (int d = 0; d < ngpu; d++) {
        CHECK(SetCurrent(ctx[d]));
        for (int e = 0; e < ngpu; e++)
            if (e != d) {
                int r = Peer(ctx[e], 0);
                if (r && r != 704)
                    CHECK(r);
            }
    }
    Ptr in[MAX_RANKS], out[MAX_RANKS];
    void *stream[MAX_RANKS][MAX_LANES], *fork[MAX_RANKS], *join[MAX_RANKS][MAX_LANES], *start, *stop, *go;
    for (int r = 0; r < n; r++) {
        CHECK(SetCurrent(ctx[r / rpg]));
        CHECK(Alloc(&in[r], chunk));
        CHECK(Alloc(&out[r], chunk * (size_t)n));
        CHECK(Memset(in[r], r + 1, chunk));
        CHECK(EventCreate(&fork[r], 2));
        for (int l = 0; l < lanes; l++) {
            CHECK(StreamCreate(&stream[r][l], 1));
            CHECK(EventCreate(&join[r][l], 2));
        }
    }
    CHECK(SetCurrent(ctx[0]));
    CHECK(EventCreate(&start, 0));
    CHECK(EventCreate(&stop, 0));
    CHECK(EventCreate(&go, 2));
    void *origin = stream[0][0];
    float ms = 0;
    for (int pass = 0; pass < 2; pass++) {
        int count = pass ? iters : 5;
        CHECK(SetCurrent(ctx[0]));
        CHECK(Record(start, origin));
        for (int it = 0; it < count; it++) {
            CHECK(SetCurrent(ctx[0]));
            CHECK(Record(go, origin));
            for (int r = 0; r < n; r++) {           /* every lane starts after the origin */
                CHECK(SetCurrent(ctx[r / rpg]));
                for (int l = 0; l < lanes; l++)
                    if (r || l)
                        CHECK(WaitEvent(stream[r][l], go, 0));
                for (int k = 0; k < n; k++) {
                    int q = (r + k) % n;
                    CHECK(Memcpy(out[q] + (Ptr)r * chunk, in[r], chunk, stream[r][k % lanes]));
                }
                for (int l = 0; l < lanes; l++)
                    if (r || l)
                        CHECK(Record(join[r][l], stream[r][l]));
            }
            CHECK(SetCurrent(ctx[0]));
            for (int r = 0; r < n; r++)
                for (int l = 0; l < lanes; l++)
                    if (r || l)
                        CHECK(WaitEvent(origin, join[r][l], 0));
        }
        CHECK(Record(stop, origin));
        CHECK(Sync(stop));
        CHECK(Elapsed(&ms, start, stop));
    }
    double us = (double)ms * 1000.0 / iters;
    printf("anchor nranks %d rpg %d chunk %zu lanes %d: %.1f us per iteration, %.1f GB/s of copies\n", n, rpg, chunk,
           lanes, us, (double)chunk * n * n / (us * 1e3));
    return 0;
}
