/*
 * gpu_common.c - devices, ranks, launches, timing and the error record for p2p.c and nvls.c.
 *
 * Set-up (gpu_create): open the driver, place the ranks on devices, retain each device's
 * primary context, enable peer access between every pair of devices used, and give every
 * rank a stream, state words and an error record, and every device its peer tables.
 *
 * A run (gpu_run) launches cdsl_main once per rank per iteration. The ranks of one device
 * spin on each other, so all of them must be resident at once: the grid is at most
 * occupancy x SMs / ranks-on-the-device blocks (and at most one per SM, fewer for small
 * chunks), and every rank's kernel is launched before the host waits for any. Rank 0's
 * stream is the origin: it records the start event and a fork event that every other stream
 * waits on, and waits on every other stream's join event before recording the stop event, so
 * one pair of events on one device times all ranks. For iters > 1 those launches (a chain of
 * up to GPU_GRAPH_MAX_CHAIN per rank) are captured once into a CUDA graph spanning all
 * devices and replayed, which cuts the per-launch cost from microseconds to under one
 * (on 2 x H200: 3.7 us per direct launch, 0.6 us per kernel in a graph). CDSL_NO_GRAPH=1 in
 * the environment launches directly instead.
 *
 * An asynchronous run (gpu_launch, cdsl_run_async) is the same launch of every rank, once, on
 * the caller's streams (rank q's on streams[q], each after what the caller queued there), with
 * no fork, join, timing or graph, and no waiting: the caller synchronises its streams and then
 * asks gpu_status, which reads the error records as a synchronous run does.
 *
 * A wait in the kernel polls at most spin_limit times; when the bound runs out it fills the
 * rank's error record (rank, .cdsl line, counter) and the kernel returns, so a hang becomes a
 * report ("rank 2 gave up waiting at ring.cdsl:7 (peer 1's semaphore)") instead of a stuck
 * process. After a failed run every counter is zeroed (nothing is in flight then), so the
 * next run starts as on a fresh communicator.
 */
#include "gpu_common.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ce.h"
#include "gpu_port.h"
#include "log.h"
#include "program.h"

/* ---- Placement ----------------------------------------------------------------------------- */

/* "8 ranks need 8 GPUs at 1 rank per GPU; this machine has 2 (4 ranks per GPU would fit)" */
static int gpu_too_few(const GpuComm *g, int count, int needed)
{
    int n = g->nranks, rpg = g->cfg.ranks_per_gpu, first = g->cfg.first_device;
    int avail = count - first > 0 ? count - first : 0;
    char where[64] = "";
    if (first > 0)
        snprintf(where, sizeof where, " from GPU %d on", first);
    if (g->flavour == CDSL_BACKEND_NVLS || avail == 0) {
        rt_error(g->cfg.log, "%d ranks need %d GPUs at %d rank%s per GPU; this machine has %d%s",
                 n, needed, rpg, rpg == 1 ? "" : "s", avail, where);
    } else {
        int try_rpg = (n + avail - 1) / avail;
        rt_error(g->cfg.log, "%d ranks need %d GPUs at %d rank%s per GPU; this machine has %d%s "
                 "(%d ranks per GPU would fit)", n, needed, rpg, rpg == 1 ? "" : "s", avail, where,
                 try_rpg);
    }
    return CDSL_ERR_SYSTEM;
}

static int gpu_place(GpuComm *g)
{
    int count = 0;
    CUresult r = g->cu->DeviceGetCount(&count);
    if (r != CUDA_SUCCESS)
        return gpu_fail(g, -1, r, "counting the GPUs");
    if (count == 0) {
        rt_error(g->cfg.log, "no CUDA device on this machine (the sim backend runs without one)");
        return CDSL_ERR_SYSTEM;
    }
    int rpg = g->cfg.ranks_per_gpu;
    int needed = (g->nranks + rpg - 1) / rpg;
    if (g->cfg.first_device < 0 || g->cfg.first_device + needed > count)
        return gpu_too_few(g, count, needed);
    g->ndev = needed;
    g->devs = calloc((size_t)needed, sizeof *g->devs);
    g->ranks = calloc((size_t)g->nranks, sizeof *g->ranks);
    if (!g->devs || !g->ranks) {
        rt_error(g->cfg.log, "out of memory");
        return CDSL_ERR_SYSTEM;
    }
    for (int q = 0; q < g->nranks; q++) {
        g->ranks[q].device = q / rpg;
        g->devs[q / rpg].nranks++;
    }
    return CDSL_OK;
}

/* Name, SM count and "sm_XY" of device d, and its primary context. */
static int gpu_open_device(GpuComm *g, int d)
{
    GpuDevice *dv = &g->devs[d];
    CuDrv *cu = g->cu;
    dv->ordinal = g->cfg.first_device + d;
    const char *what = "";
    CUresult r = gpu_device_query(cu, dv, &what);
    if (r != CUDA_SUCCESS)
        return gpu_fail(g, d, r, "%s", what);
    int uva = 0;
    GPU_TRY(g, d, cu->DeviceGetAttribute(&uva, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, dv->dev),
            "reading unified addressing");
    if (!uva) {
        rt_error(g->cfg.log, "GPU %d (%s) has no unified addressing; peer pointers need it",
                 dv->ordinal, dv->name);
        return CDSL_ERR_SYSTEM;
    }
    GPU_TRY(g, d, cu->DevicePrimaryCtxRetain(&dv->ctx, dv->dev), "retaining its context");
    return CDSL_OK;
}

