/*
 * gpu_device.c - the steps on one GPU that both execution worlds take (see gpu_device.h):
 * written once so that the single process and a process per rank make the same driver calls
 * in the same order, and each reports a failure in its own words.
 */
#include "gpu_device.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

CUresult gpu_device_query(CuDrv *cu, GpuDevice *dv, const char **what)
{
    int major = 0, minor = 0;
    CUresult r = cu->DeviceGet(&dv->dev, dv->ordinal);
    if (r != CUDA_SUCCESS) {
        *what = "cuDeviceGet";
        return r;
    }
    if (cu->DeviceGetName(dv->name, (int)sizeof dv->name, dv->dev) != CUDA_SUCCESS)
        snprintf(dv->name, sizeof dv->name, "GPU %d", dv->ordinal);
    *what = "reading the SM count";
    if ((r = cu->DeviceGetAttribute(&dv->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dv->dev)))
        return r;
    *what = "reading the compute capability";
    if ((r = cu->DeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dv->dev)) ||
        (r = cu->DeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dv->dev)))
        return r;
    snprintf(dv->arch, sizeof dv->arch, "sm_%d%d", major, minor);
    return CUDA_SUCCESS;
}

/* cuMemAlloc and zero; what says which of the two failed. */
CUresult gpu_mem_zeroed(CuDrv *cu, CUdeviceptr *p, size_t bytes, const char *name, char what[GPU_WHAT_BYTES])
{
    CUresult r = cu->MemAlloc(p, bytes);
    if (r != CUDA_SUCCESS) {
        snprintf(what, GPU_WHAT_BYTES, "allocating %zu bytes for %s", bytes, name);
        return r;
    }
    if ((r = cu->MemsetD8(*p, 0, bytes)) != CUDA_SUCCESS)
        snprintf(what, GPU_WHAT_BYTES, "zeroing %s", name);
    return r;
}

CUresult gpu_words_make(CuDrv *cu, GpuRank *own, int nranks, int chans, char what[GPU_WHAT_BYTES])
{
    CUresult r = gpu_mem_zeroed(cu, &own->state, CDSL_STATE_WORDS(nranks, chans) * 8, "the state words", what);
    return r != CUDA_SUCCESS ? r : gpu_mem_zeroed(cu, &own->error, CDSL_ERROR_WORDS * 4, "the error record", what);
}

CUresult gpu_tables_make(CuDrv *cu, GpuDevice *dv, int nranks, char what[GPU_WHAT_BYTES])
{
    size_t n = (size_t)nranks;
    CUresult r = gpu_mem_zeroed(cu, &dv->peer_buf, n * CDSL_ABI_MAX_BUFS * 8, "peer_buf", what);
    return r != CUDA_SUCCESS ? r : gpu_mem_zeroed(cu, &dv->peer_sync, n * 8, "peer_sync", what);
}

CUresult gpu_tables_write(CuDrv *cu, GpuDevice *dv, const CUdeviceptr *bufs, const CUdeviceptr *syncs, int nranks)
{
    size_t n = (size_t)nranks;
    CUresult r = cu->MemcpyHtoD(dv->peer_buf, bufs, n * CDSL_ABI_MAX_BUFS * 8);
    return r != CUDA_SUCCESS ? r : cu->MemcpyHtoD(dv->peer_sync, syncs, n * 8);
}

void gpu_mem_free(CuDrv *cu, CUdeviceptr *p)
{
    if (*p)
        cu->MemFree(*p);
    *p = 0;
}

void gpu_words_free(CuDrv *cu, GpuRank *own)
{
    gpu_mem_free(cu, &own->state);
    gpu_mem_free(cu, &own->error);
}

void gpu_tables_free(CuDrv *cu, GpuDevice *dv)
{
    gpu_mem_free(cu, &dv->peer_buf);
    gpu_mem_free(cu, &dv->peer_sync);
}

