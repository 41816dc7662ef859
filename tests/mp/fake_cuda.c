/*
 * fake_cuda.c - a stand-in libcuda.so.1 for tests/mp/ipc.sh, for machines without a GPU:
 * enough of the driver for the ipc engine (runtime/engines/rank_ipc.c, gpu_rank.c), in several real
 * processes.
 *
 * Device memory is host memory. cuMemCreate makes a memfd, cuMemExportToShareableHandle
 * hands out a duplicate of it, cuMemImportFromShareableHandle takes one, and cuMemMap maps it
 * MAP_SHARED at a reserved address range, so memory that one process exports really is what
 * another maps: the file descriptors that libcdsl passes between the processes are the test.
 * A launch runs, on the calling thread, the allgather_nvls program's meaning through the
 * kernel's argument block (abi.h) - wait for everyone, store this rank's input chunk into
 * every rank's output through the peer table, wait again - with the switch counted in
 * aggregate on every rank's sync word, as the p2p flavour does; for a program with port
 * channels, stdlib/allgather_port.cdsl's: its block's requests to its proxies (the port proxy
 * of each rank's process serves them: copies and write-values happen at once here) and its
 * waits on its port words, which the peers' proxies signal. A wait that runs out
 * (FAKE_WAIT_S, default 3 s) fills the error record and returns. A wrong peer table, sync
 * table, offset, state hand-over or staging copy shows up as a wrong result or a wait that
 * gives up. There is no multicast here (those symbols are absent). At exit every process
 * prints what it still holds: "fake-cuda: alive: mem 0 phys 0 va 0 maps 0 streams 0 modules 0
 * contexts 0" is a clean exit.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"

typedef int R;
typedef unsigned long long U;
static __thread int cur;                    /* the current context: device + 1, 0 = none */
static long mem, phys, vas, maps, streams, modules, ctxs;

__attribute__((destructor)) static void report(void)
{
    fprintf(stderr, "fake-cuda: alive: mem %ld phys %ld va %ld maps %ld streams %ld modules %ld contexts %ld\n", mem,
            phys, vas, maps, streams, modules, ctxs);
}

static void die(const char *what)
{
    fprintf(stderr, "FAKE-CUDA VIOLATION: %s\n", what);
    exit(99);
}

static int ngpu(void)
{
    const char *v = getenv("FAKE_NGPU");
    return v ? atoi(v) : 1;
}

