/*
 * perf_rank.c - cdsl-perf with one process per rank (perf_rank.h): each process compiles the
 * program for every rank (the checker checks them all) and runs its own through the per-rank
 * engines (sim: CPU processes; ipc, nccl: one GPU each), on the communicator's symmetric
 * buffers, so that what is timed is the collective alone.
 *
 * Every rank's result reaches the others through a small allgather of our own (GATHER_SOURCE,
 * checked like any program) on the same communicator: after the ranks join (each rank's pid,
 * host and device, for the header) and after each cell (its time, wrong elements and status),
 * as nccl-tests gathers through MPI. Times are the ranks' mean (nccl-tests' -a 1), wrong
 * elements their sum. A cell that failed on one rank fails on every rank's row.
 *
 * On a GPU the CUDA driver (loaded with dlopen, so that cdsl-perf builds without a toolkit)
 * copies the pattern in and the result out, and cuCtxSynchronize waits for the runs, which go
 * to the communicator's own stream.
 */
#include "perf_rank.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What each rank tells the others (a whole number of 4-byte words: the gather runs as u32). */
typedef struct Note {
    int32_t status, pid, device, pci_domain, pci_bus, pci_device, driver, pad;
    uint64_t wrong;
    double us;
    char host[64], name[96];
} Note;
_Static_assert(sizeof(Note) % 4 == 0, "a note is whole 4-byte words");

static const char GATHER_SOURCE[] =
    "// cdsl-perf's own: each rank's note to every rank (a ring allgather over peers).\n"
    "program cdsl_perf_gather implements allgather {\n"
    "    let next = peer((rank + 1) % nranks);\n"
    "    let prev = peer((rank + nranks - 1) % nranks);\n"
    "    copy(output[rank], input[0]);\n"
    "    prev.signal(relaxed);\n"
    "    next.wait(relaxed);\n"
    "    for step in 0 .. nranks - 1 {\n"
    "        let c = (rank + nranks - step) % nranks;\n"
    "        next.put(output[c], output[c]);\n"
    "        next.signal();\n"
    "        prev.wait();\n"
    "    }\n"
    "}\n";