CUresult gpu_device_shape(CuDrv *cu, GpuDevice *dv, const char **what)
{
    int maxt = 0;
    CUresult r = cu->FuncGetAttribute(&maxt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dv->fn);
    if (r != CUDA_SUCCESS) {
        *what = "reading cdsl_main's thread limit";
        return r;
    }
    int want = (int)gpu_env_long("CDSL_GPU_THREADS", GPU_MAX_THREADS);
    dv->threads = (want < maxt ? want : maxt) / 32 * 32;
    if (dv->threads < 32)
        dv->threads = 32;
    r = cu->OccupancyMaxActiveBlocksPerMultiprocessor(&dv->blocks_per_sm, dv->fn, dv->threads, 0);
    *what = "computing cdsl_main's occupancy";
    return r;
}

CUresult gpu_device_load(CuDrv *cu, GpuDevice *dv, const void *cubin, const char **what)
{
    CUresult r = cu->ModuleLoadData(&dv->module, cubin);
    if (r != CUDA_SUCCESS) {
        dv->module = NULL;
        *what = "loading the cubin";
        return r;
    }
    if ((r = cu->ModuleGetFunction(&dv->fn, dv->module, "cdsl_main")) != CUDA_SUCCESS) {
        *what = "finding cdsl_main in the cubin";
        return r;
    }
    return gpu_device_shape(cu, dv, what);
}

CUresult gpu_device_fit(CuDrv *cu, GpuDevice *dv, long blocks)
{
    while ((long)dv->blocks_per_sm * dv->sm_count / (dv->nranks > 0 ? dv->nranks : 1) < blocks &&
           dv->threads / 2 >= GPU_MIN_FIT_THREADS) {
        dv->threads /= 2;
        CUresult r = cu->OccupancyMaxActiveBlocksPerMultiprocessor(&dv->blocks_per_sm, dv->fn, dv->threads, 0);
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}

bool gpu_device_resident(const GpuDevice *dv)
{
    return (long)dv->blocks_per_sm * dv->sm_count >= dv->nranks;
}

void gpu_device_unload(CuDrv *cu, GpuDevice *dv)
{
    if (dv->module)
        cu->ModuleUnload(dv->module);
    dv->module = NULL;
    dv->fn = NULL;
}

void gpu_args_own(CdslArgs *a, size_t chunk_bytes, unsigned long long spin_limit, int rank, int nranks,
                  const GpuDevice *dv, const GpuRank *own)
{
    memset(a, 0, sizeof *a);
    a->chunk_bytes = chunk_bytes;
    a->spin_limit = spin_limit;
    a->rank = rank;
    a->nranks = nranks;
    for (int b = 0; b < CDSL_ABI_MAX_BUFS; b++)
        a->mc_buf[b] = (char *)(uintptr_t)own->mc_buf[b];
    a->peer_buf = (char *const *)(uintptr_t)dv->peer_buf;
    a->peer_sync = (unsigned long long *const *)(uintptr_t)dv->peer_sync;
    a->mc_sync = (unsigned long long *)(uintptr_t)own->mc_sync;
    a->state = (unsigned long long *)(uintptr_t)own->state;
    a->error = (unsigned int *)(uintptr_t)own->error;
}

void gpu_args_peer(CdslArgs *a, int p, const CUdeviceptr buf[CDSL_ABI_MAX_BUFS], CUdeviceptr sync)
{
    if (p == a->rank) {
        for (int b = 0; b < CDSL_ABI_MAX_BUFS; b++)
            a->buf[b] = (char *)(uintptr_t)buf[b];
        a->sync = (unsigned long long *)(uintptr_t)sync;
    }
    if (p >= CDSL_ARGS_RANKS)   /* the block holds the tables' start, in place */
        return;
    for (int b = 0; b < CDSL_ABI_MAX_BUFS; b++)
        a->peer_bufs[p][b] = (char *)(uintptr_t)buf[b];
    a->peer_syncs[p] = (unsigned long long *)(uintptr_t)sync;
}