R cuGetErrorName(R e, const char **s) { (void)e; *s = "CUDA_ERROR_FAKE"; return 0; }
R cuGetErrorString(R e, const char **s) { (void)e; *s = "fake"; return 0; }
R cuInit(unsigned f) { (void)f; return 0; }
R cuDriverGetVersion(int *v) { *v = 13000; return 0; }
R cuDeviceGetCount(int *c) { *c = ngpu(); return 0; }
R cuDeviceGet(int *d, int o) { *d = o; return o < ngpu() ? 0 : 101; }
R cuDeviceGetName(char *n, int l, int d) { snprintf(n, (size_t)l, "Fake GPU %d", d); return 0; }
R cuDeviceGetAttribute(int *v, int a, int d)
{
    (void)d;
    *v = a == 16 ? 132 : a == 41 ? 1 : a == 75 ? 9 : a == 76 ? 0 : a == 102 || a == 103 ? 1 : 0;
    return 0;
}
R cuDeviceGetUuid_v2(char *uuid, int d) { memset(uuid, 0, 16); snprintf(uuid, 16, "fake-gpu-%d", d); return 0; }
R cuDeviceCanAccessPeer(int *c, int a, int b) { (void)a; (void)b; *c = 1; return 0; }
R cuDevicePrimaryCtxRetain(void **c, int d) { ctxs++; *c = (void *)(uintptr_t)(d + 1); return 0; }
R cuDevicePrimaryCtxRelease_v2(int d) { (void)d; ctxs--; return 0; }
R cuCtxSetCurrent(void *c) { cur = (int)(uintptr_t)c; return 0; }
R cuCtxGetCurrent(void **c) { *c = (void *)(uintptr_t)cur; return 0; }
R cuCtxGetDevice(int *d) { if (!cur) return 201; *d = cur - 1; return 0; }
R cuCtxSynchronize(void) { return cur ? 0 : 201; }
R cuCtxEnablePeerAccess(void *p, unsigned f) { (void)p; (void)f; return 0; }
R cuMemAlloc_v2(U *p, size_t n)
{
    if (!cur) die("alloc without a context");
    *p = (U)(uintptr_t)aligned_alloc(256, (n + 255) / 256 * 256);
    mem++;
    return 0;
}
R cuMemFree_v2(U p) { free((void *)(uintptr_t)p); mem--; return 0; }
R cuMemcpyHtoD_v2(U d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
R cuMemcpyDtoH_v2(void *d, U s, size_t n) { memcpy(d, (void *)(uintptr_t)s, n); return 0; }
R cuMemcpyDtoDAsync_v2(U d, U s, size_t n, void *st) { (void)st; memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n); return 0; }
R cuMemsetD8_v2(U d, unsigned char v, size_t n) { memset((void *)(uintptr_t)d, v, n); return 0; }
R cuMemsetD8Async(U d, unsigned char v, size_t n, void *s) { (void)s; memset((void *)(uintptr_t)d, v, n); return 0; }
R cuPointerGetAttribute(void *data, int attr, U p)
{
    (void)p;
    if (attr == 2)
        *(unsigned *)data = 2;      /* CU_MEMORYTYPE_DEVICE */
    else
        *(int *)data = cur ? cur - 1 : 0;
    return 0;
}
typedef struct { int ctx; } Obj;
R cuStreamCreate(void **s, unsigned f) { (void)f; Obj *o = malloc(sizeof *o); o->ctx = cur; *s = o; streams++; return 0; }
R cuStreamDestroy_v2(void *s) { free(s); streams--; return 0; }
R cuStreamSynchronize(void *s) { (void)s; return 0; }
R cuStreamQuery(void *s) { (void)s; return 0; }
R cuStreamGetCtx(void *s, void **c) { *c = (void *)(uintptr_t)(s ? ((Obj *)s)->ctx : cur); return 0; }
R cuStreamWaitEvent(void *s, void *e, unsigned f) { (void)s; (void)e; (void)f; return 0; }
R cuEventCreate(void **e, unsigned f) { (void)f; *e = malloc(1); return 0; }
R cuEventDestroy_v2(void *e) { free(e); return 0; }
R cuEventRecord(void *e, void *s) { (void)e; (void)s; return 0; }
R cuEventSynchronize(void *e) { (void)e; return 0; }
R cuEventElapsedTime_v2(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 1; return 0; }
R cuModuleLoadData(void **m, const void *img)
{
    if (memcmp(img, "\177ELF", 4)) return 200;
    *m = malloc(1);
    modules++;
    return 0;
}
R cuModuleUnload(void *m) { free(m); modules--; return 0; }
R cuModuleGetFunction(void **f, void *m, const char *n) { *f = m; return strcmp(n, "cdsl_main") ? 500 : 0; }
/* FAKE_UNEVEN=R: the kernel of rank R (PROBE_RANK, which mp_probe.c sets in each rank's
   process) takes at most 256 threads per block, the others' 1024, so that the ranks would
   choose unlike launches unless they agree on one (rank_comm.c). */
static int uneven(void)
{
    const char *u = getenv("FAKE_UNEVEN"), *r = getenv("PROBE_RANK");
    return u && r && !strcmp(u, r);
}

R cuFuncGetAttribute(int *v, int a, void *f)
{
    (void)f;
    *v = a == 0 ? (uneven() ? 256 : 1024) : 32;
    return 0;
}
R cuOccupancyMaxActiveBlocksPerMultiprocessor(int *b, void *f, int t, size_t s) { (void)f; (void)s; *b = 2048 / t; return 0; }

/* ---- the kernel: allgather_nvls through the argument block --------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void arrive(const CdslArgs *a)
{
    for (int p = 0; p < a->nranks; p++)
        __atomic_fetch_add(&a->peer_sync[p][CDSL_SYNC_SWITCH], 1ull, __ATOMIC_SEQ_CST);
}

static int wait_round(const CdslArgs *a, int k, int line)
{
    unsigned long long want = a->state[CDSL_STATE_SWITCH] + (unsigned long long)k * (unsigned long long)a->nranks;
    double limit = now_s() + (getenv("FAKE_WAIT_S") ? atof(getenv("FAKE_WAIT_S")) : 3.0);
    while (__atomic_load_n(&a->sync[CDSL_SYNC_SWITCH], __ATOMIC_SEQ_CST) < want) {
        if (now_s() > limit) {
            a->error[0] = 1;
            a->error[1] = (unsigned)a->rank;
            a->error[2] = (unsigned)line;
            a->error[3] = CDSL_SYNC_SWITCH;
            return 0;
        }
        usleep(100);
    }
    return 1;
}

/* Every rank must launch the same grid and block size (block b waits for block b of its
   partners): each writes its launch's shape into the last of its sync words (a block word the
   real kernel's 256th block would use; this one does not), and after the first round compares
   every rank's. */
