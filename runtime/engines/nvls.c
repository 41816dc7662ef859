/*
 * nvls.c - the nvls backend: NVLink SHARP through a multicast object of the CUDA driver.
 *
 * SAFETY FIRST. Creating a multicast object on a host whose operators forbid it can take that
 * host's GPUs, which others share, out of service for a day or more. So before anything
 * else - before the driver is even loaded - nvls_create refuses when the environment disables NVLS
 * (CDSL_NVLS=0, NCCL_NVLS_ENABLE=0, NVSHMEM_DISABLE_NVLS=1, TORCH_SYMM_MEM_DISABLE_MULTICAST=1;
 * any value that does not clearly enable counts as disabling), then when a device lacks
 * CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED. The check is repeated right before
 * cuMulticastCreate. This backend is only ever used when asked for by name.
 *
 * Memory. One rank per GPU (a multicast object binds one memory per device). Every rank's sync
 * words and symmetric buffers are carved out of one region per device, at the same offsets on
 * every device, and that region is bound to one multicast object, so that mc_sync and mc_buf[b]
 * are the multicast addresses of sync and buf[b]. The order is the driver's (CUDA Driver API,
 * multicast objects): granularity query, cuMulticastCreate, cuMulticastAddDevice for every
 * device, then per device cuMemCreate + reserve + map + access for the unicast view,
 * cuMulticastBindMem, and a reserve + map + access of the multicast handle. Teardown is the
 * exact reverse, driven by per-step flags, so an error at any step frees exactly what was made.
 * A region is rebuilt only when an allocation outgrows it; a rebuilt region starts with all
 * sync and state words zero (no kernel is in flight), like a fresh communicator.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpu_common.h"

#define NVLS_ALIGN 256          /* offsets of the sync words and buffers inside the region */

/* ---- Refusal: the environment ------------------------------------------------------------- */

typedef struct NvlsEnvVar {
    const char *name;
    int enables;        /* 1: the variable enables NVLS (refuse unless it says yes);
                           0: it disables NVLS (refuse unless it says no) */
} NvlsEnvVar;

static const NvlsEnvVar nvls_env_vars[] = {
    {"CDSL_NVLS", 1},
    {"NCCL_NVLS_ENABLE", 1},
    {"NVSHMEM_DISABLE_NVLS", 0},
    {"TORCH_SYMM_MEM_DISABLE_MULTICAST", 0},
};

static int nvls_word_in(const char *v, const char *const *words)
{
    for (; *words; words++)
        if (strcasecmp(v, *words) == 0)
            return 1;
    return 0;
}

/* Does this value keep NVLS allowed? Anything unclear counts as "no": a wrong guess here
 * can take a shared machine's GPUs down. */
static int nvls_env_allows(const NvlsEnvVar *e, const char *v)
{
    static const char *const yes[] = {"1", "2", "true", "yes", "on", NULL};
    static const char *const no[] = {"0", "false", "no", "off", NULL};
    return e->enables ? nvls_word_in(v, yes) : nvls_word_in(v, no);
}

/* Only getenv: no CUDA call, no dlopen, happens first. */
int rt_nvls_refuse_env(FILE *log)
{
    int refused = 0;
    for (size_t i = 0; i < sizeof nvls_env_vars / sizeof nvls_env_vars[0]; i++) {
        const char *v = getenv(nvls_env_vars[i].name);
        if (!v || nvls_env_allows(&nvls_env_vars[i], v))
            continue;
        rt_error(log, "the nvls backend is disabled by %s=%s in the environment; no multicast "
                 "object is created (the p2p backend needs none)", nvls_env_vars[i].name, v);
        refused = 1;
    }
    return refused ? CDSL_ERR_SYSTEM : CDSL_OK;
}

/* ---- The multicast group ------------------------------------------------------------------ */

typedef struct NvlsDev {
    CUmemGenericAllocationHandle mem;   /* this device's physical memory */
    CUdeviceptr uc;                     /* its unicast mapping */
    CUdeviceptr mcva;                   /* this device's mapping of the multicast object */
    int added, made, uc_reserved, uc_mapped, bound, mc_reserved, mc_mapped;
} NvlsDev;

