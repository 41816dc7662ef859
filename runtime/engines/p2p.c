/*
 * p2p.c - the p2p backend: the local GPUs over NVLink (or PCIe) peer access.
 *
 * One process drives every GPU it uses; ranks sit `ranks_per_gpu` to a device (so an 8-rank
 * program runs on 2 GPUs). Each rank's sync words and symmetric buffers are ordinary
 * cuMemAlloc memory on its device, or the caller's own (cdsl_comm_register); a peer reaches
 * them by the same pointer through peer access (ranks on one GPU simply share the address
 * space). Switch operations run in the
 * p2p flavour of the device code, which emulates multimem with unicast loads, stores and
 * system-scope atomics, so no multicast object is ever created here: this is the backend
 * the shared multi-GPU hosts run.
 *
 * Everything else - placement, peer access, streams, loading, launching, graphs, timing and
 * the error record - is gpu_common.c; this file only owns the memory.
 */
#include <stdint.h>
#include <stdlib.h>

#include "gpu_common.h"

/* cuMemAlloc returns at least 256-byte aligned memory; sizes are rounded up to match, so a
 * kernel's 16-byte vector accesses never cross the end of an allocation. */
#define P2P_ALIGN 256

/* Frees what p2p_alloc made; the caller's registered buffers are only forgotten. */
static void p2p_free_buffers(GpuComm *g)
{
    for (int q = 0; q < g->nranks; q++) {
        GpuRank *rk = &g->ranks[q];
        int ours = !g->registered && g->cu->CtxSetCurrent(g->devs[rk->device].ctx) == CUDA_SUCCESS;
        for (int b = 0; b < CDSL_ABI_MAX_BUFS; b++) {
            if (rk->buf[b] && ours)
                g->cu->MemFree(rk->buf[b]);
            rk->buf[b] = 0;
        }
    }
    g->nbufs = 0;
    g->registered = 0;
}

static void p2p_free_sync(GpuComm *g)
{
    for (int q = 0; q < g->nranks; q++) {
        GpuRank *rk = &g->ranks[q];
        if (rk->sync && g->cu->CtxSetCurrent(g->devs[rk->device].ctx) == CUDA_SUCCESS)
            g->cu->MemFree(rk->sync);
        rk->sync = 0;
    }
    g->have_sync = 0;
}

/* Sync words live for the whole communicator: zeroed once here, never reset between runs; made
 * anew, larger, when a plan needs more channels per pair than they hold (gpu_hold_channels). */
static int p2p_make_sync(GpuComm *g)
{
    if (g->have_sync)
        p2p_free_sync(g);
    size_t bytes = CDSL_SYNC_WORDS(g->nranks, g->chans) * 8;
    for (int q = 0; q < g->nranks; q++) {
        GpuRank *rk = &g->ranks[q];
        int d = rk->device, st = gpu_use(g, d);
        if (st)
            return st;
        GPU_TRY(g, d, g->cu->MemAlloc(&rk->sync, bytes), "allocating rank %d's sync words", q);
        GPU_TRY(g, d, g->cu->MemsetD8(rk->sync, 0, bytes), "zeroing rank %d's sync words", q);
    }
    g->have_sync = 1;
    return gpu_publish(g);
}

static void p2p_destroy(void *state)
{
    GpuComm *g = state;
    if (!g)
        return;
    if (g->cu && g->devs) {
        gpu_sync_all(g);
        p2p_free_buffers(g);
        p2p_free_sync(g);
    }
    gpu_destroy(g);
}

static int p2p_create(const RtConfig *cfg, void **state)
{
    GpuComm *g;
    *state = NULL;
    int st = gpu_create(cfg, CDSL_BACKEND_P2P, 1, &g);  /* a .cdsl program's channels; a plan's grow them */
    if (st)
        return st;
    g->remake_sync = p2p_make_sync;
    if ((st = p2p_make_sync(g))) {
        p2p_destroy(g);
        return st;
    }
    *state = g;
    return CDSL_OK;
}

static int p2p_alloc_rank(GpuComm *g, int q, const size_t *bytes, int nbufs)
{
    GpuRank *rk = &g->ranks[q];
    int d = rk->device, st = gpu_use(g, d);
    if (st)
        return st;
    for (int b = 0; b < nbufs; b++) {
        if (bytes[b] == 0)
            continue;       /* a buffer of no chunks (barrier): no pointer, never touched */
        size_t n = gpu_round_up(bytes[b], P2P_ALIGN);
        GPU_TRY(g, d, g->cu->MemAlloc(&rk->buf[b], n),
                "allocating %zu bytes for rank %d's buffer %d", bytes[b], q, b);
        /* Zeroed like the sim backend's, so a chunk no one wrote reads the same everywhere. */
        GPU_TRY(g, d, g->cu->MemsetD8(rk->buf[b], 0, n), "zeroing rank %d's buffer %d", q, b);
    }
    return CDSL_OK;
}

static int p2p_alloc(void *state, const size_t *bytes, int nbufs)
{
    GpuComm *g = state;
    if (nbufs < 0 || nbufs > CDSL_ABI_MAX_BUFS) {
        rt_error(g->cfg.log, "internal: %d buffers (at most %d)", nbufs, CDSL_ABI_MAX_BUFS);
        return CDSL_ERR_USAGE;
    }
    int st = gpu_sync_all(g);   /* no kernel may still use the buffers we replace */
    p2p_free_buffers(g);
    for (int q = 0; !st && q < g->nranks; q++)
        st = p2p_alloc_rank(g, q, bytes, nbufs);
    if (st) {
        p2p_free_buffers(g);
        gpu_publish(g);         /* no stale pointers in the peer tables */
        return st;
    }
    g->nbufs = nbufs;
    for (int b = 0; b < nbufs; b++)
        g->bytes[b] = bytes[b];
    return gpu_publish(g);
}

/* The caller's buffers (cdsl_comm_register): nothing to allocate or zero. The peer tables
 * hold every rank's pointers, whatever their offsets, so no symmetric layout is needed; peer
 * access between the devices' primary contexts was enabled at create. */
static int p2p_attach(void *state, const size_t *bytes, int nbufs, void *const *ptrs)
{
    GpuComm *g = state;
    if (nbufs < 0 || nbufs > CDSL_ABI_MAX_BUFS) {
        rt_error(g->cfg.log, "internal: %d buffers (at most %d)", nbufs, CDSL_ABI_MAX_BUFS);
        return CDSL_ERR_USAGE;
    }
    int st = gpu_sync_all(g);   /* no kernel may still use the buffers we replace */
    p2p_free_buffers(g);
    if (st) {
        gpu_publish(g);
        return st;
    }
    for (int q = 0; q < g->nranks; q++)
        for (int b = 0; b < nbufs; b++)
            g->ranks[q].buf[b] = bytes[b] ? (CUdeviceptr)(uintptr_t)ptrs[q * nbufs + b] : 0;
    g->registered = 1;
    g->nbufs = nbufs;
    for (int b = 0; b < nbufs; b++)
        g->bytes[b] = bytes[b];
    return gpu_publish(g);
}

const RtBackendOps rt_backend_p2p = {
    .create = p2p_create,
    .alloc = p2p_alloc,
    .write = gpu_write,
    .read = gpu_read,
    .load = gpu_load,
    .run = gpu_run,
    .destroy = p2p_destroy,
    .attach = p2p_attach,
    .buffer = gpu_buffer,
    .launch = gpu_launch,
    .status = gpu_status,
};