static void same_shape(const CdslArgs *a, unsigned blocks, unsigned threads)
{
    unsigned long long mine = (unsigned long long)blocks << 32 | threads;
    size_t w = CDSL_SYNC_FIXED_WORDS(a->nranks) - 1;
    for (int p = 0; p < a->nranks; p++)
        if (__atomic_load_n(&a->peer_sync[p][w], __ATOMIC_SEQ_CST) != mine)
            die("ranks launched different grids or block sizes");
}

/* ---- stdlib/allgather_port.cdsl through the argument block: the requests its block makes to its
   proxies (in the rank's process, runtime/engines/gpu_port.c), the waits on its port words; a
   proxy per peer, in the peers' order (compiler/lower/port_proxy.c), one port channel a pair ---- */

static void port_request(const CdslArgs *a, int k)
{
    unsigned long long v = ++a->port[CDSL_PORT_REQ_MADE(a->nranks, 1, k)];
    __atomic_store_n(&a->port_host[CDSL_PORT_HOST_REQ(k)], v, __ATOMIC_RELEASE);
}

static void port_requests(const CdslArgs *a)
{
    for (int p = 0, k = 0; p < a->nranks; p++)
        if (p != a->rank)
            port_request(a, k++);
}

static int port_waits(const CdslArgs *a, int line)
{
    int n = a->nranks;
    for (int p = 0; p < n; p++) {
        if (p == a->rank)
            continue;
        unsigned long long want = a->port[CDSL_PORT_CONSUMED(n, 1, 0, p)] + 1;
        double limit = now_s() + (getenv("FAKE_WAIT_S") ? atof(getenv("FAKE_WAIT_S")) : 3.0);
        while (__atomic_load_n(&a->port[CDSL_PORT_ARRIVED(n, 0, p)], __ATOMIC_ACQUIRE) < want) {
            if (now_s() > limit) {
                a->error[0] = 1;
                a->error[1] = (unsigned)a->rank;
                a->error[2] = (unsigned)line;
                a->error[3] = CDSL_PORT_SEM_COUNTER(p);
                return 0;
            }
            usleep(50);
        }
        a->port[CDSL_PORT_CONSUMED(n, 1, 0, p)] = want;
    }
    return 1;
}

static void port_kernel(const CdslArgs *a)
{
    if (!a->port_host) die("a program with port channels launched without its port host words");
    port_requests(a);                                   /* line 4: signal every peer */
    if (!port_waits(a, 5))
        return;
    memcpy(a->buf[1] + (size_t)a->rank * a->chunk_bytes, a->buf[0], a->chunk_bytes);
    port_requests(a);                                   /* line 7: the puts */
    port_requests(a);                                   /* line 8: a signal after them */
    port_waits(a, 9);
}

static void kernel(const CdslArgs *a, unsigned blocks, unsigned threads)
{
    if (a->port) {
        port_kernel(a);
        return;
    }
    if (blocks < 1 || blocks > 132) die("grid");  // at most one block per SM (the fake has 132)
    if (a->peer_sync[a->rank] != a->sync) die("peer_sync does not hold the rank's own sync words");
    for (int b = 0; b < 2; b++)
        if (a->peer_buf[a->rank * 8 + b] != a->buf[b]) die("peer_buf does not hold the rank's own buffers");
    __atomic_store_n(&a->sync[CDSL_SYNC_FIXED_WORDS(a->nranks) - 1], (unsigned long long)blocks << 32 | threads,
                     __ATOMIC_SEQ_CST);
    arrive(a);
    if (!wait_round(a, 1, 5))
        return;
    same_shape(a, blocks, threads);
    for (int p = 0; p < a->nranks; p++)
        memcpy(a->peer_buf[p * 8 + 1] + (size_t)a->rank * a->chunk_bytes, a->buf[0], a->chunk_bytes);
    arrive(a);
    if (!wait_round(a, 2, 8))
        return;
    a->state[CDSL_STATE_SWITCH] += 2ull * (unsigned long long)a->nranks;
}

R cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sm,
                 void *s, void **params, void **extra)
{
    (void)f; (void)gy; (void)gz; (void)by; (void)bz; (void)sm; (void)extra;
    if (bx % 32) die("block size");
    if (s && ((Obj *)s)->ctx != cur) die("launch on another context's stream");
    kernel(params[0], gx, bx);
    return 0;
}

/* ---- what the port proxy needs: pinned host memory is host memory (counted with the rest), a
   copy or write-value on a lane happens at once, and so every event has been reached (built
   with -DFAKE_NO_PORT: a driver without them) ------------------------------------------------- */
#ifndef FAKE_NO_PORT
R cuMemHostAlloc(void **p, size_t n, unsigned f) { (void)f; *p = calloc(1, n); mem++; return *p ? 0 : 2; }
R cuMemFreeHost(void *p) { free(p); mem--; return 0; }
R cuMemHostGetDevicePointer_v2(U *d, void *p, unsigned f) { (void)f; *d = (U)(uintptr_t)p; return 0; }
R cuMemcpyAsync(U d, U s, size_t n, void *st) { (void)st; memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n); return 0; }
R cuStreamWriteValue64_v2(void *st, U at, U v, unsigned f)
{
    (void)st; (void)f;
    __atomic_store_n((U *)(uintptr_t)at, v, __ATOMIC_RELEASE);
    return 0;
}
R cuEventQuery(void *e) { (void)e; return 0; }
R cuStreamIsCapturing(void *s, int *c) { (void)s; *c = 0; return 0; }
#endif

/* ---- virtual memory shared between processes ---------------------------------------------------- */
#define GRAN (2u << 20)
typedef struct Phys { int fd; size_t size; } Phys;
typedef struct { int type, handles, loc_type, loc_id; void *w; char flags[8]; } AllocProp;

R cuMemGetAllocationGranularity(size_t *g, const AllocProp *p, int o) { (void)p; (void)o; *g = GRAN; return 0; }
R cuMemCreate(U *h, size_t size, const AllocProp *p, unsigned long long f)
{
    (void)f;
    if (size % GRAN || p->type != 1 || p->loc_type != 1 || p->handles != 1) die("cuMemCreate properties");
    Phys *x = calloc(1, sizeof *x);
    x->fd = memfd_create("fake-cuda", MFD_CLOEXEC);
    if (x->fd < 0 || ftruncate(x->fd, (off_t)size)) die("memfd");
    x->size = size;
    *h = (U)(uintptr_t)x;
    phys++;
    return 0;
}
R cuMemRelease(U h) { Phys *x = (Phys *)(uintptr_t)h; close(x->fd); free(x); phys--; return 0; }
R cuMemExportToShareableHandle(void *out, U h, int type, unsigned long long f)
{
    (void)f;
    if (type != 1) die("export type");
    *(int *)out = dup(((Phys *)(uintptr_t)h)->fd);
    return 0;
}
R cuMemImportFromShareableHandle(U *h, void *os, int type)
{
    struct stat st;
    int fd = (int)(uintptr_t)os;
    if (type != 1 || fstat(fd, &st)) die("import");
    Phys *x = calloc(1, sizeof *x);
    x->fd = dup(fd);
    x->size = (size_t)st.st_size;
    *h = (U)(uintptr_t)x;
    phys++;
    return 0;
}
R cuMemAddressReserve(U *p, size_t size, size_t al, U addr, unsigned long long f)
{
    (void)addr; (void)f;
    if (size % GRAN || al % GRAN) die("reservation not a multiple of the granularity");
    void *v = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (v == MAP_FAILED) return 2;
    *p = (U)(uintptr_t)v;
    vas++;
    return 0;
}
R cuMemAddressFree(U p, size_t size) { munmap((void *)(uintptr_t)p, size); vas--; return 0; }
R cuMemMap(U p, size_t size, size_t off, U h, unsigned long long f)
{
    Phys *x = (Phys *)(uintptr_t)h;
    (void)f;
    if (off || size > x->size) die("cuMemMap arguments");
    if (mmap((void *)(uintptr_t)p, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, x->fd, 0) == MAP_FAILED)
        die("mmap of the memfd");
    maps++;
    return 0;
}
R cuMemUnmap(U p, size_t size)
{
    mmap((void *)(uintptr_t)p, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    maps--;
    return 0;
}
R cuMemSetAccess(U p, size_t size, const void *d, size_t n) { (void)p; (void)size; (void)d; if (!n) die("cuMemSetAccess"); return 0; }