typedef struct NvlsGroup {
    CUmemGenericAllocationHandle mc;
    int have_mc;
    size_t size;        /* bytes per device, bound and mapped; 0: no region */
    size_t gran;        /* alignment of sizes, offsets and reservations */
    int handle_types;
    NvlsDev *dev;       /* [ndev] */
} NvlsGroup;

static CUmemAllocationProp nvls_mem_prop(const GpuComm *g, const NvlsGroup *grp, int d)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.requestedHandleTypes = grp->handle_types;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = g->devs[d].ordinal;
    return p;
}

static CUmulticastObjectProp nvls_mc_prop(const GpuComm *g, const NvlsGroup *grp, size_t size)
{
    CUmulticastObjectProp p;
    memset(&p, 0, sizeof p);
    p.numDevices = (unsigned)g->ndev;
    p.size = size;
    p.handleTypes = (unsigned long long)grp->handle_types;
    p.flags = 0;
    return p;
}

static size_t nvls_gcd(size_t a, size_t b)
{
    while (b) {
        size_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The least common multiple of the multicast and every device's allocation granularity:
 * queried, never assumed (it differs between drivers and GPUs). */
static int nvls_granularity(GpuComm *g, NvlsGroup *grp, size_t need)
{
    CUmulticastObjectProp mp = nvls_mc_prop(g, grp, need);
    size_t gran = 0;
    GPU_TRY(g, -1, g->cu->MulticastGetGranularity(&gran, &mp, CU_MULTICAST_GRANULARITY_MINIMUM),
            "cuMulticastGetGranularity");
    for (int d = 0; d < g->ndev; d++) {
        CUmemAllocationProp ap = nvls_mem_prop(g, grp, d);
        size_t ag = 0;
        GPU_TRY(g, d, g->cu->MemGetAllocationGranularity(&ag, &ap,
                                                         CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                "cuMemGetAllocationGranularity");
        if (ag > 0)
            gran = gran / nvls_gcd(gran, ag) * ag;
    }
    if (gran == 0) {
        rt_error(g->cfg.log, "the CUDA driver reported a multicast granularity of 0");
        return CDSL_ERR_SYSTEM;
    }
    grp->gran = gran;
    grp->size = (need + gran - 1) / gran * gran;
    return CDSL_OK;
}

/* Every device joins before any memory is bound or mapped (binds block until all have). */
static int nvls_make_mc(GpuComm *g, NvlsGroup *grp)
{
    CUmulticastObjectProp mp = nvls_mc_prop(g, grp, grp->size);
    CUresult r = g->cu->MulticastCreate(&grp->mc, &mp);
    if (r != CUDA_SUCCESS) {
        if (r == CUDA_ERROR_SYSTEM_NOT_READY)
            rt_error(g->cfg.log, "multicast needs the NVIDIA fabric manager running");
        return gpu_fail(g, -1, r, "cuMulticastCreate (%d devices, %zu bytes)", g->ndev,
                        grp->size);
    }
    grp->have_mc = 1;
    for (int d = 0; d < g->ndev; d++) {
        GPU_TRY(g, d, g->cu->MulticastAddDevice(grp->mc, g->devs[d].dev),
                "cuMulticastAddDevice");
        grp->dev[d].added = 1;
    }
    return CDSL_OK;
}

/* Physical memory on device d, mapped at a unicast address every device may use (the peers'
 * puts and gets go there). */
static int nvls_make_unicast(GpuComm *g, NvlsGroup *grp, int d)
{
    NvlsDev *nd = &grp->dev[d];
    CUmemAllocationProp ap = nvls_mem_prop(g, grp, d);
    GPU_TRY(g, d, g->cu->MemCreate(&nd->mem, grp->size, &ap, 0), "cuMemCreate (%zu bytes)",
            grp->size);
    nd->made = 1;
    GPU_TRY(g, d, g->cu->MemAddressReserve(&nd->uc, grp->size, grp->gran, 0, 0),
            "reserving a unicast address range");
    nd->uc_reserved = 1;
    GPU_TRY(g, d, g->cu->MemMap(nd->uc, grp->size, 0, nd->mem, 0), "mapping its memory");
    nd->uc_mapped = 1;
    CUmemAccessDesc *acc = calloc((size_t)g->ndev, sizeof *acc);
    if (!acc) {
        rt_error(g->cfg.log, "out of memory");
        return CDSL_ERR_SYSTEM;
    }
    for (int i = 0; i < g->ndev; i++) {
        acc[i].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        acc[i].location.id = g->devs[i].ordinal;
        acc[i].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    }
    CUresult r = g->cu->MemSetAccess(nd->uc, grp->size, acc, (size_t)g->ndev);
    free(acc);
    if (r != CUDA_SUCCESS)
        return gpu_fail(g, d, r, "granting every GPU access to its memory");
    return CDSL_OK;
}

static int nvls_bind(GpuComm *g, NvlsGroup *grp, int d)
{
    GPU_TRY(g, d, g->cu->MulticastBindMem(grp->mc, 0, grp->dev[d].mem, 0, grp->size, 0),
            "cuMulticastBindMem (%zu bytes)", grp->size);
    grp->dev[d].bound = 1;
    return CDSL_OK;
}

/* Device d's view of the multicast object: the addresses multimem instructions use. */
static int nvls_map_mc(GpuComm *g, NvlsGroup *grp, int d)
{
    NvlsDev *nd = &grp->dev[d];
    GPU_TRY(g, d, g->cu->MemAddressReserve(&nd->mcva, grp->size, grp->gran, 0, 0),
            "reserving a multicast address range");
    nd->mc_reserved = 1;
    GPU_TRY(g, d, g->cu->MemMap(nd->mcva, grp->size, 0, grp->mc, 0),
            "mapping the multicast object");
    nd->mc_mapped = 1;
    CUmemAccessDesc acc;
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = g->devs[d].ordinal;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    GPU_TRY(g, d, g->cu->MemSetAccess(nd->mcva, grp->size, &acc, 1),
            "granting access to the multicast mapping");
    return CDSL_OK;
}

/* The reverse of nvls_build, step by step, only what was done; the unbind comes before the
 * multicast mapping is undone, the driver's teardown order. */
static void nvls_teardown(GpuComm *g, NvlsGroup *grp)
{
    CuDrv *cu = g->cu;
    /* As the driver's cuMulticastUnbind asks (and NCCL does): unbind first, with the bind's
     * offset and size, then unmap. */
    for (int d = 0; d < g->ndev; d++)
        if (grp->dev[d].bound)
            cu->MulticastUnbind(grp->mc, g->devs[d].dev, 0, grp->size);
    for (int d = 0; d < g->ndev; d++) {
        NvlsDev *nd = &grp->dev[d];
        cu->CtxSetCurrent(g->devs[d].ctx);
        if (nd->mc_mapped)
            cu->MemUnmap(nd->mcva, grp->size);
        if (nd->mc_reserved)
            cu->MemAddressFree(nd->mcva, grp->size);
    }
    for (int d = 0; d < g->ndev; d++) {
        NvlsDev *nd = &grp->dev[d];
        cu->CtxSetCurrent(g->devs[d].ctx);
        if (nd->uc_mapped)
            cu->MemUnmap(nd->uc, grp->size);
        if (nd->uc_reserved)
            cu->MemAddressFree(nd->uc, grp->size);
        if (nd->made)
            cu->MemRelease(nd->mem);
        memset(nd, 0, sizeof *nd);
    }
    if (grp->have_mc)
        cu->MemRelease(grp->mc);
    grp->have_mc = 0;
    grp->mc = 0;
    grp->size = 0;
}

static int nvls_build(GpuComm *g, NvlsGroup *grp, size_t need)
{
    int st = rt_nvls_refuse_env(g->cfg.log);   /* again, right before the multicast calls */
    if (!st)
        st = nvls_granularity(g, grp, need);
    if (!st)
        st = nvls_make_mc(g, grp);
    for (int d = 0; !st && d < g->ndev; d++)
        if (!(st = gpu_use(g, d)))
            st = nvls_make_unicast(g, grp, d);
    for (int d = 0; !st && d < g->ndev; d++)
        if (!(st = gpu_use(g, d)))
            st = nvls_bind(g, grp, d);
    for (int d = 0; !st && d < g->ndev; d++)
        if (!(st = gpu_use(g, d)))
            st = nvls_map_mc(g, grp, d);
    if (st)
        nvls_teardown(g, grp);
    return st;
}

/* ---- Placing the sync words and buffers --------------------------------------------------- */

/* Offsets inside the region (sync words first); returns the bytes needed. */
/* The sync words' share of the region: where the first buffer starts. */
static size_t nvls_sync_bytes(const GpuComm *g)
{
    return gpu_round_up(CDSL_SYNC_WORDS(g->nranks, g->chans) * 8, NVLS_ALIGN);
}

static size_t nvls_layout(const GpuComm *g, const size_t *bytes, int nbufs, size_t *off)
{
    size_t at = nvls_sync_bytes(g);
    for (int b = 0; b < nbufs; b++) {
        off[b] = at;
        at += gpu_round_up(bytes[b], NVLS_ALIGN);
    }
    return at;
}

static void nvls_point(GpuComm *g, NvlsGroup *grp, const size_t *off, int nbufs)
{
    for (int q = 0; q < g->nranks; q++) {
        GpuRank *rk = &g->ranks[q];
        NvlsDev *nd = &grp->dev[rk->device];
        memset(rk->buf, 0, sizeof rk->buf);
        memset(rk->mc_buf, 0, sizeof rk->mc_buf);
        rk->sync = grp->size ? nd->uc : 0;
        rk->mc_sync = grp->size ? nd->mcva : 0;
        for (int b = 0; grp->size && b < nbufs; b++) {
            rk->buf[b] = nd->uc + off[b];
            rk->mc_buf[b] = nd->mcva + off[b];
        }
    }
}

/* Zero bytes [from, to) of every device's region. From 0, that includes the sync words, so
 * the state words and error records restart with them (a new region: a fresh start). */
static int nvls_zero(GpuComm *g, NvlsGroup *grp, size_t from, size_t to)
{
    for (int d = 0; d < g->ndev && to > from; d++) {
        int st = gpu_use(g, d);
        if (st)
            return st;
        GPU_TRY(g, d, g->cu->MemsetD8(grp->dev[d].uc + from, 0, to - from),
                "zeroing its buffers");
    }
    return from == 0 ? gpu_reset_words(g) : gpu_sync_all(g);
}

static int nvls_alloc(void *state, const size_t *bytes, int nbufs)
{
    GpuComm *g = state;
    NvlsGroup *grp = g->priv;
    if (nbufs < 0 || nbufs > CDSL_ABI_MAX_BUFS) {
        rt_error(g->cfg.log, "internal: %d buffers (at most %d)", nbufs, CDSL_ABI_MAX_BUFS);
        return CDSL_ERR_USAGE;
    }
    size_t off[CDSL_ABI_MAX_BUFS];
    size_t need = nvls_layout(g, bytes, nbufs, off);
    int st = gpu_sync_all(g);   /* nothing may use the region we are about to replace */
    if (!st && need > grp->size) {
        g->nbufs = 0;
        g->have_sync = 0;
        nvls_point(g, grp, off, 0);
        nvls_teardown(g, grp);
        st = nvls_build(g, grp, need);
        nvls_point(g, grp, off, nbufs);
        if (!st)
            st = nvls_zero(g, grp, 0, grp->size);
    } else if (!st) {
        st = nvls_zero(g, grp, nvls_sync_bytes(g), need);  /* sync words stay */
    }
    if (st) {
        gpu_publish(g);         /* no stale pointers in the peer tables */
        return st;
    }
    nvls_point(g, grp, off, nbufs);
    g->have_sync = 1;
    g->nbufs = nbufs;
    for (int b = 0; b < nbufs; b++)
        g->bytes[b] = bytes[b];
    return gpu_publish(g);
}

/* ---- Create and destroy ------------------------------------------------------------------- */

/* Every device must support multicast and virtual memory management; decides the
 * exportable handle type (POSIX file descriptors where every device has them). */
static int nvls_check_devices(GpuComm *g, NvlsGroup *grp)
{
    if (!cu_has_multicast(g->cu)) {
        rt_error(g->cfg.log, "the CUDA driver on this machine has no multicast objects "
                 "(the nvls backend needs a driver for CUDA 12.1 or newer)");
        return CDSL_ERR_SYSTEM;
    }
    grp->handle_types = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    for (int d = 0; d < g->ndev; d++) {
        GpuDevice *dv = &g->devs[d];
        int mc = 0, vmm = 0, fd = 0;
        GPU_TRY(g, d, g->cu->DeviceGetAttribute(&mc, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED,
                                                dv->dev), "reading multicast support");
        GPU_TRY(g, d, g->cu->DeviceGetAttribute(
                          &vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, dv->dev),
                "reading virtual memory support");
        GPU_TRY(g, d, g->cu->DeviceGetAttribute(
                          &fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                          dv->dev), "reading handle type support");
        if (!mc || !vmm) {
            rt_error(g->cfg.log, "GPU %d (%s) does not support %s; the nvls backend needs "
                     "NVLink SHARP (Hopper or newer behind an NVSwitch; the p2p backend runs without it)",
                     dv->ordinal, dv->name, !mc ? "multicast" : "virtual memory management");
            return CDSL_ERR_SYSTEM;
        }
        if (!fd)
            grp->handle_types = CU_MEM_HANDLE_TYPE_NONE;
    }
    return CDSL_OK;
}

static void nvls_destroy(void *state)
{
    GpuComm *g = state;
    if (!g)
        return;
    NvlsGroup *grp = g->priv;
    if (grp && g->cu && g->devs) {
        gpu_sync_all(g);
        nvls_teardown(g, grp);
    }
    if (grp)
        free(grp->dev);
    free(grp);
    g->priv = NULL;
    gpu_destroy(g);
}

static int nvls_create(const RtConfig *cfg, void **state)
{
    *state = NULL;
    int st = rt_nvls_refuse_env(cfg->log);     /* before any CUDA call, before dlopen */
    if (st)
        return st;
    if (cfg->ranks_per_gpu > 1) {
        rt_error(cfg->log, "the nvls backend runs one rank per GPU (a multicast object binds "
                 "one memory per device); %d ranks per GPU is for the p2p backend",
                 cfg->ranks_per_gpu);
        return CDSL_ERR_SYSTEM;
    }
    GpuComm *g;
    if ((st = gpu_create(cfg, CDSL_BACKEND_NVLS, GPU_FIXED_CHANNELS, &g)))
        return st;
    NvlsGroup *grp = calloc(1, sizeof *grp);
    if (grp)
        grp->dev = calloc((size_t)g->ndev, sizeof *grp->dev);
    g->priv = grp;
    if (!grp || !grp->dev) {
        rt_error(cfg->log, "out of memory");
        st = CDSL_ERR_SYSTEM;
    }
    if (!st)
        st = nvls_check_devices(g, grp);
    if (st) {
        nvls_destroy(g);
        return st;
    }
    *state = g;
    return CDSL_OK;
}

/* Multicast binds physical memory the backend creates (cuMemCreate) at offsets it chooses;
 * a pointer from cudaMalloc or cuMemAlloc cannot be bound, so caller buffers are refused. */
static int nvls_attach(void *state, const size_t *bytes, int nbufs, void *const *ptrs)
{
    GpuComm *g = state;
    (void)bytes, (void)nbufs, (void)ptrs;
    rt_error(g->cfg.log, "the nvls backend cannot run on caller buffers: a multicast object binds "
             "only memory the backend creates itself (cuMemCreate); use cdsl_comm_alloc, and "
             "cdsl_comm_buffer for the buffers' addresses");
    return CDSL_ERR_USAGE;
}

const RtBackendOps rt_backend_nvls = {
    .create = nvls_create,
    .alloc = nvls_alloc,
    .write = gpu_write,
    .read = gpu_read,
    .load = gpu_load,
    .run = gpu_run,
    .destroy = nvls_destroy,
    .attach = nvls_attach,
    .buffer = gpu_buffer,
    .launch = gpu_launch,
    .status = gpu_status,
};
