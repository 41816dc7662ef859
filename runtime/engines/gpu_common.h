/*
 * gpu_common.h - what the p2p and nvls backends share: devices, ranks, launches, timing and
 * the error record.
 *
 * One process drives every local GPU it uses. Ranks are placed `ranks_per_gpu` per device from
 * `first_device` on; each rank has a stream, private state words and an error record, and each
 * device holds the pointer tables peer_buf[nranks*8] and peer_sync[nranks] that the kernel
 * indexes (the same addresses on every device: with unified addressing and peer access a
 * pointer is valid in every peer-enabled context). The two backends differ only in where the
 * sync words and symmetric buffers live: p2p.c takes them from cuMemAlloc (or the caller's
 * registered pointers), nvls.c carves them out of memory bound to a multicast object.
 * Everything else - loading the cubin, choosing a grid that keeps all ranks of a device
 * co-resident, launching every rank before waiting for any (on the communicator's streams or
 * the caller's), CUDA graphs for repeated runs, event timing and reading the error records -
 * is here.
 *
 * The state (GpuComm, its devices and ranks) is gpu_state.h's, shared with ce.c.
 *
 * Ownership: gpu_create makes everything below except sync words and buffers; gpu_destroy
 * frees everything it made and is safe on a half-built GpuComm (each handle is 0 until made),
 * so every error path is "report, return, let destroy clean up".
 */
#ifndef CDSL_GPU_COMMON_H
#define CDSL_GPU_COMMON_H

#include <stddef.h>

#include "abi.h"
#include "backend.h"
#include "cuda_drv.h"
#include "gpu_device.h"
#include "gpu_state.h"
#include "program.h"

/* Polls before a wait gives up when the caller gives no limit. One poll is a relaxed
 * system-scope load of a local word (a few hundred ns on H100/H200), so 2^22 polls report a
 * true hang after roughly one to four seconds, while the longest legitimate wait (a peer's 128 MiB put, or a
 * peer kernel launched a few ms later) takes a few thousand polls. */
#define GPU_DEFAULT_SPIN_LIMIT (1ULL << 22)
#define GPU_BYTES_PER_BLOCK (32u * 1024) /* bytes one data operation stores that justify one more block */
#define GPU_GRAPH_MAX_CHAIN 256     /* launches per rank captured in one graph */
#define GPU_GRID_COUNTER 0xffffffffu /* error[3] when a rank's own grid barrier ran out
                                        (cdsl_device.cuh's CDSL_GRID_COUNTER) */

/* Common set-up and teardown (the backends add their memory around these). */
/* Channels per pair (abi.h) where the sync words cannot grow once made: nvls (they lie in its
 * region, before the buffers) and the per-rank engines (exchanged between the processes once,
 * at init). A plan that needs more is refused there, naming both counts. */
#define GPU_FIXED_CHANNELS 16
/* chans: the channels per pair the sync and state words hold at first (abi.h). */
int gpu_create(const RtConfig *cfg, cdsl_backend flavour, int chans, GpuComm **out);
void gpu_destroy(GpuComm *g);

/* Wait for everything on every device; CDSL_ERR_RUNTIME (reported) on a kernel fault. */
int gpu_sync_all(GpuComm *g);
/* Copy every rank's buffer and sync addresses into each device's peer tables. */
int gpu_publish(GpuComm *g);
/* Zero every rank's sync words, state words and error record. Only with no kernel in flight:
 * then all counters restart together, which is the same as a fresh communicator. */
int gpu_reset_words(GpuComm *g);
/* Blocks per rank: what the bytes of the largest data operation justify (op_bytes: see
 * gpu_op_chunks), at most every SM (sms; CDSL_GPU_BLOCKS overrides it for tuning) and
 * CDSL_SYNC_BLOCKS, and never more than each rank's share of its device, so that all ranks
 * placed on a device are resident together (they spin on each other). */
unsigned gpu_grid_for(long share, long sms, size_t op_bytes);
/* The most of those: gpu_grid_for's bound for the largest operations. */
unsigned gpu_grid_cap(long share, long sms);
/* The most chunks one data operation of ir stores on any rank, counting every copy: an emulated
 * switch store (p2p) writes one per rank. Times the chunk size: gpu_grid_for's op_bytes. */
long gpu_op_chunks(const IrProgram *ir, int flavour);
/* An imported plan's blocks per rank: its busiest rank's thread blocks; 0 for a .cdsl program. */
unsigned gpu_plan_blocks(const IrProgram *ir);

/* nvls.c: refuse, before any CUDA call, when CDSL_NVLS=0, NCCL_NVLS_ENABLE=0,
 * NVSHMEM_DISABLE_NVLS=1 or TORCH_SYMM_MEM_DISABLE_MULTICAST=1 (any unclear value refuses);
 * the per-rank GPU engines ask the same before their nvls flavour. */
int rt_nvls_refuse_env(FILE *log);

/* "rank 2 gave up waiting at ring.cdsl:7:9 (peer 1's semaphore): no arrival after N polls",
 * from rank q's error record (abi.h); also for one process per GPU (gpu_rank.c). */
void gpu_report_record(FILE *log, const IrProgram *ir, int nranks, int q, const unsigned *rec,
                       unsigned long long spin_limit);

/* RtBackendOps entries both backends use as they are. */
int gpu_write(void *state, int rank, int buf, const void *src, size_t bytes);
int gpu_read(void *state, int rank, int buf, void *dst, size_t bytes);
int gpu_load(void *state, cdsl_program *p, cdsl_dtype dtype);
int gpu_run(void *state, size_t chunk_bytes, int iters, double *us_per_iter);
int gpu_buffer(void *state, int rank, int buf, void **ptr);
int gpu_launch(void *state, size_t chunk_bytes, void *const *streams);
int gpu_status(void *state);

#endif
