/*
 * gpu_device.h - the steps on one GPU that both execution worlds take: one process driving
 * every GPU (gpu_common.c, for the p2p and nvls backends) and one process per rank
 * (gpu_rank.c, for the ipc and nccl engines).
 *
 * Reading a device's name, SMs and architecture; a rank's private words and a device's peer
 * tables, made zeroed and freed; loading a cubin and the launch shape of its cdsl_main; a
 * rank's argument block (abi.h). Written once, so that the two worlds make the same driver
 * calls in the same order and launch the same kernel the same way.
 *
 * A step does not report: it returns the driver's result and says what it was doing, and each
 * world reports that in its own words ("GPU 1: ..." for a device of many ranks, "rank 3 (GPU
 * 1): ..." for a process's one rank). A step that touches the device's memory or module needs
 * its context current; reading the device needs none, and filling an argument block is host work.
 */
#ifndef CDSL_GPU_DEVICE_H
#define CDSL_GPU_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "abi.h"
#include "cuda_drv.h"
#include "gpu_state.h"

#define GPU_MAX_THREADS 512
#define GPU_MIN_FIT_THREADS 128   /* gpu_device_fit: four warps, so a block still moves data well */

/* Room for what a step was doing, byte counts included ("allocating 4096 bytes for peer_buf"). */
enum { GPU_WHAT_BYTES = 96 };

/* dv->ordinal's handle, name, SM count and "sm_XY" (its context is not touched). */
CUresult gpu_device_query(CuDrv *cu, GpuDevice *dv, const char **what);
/* One rank's private words (abi.h): its state words and its error record, zeroed. */
CUresult gpu_words_make(CuDrv *cu, GpuRank *own, int nranks, int chans, char what[GPU_WHAT_BYTES]);
void gpu_words_free(CuDrv *cu, GpuRank *own);
/* A device's peer tables for nranks ranks, zeroed: peer_buf[nranks*8] and peer_sync[nranks]. */
CUresult gpu_tables_make(CuDrv *cu, GpuDevice *dv, int nranks, char what[GPU_WHAT_BYTES]);
void gpu_tables_free(CuDrv *cu, GpuDevice *dv);
/* Fill them from host copies: bufs[nranks*8] (rank q's buffer b at q*8+b) and syncs[nranks]. */
CUresult gpu_tables_write(CuDrv *cu, GpuDevice *dv, const CUdeviceptr *bufs, const CUdeviceptr *syncs, int nranks);
/* cuMemFree, once: *p is 0 afterwards. */
void gpu_mem_free(CuDrv *cu, CUdeviceptr *p);
/* cuMemAlloc of bytes, zeroed; on a failure, what says which step and of what (name). */
CUresult gpu_mem_zeroed(CuDrv *cu, CUdeviceptr *p, size_t bytes, const char *name, char what[GPU_WHAT_BYTES]);

/* Load cubin into dv->module (NULL when that fails), find cdsl_main and its launch shape
 * (gpu_device_shape). */
CUresult gpu_device_load(CuDrv *cu, GpuDevice *dv, const void *cubin, const char **what);
/* cdsl_main's block size (CDSL_GPU_THREADS, at most GPU_MAX_THREADS, a multiple of 32) and
 * occupancy on dv. */
CUresult gpu_device_shape(CuDrv *cu, GpuDevice *dv, const char **what);
/* Halve cdsl_main's block size on dv, down to GPU_MIN_FIT_THREADS, until `blocks` blocks of each
 * of the dv->nranks ranks placed there fit at once (an imported plan runs one block per thread
 * block of its busiest rank, and they all wait on each other). The code reads blockDim, so any
 * size runs it; fewer threads only make it slower. Leaves dv as small as it got. */
CUresult gpu_device_fit(CuDrv *cu, GpuDevice *dv, long blocks);
/* Whether the dv->nranks ranks placed on dv can all be resident at once: they spin on each
 * other, so a device that cannot hold them would wait forever. */
bool gpu_device_resident(const GpuDevice *dv);
/* Unload dv's module, if any. */
void gpu_device_unload(CuDrv *cu, GpuDevice *dv);

/* A rank's argument block: gpu_args_own fills what is its own (the chunk size, the bound on
 * waits, its words, its device's tables) and zeroes the rest; then gpu_args_peer, for every
 * rank p, p's buffers and sync words (a's own buffers and sync words where p is a's rank). */
void gpu_args_own(CdslArgs *a, size_t chunk_bytes, unsigned long long spin_limit, int rank, int nranks,
                  const GpuDevice *dv, const GpuRank *own);
void gpu_args_peer(CdslArgs *a, int p, const CUdeviceptr buf[CDSL_ABI_MAX_BUFS], CUdeviceptr sync);

#endif