typedef unsigned long long CUdeviceptr;
typedef struct Cuda {
    void *lib, *ctx;
    int dev;
    int (*Init)(unsigned);
    int (*DeviceGetCount)(int *);
    int (*DeviceGet)(int *, int);
    int (*DeviceGetName)(char *, int, int);
    int (*DeviceGetAttribute)(int *, int, int);
    int (*DriverGetVersion)(int *);
    int (*PrimaryCtxRetain)(void **, int);
    int (*PrimaryCtxRelease)(int);
    int (*CtxSetCurrent)(void *);
    int (*CtxSynchronize)(void);
    int (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    int (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
} Cuda;

struct PerfRank {
    const PerfLaunch *L;
    cdsl_rank_comm *comm;
    cdsl_engine engine;
    Cuda cu;                    /* lib NULL on sim */
    cdsl_program *gather;
    Note *notes;                /* [size]: the last gather */
    cdsl_device_info *devices;  /* [size] */
    unsigned char *host_in, *host_out;
    size_t host_bytes;
};

/* ---- the CUDA driver ----------------------------------------------------------------------------- */

static int cuda_open(Cuda *cu)
{
    if (!(cu->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)))
        return -1;
    struct { void **fn; const char *name; } syms[] = {
        {(void **)&cu->Init, "cuInit"}, {(void **)&cu->DeviceGetCount, "cuDeviceGetCount"},
        {(void **)&cu->DeviceGet, "cuDeviceGet"}, {(void **)&cu->DeviceGetName, "cuDeviceGetName"},
        {(void **)&cu->DeviceGetAttribute, "cuDeviceGetAttribute"}, {(void **)&cu->DriverGetVersion, "cuDriverGetVersion"},
        {(void **)&cu->PrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
        {(void **)&cu->PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"}, {(void **)&cu->CtxSetCurrent, "cuCtxSetCurrent"},
        {(void **)&cu->CtxSynchronize, "cuCtxSynchronize"}, {(void **)&cu->MemcpyHtoD, "cuMemcpyHtoD_v2"},
        {(void **)&cu->MemcpyDtoH, "cuMemcpyDtoH_v2"},
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++)
        if (!(*syms[i].fn = dlsym(cu->lib, syms[i].name)))
            return -1;
    return cu->Init(0) ? -1 : 0;
}

static void cuda_close(Cuda *cu)
{
    if (cu->ctx)
        cu->PrimaryCtxRelease(cu->dev);
    if (cu->lib)
        dlclose(cu->lib);
    memset(cu, 0, sizeof *cu);
}

static int copy_in(PerfRank *R, void *dst, const void *src, size_t n)
{
    if (!n)
        return 0;
    if (!R->cu.lib) {
        memcpy(dst, src, n);
        return 0;
    }
    return R->cu.MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, n) ? -1 : 0;
}

static int copy_out(PerfRank *R, void *dst, const void *src, size_t n)
{
    if (!n)
        return 0;
    if (!R->cu.lib) {
        memcpy(dst, src, n);
        return 0;
    }
    return R->cu.MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, n) ? -1 : 0;
}

/* The runs enqueued so far have finished (sim: they finish before cdsl_rank_run returns). */
static int wait_runs(PerfRank *R)
{
    if (R->cu.lib && R->cu.CtxSynchronize()) {
        fprintf(stderr, "cdsl-perf: error: rank %d: cuCtxSynchronize failed\n", R->L->rank);
        return CDSL_ERR_SYSTEM;
    }
    return cdsl_rank_status(R->comm);
}

static int host_room(PerfRank *R, size_t bytes)
{
    if (bytes <= R->host_bytes)
        return 0;
    unsigned char *in = realloc(R->host_in, bytes), *out = in ? realloc(R->host_out, bytes) : NULL;
    if (in)
        R->host_in = in;
    if (out)
        R->host_out = out;
    if (!in || !out) {
        fprintf(stderr, "cdsl-perf: error: rank %d: out of memory\n", R->L->rank);
        return CDSL_ERR_SYSTEM;
    }
    R->host_bytes = bytes;
    return 0;
}

/* ---- the gather ---------------------------------------------------------------------------------- */

static int gather(PerfRank *R, const Note *mine)
{
    int n = R->L->size, rc = cdsl_rank_alloc(R->comm, R->gather, sizeof *mine);
    void *in = NULL, *out = NULL;
    if (!rc)
        rc = cdsl_rank_buffer(R->comm, CDSL_BUF_INPUT, &in);
    if (!rc)
        rc = cdsl_rank_buffer(R->comm, CDSL_BUF_OUTPUT, &out);
    if (!rc && copy_in(R, in, mine, sizeof *mine))
        rc = CDSL_ERR_SYSTEM;
    if (!rc)
        rc = cdsl_rank_run(R->comm, R->gather, CDSL_U32, sizeof *mine, NULL, NULL);
    if (!rc)
        rc = wait_runs(R);
    if (!rc && copy_out(R, R->notes, out, (size_t)n * sizeof *mine))
        rc = CDSL_ERR_SYSTEM;
    return rc;
}

/* ---- joining ------------------------------------------------------------------------------------- */

static int make_id(const PerfLaunch *L, int backend, cdsl_unique_id *id)
{
    if (L->rank)
        return CDSL_OK;
    int rc = backend == CDSL_BACKEND_SIM ? cdsl_get_unique_id_engine(CDSL_ENGINE_SIM, id) : cdsl_get_unique_id(id);
    if (!rc && backend != CDSL_BACKEND_SIM && backend != CDSL_BACKEND_AUTO && cdsl_unique_id_engine(id) == CDSL_ENGINE_SIM) {
        fprintf(stderr, "cdsl-perf: error: --backend %s needs a GPU engine (ipc or nccl), and this machine has no GPU "
                "(CDSL_ENGINE=%s)\n", cdsl_backend_name((cdsl_backend)backend), getenv("CDSL_ENGINE") ? getenv("CDSL_ENGINE") : "");
        return CDSL_ERR_SYSTEM;
    }
    return rc;
}

/* On a GPU engine: the driver, this rank's device and its primary context. */
static int open_gpu(PerfRank *R, const cdsl_comm_opts *o, cdsl_rank_config *cfg)
{
    int count = 0;
    if (cuda_open(&R->cu) || R->cu.DeviceGetCount(&count) || count < 1) {
        fprintf(stderr, "cdsl-perf: error: rank %d: the %s engine needs a GPU, and the CUDA driver finds none\n",
                R->L->rank, cdsl_engine_name(R->engine));
        return CDSL_ERR_SYSTEM;
    }
    cfg->device = (o->first_device + R->L->local_rank) % count;
    cfg->flavour = o->backend == CDSL_BACKEND_NVLS ? CDSL_BACKEND_NVLS : CDSL_BACKEND_P2P;
    if (R->cu.DeviceGet(&R->cu.dev, cfg->device) || R->cu.PrimaryCtxRetain(&R->cu.ctx, R->cu.dev) ||
        R->cu.CtxSetCurrent(R->cu.ctx)) {
        fprintf(stderr, "cdsl-perf: error: rank %d: cannot use GPU %d\n", R->L->rank, cfg->device);
        return CDSL_ERR_SYSTEM;
    }
    return CDSL_OK;
}

static void describe_me(PerfRank *R, Note *me)
{
    memset(me, 0, sizeof *me);
    me->pid = (int32_t)getpid();
    gethostname(me->host, sizeof me->host - 1);
    me->device = -1;
    snprintf(me->name, sizeof me->name, "%s", R->cu.lib ? "GPU" : "sim (a CPU process)");
    if (!R->cu.lib)
        return;
    int v;
    me->device = cdsl_rank_comm_device(R->comm);
    R->cu.DeviceGetName(me->name, (int)sizeof me->name - 1, R->cu.dev);
    me->pci_bus = R->cu.DeviceGetAttribute(&v, 33, R->cu.dev) ? 0 : v;       /* CU_DEVICE_ATTRIBUTE_PCI_BUS_ID */
    me->pci_device = R->cu.DeviceGetAttribute(&v, 34, R->cu.dev) ? 0 : v;    /* ..._PCI_DEVICE_ID */
    me->pci_domain = R->cu.DeviceGetAttribute(&v, 50, R->cu.dev) ? 0 : v;    /* ..._PCI_DOMAIN_ID */
    me->driver = R->cu.DriverGetVersion(&v) ? 0 : v;
}

static int join(PerfRank *R, int backend, double timeout_s, const cdsl_comm_opts *o)
{
    const PerfLaunch *L = R->L;
    cdsl_unique_id id;
    char why[768];
    int rc = make_id(L, backend, &id);
    if (rc)
        return rc;
    if (perf_launch_share_id(L, &id, timeout_s > 0 ? timeout_s : 60, why, sizeof why)) {
        fprintf(stderr, "cdsl-perf: error: %s\n", why);
        return CDSL_ERR_SYSTEM;
    }
    R->engine = cdsl_unique_id_engine(&id);
    cdsl_rank_config cfg;
    cdsl_rank_config_init(&cfg);
    if (timeout_s > 0)
        cfg.timeout_s = timeout_s;
    cfg.spin_limit = o->spin_limit;
    cfg.seed = o->seed;
    cfg.jitter_us = o->jitter_us;
    if (R->engine != CDSL_ENGINE_SIM && (rc = open_gpu(R, o, &cfg)))
        return rc;
    rc = cdsl_comm_init_rank(&R->comm, L->size, &id, L->rank, &cfg);
    perf_launch_done(L);
    return rc;
}

int perf_rank_open(PerfRank **out, const PerfLaunch *L, int backend, double timeout_s, const cdsl_comm_opts *o)
{
    PerfRank *R = calloc(1, sizeof *R);
    *out = R;
    if (!R || !(R->notes = calloc((size_t)L->size, sizeof *R->notes)) ||
        !(R->devices = calloc((size_t)L->size, sizeof *R->devices))) {
        fprintf(stderr, "cdsl-perf: error: out of memory\n");
        return CDSL_ERR_SYSTEM;
    }
    R->L = L;
    int rc = join(R, backend, timeout_s, o);
    cdsl_compile_opts g = {.path = "<cdsl-perf gather>", .source = GATHER_SOURCE, .nranks = L->size, .color = 0,
                           .stop_after = CDSL_STAGE_CHECK};
    if (!rc)
        rc = cdsl_compile(&g, &R->gather);
    Note me;
    if (!rc) {
        describe_me(R, &me);
        rc = gather(R, &me);
    }
    for (int r = 0; !rc && r < L->size; r++) {
        const Note *n = &R->notes[r];
        R->devices[r] = (cdsl_device_info){.device = n->device, .pci_domain = n->pci_domain, .pci_bus = n->pci_bus,
                                           .pci_device = n->pci_device, .driver_version = n->driver};
        memcpy(R->devices[r].name, n->name, sizeof n->name);
        R->devices[r].name[sizeof R->devices[r].name - 1] = 0;
    }
    return rc;
}

void perf_rank_close(PerfRank *R)
{
    if (!R)
        return;
    cdsl_rank_comm_destroy(R->comm);
    cdsl_program_destroy(R->gather);
    cuda_close(&R->cu);
    free(R->notes);
    free(R->devices);
    free(R->host_in);
    free(R->host_out);
    free(R);
}

const char *perf_rank_engine(const PerfRank *R)
{
    return cdsl_engine_name(R->engine);
}

bool perf_rank_measured(const PerfRank *R)
{
    return R->engine != CDSL_ENGINE_SIM;
}

const cdsl_device_info *perf_rank_device(const PerfRank *R, int r, int *pid, const char **host)
{
    *pid = R->notes[r].pid;
    *host = R->notes[r].host;
    return &R->devices[r];
}

/* ---- a cell ---------------------------------------------------------------------------------------- */

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int runs(PerfRank *R, cdsl_program *p, cdsl_dtype t, size_t chunk, int n)
{
    int rc = CDSL_OK;
    for (int i = 0; !rc && i < n; i++)
        rc = cdsl_rank_run(R->comm, p, t, chunk, NULL, NULL);
    return rc ? rc : wait_runs(R);
}

/* -n runs back to back (or each waited for, -z), -G times over: the mean of one. */
static int timed(PerfRank *R, cdsl_program *p, cdsl_dtype t, size_t chunk, const PerfRunPlan *plan, double *us)
{
    int reps = plan->graph > 0 ? plan->graph : 1, rc = CDSL_OK;
    double t0 = now_us();
    for (int g = 0; !rc && g < reps; g++)
        for (int i = 0; !rc && i < plan->iters; i += plan->blocking ? 1 : plan->iters)
            rc = runs(R, p, t, chunk, plan->blocking ? 1 : plan->iters);
    *us = (now_us() - t0) / ((double)reps * plan->iters);
    return rc;
}

/* Fresh inputs (the verification pattern), the output all-ones bytes, one run, the output
 * against the postcondition. */
static int checked_run(PerfRank *R, cdsl_program *p, cdsl_dtype t, size_t chunk, unsigned long long *wrong)
{
    void *in = NULL, *out = NULL;
    size_t in_bytes = cdsl_rank_buffer_bytes(R->comm, CDSL_BUF_INPUT), out_bytes = cdsl_rank_buffer_bytes(R->comm, CDSL_BUF_OUTPUT);
    int rc = host_room(R, in_bytes > out_bytes ? in_bytes : out_bytes);
    if (!rc && in_bytes)
        rc = cdsl_rank_buffer(R->comm, CDSL_BUF_INPUT, &in);
    if (!rc && out_bytes)
        rc = cdsl_rank_buffer(R->comm, CDSL_BUF_OUTPUT, &out);
    if (!rc && in_bytes)
        rc = cdsl_pattern_fill(p, t, R->L->rank, chunk, R->host_in, in_bytes);
    if (!rc) {
        memset(R->host_out, 0xff, out_bytes);
        /* the output first: in place, the input is a part of it */
        if (copy_in(R, out, R->host_out, out_bytes) || copy_in(R, in, R->host_in, in_bytes))
            rc = CDSL_ERR_SYSTEM;
    }
    /* cuMemcpyHtoD from pageable memory may return before its DMA has landed, and the run goes
       to the communicator's own (non-blocking) stream: wait for the copies first. */
    if (!rc && R->cu.lib && R->cu.CtxSynchronize())
        rc = CDSL_ERR_SYSTEM;
    if (!rc)
        rc = runs(R, p, t, chunk, 1);
    if (!rc && copy_out(R, R->host_out, out, out_bytes))
        rc = CDSL_ERR_SYSTEM;
    if (!rc)
        rc = cdsl_pattern_check(p, t, R->L->rank, chunk, R->host_out, out_bytes, wrong, stderr);
    return rc;
}

static int run_here(PerfRank *R, cdsl_program *p, size_t size, cdsl_dtype t, const PerfRunPlan *plan, Note *me)
{
    size_t chunk = 4;       /* size 0 (a barrier): chunks of 4 bytes for any scratch */
    int rc = size ? cdsl_chunk_bytes(p, size, &chunk, NULL) : CDSL_OK;
    if (!rc)
        rc = cdsl_rank_alloc(R->comm, p, chunk);
    for (int k = 0; !rc && k < plan->warmup_runs; k += plan->call_runs)
        rc = runs(R, p, t, chunk, plan->call_runs);
    if (!rc)
        rc = timed(R, p, t, chunk, plan, &me->us);
    for (int c = 0; (!rc || rc == CDSL_ERR_VERIFY) && c < plan->check; c++) {
        unsigned long long wrong = 0;
        int st = checked_run(R, p, t, chunk, &wrong);
        me->wrong += wrong;
        rc = st ? st : rc;
    }
    return rc;
}

int perf_rank_cell(PerfRank *R, cdsl_program *p, size_t size, cdsl_dtype t, const PerfRunPlan *plan, PerfCell *cell)
{
    Note me = {0};
    *cell = (PerfCell){.ran = true, .check = {.rank = -1}};
    me.status = run_here(R, p, size, t, plan, &me);
    cell->status = me.status;
    cell->us = me.us;
    cell->check.wrong = me.wrong;
    if (me.status && me.status != CDSL_ERR_VERIFY)
        return me.status;       /* the communicator has failed: no gather; the peers fail too */
    int rc = gather(R, &me);
    if (rc)
        return cell->status = rc;
    double sum = 0;
    cell->check.wrong = 0;
    for (int r = 0; r < R->L->size; r++) {
        const Note *n = &R->notes[r];
        sum += n->us;
        if (n->wrong && cell->check.rank < 0)
            cell->check.rank = r;
        cell->check.wrong += n->wrong;
        if (n->status && (!cell->status || cell->status == CDSL_ERR_VERIFY))
            cell->status = n->status;
    }
    cell->us = sum / R->L->size;
    return cell->status;
}
