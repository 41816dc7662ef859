/*
 * api_example.c - libcdsl from a program of your own: your buffers, your streams.
 *
 * Compiles examples/allgather.cdsl for N ranks, creates a communicator (sim or p2p, from the
 * command line) and runs the allgather twice:
 *   (a) on buffers the communicator allocates: we fill the inputs and read the outputs through
 *       their addresses (cdsl_comm_buffer), and cdsl_run runs the collective and waits;
 *   (b) on buffers we allocate ourselves (cdsl_comm_register): cdsl_run_async enqueues the
 *       collective on our streams, we synchronise them, and cdsl_comm_status says whether
 *       every rank's waits completed.
 * Every rank's input is a distinct pattern, so each output chunk is checked against the rank
 * it came from. For p2p, our memory and streams come from the CUDA driver API, loaded with
 * dlopen so that this file builds without a CUDA toolkit (a CUDA program would just use
 * cudaMalloc and its cudaStream_t); rank r runs on GPU r. This file uses nothing of libcdsl
 * but cdsl.h.
 *
 *     build/api_example sim|p2p [nranks] [file.cdsl]      ends with "api_example: verified"
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdsl.h"

#define CHUNK_BYTES (256u << 10)        /* one rank's input: 64 Ki elements of u32 */
#define ELEMS (CHUNK_BYTES / 4)

/* ---- Device memory and streams: malloc for sim, the CUDA driver for p2p -------------------- */

