/*
 * rank_nccl.c - the nccl engine of the per-rank API: NCCL >= 2.28 (loaded at run time,
 * nccl_dl.h) for the bootstrap and the symmetric memory, one rank per GPU.
 *
 * Bootstrap: ncclCommInitRankConfig with the ncclUniqueId the caller's id carries, made
 * non-blocking so that every NCCL call here is waited for with the communicator's timeout and
 * aborted (ncclCommAbort) past it, instead of hanging on a rank that never comes. It crosses
 * hosts; the one condition is that NCCL's LSA team (the ranks whose memory a kernel can load
 * and store: one NVLink domain) holds every rank, since a cdsl program may address any peer.
 *
 * Memory: ncclMemAlloc, then ncclCommWindowRegister(NCCL_WIN_COLL_SYMMETRIC) for the sync
 * words (at init) and for the symmetric region (as it grows). A peer's address of offset o in
 * a window is ncclGetLsaPointer(win, o, peer), a device function; NVRTC cannot compile NCCL
 * 2.28's device headers (nccl_dl.h says why), so the same arithmetic runs on the host over the
 * window's descriptor read from the GPU, and is checked against our own address before use.
 * Small host records (the handshake's) travel by ncclAllGather through a device buffer.
 *
 * The nvls flavour is not offered here: NCCL's multimem address (ncclGetLsaMultimemPointer)
 * comes from its device communicator (ncclDevCommCreate), whose host layout depends on its
 * GPU-initiated-networking fields; the ipc engine does nvls on one host. Failures: NCCL's own
 * message (ncclGetLastError), with the one that users meet most explained (two ranks on one
 * GPU: NCCL refuses; use the ipc engine).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends.h"
#include "gpu_common.h"
#include "gpu_rank.h"
#include "nccl_dl.h"
#include "rank.h"

typedef struct NcclWin {
    void *ptr;
    size_t size;
    ncclWindow_t win;
    RtNcclWindowHead head;
} NcclWin;

typedef struct Nccl {
    RankGpu g;                          /* first: gpu_rank_op_load/run take the state as one */
    RtNccl *lib;
    ncclComm_t comm;
    int n, me;
    double timeout_s;
    NcclWin sync, region;
    CUdeviceptr xbuf;                   /* the exchanges' device buffer */
    size_t xcap;
} Nccl;

static Nccl *nccl(cdsl_rank_comm *r)
{
    return r->engine;
}

static double nccl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int nccl_report(Nccl *s, ncclResult_t rc, const char *what)
{
    const char *last = s->comm ? s->lib->GetLastError(s->comm) : "";
    rt_error(s->g.log, "rank %d: %s failed: %s%s%s", s->me, what, s->lib->GetErrorString(rc), last && *last ? ": " : "",
             last ? last : "");
    if (last && strstr(last, "Duplicate GPU"))
        rt_error(s->g.log, "rank %d: NCCL refuses two ranks on one GPU; the ipc engine runs them (CDSL_ENGINE=ipc "
                 "where the unique id is made)", s->me);
    return CDSL_ERR_SYSTEM;
}

/* A non-blocking NCCL call is done: wait for the communicator's state, abort past the bound. */
static int nccl_settle(Nccl *s, ncclResult_t rc, const char *what)
{
    double deadline = nccl_now() + s->timeout_s;
    while (rc == ncclInProgress && s->comm) {
        if (nccl_now() > deadline) {
            rt_error(s->g.log, "rank %d: %s did not complete within %.0f s: a rank did not come or has died (NCCL "
                     "does not say which); the communicator is aborted", s->me, what, s->timeout_s);
            s->lib->CommAbort(s->comm);
            s->comm = NULL;
            return CDSL_ERR_RUNTIME;
        }
        if (s->lib->CommGetAsyncError(s->comm, &rc) != ncclSuccess)
            break;
    }
    return rc == ncclSuccess ? CDSL_OK : nccl_report(s, rc, what);
}

