/*
 * rank_ipc.c - the ipc engine of the per-rank API: the GPUs of one host, one process per rank,
 * memory passed between the processes as file descriptors. Also several ranks on one GPU,
 * which NCCL refuses.
 *
 * Bootstrap: the control plane (ctl.h): rank 0 listens on the id's abstract socket, every
 * rank says hello, and descriptors travel with SCM_RIGHTS. Every rank tells the others which
 * GPU it is on (its UUID), so that each knows how many ranks share its GPU (they split its
 * SMs) and the nvls flavour can refuse two ranks on one GPU.
 *
 * Memory: every rank allocates its own, with the CUDA driver's virtual memory API:
 * cuMemCreate (pinned, on its device, exportable as a POSIX file descriptor), reserve, map,
 * cuMemSetAccess for its device, zeroed; cuMemExportToShareableHandle gives a descriptor, the
 * control plane gives it to every other rank, and each imports it
 * (cuMemImportFromShareableHandle), reserves, maps and sets access for its own device. The
 * addresses differ per process, so each process builds its own peer tables (gpu_rank.h).
 * Two regions per rank: the sync words (made at init, never reset: abi.h) and the symmetric
 * region for the buffers (made and remade as it grows, when no run is in flight: every rank
 * first waits for its own GPU). A peer that exits keeps nothing of ours alive but its own
 * mappings; memory goes away with its last mapping.
 *
 * nvls flavour (never on hosts whose operators forbid multicast: refused first, before the
 * driver is loaded, by the NVLS-off variables, as the nvls backend does): each region is
 * also bound to a multicast object that rank 0 creates and exports as a descriptor; every
 * rank imports it, adds its device, binds its region, and maps the multicast address, in the
 * driver's order (every device added before any bind or multicast mapping: CUDA Driver API,
 * cuMulticastAddDevice), with a barrier between adding and binding and after binding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_common.h"
#include "gpu_rank.h"
#include "rank.h"

typedef struct IpcMap {
    CUmemGenericAllocationHandle h;     /* 0: none */
    CUdeviceptr va;                     /* 0: not reserved */
    size_t size;
    int mapped;
} IpcMap;

typedef struct IpcMc {                  /* nvls: a multicast object over one region */
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    size_t size;
    int added, bound, mapped;
} IpcMc;

typedef struct IpcHello {
    CUuuid uuid;
    int32_t ordinal;
    int32_t multicast;                  /* the device supports it */
} IpcHello;

typedef struct Ipc {
    RankGpu g;                          /* first: gpu_rank_op_load/run take the state as one */
    RtCtl *ctl;
    int n, me;
    IpcMap *sync;                       /* [n] every rank's sync words, mapped here */
    IpcMap *region;                     /* [n] every rank's symmetric region */
    IpcMc mc_sync, mc_region;
} Ipc;

static Ipc *ipc(cdsl_rank_comm *r)
{
    return r->engine;
}

/* ---- one region ------------------------------------------------------------------------------------ */

static void ipc_unmap(RankGpu *g, IpcMap *m)
{
    if (m->mapped)
        g->cu->MemUnmap(m->va, m->size);
    if (m->va)
        g->cu->MemAddressFree(m->va, m->size);
    if (m->h)
        g->cu->MemRelease(m->h);
    memset(m, 0, sizeof *m);
}

static CUmemAllocationProp ipc_prop(const RankGpu *g)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = g->gpu.ordinal;
    return prop;
}

/* Reserve an address range for h (size bytes), map it, and let our device read and write it. */
static int ipc_view(RankGpu *g, IpcMap *m, size_t align, const char *whose)
{
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, g->gpu.ordinal}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    GPU_RANK_TRY(g, g->cu->MemAddressReserve(&m->va, m->size, align, 0, 0), "reserving %zu bytes of addresses for %s",
                 m->size, whose);
    GPU_RANK_TRY(g, g->cu->MemMap(m->va, m->size, 0, m->h, 0), "mapping %s", whose);
    m->mapped = 1;
    CUresult r = g->cu->MemSetAccess(m->va, m->size, &acc, 1);
    if (r != CUDA_SUCCESS) {
        rt_error(g->log, "rank %d: GPU %d cannot address %s (no peer access to that GPU?): %s", g->rank, g->gpu.ordinal,
                 whose, cu_error_string(g->cu, r));
        return CDSL_ERR_SYSTEM;
    }
    return CDSL_OK;
}