typedef unsigned long long CUdeviceptr;
typedef struct Driver {
    void *lib;                          /* libcuda.so.1 when running on GPUs, else NULL */
    int dev[64];                        /* GPU r */
    void *ctx[64];                      /* its primary context, retained */
    int (*Init)(unsigned flags);
    int (*DeviceGet)(int *dev, int ordinal);
    int (*PrimaryCtxRetain)(void **ctx, int dev);
    int (*PrimaryCtxRelease)(int dev);
    int (*CtxSetCurrent)(void *ctx);
    int (*CtxSynchronize)(void);
    int (*MemAlloc)(CUdeviceptr *p, size_t bytes);
    int (*MemFree)(CUdeviceptr p);
    int (*MemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
    int (*MemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
    int (*StreamCreate)(void **stream, unsigned flags);
    int (*StreamSynchronize)(void *stream);
    int (*StreamDestroy)(void *stream);
} Driver;
static Driver cu;

#define SYM(member, name) {name, offsetof(Driver, member)}
static const struct { const char *name; size_t off; } cu_syms[] = {
    SYM(Init, "cuInit"), SYM(DeviceGet, "cuDeviceGet"), SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    SYM(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"), SYM(CtxSetCurrent, "cuCtxSetCurrent"),
    SYM(CtxSynchronize, "cuCtxSynchronize"), SYM(MemAlloc, "cuMemAlloc_v2"),
    SYM(MemFree, "cuMemFree_v2"), SYM(MemcpyHtoD, "cuMemcpyHtoD_v2"),
    SYM(MemcpyDtoH, "cuMemcpyDtoH_v2"), SYM(StreamCreate, "cuStreamCreate"),
    SYM(StreamSynchronize, "cuStreamSynchronize"), SYM(StreamDestroy, "cuStreamDestroy_v2"),
};
#undef SYM

/* Load the driver and retain GPU 0..ngpus-1's primary contexts (the communicator's too). */
static int driver_open(int ngpus)
{
    if (!(cu.lib = dlopen("libcuda.so.1", RTLD_NOW))) {
        fprintf(stderr, "api_example: cannot load libcuda.so.1: %s\n", dlerror());
        return CDSL_ERR_SYSTEM;
    }
    for (size_t i = 0; i < sizeof cu_syms / sizeof cu_syms[0]; i++) {
        void *f = dlsym(cu.lib, cu_syms[i].name);
        if (!f) {
            fprintf(stderr, "api_example: libcuda.so.1 has no %s\n", cu_syms[i].name);
            return CDSL_ERR_SYSTEM;
        }
        memcpy((char *)&cu + cu_syms[i].off, &f, sizeof f);     /* POSIX: a function's address */
    }
    int err = cu.Init(0);
    for (int d = 0; !err && d < ngpus; d++)
        if (!(err = cu.DeviceGet(&cu.dev[d], d)))
            err = cu.PrimaryCtxRetain(&cu.ctx[d], cu.dev[d]);
    if (err)
        fprintf(stderr, "api_example: CUDA error %d setting up the GPUs\n", err);
    return err ? CDSL_ERR_SYSTEM : CDSL_OK;
}

static void driver_close(int ngpus)
{
    for (int d = 0; cu.lib && d < ngpus; d++)
        if (cu.ctx[d])
            cu.PrimaryCtxRelease(cu.dev[d]);
    if (cu.lib)
        dlclose(cu.lib);
}

/* Rank r's memory: on GPU r for p2p (its context made current), 16-byte aligned host memory
 * for sim. */
static void *mem_alloc(int r, size_t bytes)
{
    CUdeviceptr p = 0;
    if (!cu.lib)
        return aligned_alloc(64, (bytes + 63) / 64 * 64);
    cu.CtxSetCurrent(cu.ctx[r]);
    return cu.MemAlloc(&p, bytes) ? NULL : (void *)(uintptr_t)p;
}

static void mem_free(int r, void *p)
{
    if (!cu.lib)
        free(p);
    else if (p && !cu.CtxSetCurrent(cu.ctx[r]))
        cu.MemFree((CUdeviceptr)(uintptr_t)p);
}

/* Host -> rank r's memory, finished before any stream runs on it (a copy from pageable host
 * memory may still be in flight when cuMemcpyHtoD returns). Nonzero on an error. */
static int put(int r, void *dst, const void *src, size_t bytes)
{
    if (!cu.lib) {
        memcpy(dst, src, bytes);
        return 0;
    }
    cu.CtxSetCurrent(cu.ctx[r]);
    return cu.MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, bytes) || cu.CtxSynchronize();
}

static int get(int r, void *dst, const void *src, size_t bytes)
{
    if (!cu.lib) {
        memcpy(dst, src, bytes);
        return 0;
    }
    cu.CtxSetCurrent(cu.ctx[r]);
    return cu.MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, bytes);
}

/* A stream of GPU r (sim: none; cdsl_run_async then uses its own). */
static void *stream_new(int r)
{
    void *s = NULL;
    if (cu.lib && !cu.CtxSetCurrent(cu.ctx[r]))
        cu.StreamCreate(&s, 0);
    return s;
}

/* ---- The data: rank r's input in run k, and the check of every output -------------------- */

static uint32_t pattern(int run, int rank, size_t i)
{
    return (uint32_t)run << 28 | (uint32_t)rank << 16 | (uint32_t)i;
}

/* Rank r's input for run k, copied into `input` (an address of rank r's memory). */
static int fill(int r, void *input, int run)
{
    static uint32_t host[ELEMS];
    for (size_t i = 0; i < ELEMS; i++)
        host[i] = pattern(run, r, i);
    return put(r, input, host, CHUNK_BYTES) ? CDSL_ERR_SYSTEM : CDSL_OK;
}

/* Rank r's output after an allgather: chunk q holds rank q's input. */
static int check(int r, const void *output, int nranks, int run)
{
    uint32_t *host = malloc((size_t)nranks * CHUNK_BYTES);
    int rc = !host || get(r, host, output, (size_t)nranks * CHUNK_BYTES) ? CDSL_ERR_SYSTEM : CDSL_OK;
    for (size_t e = 0; !rc && e < (size_t)nranks * ELEMS; e++) {
        uint32_t want = pattern(run, (int)(e / ELEMS), e % ELEMS);
        if (host[e] != want) {
            fprintf(stderr, "api_example: run %d, rank %d, element %zu is %#x, expected %#x\n", run, r,
                    e, host[e], want);
            rc = CDSL_ERR_VERIFY;
        }
    }
    free(host);
    return rc;
}

/* ---- (a) the communicator's buffers, through their addresses; a synchronous run ---------- */

static int run_on_comm_buffers(cdsl_comm *comm, cdsl_program *prog, int nranks)
{
    void *p;
    int rc = cdsl_comm_alloc(comm, prog, CHUNK_BYTES);
    for (int r = 0; !rc && r < nranks; r++)
        if (!(rc = cdsl_comm_buffer(comm, r, CDSL_BUF_INPUT, &p)))
            rc = fill(r, p, 1);
    if (!rc)
        rc = cdsl_run(comm, prog, CDSL_U32, 1, NULL);
    for (int r = 0; !rc && r < nranks; r++)
        if (!(rc = cdsl_comm_buffer(comm, r, CDSL_BUF_OUTPUT, &p)))
            rc = check(r, p, nranks, 1);
    return rc;
}

/* ---- (b) our buffers and our streams; an asynchronous run --------------------------------- */

typedef struct Ours {
    int nranks, nbufs;
    void **ptrs;                        /* [rank * nbufs + buffer] */
    void **streams;                     /* [rank] */
} Ours;

static int ours_alloc(Ours *o, const cdsl_program *prog, int nranks)
{
    o->nranks = nranks;
    o->nbufs = cdsl_program_nbufs(prog);
    o->ptrs = calloc((size_t)(nranks * o->nbufs), sizeof *o->ptrs);
    o->streams = calloc((size_t)nranks, sizeof *o->streams);
    int rc = o->ptrs && o->streams ? CDSL_OK : CDSL_ERR_SYSTEM;
    for (int r = 0; !rc && r < nranks; r++) {
        for (int b = 0; !rc && b < o->nbufs; b++) {
            size_t bytes = (size_t)cdsl_program_buf_chunks(prog, b) * CHUNK_BYTES;
            if (bytes && !(o->ptrs[r * o->nbufs + b] = mem_alloc(r, bytes)))
                rc = CDSL_ERR_SYSTEM;
        }
        if (cu.lib && !(o->streams[r] = stream_new(r)))
            rc = CDSL_ERR_SYSTEM;
    }
    if (rc)
        fprintf(stderr, "api_example: out of memory for our buffers and streams\n");
    return rc;
}

/* After the communicator is gone: it used our memory until then. */
static void ours_free(Ours *o)
{
    for (int r = 0; r < o->nranks; r++) {
        for (int b = 0; o->ptrs && b < o->nbufs; b++)
            mem_free(r, o->ptrs[r * o->nbufs + b]);
        if (o->streams && o->streams[r] && !cu.CtxSetCurrent(cu.ctx[r]))
            cu.StreamDestroy(o->streams[r]);
    }
    free(o->ptrs);
    free(o->streams);
}

static int run_on_our_buffers(cdsl_comm *comm, cdsl_program *prog, Ours *o)
{
    int rc = ours_alloc(o, prog, o->nranks);
    if (!rc)
        rc = cdsl_comm_register(comm, prog, CHUNK_BYTES, o->ptrs);
    for (int r = 0; !rc && r < o->nranks; r++)
        rc = fill(r, o->ptrs[r * o->nbufs + CDSL_BUF_INPUT], 2);
    if (!rc)
        rc = cdsl_run_async(comm, prog, CDSL_U32, o->streams);
    for (int r = 0; !rc && cu.lib && r < o->nranks; r++)
        if (!cu.CtxSetCurrent(cu.ctx[r]) && cu.StreamSynchronize(o->streams[r]))
            rc = CDSL_ERR_RUNTIME;
    if (!rc)
        rc = cdsl_comm_status(comm);
    for (int r = 0; !rc && r < o->nranks; r++)
        rc = check(r, o->ptrs[r * o->nbufs + CDSL_BUF_OUTPUT], o->nranks, 2);
    return rc;
}

/* ---- main --------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    cdsl_backend backend;
    int nranks = argc > 2 ? atoi(argv[2]) : 2;
    if (argc < 2 || cdsl_backend_parse(argv[1], &backend) || backend == CDSL_BACKEND_NVLS ||
        nranks < 1 || nranks > 64) {
        fprintf(stderr, "usage: api_example sim|p2p [nranks] [file.cdsl]\n");
        return CDSL_ERR_USAGE;
    }
    cdsl_compile_opts copts = {.path = argc > 3 ? argv[3] : "examples/allgather.cdsl", .nranks = nranks,
                               .stop_after = CDSL_STAGE_CHECK};
    cdsl_comm_opts opts;
    cdsl_comm_opts_init(&opts);
    opts.backend = (int)backend;
    opts.nranks = nranks;
    opts.ranks_per_gpu = 1;             /* rank r on GPU r */
    cdsl_program *prog = NULL;
    cdsl_comm *comm = NULL;
    Ours ours = {.nranks = nranks};
    int rc = cdsl_compile(&copts, &prog);
    if (!rc)
        rc = cdsl_comm_create(&opts, &comm);
    if (!rc && backend == CDSL_BACKEND_P2P)
        rc = driver_open(nranks);
    if (!rc)
        rc = run_on_comm_buffers(comm, prog, nranks);
    if (!rc)
        rc = run_on_our_buffers(comm, prog, &ours);
    cdsl_comm_destroy(comm);
    ours_free(&ours);
    driver_close(nranks);
    cdsl_program_destroy(prog);
    if (!rc)
        printf("api_example: verified (%s, %d ranks)\n", argv[1], nranks);
    return rc;
}
