/*
 * gpu_rank.h - one rank's GPU in a per-rank communicator: what the ipc and nccl engines share.
 *
 * The device and its primary context (the one the CUDA runtime and PyTorch use, so that the
 * caller's pointers and streams work as they are), this rank's private words (abi.h: state
 * words, the error record), the peer tables the kernel indexes (every rank's buffers and sync
 * words, as this process addresses them: the engine fills peer_bufs/peer_syncs and calls
 * gpu_rank_publish), this rank's code alone (cdsl_compile_device_rank: a process compiles
 * one rank, not nranks), and a run: the caller's input copied into the symmetric input on the
 * caller's stream, the kernel, the symmetric output copied out, all enqueued, nothing waited
 * for. gpu_rank_status reads the error record after the caller synchronised.
 *
 * Every function that calls the driver makes our context current first and gives the caller
 * back its own afterwards (gpu_rank_enter/leave), so a caller on another device or context is
 * left as it was.
 */
#ifndef CDSL_GPU_RANK_H
#define CDSL_GPU_RANK_H

#include <stdbool.h>
#include <stddef.h>

#include "abi.h"
#include "cuda_drv.h"
#include "gpu_common.h"
#include "gpu_port.h"
#include "program.h"
#include "rank.h"

typedef struct RankGpu {
    CuDrv *cu;
    FILE *log;
    int rank, nranks;
    int flavour;                    /* a flavour of the registry (backends.h): p2p or nvls */
    bool multicast;                 /* its device code uses NVLink multicast (RT_MULTICAST) */
    unsigned long long spin_limit;
    /* The records the single-process backends keep per device and per rank (gpu_common.h),
     * here for this rank alone: gpu.nranks is the ranks on this GPU (this one included), and
     * own holds this rank's stream, private words and multicast addresses; its sync words and
     * buffers are in the engine's region (peer_syncs[rank], peer_bufs[rank * 8 + b]), so
     * own.sync, own.buf, own.joined and own.device stay unused. */
    GpuDevice gpu;
    GpuRank own;
    CUcontext saved;                /* the caller's, while we are inside */
    int entered;
    CUuuid uuid;
    CUdeviceptr *peer_bufs;         /* [nranks * 8], host copy of gpu.peer_buf: the engine fills it */
    CUdeviceptr *peer_syncs;        /* [nranks], of gpu.peer_sync */
    CUdeviceptr *peer_ports;        /* [nranks]: each rank's port words in its region (the engine fills
                                       it with the layout; 0: the program has no port channels) */
    size_t ports_bytes;             /* their size (the engine fills it too) */
    GpuPorts *ports;                /* this rank's port proxy (gpu_port.h), or NULL */
    const IrProgram *ports_ir;      /* the program it was made for (made at its first launch) */
    bool ported;                    /* the loaded program has port channels (ir_port_proxy_op) */
    CUevent started;                /* recorded before each kernel of a program with a proxy */
    int agreed_blocks;              /* the most blocks of every rank (gpu_rank_op_agree); 0: not yet */
    char *loaded_src;
    const IrProgram *ir;
    const void *checked_in, *checked_out;           /* caller pointers already checked */
} RankGpu;

/* Open the driver and the device (device < 0: the calling thread's current one, else 0),
 * retain its primary context, make the private words and the tables. The nvls flavour is
 * refused first when the environment disables NVLS (before the driver is loaded). */
int gpu_rank_open(RankGpu *g, const cdsl_rank_comm *r);
void gpu_rank_close(RankGpu *g);
int gpu_rank_enter(RankGpu *g);
void gpu_rank_leave(RankGpu *g);
/* Copy peer_bufs/peer_syncs into the device's tables, and wait until they are there; with
 * peer_ports, zero this rank's port words after its work in flight has ended (and the proxy's
 * counts with them), before any peer's next launch can signal into them. */
int gpu_rank_publish(RankGpu *g);
/* This rank's code of p for dtype (the same source keeps the loaded module). */
int gpu_rank_load(RankGpu *g, cdsl_program *p, cdsl_dtype dtype);
/* Enqueue one run: stage in, the kernel, stage out, on stream (NULL: ours). */
int gpu_rank_launch(RankGpu *g, size_t chunk, const void *in, size_t in_bytes, void *out, size_t out_bytes,
                    void *stream);
/* RtRankOps.load and .run for an engine whose state (r->engine) begins with its RankGpu. */
int gpu_rank_op_load(cdsl_rank_comm *r, cdsl_program *p, cdsl_dtype dtype);
int gpu_rank_op_run(cdsl_rank_comm *r, size_t chunk, const void *in, size_t in_bytes, void *out, size_t out_bytes,
                    void *stream);
/* RtRankOps.zero: this rank's device memory at `at`, after its work in flight has ended. */
int gpu_rank_op_zero(cdsl_rank_comm *r, void *at, size_t bytes);
void gpu_rank_op_shape(cdsl_rank_comm *r, int *threads, int *blocks);
void gpu_rank_op_agree(cdsl_rank_comm *r, int threads, int blocks);
/* After the caller synchronised: the error record; `dead` >= 0 names a peer whose process
 * is gone (or -1). */
int gpu_rank_status(RankGpu *g, int dead, long dead_pid);
/* A failed driver call: "rank 1 (GPU 0): what failed: CUDA_ERROR_...", CDSL_ERR_SYSTEM. */
int gpu_rank_fail(RankGpu *g, CUresult r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#define GPU_RANK_TRY(g, call, ...) CU_TRY_OR(call, gpu_rank_fail((g), cu_r_, __VA_ARGS__))

#endif