/* Our own: size bytes (rounded up to align), zeroed, exported as a descriptor (*fd). */
static int ipc_make(RankGpu *g, IpcMap *m, size_t size, size_t align, int *fd)
{
    CUmemAllocationProp prop = ipc_prop(g);
    m->size = gpu_round_up(size, align);
    GPU_RANK_TRY(g, g->cu->MemCreate(&m->h, m->size, &prop, 0), "allocating %zu bytes of exportable memory", m->size);
    int st = ipc_view(g, m, align, "its own memory");
    if (st)
        return st;
    GPU_RANK_TRY(g, g->cu->MemsetD8(m->va, 0, m->size), "zeroing its memory");
    GPU_RANK_TRY(g, g->cu->CtxSynchronize(), "zeroing its memory");
    GPU_RANK_TRY(g, g->cu->MemExportToShareableHandle(fd, m->h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                 "exporting its memory as a file descriptor");
    return CDSL_OK;
}

static int ipc_import(RankGpu *g, IpcMap *m, int fd, size_t size, size_t align, int q)
{
    char whose[64];
    snprintf(whose, sizeof whose, "rank %d's memory", q);
    m->size = size;
    GPU_RANK_TRY(g, g->cu->MemImportFromShareableHandle(&m->h, (void *)(uintptr_t)fd,
                                                        CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                 "importing %s", whose);
    return ipc_view(g, m, align, whose);
}

static size_t ipc_granularity(RankGpu *g)
{
    CUmemAllocationProp prop = ipc_prop(g);
    size_t gran = 0;
    if (g->cu->MemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) != CUDA_SUCCESS ||
        gran == 0)
        gran = 2u << 20;
    if (g->multicast) {     /* the region is also bound to a multicast object */
        CUmulticastObjectProp mp = {(unsigned)g->nranks, gran, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0};
        size_t mg = 0;
        if (g->cu->MulticastGetGranularity(&mg, &mp, CU_MULTICAST_GRANULARITY_MINIMUM) == CUDA_SUCCESS && mg > gran)
            gran = mg;
    }
    return gran;
}

/* Every rank's region of size bytes: ours made and exported, the others' imported: maps[q]. */
static int ipc_share(cdsl_rank_comm *r, const char *what, size_t size, IpcMap *maps)
{
    Ipc *s = ipc(r);
    RankGpu *g = &s->g;
    size_t align = ipc_granularity(g);
    uint64_t mine, *sizes = calloc((size_t)s->n, sizeof *sizes);
    int fd = -1, *fds = malloc((size_t)s->n * sizeof *fds);
    int st = sizes && fds ? ipc_make(g, &maps[s->me], size, align, &fd) : CDSL_ERR_SYSTEM;
    if (!sizes || !fds)
        rt_error(r->log, "rank %d: out of memory", r->rank);
    mine = maps[s->me].size;
    if (!st)
        st = rt_ctl_allgather(s->ctl, what, &mine, sizeof mine, sizes, fd, fds);
    if (fd >= 0)
        close(fd);
    for (int q = 0; !st && q < s->n; q++)
        if (q != s->me)
            st = ipc_import(g, &maps[q], fds[q], (size_t)sizes[q], align, q);
    for (int q = 0; fds && !st && q < s->n; q++)
        if (q != s->me && fds[q] >= 0)
            close(fds[q]);
    if (st) {
        for (int q = 0; fds && q < s->n; q++)
            if (q != s->me && fds[q] >= 0)
                close(fds[q]);
        for (int q = 0; q < s->n; q++)
            ipc_unmap(g, &maps[q]);
    }
    free(sizes);
    free(fds);
    return st;
}

/* ---- nvls: a multicast object over a region ----------------------------------------------------- */

static void ipc_mc_free(RankGpu *g, IpcMc *mc)
{
    if (mc->bound)
        g->cu->MulticastUnbind(mc->h, g->gpu.dev, 0, mc->size);
    if (mc->mapped)
        g->cu->MemUnmap(mc->va, mc->size);
    if (mc->va)
        g->cu->MemAddressFree(mc->va, mc->size);
    if (mc->h)
        g->cu->MemRelease(mc->h);
    memset(mc, 0, sizeof *mc);
}

/* Rank 0 creates and exports it; every rank imports it and adds its device. */
static int ipc_mc_join(cdsl_rank_comm *r, const char *what, const IpcMap *own, IpcMc *mc)
{
    Ipc *s = ipc(r);
    RankGpu *g = &s->g;
    int fd = -1, *fds = calloc((size_t)s->n, sizeof *fds), st = rt_nvls_refuse_env(g->log);
    char none = 0;
    mc->size = own->size;
    if (!fds)
        return CDSL_ERR_SYSTEM;
    if (!st && s->me == 0) {
        CUmulticastObjectProp prop = {(unsigned)s->n, mc->size, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0};
        CUresult cr = g->cu->MulticastCreate(&mc->h, &prop);
        if (cr == CUDA_SUCCESS)
            cr = g->cu->MemExportToShareableHandle(&fd, mc->h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
        if (cr != CUDA_SUCCESS)
            st = gpu_rank_fail(g, cr, "making the multicast object for %s", what);
    }
    int ex = rt_ctl_allgather(s->ctl, what, &none, 0, &none, fd, fds);
    st = st ? st : ex;
    if (!st && s->me != 0 && fds[0] < 0) {
        rt_error(g->log, "rank %d: rank 0 sent no multicast object for %s", r->rank, what);
        st = CDSL_ERR_SYSTEM;
    }
    if (!st && s->me != 0) {
        CUresult cr = g->cu->MemImportFromShareableHandle(&mc->h, (void *)(uintptr_t)fds[0],
                                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        if (cr != CUDA_SUCCESS)
            st = gpu_rank_fail(g, cr, "importing the multicast object");
    }
    if (fd >= 0)
        close(fd);
    for (int q = 0; q < s->n; q++)
        if (q != s->me && fds[q] >= 0)
            close(fds[q]);
    free(fds);
    if (!st) {
        CUresult cr = g->cu->MulticastAddDevice(mc->h, g->gpu.dev);
        if (cr != CUDA_SUCCESS)
            st = gpu_rank_fail(g, cr, "adding GPU %d to the multicast object", g->gpu.ordinal);
        mc->added = !st;
    }
    return st;
}

/* Every device added, then every region bound, then the multicast address mapped here. */
static int ipc_multicast(cdsl_rank_comm *r, const char *what, const IpcMap *own, IpcMc *mc)
{
    Ipc *s = ipc(r);
    RankGpu *g = &s->g;
    int st = ipc_mc_join(r, what, own, mc), b = rt_ctl_barrier(s->ctl, "nvls: every GPU added");
    if (st || b)
        return st ? st : b;
    GPU_RANK_TRY(g, g->cu->MulticastBindMem(mc->h, 0, own->h, 0, mc->size, 0), "binding its memory to the multicast "
                 "object (is the fabric manager running?)");
    mc->bound = 1;
    if ((st = rt_ctl_barrier(s->ctl, "nvls: every GPU bound")))
        return st;
    size_t gran = 0;
    CUmulticastObjectProp prop = {(unsigned)s->n, mc->size, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0};
    GPU_RANK_TRY(g, g->cu->MulticastGetGranularity(&gran, &prop, CU_MULTICAST_GRANULARITY_MINIMUM),
                 "reading the multicast granularity");
    GPU_RANK_TRY(g, g->cu->MemAddressReserve(&mc->va, mc->size, gran, 0, 0), "reserving the multicast addresses");
    GPU_RANK_TRY(g, g->cu->MemMap(mc->va, mc->size, 0, mc->h, 0), "mapping the multicast object");
    mc->mapped = 1;
    CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, g->gpu.ordinal}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    GPU_RANK_TRY(g, g->cu->MemSetAccess(mc->va, mc->size, &acc, 1), "opening the multicast addresses");
    return CDSL_OK;
}

/* ---- the engine ---------------------------------------------------------------------------------- */

static void ipc_free_all(Ipc *s)
{
    RankGpu *g = &s->g;
    for (int q = 0; s->region && q < s->n; q++)
        ipc_unmap(g, &s->region[q]);
    for (int q = 0; s->sync && q < s->n; q++)
        ipc_unmap(g, &s->sync[q]);
    ipc_mc_free(g, &s->mc_region);
    ipc_mc_free(g, &s->mc_sync);
}

static void ipc_destroy(cdsl_rank_comm *r)
{
    Ipc *s = ipc(r);
    if (!s)
        return;
    if (s->g.cu && gpu_rank_enter(&s->g) == CDSL_OK) {
        s->g.cu->CtxSynchronize();      /* nothing of ours still runs on what we unmap */
        ipc_free_all(s);
        gpu_rank_leave(&s->g);
    }
    gpu_rank_close(&s->g);
    free(s->sync);
    free(s->region);
    rt_ctl_close(s->ctl);
    free(s);
    r->engine = NULL;
}

/* Which GPU every rank is on: how many share ours; nvls needs one rank per GPU. */
static int ipc_devices(cdsl_rank_comm *r)
{
    Ipc *s = ipc(r);
    RankGpu *g = &s->g;
    int mc = 0;
    g->cu->DeviceGetAttribute(&mc, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, g->gpu.dev);
    IpcHello mine = {.uuid = g->uuid, .ordinal = g->gpu.ordinal, .multicast = mc}, *all = calloc((size_t)s->n, sizeof *all);
    int st = all ? rt_ctl_allgather(s->ctl, "init: which GPU each rank is on", &mine, sizeof mine, all, -1, NULL)
                 : CDSL_ERR_SYSTEM;
    g->gpu.nranks = 0;
    for (int q = 0; !st && q < s->n; q++)
        g->gpu.nranks += !memcmp(&all[q].uuid, &g->uuid, sizeof g->uuid);
    for (int q = 0; !st && g->multicast && q < s->n; q++)    /* the same answer everywhere */
        for (int p = q + 1; !st && p < s->n; p++)
            if (!memcmp(&all[q].uuid, &all[p].uuid, sizeof all[q].uuid)) {
                rt_error(r->log, "rank %d: the nvls flavour needs one rank per GPU; ranks %d and %d share GPU %d", r->rank,
                         q, p, all[q].ordinal);
                st = CDSL_ERR_USAGE;
            }
    for (int q = 0; !st && g->multicast && q < s->n; q++) {
        if (!all[q].multicast) {
            rt_error(r->log, "rank %d: rank %d's GPU %d does not support multicast; the nvls flavour needs NVLink "
                     "SHARP (use the p2p flavour)", r->rank, q, all[q].ordinal);
            st = CDSL_ERR_SYSTEM;
        }
    }
    free(all);
    return st;
}

static int ipc_init(cdsl_rank_comm *r, const RtId *id)
{
    Ipc *s = rt_engine_new(r, sizeof *s);
    if (!s)
        return CDSL_ERR_SYSTEM;
    s->n = r->nranks;
    s->me = r->rank;
    s->sync = calloc((size_t)s->n, sizeof *s->sync);
    s->region = calloc((size_t)s->n, sizeof *s->region);
    if (!s->sync || !s->region) {
        rt_error(r->log, "out of memory");
        return CDSL_ERR_SYSTEM;
    }
    int st = gpu_rank_open(&s->g, r);   /* nvls refused here first, when disabled */
    if (!st)
        st = rt_ctl_open(&s->ctl, &id->ctl, r->rank, r->nranks, r->cfg.timeout_s, r->log);
    if (st)
        return st;
    r->device = s->g.gpu.ordinal;
    if ((st = ipc_devices(r)) || (st = gpu_rank_enter(&s->g)))
        return st;
    st = ipc_share(r, "init: the sync words", CDSL_SYNC_WORDS(s->n, GPU_FIXED_CHANNELS) * 8, s->sync);
    if (!st && s->g.multicast)
        st = ipc_multicast(r, "init: the sync words' multicast", &s->sync[s->me], &s->mc_sync);
    gpu_rank_leave(&s->g);
    if (st)
        return st;
    for (int q = 0; q < s->n; q++)
        s->g.peer_syncs[q] = s->sync[q].va;
    s->g.own.mc_sync = s->mc_sync.va;
    return gpu_rank_publish(&s->g);
}

static int ipc_exchange(cdsl_rank_comm *r, const char *what, const void *mine, size_t len, void *all)
{
    return rt_ctl_allgather(ipc(r)->ctl, what, mine, len, all, -1, NULL);
}

static int ipc_reserve(cdsl_rank_comm *r, size_t bytes)
{
    Ipc *s = ipc(r);
    RankGpu *g = &s->g;
    int st = gpu_rank_enter(g);
    if (st)
        return st;
    g->cu->CtxSynchronize();            /* our last run no longer uses the old region */
    for (int q = 0; q < s->n; q++)
        ipc_unmap(g, &s->region[q]);
    ipc_mc_free(g, &s->mc_region);
    memset(g->peer_bufs, 0, (size_t)s->n * CDSL_ABI_MAX_BUFS * sizeof *g->peer_bufs);
    st = ipc_share(r, "cdsl_rank_alloc: the symmetric buffers", bytes, s->region);
    if (!st && g->multicast)
        st = ipc_multicast(r, "cdsl_rank_alloc: the buffers' multicast", &s->region[s->me], &s->mc_region);
    gpu_rank_leave(g);
    return st;
}

static int ipc_layout(cdsl_rank_comm *r, const size_t *off, const size_t *bytes, int nbufs)
{
    Ipc *s = ipc(r);
    RankGpu *g = &s->g;
    for (int q = 0; q < s->n; q++)
        for (int b = 0; b < CDSL_ABI_MAX_BUFS; b++)
            g->peer_bufs[(size_t)q * CDSL_ABI_MAX_BUFS + b] = b < nbufs && bytes[b] ? s->region[q].va + off[b] : 0;
    for (int b = 0; b < CDSL_ABI_MAX_BUFS; b++)
        g->own.mc_buf[b] = b < nbufs && bytes[b] && s->mc_region.va ? s->mc_region.va + off[b] : 0;
    g->ports_bytes = bytes[RT_PORT_SLOT];
    for (int q = 0; q < s->n; q++)   /* the program's port words, where the peers' proxies signal */
        g->peer_ports[q] = bytes[RT_PORT_SLOT] ? s->region[q].va + off[RT_PORT_SLOT] : 0;
    return gpu_rank_publish(g);
}

static void *ipc_address(cdsl_rank_comm *r, int b)
{
    Ipc *s = ipc(r);
    return (void *)(uintptr_t)(s->region[s->me].va + (b < 0 ? 0 : r->off[b]));
}

static int ipc_status(cdsl_rank_comm *r)
{
    Ipc *s = ipc(r);
    int dead = rt_ctl_dead(s->ctl);
    return gpu_rank_status(&s->g, dead, dead >= 0 ? rt_ctl_pid(s->ctl, dead) : 0);
}

const RtRankOps rt_engine_ipc = {
    .init = ipc_init,
    .destroy = ipc_destroy,
    .exchange = ipc_exchange,
    .reserve = ipc_reserve,
    .layout = ipc_layout,
    .address = ipc_address,
    .load = gpu_rank_op_load,
    .shape = gpu_rank_op_shape,
    .agree = gpu_rank_op_agree,
    .run = gpu_rank_op_run,
    .status = ipc_status,
    .zero = gpu_rank_op_zero,
};