/* Every device reads and writes every other device's memory directly. */
static int gpu_enable_peers(GpuComm *g)
{
    for (int i = 0; i < g->ndev; i++) {
        int st = gpu_use(g, i);
        if (st)
            return st;
        for (int j = 0; j < g->ndev; j++) {
            if (i == j)
                continue;
            int can = 0;
            GPU_TRY(g, i, g->cu->DeviceCanAccessPeer(&can, g->devs[i].dev, g->devs[j].dev),
                    "cuDeviceCanAccessPeer");
            if (!can) {
                rt_error(g->cfg.log, "GPU %d cannot access GPU %d's memory (no peer access); "
                         "every pair of GPUs used needs NVLink or PCIe peer access",
                         g->devs[i].ordinal, g->devs[j].ordinal);
                return CDSL_ERR_SYSTEM;
            }
            CUresult r = g->cu->CtxEnablePeerAccess(g->devs[j].ctx, 0);
            if (r != CUDA_SUCCESS && r != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
                return gpu_fail(g, i, r, "enabling peer access to GPU %d", g->devs[j].ordinal);
        }
    }
    return CDSL_OK;
}

/* ---- Per-rank and per-device memory ------------------------------------------------------- */

static int gpu_make_rank(GpuComm *g, int q)
{
    GpuRank *rk = &g->ranks[q];
    int d = rk->device, st;
    if ((st = gpu_use(g, d)))
        return st;
    GPU_TRY(g, d, g->cu->StreamCreate(&rk->stream, CU_STREAM_NON_BLOCKING),
            "creating rank %d's stream", q);
    GPU_TRY(g, d, g->cu->EventCreate(&rk->joined, CU_EVENT_DISABLE_TIMING),
            "creating rank %d's event", q);
    char what[GPU_WHAT_BYTES];
    CUresult r = gpu_words_make(g->cu, rk, g->nranks, g->chans, what);
    return r == CUDA_SUCCESS ? CDSL_OK : gpu_fail(g, d, r, "%s", what);
}

static int gpu_make_device_tables(GpuComm *g, int d)
{
    int st = gpu_use(g, d);
    if (st)
        return st;
    char what[GPU_WHAT_BYTES];
    CUresult r = gpu_tables_make(g->cu, &g->devs[d], g->nranks, what);
    return r == CUDA_SUCCESS ? CDSL_OK : gpu_fail(g, d, r, "%s", what);
}

static int gpu_make_timing(GpuComm *g)
{
    int st = gpu_use(g, 0);
    if (st)
        return st;
    GPU_TRY(g, 0, g->cu->EventCreate(&g->start, CU_EVENT_DEFAULT), "creating an event");
    GPU_TRY(g, 0, g->cu->EventCreate(&g->stop, CU_EVENT_DEFAULT), "creating an event");
    GPU_TRY(g, 0, g->cu->EventCreate(&g->fork, CU_EVENT_DISABLE_TIMING), "creating an event");
    return CDSL_OK;
}

/* CDSL_DEBUG=INFO: where the ranks went. */
static void gpu_log_placement(const GpuComm *g)
{
    log_msg(LOG_INFO, "placement: %d rank%s on %d GPU%s, %d per GPU (CUDA driver %d.%d)", g->nranks,
            g->nranks == 1 ? "" : "s", g->ndev, g->ndev == 1 ? "" : "s", g->cfg.ranks_per_gpu, g->cu->version / 1000,
            g->cu->version % 1000 / 10);
    for (int d = 0, first = 0; d < g->ndev; first += g->devs[d].nranks, d++)
        log_msg(LOG_INFO, "placement: GPU %d (%s, %s, %d SMs): ranks %d to %d", g->devs[d].ordinal, g->devs[d].name,
                g->devs[d].arch, g->devs[d].sm_count, first, first + g->devs[d].nranks - 1);
}

static int gpu_build(GpuComm *g)
{
    int st = cu_open(&g->cu, g->cfg.log);
    if (!st)
        st = gpu_place(g);
    for (int d = 0; !st && d < g->ndev; d++)
        st = gpu_open_device(g, d);
    if (!st)
        gpu_log_placement(g);
    if (!st)
        st = gpu_enable_peers(g);
    for (int q = 0; !st && q < g->nranks; q++)
        st = gpu_make_rank(g, q);
    for (int d = 0; !st && d < g->ndev; d++)
        st = gpu_make_device_tables(g, d);
    if (!st)
        st = gpu_make_timing(g);
    if (!st)
        st = gpu_sync_all(g);     /* the memsets above are done before anyone relies on them */
    return st;
}

int gpu_create(const RtConfig *cfg, cdsl_backend flavour, int chans, GpuComm **out)
{
    *out = NULL;
    GpuComm *g = calloc(1, sizeof *g);
    if (!g) {
        rt_error(cfg->log, "out of memory");
        return CDSL_ERR_SYSTEM;
    }
    g->cfg = *cfg;
    if (g->cfg.ranks_per_gpu < 1)
        g->cfg.ranks_per_gpu = 1;
    g->flavour = flavour;
    g->nranks = cfg->nranks;
    g->chans = chans; /* a plan that needs more grows them (gpu_hold_channels), where they can */
    g->spin_limit = cfg->spin_limit ? cfg->spin_limit : GPU_DEFAULT_SPIN_LIMIT;
    if (g->nranks < 1) {
        rt_error(cfg->log, "%d ranks: a communicator needs at least one rank", g->nranks);
        free(g);
        return CDSL_ERR_USAGE;
    }
    int st = gpu_build(g);
    if (st) {
        gpu_destroy(g);
        return st;
    }
    *out = g;
    return CDSL_OK;
}

/* ---- Teardown ------------------------------------------------------------------------------ */

static void gpu_drop_graph(GpuComm *g)
{
    if (g->graph.exec)
        g->cu->GraphExecDestroy(g->graph.exec);
    if (g->graph.graph)
        g->cu->GraphDestroy(g->graph.graph);
    memset(&g->graph, 0, sizeof g->graph);
}

static void gpu_free_rank(GpuComm *g, GpuRank *rk)
{
    gpu_words_free(g->cu, rk);
    if (rk->joined)
        g->cu->EventDestroy(rk->joined);
    if (rk->stream)
        g->cu->StreamDestroy(rk->stream);
    rk->joined = NULL;
    rk->stream = NULL;
}

static void gpu_free_device(GpuComm *g, GpuDevice *dv)
{
    gpu_tables_free(g->cu, dv);
    gpu_device_unload(g->cu, dv);
}

void gpu_destroy(GpuComm *g)
{
    if (!g)
        return;
    if (g->cu && g->devs && g->ranks) {
        gpu_sync_all(g);    /* nothing may be running on what we free */
        gpu_drop_graph(g);
        ce_destroy(g);
        gpu_ports_destroy(g->ports);    /* its thread and lanes, while the contexts live */
        g->ports = NULL;
        for (int d = 0; d < g->ndev; d++) {
            if (!g->devs[d].ctx)
                continue;
            g->cu->CtxSetCurrent(g->devs[d].ctx);
            for (int q = 0; q < g->nranks; q++)
                if (g->ranks[q].device == d)
                    gpu_free_rank(g, &g->ranks[q]);
            gpu_free_device(g, &g->devs[d]);
            if (d == 0) {
                if (g->start) g->cu->EventDestroy(g->start);
                if (g->stop) g->cu->EventDestroy(g->stop);
                if (g->fork) g->cu->EventDestroy(g->fork);
            }
        }
        /* Peer access stays enabled: the primary contexts belong to the whole process. */
        g->cu->CtxSetCurrent(NULL);
        for (int d = 0; d < g->ndev; d++)
            if (g->devs[d].ctx)
                g->cu->DevicePrimaryCtxRelease(g->devs[d].dev);
    }
    cu_close(g->cu);
    free(g->loaded_src);
    free(g->devs);
    free(g->ranks);
    free(g);
}

/* ---- Shared helpers for the backends ------------------------------------------------------ */

int gpu_sync_all(GpuComm *g)
{
    int st = CDSL_OK;
    for (int d = 0; d < g->ndev; d++) {
        if (!g->devs[d].ctx || g->cu->CtxSetCurrent(g->devs[d].ctx) != CUDA_SUCCESS)
            continue;
        CUresult r = g->cu->CtxSynchronize();
        if (r != CUDA_SUCCESS && st == CDSL_OK) {
            gpu_fail(g, d, r, "waiting for the GPU");
            st = CDSL_ERR_RUNTIME;
        }
    }
    return st;
}

int gpu_publish(GpuComm *g)
{
    size_t n = (size_t)g->nranks;
    CUdeviceptr *bufs = calloc(n * CDSL_ABI_MAX_BUFS, sizeof *bufs);
    CUdeviceptr *syncs = calloc(n, sizeof *syncs);
    int st = CDSL_OK;
    if (!bufs || !syncs) {
        rt_error(g->cfg.log, "out of memory");
        st = CDSL_ERR_SYSTEM;
    }
    for (size_t q = 0; !st && q < n; q++) {
        memcpy(&bufs[q * CDSL_ABI_MAX_BUFS], g->ranks[q].buf, sizeof g->ranks[q].buf);
        syncs[q] = g->ranks[q].sync;
    }
    for (int d = 0; !st && d < g->ndev; d++) {
        if ((st = gpu_use(g, d)))
            break;
        CUresult r = gpu_tables_write(g->cu, &g->devs[d], bufs, syncs, g->nranks);
        if (r != CUDA_SUCCESS)
            st = gpu_fail(g, d, r, "writing the peer tables");
    }
    free(bufs);
    free(syncs);
    g->generation++;
    return st ? st : gpu_sync_all(g);
}

int gpu_reset_words(GpuComm *g)
{
    for (int q = 0; q < g->nranks; q++) {
        GpuRank *rk = &g->ranks[q];
        int d = rk->device, st = gpu_use(g, d);
        if (st)
            return st;
        if (rk->sync)
            GPU_TRY(g, d, g->cu->MemsetD8(rk->sync, 0, CDSL_SYNC_WORDS(g->nranks, g->chans) * 8),
                    "zeroing rank %d's sync words", q);
        GPU_TRY(g, d, g->cu->MemsetD8(rk->state, 0, CDSL_STATE_WORDS(g->nranks, g->chans) * 8),
                "zeroing rank %d's state words", q);
        GPU_TRY(g, d, g->cu->MemsetD8(rk->error, 0, CDSL_ERROR_WORDS * 4),
                "zeroing rank %d's error record", q);
        /* The packet epoch starts again at 0, so packets of earlier launches (flag 1, 2, ...)
           would pass for this epoch's: the slots start again from zero too, as on sim. */
        int pb = g->ir ? ir_packet_buf(g->ir) : -1;
        if (pb >= 0 && pb < g->nbufs && rk->buf[pb])
            GPU_TRY(g, d, g->cu->MemsetD8(rk->buf[pb], 0, g->bytes[pb]), "zeroing rank %d's packet slots", q);
    }
    int st = g->ports ? gpu_ports_reset(g->ports) : CDSL_OK;
    return st ? st : gpu_sync_all(g);
}

/* ---- Host <-> device ----------------------------------------------------------------------- */

static int gpu_check_buf(GpuComm *g, int rank, int buf, size_t bytes)
{
    if (rank < 0 || rank >= g->nranks || buf < 0 || buf >= g->nbufs || bytes > g->bytes[buf]) {
        rt_error(g->cfg.log, "internal: rank %d buffer %d: %zu bytes requested, %zu allocated",
                 rank, buf, bytes, (buf >= 0 && buf < g->nbufs) ? g->bytes[buf] : (size_t)0);
        return CDSL_ERR_USAGE;
    }
    return CDSL_OK;
}

int gpu_write(void *state, int rank, int buf, const void *src, size_t bytes)
{
    GpuComm *g = state;
    int st = gpu_check_buf(g, rank, buf, bytes);
    if (st || bytes == 0)
        return st;
    int d = g->ranks[rank].device;
    if ((st = gpu_use(g, d)))
        return st;
    GPU_TRY(g, d, g->cu->MemcpyHtoD(g->ranks[rank].buf[buf], src, bytes),
            "copying %zu bytes to rank %d's buffer %d", bytes, rank, buf);
    /* A copy from pageable memory may still be in flight when cuMemcpyHtoD returns, and our
     * streams do not wait for the legacy stream: finish it before any kernel reads it. */
    GPU_TRY(g, d, g->cu->CtxSynchronize(), "finishing the copy to rank %d", rank);
    return CDSL_OK;
}

int gpu_read(void *state, int rank, int buf, void *dst, size_t bytes)
{
    GpuComm *g = state;
    int st = gpu_check_buf(g, rank, buf, bytes);
    if (st || bytes == 0)
        return st;
    int d = g->ranks[rank].device;
    if ((st = gpu_use(g, d)))
        return st;
    GPU_TRY(g, d, g->cu->MemcpyDtoH(dst, g->ranks[rank].buf[buf], bytes),
            "copying %zu bytes from rank %d's buffer %d", bytes, rank, buf);
    return CDSL_OK;
}

/* ---- Loading the device code --------------------------------------------------------------- */

/* Refuse a device where the ranks placed there cannot all be resident at once (they would wait
 * on each other forever). */
static int gpu_resident(GpuComm *g, int d)
{
    GpuDevice *dv = &g->devs[d];
    if (!gpu_device_resident(dv)) {
        rt_error(g->cfg.log, "GPU %d (%s) cannot keep %d ranks' kernels resident at once "
                 "(%d blocks of %d threads fit); place fewer ranks on each GPU", dv->ordinal,
                 dv->name, dv->nranks, dv->blocks_per_sm * dv->sm_count, dv->threads);
        return CDSL_ERR_SYSTEM;
    }
    return CDSL_OK;
}

/* Every rank runs the same block size: block b of one rank waits for block b of another, and
 * the elements a block moves depend on it (compiler/lower/partition.c). The fewest threads of the
 * devices fit every device's kernel, and fewer threads only let more blocks be resident. */
static void gpu_same_threads(GpuComm *g)
{
    int fewest = g->devs[0].threads;
    for (int d = 1; d < g->ndev; d++)
        fewest = g->devs[d].threads < fewest ? g->devs[d].threads : fewest;
    for (int d = 0; d < g->ndev; d++)
        g->devs[d].threads = fewest;
}

static long gpu_share(const GpuComm *g);

/* A plan whose blocks do not all fit at once with the full block size: smaller blocks on every
 * device, the same size everywhere (gpu_same_threads). Several ranks sharing a GPU need this
 * (MSCCL++'s 8-GPU ring alltoall: 8 x 32 blocks on one GPU of 132 SMs). */
static int gpu_fit_plan(GpuComm *g, const IrProgram *ir)
{
    long need = (long)gpu_plan_blocks(ir);
    if (need <= gpu_share(g))
        return CDSL_OK;
    int was = g->devs[0].threads;
    for (int d = 0; d < g->ndev; d++) {
        int st = gpu_use(g, d);
        if (st)
            return st;
        CUresult r = gpu_device_fit(g->cu, &g->devs[d], need);
        if (r != CUDA_SUCCESS)
            return gpu_fail(g, d, r, "computing cdsl_main's occupancy");
    }
    gpu_same_threads(g);
    log_msg(LOG_INFO, "%s: %ld thread blocks per rank fit at once with %d threads a block (not %d)", ir->name, need,
            g->devs[0].threads, was);
    return CDSL_OK;
}

/* The cubin for one architecture, compiled once per load for all devices that share it. */
typedef struct GpuCubin {
    char arch[16];
    void *data;
    size_t len;
} GpuCubin;

static int gpu_cubin_for(GpuComm *g, cdsl_program *p, cdsl_dtype dtype, int d, GpuCubin *c)
{
    const char *arch = g->devs[d].arch;
    if (c->data && strcmp(c->arch, arch) == 0)
        return CDSL_OK;
    free(c->data);
    c->data = NULL;
    snprintf(c->arch, sizeof c->arch, "%s", arch);
    int st = cdsl_compile_device(p, g->flavour, dtype, arch, CDSL_CUBIN, &c->data, &c->len);
    if (st) {
        free(c->data);
        c->data = NULL;
        rt_error(g->cfg.log, "could not build the %s device code for GPU %d (%s, %s)",
                 cdsl_backend_name(g->flavour), g->devs[d].ordinal, g->devs[d].name, arch);
    }
    return st;
}

static int gpu_load_device(GpuComm *g, int d, const GpuCubin *c)
{
    GpuDevice *dv = &g->devs[d];
    int st = gpu_use(g, d);
    if (st)
        return st;
    const char *what = "";
    CUresult r = gpu_device_load(g->cu, dv, c->data, &what);
    if (r == CUDA_ERROR_NO_BINARY_FOR_GPU && !dv->module)
        rt_error(g->cfg.log, "GPU %d (%s) cannot run code built for %s", dv->ordinal, dv->name,
                 c->arch);
    if (r != CUDA_SUCCESS)
        return gpu_fail(g, d, r, "%s", what);
    return gpu_resident(g, d);
}

/* Forget the loaded program (its graph must be gone already). */
static void gpu_unload(GpuComm *g)
{
    gpu_ports_destroy(g->ports);
    g->ports = NULL;
    for (int d = 0; d < g->ndev; d++) {
        GpuDevice *dv = &g->devs[d];
        if (dv->module && g->cu->CtxSetCurrent(dv->ctx) != CUDA_SUCCESS)
            dv->module = NULL;  /* no context to unload it in */
        gpu_device_unload(g->cu, dv);
    }
    free(g->loaded_src);
    g->loaded_src = NULL;
    g->ir = NULL;
}

/* api.c loads before every run; the same source (same program, rank count, flavour and
 * dtype) keeps the loaded module and the captured graph. */
static int gpu_same_code(const GpuComm *g, const char *src)
{
    return g->ir && g->loaded_src && strcmp(g->loaded_src, src) == 0;
}

/* The sync and state words hold the program's channels per pair (abi.h, sized from the plan:
 * ir_plan_channels). More than they hold: made anew for that many, zeroed, as after a failure
 * (every counter and base starts again from 0, on every rank at once, with nothing in flight).
 * A backend whose sync words cannot grow (nvls) refuses, naming both counts. */
static int gpu_hold_channels(GpuComm *g, const IrProgram *ir)
{
    int need = ir_plan_channels(ir), st;
    if (need <= g->chans)
        return CDSL_OK;
    if (!g->remake_sync) {
        rt_error(g->cfg.log, "%s uses %d channels between a pair of ranks; this backend's sync words hold %d",
                 ir->name, need, g->chans);
        return CDSL_ERR_USAGE;
    }
    if ((st = gpu_sync_all(g)))
        return st;
    gpu_drop_graph(g);
    int old = g->chans;
    g->chans = need;
    for (int q = 0; q < g->nranks; q++) {
        GpuRank *rk = &g->ranks[q];
        int d = rk->device;
        if ((st = gpu_use(g, d)))
            break;
        g->cu->MemFree(rk->state);
        rk->state = 0;
        char what[GPU_WHAT_BYTES];
        CUresult r = gpu_mem_zeroed(g->cu, &rk->state, CDSL_STATE_WORDS(g->nranks, g->chans) * 8, "the state words",
                                    what);
        if (r != CUDA_SUCCESS) {
            st = gpu_fail(g, d, r, "%s", what);
            break;
        }
    }
    if (!st)
        st = g->remake_sync(g);
    if (st) {
        g->chans = old;
        return st;
    }
    g->generation++;
    log_msg(LOG_INFO, "sync and state words: %d channels per pair, for %s", g->chans, ir->name);
    return gpu_reset_words(g);
}

/* ---- The port proxy's site: every rank, in this process (gpu_port.h) ------------------------- */

static int site_use(void *self, int q)
{
    GpuComm *g = self;
    return gpu_use(g, g->ranks[q].device);
}

static int site_fail(void *self, int q, CUresult r, const char *what)
{
    GpuComm *g = self;
    return gpu_fail(g, g->ranks[q].device, r, "%s", what);
}

static CUdeviceptr site_buf(void *self, int q, int b)
{
    GpuComm *g = self;
    return g->ranks[q].buf[b];
}

static CUdeviceptr site_words(void *self, int q)
{
    (void)self, (void)q;
    return 0;   /* the proxy makes them, on each rank's device */
}

static bool site_same_device(void *self, int p, int q)
{
    GpuComm *g = self;
    return g->ranks[p].device == g->ranks[q].device;
}

static int gpu_ports_load_all(GpuComm *g, const IrProgram *ir)
{
    PortSite site = {.cu = g->cu, .log = g->cfg.log, .first = 0, .last = g->nranks - 1, .spin_limit = g->spin_limit,
                     .self = g, .use = site_use, .fail = site_fail, .buf = site_buf, .words = site_words,
                     .same_device = site_same_device};
    return gpu_ports_load(&site, ir, &g->ports);
}

int gpu_load(void *state, cdsl_program *p, cdsl_dtype dtype)
{
    GpuComm *g = state;
    if (!program_ir(p) || program_ir(p)->nranks != g->nranks) {
        rt_error(g->cfg.log, "internal: loading a program that was not evaluated for %d ranks",
                 g->nranks);
        return CDSL_ERR_USAGE;
    }
    const char *src = cdsl_emit_cuda(p, g->flavour, dtype);
    if (!src)
        return CDSL_ERR_USAGE;  /* the emitter said why (e.g. a sum multimem cannot do) */
    int held = gpu_hold_channels(g, program_ir(p));
    if (held)
        return held;
    if (gpu_same_code(g, src)) {
        g->ir = program_ir(p);
        return ce_load(g, p);
    }
    int st = gpu_sync_all(g);
    gpu_drop_graph(g);
    gpu_unload(g);
    g->generation++;
    GpuCubin c = {{0}, NULL, 0};
    for (int d = 0; !st && d < g->ndev; d++) {
        st = gpu_cubin_for(g, p, dtype, d, &c);
        if (!st)
            st = gpu_load_device(g, d, &c);
    }
    free(c.data);
    if (!st)
        gpu_same_threads(g);
    if (!st && !(g->loaded_src = strdup(src))) {
        rt_error(g->cfg.log, "out of memory");
        st = CDSL_ERR_SYSTEM;
    }
    if (!st)
        st = gpu_fit_plan(g, program_ir(p));
    if (!st && gpu_plan_blocks(program_ir(p)) > (unsigned long)gpu_share(g)) { /* they wait on each other */
        rt_error(g->cfg.log, "%s has %u thread blocks on its busiest rank; only %ld per rank fit on the GPUs at once",
                 program_ir(p)->name, gpu_plan_blocks(program_ir(p)), gpu_share(g));
        st = CDSL_ERR_SYSTEM;
    }
    if (!st) {
        g->ir = program_ir(p);
        st = ce_load(g, p);
    }
    if (!st)
        st = gpu_ports_load_all(g, program_ir(p));
    if (st)
        gpu_unload(g);
    return st;
}

/* ---- Running ------------------------------------------------------------------------------- */

/* Blocks per rank (gpu_common.h). One block stores about 30 GB/s to peers, so a data operation
 * needs a block per GPU_BYTES_PER_BLOCK it stores, up to every SM (on 2 x H200, 132 blocks reach
 * the 364 GB/s that SM stores get, 32 only 325). */
unsigned gpu_grid_cap(long share, long sms)
{
    long cap = gpu_env_long("CDSL_GPU_BLOCKS", sms > 0 ? sms : 1);
    if (cap > CDSL_SYNC_BLOCKS) /* a .cdsl program's counters have a word per block (abi.h) */
        cap = CDSL_SYNC_BLOCKS;
    if (share < cap)
        cap = share;
    return cap < 1 ? 1u : (unsigned)cap;
}

unsigned gpu_grid_for(long share, long sms, size_t op_bytes)
{
    long cap = gpu_grid_cap(share, sms);
    size_t want = op_bytes / GPU_BYTES_PER_BLOCK + (op_bytes % GPU_BYTES_PER_BLOCK != 0);
    if (want < (size_t)cap)
        cap = (long)want;
    return cap < 1 ? 1u : (unsigned)cap;
}

long gpu_op_chunks(const IrProgram *ir, int flavour)
{
    long most = 1;
    for (int r = 0; ir && r < ir->nranks; r++)
        for (int i = 0; i < ir->ranks[r].nops; i++) {
            const IrOp *op = &ir->ranks[r].ops[i];
            bool every_rank = ir_op_info(op->kind)->dst.on == ON_ALL;    /* a switch's store */
            long n = ir_is_data(op->kind) ? (long)op->dst.count * (every_rank && flavour != CDSL_BACKEND_NVLS ? ir->nranks : 1) : 0;
            most = n > most ? n : most;
        }
    return most;
}

unsigned gpu_plan_blocks(const IrProgram *ir)
{
    int most = 0;
    for (int r = 0; ir && ir->plan && r < ir->nranks; r++) /* a port proxy is not a block */
        most = ir_block_units(ir, r) > most ? ir_block_units(ir, r) : most;
    return (unsigned)most;
}

static long gpu_share(const GpuComm *g)
{
    long share = LONG_MAX;
    for (int d = 0; d < g->ndev; d++) {
        const GpuDevice *dv = &g->devs[d];
        long s = (long)dv->blocks_per_sm * dv->sm_count / dv->nranks;
        if (s < share)
            share = s;
    }
    return share;
}

/* The fewest SMs of the communicator's devices. */
static long gpu_sms(const GpuComm *g)
{
    long sms = LONG_MAX;
    for (int d = 0; d < g->ndev; d++)
        sms = g->devs[d].sm_count < sms ? g->devs[d].sm_count : sms;
    return sms;
}

/* An imported plan runs one block per thread block of its busiest rank (emit_cuda.c, emit_plan.c). */
static unsigned gpu_grid(const GpuComm *g, size_t chunk_bytes)
{
    unsigned plan = gpu_plan_blocks(g->ir);
    return plan ? plan : gpu_grid_for(gpu_share(g), gpu_sms(g), chunk_bytes * (size_t)gpu_op_chunks(g->ir, g->flavour));
}

static void gpu_fill_args(const GpuComm *g, size_t chunk_bytes, CdslArgs *args)
{
    for (int q = 0; q < g->nranks; q++) {
        const GpuRank *rk = &g->ranks[q];
        const GpuDevice *dv = &g->devs[rk->device];
        gpu_args_own(&args[q], chunk_bytes, g->spin_limit, q, g->nranks, dv, rk);
        for (int p = 0; p < g->nranks; p++)
            gpu_args_peer(&args[q], p, g->ranks[p].buf, g->ranks[p].sync);
        if (g->ports)
            gpu_ports_args(g->ports, q, &args[q]);
    }
}

/* Every other stream starts after what the origin (rank 0's stream) has queued so far. */
static int gpu_fork(GpuComm *g)
{
    int st = gpu_use(g, 0);
    if (st)
        return st;
    GPU_TRY(g, 0, g->cu->EventRecord(g->fork, g->ranks[0].stream), "recording the fork event");
    for (int q = 1; q < g->nranks; q++) {
        int d = g->ranks[q].device;
        if ((st = gpu_use(g, d)))
            return st;
        GPU_TRY(g, d, g->cu->StreamWaitEvent(g->ranks[q].stream, g->fork, 0),
                "ordering rank %d after the fork", q);
    }
    return CDSL_OK;
}

/* The origin continues only after everything queued on the other streams. */
static int gpu_join(GpuComm *g)
{
    for (int q = 1; q < g->nranks; q++) {
        GpuRank *rk = &g->ranks[q];
        int st = gpu_use(g, rk->device);
        if (st)
            return st;
        GPU_TRY(g, rk->device, g->cu->EventRecord(rk->joined, rk->stream),
                "recording rank %d's join event", q);
        if ((st = gpu_use(g, 0)))
            return st;
        GPU_TRY(g, 0, g->cu->StreamWaitEvent(g->ranks[0].stream, rk->joined, 0),
                "joining rank %d", q);
    }
    return CDSL_OK;
}

/* One launch of every rank's kernel, rank q's on streams[q] (NULL: on the communicator's
 * streams): all of them are queued before anyone waits, and no rank's kernel waits behind
 * another rank's in a queue, so all of them run together. */
static int gpu_launch_ranks(GpuComm *g, CdslArgs *args, unsigned blocks, const CUstream *streams)
{
    for (int q = 0; q < g->nranks; q++) {
        GpuRank *rk = &g->ranks[q];
        GpuDevice *dv = &g->devs[rk->device];
        void *params[] = {&args[q]};
        int st = gpu_use(g, rk->device);
        if (st)
            return st;
        CUresult r = g->cu->LaunchKernel(dv->fn, blocks, 1, 1, (unsigned)dv->threads, 1, 1, 0,
                                         streams ? streams[q] : rk->stream, params, NULL);
        if (r != CUDA_SUCCESS)
            return gpu_fail(g, rk->device, r, "launching rank %d's kernel (%u blocks of %d "
                            "threads)", q, blocks, dv->threads);
    }
    return CDSL_OK;
}

/* iters launches per rank on the communicator's streams, iteration by iteration, between the
 * origin's fork and join (or the copy engine's plan for iters runs, ce.h). */
static int gpu_launch_all(GpuComm *g, CdslArgs *args, unsigned blocks, int iters)
{
    int st = gpu_fork(g);
    if (!st && g->ce_run)
        st = ce_enqueue(g, args[0].chunk_bytes, iters, NULL);
    for (int k = 0; !st && !g->ce_run && k < iters; k++)
        st = gpu_launch_ranks(g, args, blocks, NULL);
    return st ? st : gpu_join(g);
}

/* A graph that cannot be built is not an error: the run goes on with direct launches. */
static int gpu_graph_warn(GpuComm *g, CUresult r, const char *what)
{
    fprintf(g->cfg.log, "cdsl: warning: GPU %d: %s failed: %s; launching kernels directly from "
            "now on\n", g->devs[0].ordinal, what, cu_error_string(g->cu, r));
    g->no_graphs = 1;
    gpu_drop_graph(g);
    return CDSL_ERR_SYSTEM;
}

/* Capture `chain` launches per rank into one graph (kept until the buffers, the module, the
 * chunk size or the grid change), instantiate and upload it outside the timed region. A run
 * whose shape and chain match the kept graph replays it without capturing: the tools warm up
 * with exactly the timed run's iteration count for that reason, and the TRACE log
 * says which of the two happened. */
static int gpu_graph_ready(GpuComm *g, CdslArgs *args, size_t chunk_bytes, unsigned blocks,
                           int chain)
{
    GpuGraph *gr = &g->graph;
    if (gr->exec && gr->chunk_bytes == chunk_bytes && gr->chain == chain &&
        gr->blocks == blocks && gr->generation == g->generation) {
        log_msg(LOG_TRACE, "graph: replaying the kept graph (chain of %d launches per rank, "
                "%zu-byte chunks, %u blocks)", chain, chunk_bytes, blocks);
        return CDSL_OK;
    }
    gpu_drop_graph(g);
    double t0 = log_clock();
    CUstream origin = g->ranks[0].stream;
    int st = gpu_use(g, 0);
    if (st)
        return st;
    CUresult r = g->cu->StreamBeginCapture(origin, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    if (r != CUDA_SUCCESS)
        return gpu_graph_warn(g, r, "starting a graph capture");
    st = gpu_launch_all(g, args, blocks, chain);
    gpu_use(g, 0);
    r = g->cu->StreamEndCapture(origin, &gr->graph);   /* always end what began */
    if (st) {
        gpu_drop_graph(g);
        return st;      /* a launch failed: reported, and not a graph problem */
    }
    if (r != CUDA_SUCCESS)
        return gpu_graph_warn(g, r, "capturing the launches into a graph");
    if ((r = g->cu->GraphInstantiate(&gr->exec, gr->graph, 0)) != CUDA_SUCCESS)
        return gpu_graph_warn(g, r, "instantiating the graph");
    if ((r = g->cu->GraphUpload(gr->exec, origin)) != CUDA_SUCCESS)
        return gpu_graph_warn(g, r, "uploading the graph");
    gr->chunk_bytes = chunk_bytes;
    gr->chain = chain;
    gr->blocks = blocks;
    gr->generation = g->generation;
    log_msg(LOG_TRACE, "graph: captured a chain of %d launches per rank (%zu-byte chunks, %u blocks) "
            "in %.3f ms", chain, chunk_bytes, blocks, log_ms_since(t0));
    return CDSL_OK;
}

static int gpu_use_graphs(const GpuComm *g, int iters)
{
    const char *off = getenv("CDSL_NO_GRAPH");
    return iters > 1 && !g->no_graphs && cu_has_graphs(g->cu) &&
           !(off && *off && strcmp(off, "0") != 0);
}

/* The chain for iters runs: iters itself up to GPU_GRAPH_MAX_CHAIN, else iters split into
 * equal replays (1000 -> 4 x 250), so that at most replays - 1 runs are left over to launch
 * directly, instead of up to GPU_GRAPH_MAX_CHAIN - 1 of them. */
static int gpu_chain(int iters)
{
    int replays = (iters + GPU_GRAPH_MAX_CHAIN - 1) / GPU_GRAPH_MAX_CHAIN;
    return iters / replays;
}

/* Launch iters runs of every rank between the start and stop events on the origin. */
static int gpu_timed(GpuComm *g, CdslArgs *args, unsigned blocks, size_t chunk_bytes, int iters,
                     float *ms)
{
    int chain = 0, st;
    if (gpu_use_graphs(g, iters)) {
        chain = gpu_chain(iters);
        if ((st = gpu_graph_ready(g, args, chunk_bytes, blocks, chain))) {
            if (!g->no_graphs)
                return st;      /* a launch failed */
            chain = 0;          /* the graph did: launch directly */
        }
    }
    CUstream origin = g->ranks[0].stream;
    if ((st = gpu_use(g, 0)))
        return st;
    GPU_TRY(g, 0, g->cu->EventRecord(g->start, origin), "recording the start event");
    int done = 0;
    for (; chain > 0 && done + chain <= iters; done += chain)
        GPU_TRY(g, 0, g->cu->GraphLaunch(g->graph.exec, origin), "launching the graph");
    if (chain > 0)
        log_msg(LOG_TRACE, "graph: %d replay%s of %d launches per rank, %d run%s launched directly",
                done / chain, done / chain == 1 ? "" : "s", chain, iters - done, iters - done == 1 ? "" : "s");
    if (done < iters && (st = gpu_launch_all(g, args, blocks, iters - done)))
        return st;
    if ((st = gpu_use(g, 0)))
        return st;
    GPU_TRY(g, 0, g->cu->EventRecord(g->stop, origin), "recording the stop event");
    if (g->ce_run && (st = ce_wait(g, g->stop)))
        return st;
    CUresult r = g->ce_run ? CUDA_SUCCESS : g->cu->EventSynchronize(g->stop);
    if (r == CUDA_SUCCESS)
        r = g->cu->EventElapsedTime(ms, g->start, g->stop);
    if (r != CUDA_SUCCESS) {
        gpu_fail(g, 0, r, "running the kernels");
        return CDSL_ERR_RUNTIME;
    }
    return CDSL_OK;
}

/* Wait for every rank's stream; a fault (bad address, ...) is sticky in its context. */
static int gpu_finish(GpuComm *g)
{
    int st = CDSL_OK, last_dev = -1;
    for (int q = 0; q < g->nranks; q++) {
        GpuRank *rk = &g->ranks[q];
        if (gpu_use(g, rk->device))
            return CDSL_ERR_RUNTIME;
        CUresult r = g->cu->StreamSynchronize(rk->stream);
        if (r != CUDA_SUCCESS && rk->device != last_dev) {
            gpu_fail(g, rk->device, r, "rank %d's kernel", q);
            last_dev = rk->device;      /* the ranks after it on this device say the same */
            st = CDSL_ERR_RUNTIME;
        }
    }
    return st;
}

/* "ring.cdsl:7:9" for the wait of `rank` at `line` on counter ctr, else "line 7". */
static void gpu_wait_site(const IrProgram *ir, int rank, int line, unsigned ctr, char *out, size_t n)
{
    snprintf(out, n, "line %d", line);
    if (!ir || rank < 0 || rank >= ir->nranks)
        return;
    const IrSeq *seq = &ir->ranks[rank];
    for (int i = 0; i < seq->nops; i++) {
        const IrOp *op = &seq->ops[i];
        IrKind k = op->kind;
        int match = (ir_is_switch_wait(k) && ctr == CDSL_SYNC_SWITCH) ||
                    (ir_is_wait(k) && !ir_is_packet(k) &&
                     ctr == (unsigned)CDSL_SYNC_CHAN(ir->nranks, op->chan, op->peer)) ||
                    (ir_is_packet_recv(k) && ctr == CDSL_PKT_COUNTER(op->peer)) ||
                    (k == IR_WAIT && op->chan >= IR_PORT_CHAN && ctr == CDSL_PORT_SEM_COUNTER(op->peer)) ||
                    (k == IR_WAIT && op->chan >= IR_PORT_REQ_CHAN && op->chan < IR_PORT_CHAN && op->thread >= 0 &&
                     ctr == CDSL_PORT_FLUSH_COUNTER((op->chan - IR_PORT_REQ_CHAN) / 2)) ||
                    ctr == GPU_GRID_COUNTER;    /* a convergence before any operation */
        if (match && op->loc.line == line && op->loc.src) {
            snprintf(out, n, "%s:%d:%d", op->loc.src->path, line, op->loc.col);
            return;
        }
    }
}

void gpu_report_record(FILE *log, const IrProgram *ir, int nranks, int q, const unsigned *rec,
                       unsigned long long spin_limit)
{
    int rank = rec[1] < (unsigned)nranks ? (int)rec[1] : q;
    unsigned ctr = rec[3];
    char what[64], where[512];
    if (ctr == CDSL_SYNC_SWITCH)
        snprintf(what, sizeof what, "the switch barrier");
    else if (ctr >= CDSL_SYNC_PEER && ctr < (unsigned)(CDSL_SYNC_PEER + nranks))
        snprintf(what, sizeof what, "peer %u's semaphore", ctr - CDSL_SYNC_PEER);
    else if (ctr >= (unsigned)CDSL_SYNC_FIXED_WORDS(nranks) && ctr < CDSL_PKT_COUNTER(0)) /* a plan's channel c >= 1 */
        snprintf(what, sizeof what, "peer %u's semaphore, channel %u",
                 (ctr - (unsigned)CDSL_SYNC_FIXED_WORDS(nranks)) % (unsigned)nranks,
                 (ctr - (unsigned)CDSL_SYNC_FIXED_WORDS(nranks)) / (unsigned)nranks + 1);
    else if (ctr == GPU_GRID_COUNTER)
        snprintf(what, sizeof what, "its own thread blocks' grid barrier (were all blocks resident?)");
    else if (ctr >= CDSL_PORT_FLUSH_COUNTER(0) && ctr < CDSL_PORT_SEM_COUNTER(0))
        snprintf(what, sizeof what, "a flush of its port proxy %u", ctr - CDSL_PORT_FLUSH_COUNTER(0));
    else if (ctr >= CDSL_PORT_SEM_COUNTER(0) && ctr < CDSL_PORT_SEM_COUNTER(nranks))
        snprintf(what, sizeof what, "a port channel's signal from rank %u's proxy", ctr - CDSL_PORT_SEM_COUNTER(0));
    else if (ctr >= CDSL_PKT_COUNTER(0) && ctr < CDSL_PKT_COUNTER(nranks))
        snprintf(what, sizeof what, "rank %u's packets", ctr - CDSL_PKT_COUNTER(0));
    else
        snprintf(what, sizeof what, "sync word %u", ctr);
    gpu_wait_site(ir, rank, (int)rec[2], ctr, where, sizeof where);
    rt_error(log, "rank %d gave up waiting at %s (%s): no arrival after %llu polls", rank, where, what,
             spin_limit);
}

/* One line per rank whose wait ran out of its bound. */
static void gpu_report_gave_up(const GpuComm *g, int q, const unsigned *rec)
{
    gpu_report_record(g->cfg.log, g->ir, g->nranks, q, rec, g->spin_limit);
}

/* Read every rank's error record; after a report, zero all counters for the next run. */
static int gpu_check_records(GpuComm *g)
{
    int bad = 0;
    for (int q = 0; q < g->nranks; q++) {
        unsigned rec[CDSL_ERROR_WORDS];
        int d = g->ranks[q].device;
        if (gpu_use(g, d))
            return CDSL_ERR_RUNTIME;
        CUresult r = g->cu->MemcpyDtoH(rec, g->ranks[q].error, sizeof rec);
        if (r != CUDA_SUCCESS) {
            gpu_fail(g, d, r, "reading rank %d's error record", q);
            return CDSL_ERR_RUNTIME;
        }
        if (rec[0]) {
            gpu_report_gave_up(g, q, rec);
            bad++;
        }
    }
    if (!bad)
        return CDSL_OK;
    gpu_sync_all(g);    /* a peer that gave up later may still be leaving */
    gpu_reset_words(g);
    return CDSL_ERR_RUNTIME;
}

static int gpu_run_ready(GpuComm *g, size_t chunk_bytes, int iters)
{
    const IrProgram *ir = g->ir;
    if (!ir || ir->nranks != g->nranks) {
        rt_error(g->cfg.log, "internal: no program for %d ranks is loaded", g->nranks);
        return CDSL_ERR_USAGE;
    }
    if (iters < 1 || chunk_bytes % 4 != 0 || !g->have_sync || g->nbufs < ir->nbufs) {
        rt_error(g->cfg.log, "internal: run with %d iterations, chunks of %zu bytes, %d of %d "
                 "buffers allocated", iters, chunk_bytes, g->nbufs, ir->nbufs);
        return CDSL_ERR_USAGE;
    }
    for (int b = 0; b < ir->nbufs; b++) {
        size_t need = (size_t)ir->bufs[b].nchunks * chunk_bytes;
        if (need > g->bytes[b]) {
            rt_error(g->cfg.log, "internal: buffer %s holds %zu bytes; %d chunks of %zu bytes "
                     "need %zu", ir->bufs[b].name, g->bytes[b], ir->bufs[b].nchunks,
                     chunk_bytes, need);
            return CDSL_ERR_USAGE;
        }
    }
    return CDSL_OK;
}

/* Every rank's argument block for one launch shape; NULL (reported) when out of memory. */
static CdslArgs *gpu_args_new(GpuComm *g, size_t chunk_bytes)
{
    CdslArgs *args = calloc((size_t)g->nranks, sizeof *args);
    if (args)
        gpu_fill_args(g, chunk_bytes, args);
    else
        rt_error(g->cfg.log, "out of memory");
    return args;
}

/* A program with port channels: each launch of every rank after its pass is posted (the pass
   before has ended then: its copies never meet this launch), and the run ends when the kernels
   and the last pass have; timed by the host's clock, since the proxy's copies are part of it. */
static int gpu_ported(GpuComm *g, CdslArgs *args, unsigned blocks, size_t chunk_bytes, int iters, float *ms)
{
    double t0 = log_clock();
    int st = CDSL_OK;
    for (int k = 0; !st && k < iters; k++) {
        st = gpu_ports_post(g->ports, chunk_bytes, NULL);
        if (!st)
            st = gpu_launch_ranks(g, args, blocks, NULL);
    }
    int fin = gpu_finish(g);
    if (!st && !fin)
        st = gpu_check_records(g);  /* a block that gave up makes no more requests: give the pass up */
    int drained = gpu_ports_drain(g->ports);
    *ms = (float)log_ms_since(t0);
    if (!st)
        st = fin ? fin : drained;
    if (drained && !fin)
        gpu_reset_words(g);
    return st;
}

int gpu_run(void *state, size_t chunk_bytes, int iters, double *us_per_iter)
{
    GpuComm *g = state;
    int st = gpu_run_ready(g, chunk_bytes, iters);
    if (st)
        return st;
    CdslArgs *args = gpu_args_new(g, chunk_bytes);
    if (!args)
        return CDSL_ERR_SYSTEM;
    float ms = 0;
    g->ce_run = !g->ports && ce_chosen(g, chunk_bytes);     /* no grid then: 0 blocks keys the graph */
    if (g->ports)
        st = gpu_ported(g, args, gpu_grid(g, chunk_bytes), chunk_bytes, iters, &ms);
    else
        st = gpu_timed(g, args, g->ce_run ? 0 : gpu_grid(g, chunk_bytes), chunk_bytes, iters, &ms);
    free(args);
    int fin = gpu_finish(g);    /* also after a failed launch: nothing may stay in flight */
    /* A launch that failed part way left some ranks' counters, bases and records a run ahead
       of the others: start them all again, as after a give-up (its own error stays the one
       reported). */
    if (st && !fin)
        gpu_reset_words(g);
    if (!st)
        st = fin;
    if (!st)
        st = gpu_check_records(g);
    if (!st && us_per_iter)
        *us_per_iter = (double)ms * 1000.0 / iters;
    return st;
}

/* ---- Running on the caller's streams ------------------------------------------------------- */

int gpu_buffer(void *state, int rank, int buf, void **ptr)
{
    GpuComm *g = state;
    int st = gpu_check_buf(g, rank, buf, 0);
    if (!st)
        *ptr = (void *)(uintptr_t)g->ranks[rank].buf[buf];
    return st;
}

/* streams[q], or rank q's own stream where the caller gave none. Two ranks of one device on
 * one stream would run one after the other, and the first would wait for the second forever. */
static int gpu_pick_streams(GpuComm *g, void *const *streams, CUstream *use)
{
    for (int q = 0; q < g->nranks; q++) {
        use[q] = streams && streams[q] ? (CUstream)streams[q] : g->ranks[q].stream;
        for (int p = 0; p < q; p++) {
            if (use[p] != use[q] || g->ranks[p].device != g->ranks[q].device)
                continue;
            rt_error(g->cfg.log, "ranks %d and %d of GPU %d were given the same stream: each rank "
                     "needs a stream of its own, or one rank's kernel would wait behind the "
                     "other's, which waits for it", p, q, g->devs[g->ranks[q].device].ordinal);
            return CDSL_ERR_USAGE;
        }
    }
    return CDSL_OK;
}

/* After a failed launch: wait for the ranks that did start (they give up, bounded; the
 * caller's streams are in the devices' primary contexts), then start every counter over, so
 * that nothing is in flight and the next run starts clean. */
static void gpu_abandon(GpuComm *g)
{
    gpu_sync_all(g);
    gpu_reset_words(g);
}

int gpu_launch(void *state, size_t chunk_bytes, void *const *streams)
{
    GpuComm *g = state;
    int st = gpu_run_ready(g, chunk_bytes, 1);
    if (st)
        return st;
    CUstream *use = malloc((size_t)g->nranks * sizeof *use);
    CdslArgs *args = use ? gpu_args_new(g, chunk_bytes) : NULL;
    if (!use || !args) {
        if (!use)
            rt_error(g->cfg.log, "out of memory");
        free(use);
        return CDSL_ERR_SYSTEM;
    }
    st = gpu_pick_streams(g, streams, use);
    if (!st && g->ports)
        st = gpu_ports_post(g->ports, chunk_bytes, NULL);
    if (!st && !g->ports && ce_chosen(g, chunk_bytes))
        st = ce_launch(g, chunk_bytes, use);
    else if (!st)
        st = gpu_launch_ranks(g, args, gpu_grid(g, chunk_bytes), use);
    if (st)
        gpu_abandon(g);
    free(args);
    free(use);
    return st;
}

int gpu_status(void *state)
{
    GpuComm *g = state;
    int st = gpu_check_records(g), ce = ce_status(g);
    int ports = g->ports ? gpu_ports_drain(g->ports) : CDSL_OK;
    if (ports && !st)
        gpu_reset_words(g);
    return st ? st : ce ? ce : ports;
}