/* Work of ours on our stream is done (an NCCL collective), within the bound. */
static int nccl_drain(Nccl *s, const char *what)
{
    double deadline = nccl_now() + s->timeout_s;
    for (;;) {
        CUresult q = s->g.cu->StreamQuery(s->g.own.stream);
        if (q == CUDA_SUCCESS)
            return CDSL_OK;
        if (q != CUDA_ERROR_NOT_READY)
            return gpu_rank_fail(&s->g, q, "%s", what);
        ncclResult_t rc = ncclSuccess;
        if (s->lib->CommGetAsyncError(s->comm, &rc) == ncclSuccess && rc != ncclSuccess && rc != ncclInProgress)
            return nccl_report(s, rc, what);
        if (nccl_now() > deadline)
            return nccl_settle(s, ncclInProgress, what);    /* reports and aborts */
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
}

/* ---- windows ------------------------------------------------------------------------------------- */

/* ncclGetLsaPointer(win, off, peer), on the host (nccl_dl.h) */
static CUdeviceptr nccl_lsa(const RtNcclWindowHead *h, int peer, size_t off)
{
    uint64_t base = (uint64_t)(uintptr_t)h->lsaFlatBase;
    uint32_t hi = (uint32_t)(base >> 32) + (uint32_t)peer * h->stride4G;
    return (CUdeviceptr)((((uint64_t)hi << 32) | (base & 0xffffffffu)) + off);
}

static void nccl_win_free(Nccl *s, NcclWin *w)
{
    if (w->win && s->comm)
        nccl_settle(s, s->lib->CommWindowDeregister(s->comm, w->win), "ncclCommWindowDeregister");
    if (w->ptr)
        s->lib->MemFree(w->ptr);
    memset(w, 0, sizeof *w);
}

static int nccl_win(Nccl *s, size_t size, NcclWin *w, const char *what)
{
    size = gpu_round_up(size, NCCL_WIN_REQUIRED_ALIGNMENT);
    ncclResult_t rc = s->lib->MemAlloc(&w->ptr, size);
    if (rc != ncclSuccess)
        return nccl_report(s, rc, "ncclMemAlloc");
    w->size = size;
    int st = nccl_settle(s, s->lib->CommWindowRegister(s->comm, w->ptr, size, &w->win, NCCL_WIN_COLL_SYMMETRIC),
                         "ncclCommWindowRegister");
    if (st)
        return st;
    GPU_RANK_TRY(&s->g, s->g.cu->MemsetD8((CUdeviceptr)(uintptr_t)w->ptr, 0, size), "zeroing %s", what);
    GPU_RANK_TRY(&s->g, s->g.cu->CtxSynchronize(), "zeroing %s", what);
    GPU_RANK_TRY(&s->g, s->g.cu->MemcpyDtoH(&w->head, (CUdeviceptr)(uintptr_t)w->win, sizeof w->head),
                 "reading %s's window descriptor", what);
    if (w->head.lsaRank != s->me || w->head.worldRank != s->me ||
        nccl_lsa(&w->head, s->me, 0) != (CUdeviceptr)(uintptr_t)w->ptr) {
        rt_error(s->g.log, "rank %d: NCCL's window descriptor for %s is not laid out as in NCCL 2.28 (lsa rank %d, "
                 "world rank %d, our address %p, computed %#llx): use the ipc engine", s->me, what, w->head.lsaRank,
                 w->head.worldRank, w->ptr, (unsigned long long)nccl_lsa(&w->head, s->me, 0));
        return CDSL_ERR_SYSTEM;
    }
    return CDSL_OK;
}

/* ---- the engine ---------------------------------------------------------------------------------- */

static void nccl_destroy(cdsl_rank_comm *r)
{
    Nccl *s = nccl(r);
    if (!s)
        return;
    if (s->g.cu && gpu_rank_enter(&s->g) == CDSL_OK) {
        s->g.cu->CtxSynchronize();
        if (s->comm && r->failed) {     /* the peers may be gone: nothing collective */
            s->lib->CommAbort(s->comm);
            s->comm = NULL;
        }
        nccl_win_free(s, &s->region);
        nccl_win_free(s, &s->sync);
        if (s->xbuf)
            s->g.cu->MemFree(s->xbuf);
        if (s->comm && nccl_settle(s, s->lib->CommFinalize(s->comm), "ncclCommFinalize") == CDSL_OK && s->comm)
            s->lib->CommDestroy(s->comm);
        else if (s->comm)
            s->lib->CommAbort(s->comm);
        s->comm = NULL;
        gpu_rank_leave(&s->g);
    }
    gpu_rank_close(&s->g);
    rt_nccl_close(s->lib);
    free(s);
    r->engine = NULL;
}

static int nccl_comm(cdsl_rank_comm *r, const RtId *id)
{
    Nccl *s = nccl(r);
    ncclUniqueId uid;
    ncclConfig_t cfg;
    memcpy(&uid, id->nccl, sizeof uid);
    rt_nccl_config_init(&cfg);
    cfg.commName = "cdsl";
    int st = nccl_settle(s, s->lib->CommInitRankConfig(&s->comm, s->n, uid, s->me, &cfg), "ncclCommInitRank");
    if (st)
        return st;
    int dev = -1;
    if (s->lib->CommCuDevice(s->comm, &dev) != ncclSuccess || dev != s->g.gpu.ordinal) {
        rt_error(r->log, "rank %d: NCCL placed the communicator on GPU %d, not on GPU %d", r->rank, dev, s->g.gpu.ordinal);
        return CDSL_ERR_SYSTEM;
    }
    ncclTeam_t lsa = s->lib->TeamLsa(s->comm);
    if (lsa.nRanks != s->n || lsa.rank != s->me) {
        rt_error(r->log, "rank %d: NCCL's load/store team holds %d of the %d ranks (this one is its rank %d): the ranks "
                 "span several NVLink domains, and a cdsl program addresses every peer's memory", r->rank, lsa.nRanks,
                 s->n, lsa.rank);
        return CDSL_ERR_SYSTEM;
    }
    return CDSL_OK;
}

static int nccl_init(cdsl_rank_comm *r, const RtId *id)
{
    Nccl *s = rt_engine_new(r, sizeof *s);
    if (!s)
        return CDSL_ERR_SYSTEM;
    s->n = r->nranks;
    s->me = r->rank;
    s->timeout_s = r->cfg.timeout_s;
    if (rt_flavour_of(r->cfg.flavour)->flags & RT_MULTICAST) {
        int st = rt_nvls_refuse_env(r->log);
        if (!st)
            rt_error(r->log, "rank %d: the nccl engine runs the p2p flavour only (NCCL's multimem address comes from "
                     "its device communicator); the ipc engine runs nvls on one host", r->rank);
        return st ? st : CDSL_ERR_USAGE;
    }
    int st = gpu_rank_open(&s->g, r);
    if (!st)
        st = rt_nccl_open(&s->lib, r->log);
    if (st)
        return st;
    r->device = s->g.gpu.ordinal;
    if ((st = gpu_rank_enter(&s->g)))
        return st;
    st = nccl_comm(r, id);
    if (!st)
        st = nccl_win(s, CDSL_SYNC_WORDS(s->n, GPU_FIXED_CHANNELS) * 8, &s->sync, "the sync words");
    for (int q = 0; !st && q < s->n; q++)
        s->g.peer_syncs[q] = nccl_lsa(&s->sync.head, q, 0);
    gpu_rank_leave(&s->g);
    return st ? st : gpu_rank_publish(&s->g);
}

static int nccl_exchange(cdsl_rank_comm *r, const char *what, const void *mine, size_t len, void *all)
{
    Nccl *s = nccl(r);
    RankGpu *g = &s->g;
    size_t unit = len ? len : 1, need = unit * ((size_t)s->n + 1);
    char none = 0;
    int st = gpu_rank_enter(g);
    if (st)
        return st;
    if (need > s->xcap) {
        if (s->xbuf)
            g->cu->MemFree(s->xbuf);
        s->xbuf = 0;
        s->xcap = 0;
        CUresult cr = g->cu->MemAlloc(&s->xbuf, need);
        if (cr != CUDA_SUCCESS) {
            gpu_rank_leave(g);
            return gpu_rank_fail(g, cr, "allocating %zu bytes for %s", need, what);
        }
        s->xcap = need;
    }
    CUresult cr = g->cu->MemcpyHtoD(s->xbuf, len ? mine : &none, unit);
    if (cr == CUDA_SUCCESS)
        cr = g->cu->CtxSynchronize();
    st = cr != CUDA_SUCCESS ? gpu_rank_fail(g, cr, "staging %s", what) : CDSL_OK;
    if (!st)
        st = nccl_settle(s, s->lib->AllGather((void *)(uintptr_t)s->xbuf, (void *)(uintptr_t)(s->xbuf + unit), unit,
                                              ncclUint8, s->comm, g->own.stream), what);
    if (!st)
        st = nccl_drain(s, what);
    if (!st && len && (cr = g->cu->MemcpyDtoH(all, s->xbuf + unit, len * (size_t)s->n)) != CUDA_SUCCESS)
        st = gpu_rank_fail(g, cr, "reading %s", what);
    gpu_rank_leave(g);
    return st;
}

static int nccl_reserve(cdsl_rank_comm *r, size_t bytes)
{
    Nccl *s = nccl(r);
    int st = gpu_rank_enter(&s->g);
    if (st)
        return st;
    s->g.cu->CtxSynchronize();      /* our last run no longer uses the old region */
    memset(s->g.peer_bufs, 0, (size_t)s->n * CDSL_ABI_MAX_BUFS * sizeof *s->g.peer_bufs);
    nccl_win_free(s, &s->region);
    st = nccl_win(s, bytes, &s->region, "the symmetric buffers");
    gpu_rank_leave(&s->g);
    return st;
}

static int nccl_layout(cdsl_rank_comm *r, const size_t *off, const size_t *bytes, int nbufs)
{
    Nccl *s = nccl(r);
    for (int q = 0; q < s->n; q++)
        for (int b = 0; b < CDSL_ABI_MAX_BUFS; b++)
            s->g.peer_bufs[(size_t)q * CDSL_ABI_MAX_BUFS + b] = b < nbufs && bytes[b] ? nccl_lsa(&s->region.head, q, off[b]) : 0;
    s->g.ports_bytes = bytes[RT_PORT_SLOT];
    for (int q = 0; q < s->n; q++)   /* the program's port words, where the peers' proxies signal */
        s->g.peer_ports[q] = bytes[RT_PORT_SLOT] ? nccl_lsa(&s->region.head, q, off[RT_PORT_SLOT]) : 0;
    return gpu_rank_publish(&s->g);
}

static void *nccl_address(cdsl_rank_comm *r, int b)
{
    Nccl *s = nccl(r);
    return (char *)s->region.ptr + (b < 0 ? 0 : r->off[b]);
}

static int nccl_status(cdsl_rank_comm *r)
{
    Nccl *s = nccl(r);
    int st = gpu_rank_status(&s->g, -1, 0);
    ncclResult_t rc = ncclSuccess;
    if (st && s->comm && s->lib->CommGetAsyncError(s->comm, &rc) == ncclSuccess && rc != ncclSuccess &&
        rc != ncclInProgress)
        nccl_report(s, rc, "the communicator");
    return st;
}

const RtRankOps rt_engine_nccl = {
    .init = nccl_init,
    .destroy = nccl_destroy,
    .exchange = nccl_exchange,
    .reserve = nccl_reserve,
    .layout = nccl_layout,
    .address = nccl_address,
    .load = gpu_rank_op_load,
    .shape = gpu_rank_op_shape,
    .agree = gpu_rank_op_agree,
    .run = gpu_rank_op_run,
    .status = nccl_status,
    .zero = gpu_rank_op_zero,
};
