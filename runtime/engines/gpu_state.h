/*
 * gpu_state.h - the state of a communicator whose process drives every GPU (p2p and nvls), and
 * the three helpers every file working on it uses: make a device current, report a failed
 * driver call, read a tuning value from the environment.
 *
 * Its own file because two parts work on this state side by side: gpu_common.c (set-up,
 * loading, kernel runs, the error records) and ce.c (the copy-engine path of p2p, which
 * gpu_common.c hands a run to). Both include this; neither includes the other's internals, so
 * gpu_common.c calls into ce.c and never the reverse.
 */
#ifndef CDSL_GPU_STATE_H
#define CDSL_GPU_STATE_H

#include <stddef.h>

#include "abi.h"
#include "backend.h"
#include "cuda_drv.h"
#include "program.h"

typedef struct GpuDevice {
    int ordinal;                    /* CUDA device ordinal */
    CUdevice dev;
    CUcontext ctx;                  /* the primary context, retained */
    char name[96];
    int sm_count;
    char arch[16];                  /* "sm_90" */
    int nranks;                     /* ranks placed here */
    CUdeviceptr peer_buf;           /* [nranks*8]: rank q's buffer b at q*8+b */
    CUdeviceptr peer_sync;          /* [nranks]: every rank's sync words */
    CUmodule module;
    CUfunction fn;                  /* cdsl_main */
    int threads;                    /* block size for fn */
    int blocks_per_sm;              /* occupancy of fn at that block size */
} GpuDevice;

typedef struct GpuRank {
    int device;                     /* index into GpuComm.devs */
    CUstream stream;
    CUevent joined;                 /* recorded at the end of a run; the origin waits on it */
    CUdeviceptr sync;               /* CDSL_SYNC_WORDS(n, chans) u64, made by the backend */
    CUdeviceptr state;              /* CDSL_STATE_WORDS(n, chans) u64 */
    CUdeviceptr error;              /* CDSL_ERROR_WORDS u32 */
    CUdeviceptr buf[CDSL_ABI_MAX_BUFS];
    CUdeviceptr mc_buf[CDSL_ABI_MAX_BUFS];  /* nvls: multicast addresses; 0 for p2p */
    CUdeviceptr mc_sync;
} GpuRank;

/* A captured run: for every rank a chain of `chain` launches, forked from and joined to the
 * origin stream, replayed with one cuGraphLaunch. Valid while `key` matches. */
typedef struct GpuGraph {
    CUgraph graph;
    CUgraphExec exec;
    size_t chunk_bytes;
    int chain;
    unsigned blocks;
    unsigned long long generation;
} GpuGraph;

typedef struct CeState CeState;  /* ce.c: the copy-engine path */
typedef struct GpuPorts GpuPorts;  /* gpu_port.c: the loaded program's port-channel proxy */

typedef struct GpuComm {
    RtConfig cfg;
    cdsl_backend flavour;           /* CDSL_BACKEND_P2P or CDSL_BACKEND_NVLS: the device code */
    CuDrv *cu;
    int ndev;
    GpuDevice *devs;
    int nranks;
    GpuRank *ranks;
    CUevent start, stop;            /* timing, on the origin (rank 0's stream) */
    CUevent fork;                   /* the other streams wait on it before launching */
    int nbufs;                      /* buffers in place, allocated or attached (0: none yet) */
    int registered;                 /* p2p: buf[] are the caller's (cdsl_comm_register): never
                                       freed here */
    size_t bytes[CDSL_ABI_MAX_BUFS];
    int have_sync;                  /* every rank's sync words exist */
    int chans;                      /* channels per pair the sync and state words hold (abi.h) */
    /* Make every rank's sync words anew for g->chans channels, zeroed (p2p); NULL where they
       cannot grow once made (nvls: they lie in the region, before the buffers). */
    int (*remake_sync)(struct GpuComm *g);
    const IrProgram *ir;            /* the loaded program, to name a wait that gave up */
    char *loaded_src;               /* its CUDA source: the same source needs no reload */
    unsigned long long generation;  /* bumped when buffers or the module change */
    GpuGraph graph;
    int no_graphs;                  /* a graph could not be built here: launch directly */
    unsigned long long spin_limit;
    void *priv;                     /* the backend's own state (nvls: the multicast group) */
    CeState *ce;                    /* p2p: the loaded program's copy-engine plan (ce.h) */
    int ce_run;                     /* this run goes to the copy engine, not to kernels */
    GpuPorts *ports;                /* the loaded program's port proxy; NULL: no port channels */
} GpuComm;

/* Make device d's context current; 0 or a reported CDSL_ERR_SYSTEM. */
int gpu_use(GpuComm *g, int d);
/* Report a failed driver call on device d ("GPU 1: ..."), return CDSL_ERR_SYSTEM. */
int gpu_fail(GpuComm *g, int d, CUresult r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* A positive integer from the environment (CDSL_GPU_BLOCKS, ...), or def. */
long gpu_env_long(const char *name, long def);
/* Round n up to a multiple of a power of two. */
size_t gpu_round_up(size_t n, size_t align);

#define GPU_TRY(g, d, call, ...) CU_TRY_OR(call, gpu_fail((g), (d), cu_r_, __VA_ARGS__))

#endif
