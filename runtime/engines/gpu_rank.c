/*
 * gpu_rank.c - one rank's GPU for the ipc and nccl engines (see gpu_rank.h).
 *
 * A run is three things on the caller's stream, in its order: the caller's input copied into
 * this rank's symmetric input (when it is other memory), the kernel with this rank's argument
 * block (abi.h), and the symmetric output copied into the caller's output. The copies are
 * cuMemcpyDtoDAsync within one device, so they cost what a copy of that size costs (about
 * the device's memory bandwidth); a caller who runs on the symmetric buffers themselves
 * (cdsl_rank_buffer, or cdsl.distributed's symmetric tensors) pays neither. The peers'
 * kernels reach our symmetric buffers only after our kernel has started (the program's
 * synchronisation, proved by the checker), and our kernel starts after the copy-in, so the
 * staging adds no race; the copy-out comes after our kernel ends, which is the rank's end.
 *
 * The grid: at most one block per SM (CDSL_GPU_BLOCKS overrides it), fewer for small
 * chunks, and never more than this rank's share of the device when several ranks share it
 * (two processes on one GPU), and then at most GPU_SHARED_PROCESS_BLOCKS: the ranks spin on
 * each other, and a rank's blocks must not take the SMs its peers need. Processes on one GPU without MPS time-slice, so their
 * kernels take turns rather than run together: correct, but slow, and only for testing.
 */
#include "gpu_rank.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "gpu_common.h"
#include "gpu_device.h"
#include "program.h"

int gpu_rank_fail(RankGpu *g, CUresult r, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    rt_error(g->log, "rank %d (GPU %d): %s failed: %s", g->rank, g->gpu.ordinal, what, cu_error_string(g->cu, r));
    return CDSL_ERR_SYSTEM;
}

int gpu_rank_enter(RankGpu *g)
{
    if (g->entered++)
        return CDSL_OK;
    g->saved = NULL;
    g->cu->CtxGetCurrent(&g->saved);
    GPU_RANK_TRY(g, g->cu->CtxSetCurrent(g->gpu.ctx), "making its context current");
    return CDSL_OK;
}

void gpu_rank_leave(RankGpu *g)
{
    if (g->entered && --g->entered == 0 && g->saved != g->gpu.ctx)
        g->cu->CtxSetCurrent(g->saved);
}

/* ---- open / close -------------------------------------------------------------------------------- */

/* The caller's device: the current context's, else 0. */
static int gpu_rank_pick(RankGpu *g, int want)
{
    int count = 0;
    GPU_RANK_TRY(g, g->cu->DeviceGetCount(&count), "counting the GPUs");
    if (want < 0) {
        CUcontext cur = NULL;
        CUdevice dev = 0;
        want = g->cu->CtxGetCurrent(&cur) == CUDA_SUCCESS && cur && g->cu->CtxGetDevice(&dev) == CUDA_SUCCESS ? (int)dev
                                                                                                            : 0;
    }
    if (want >= count) {
        rt_error(g->log, "rank %d: there is no GPU %d here (%d GPU%s visible)", g->rank, want, count,
                 count == 1 ? "" : "s");
        return CDSL_ERR_SYSTEM;
    }
    g->gpu.ordinal = want;
    return CDSL_OK;
}

static int gpu_rank_device(RankGpu *g)
{
    const char *what = "";
    CUresult r = gpu_device_query(g->cu, &g->gpu, &what);
    if (r != CUDA_SUCCESS)
        return gpu_rank_fail(g, r, "%s", what);
    GPU_RANK_TRY(g, g->cu->DeviceGetUuid(&g->uuid, g->gpu.dev), "reading the GPU's UUID");
    GPU_RANK_TRY(g, g->cu->DevicePrimaryCtxRetain(&g->gpu.ctx, g->gpu.dev), "retaining its primary context");
    return CDSL_OK;
}

static int gpu_rank_words(RankGpu *g)
{
    size_t n = (size_t)g->nranks;
    char what[GPU_WHAT_BYTES];
    GPU_RANK_TRY(g, g->cu->StreamCreate(&g->own.stream, CU_STREAM_NON_BLOCKING), "creating a stream");
    GPU_RANK_TRY(g, gpu_words_make(g->cu, &g->own, g->nranks, GPU_FIXED_CHANNELS, what), "%s", what);
    GPU_RANK_TRY(g, gpu_tables_make(g->cu, &g->gpu, g->nranks, what), "%s", what);
    g->peer_bufs = calloc(n * CDSL_ABI_MAX_BUFS, sizeof *g->peer_bufs);
    g->peer_syncs = calloc(n, sizeof *g->peer_syncs);
    g->peer_ports = calloc(n, sizeof *g->peer_ports);
    if (!g->peer_bufs || !g->peer_syncs || !g->peer_ports) {
        rt_error(g->log, "rank %d: out of memory", g->rank);
        return CDSL_ERR_SYSTEM;
    }
    GPU_RANK_TRY(g, g->cu->CtxSynchronize(), "zeroing the private words");
    return CDSL_OK;
}

int gpu_rank_open(RankGpu *g, const cdsl_rank_comm *r)
{
    memset(g, 0, sizeof *g);
    g->log = r->log;
    g->rank = r->rank;
    g->nranks = r->nranks;
    g->flavour = r->cfg.flavour;
    g->multicast = (rt_flavour_of(g->flavour)->flags & RT_MULTICAST) != 0;   /* rank_comm.c checked the flavour */
    g->gpu.nranks = 1;
    g->spin_limit = r->cfg.spin_limit ? r->cfg.spin_limit : GPU_DEFAULT_SPIN_LIMIT;
    int st = g->multicast ? rt_nvls_refuse_env(g->log) : CDSL_OK;   /* before any CUDA call */
    if (!st)
        st = cu_open(&g->cu, g->log);
    if (st)
        return st;
    if (!cu_has_ipc(g->cu)) {
        rt_error(g->log, "rank %d: this CUDA driver (%d) lacks the virtual memory and IPC calls one process per "
                 "GPU needs (CUDA 12.1 or newer)", g->rank, g->cu->version);
        return CDSL_ERR_SYSTEM;
    }
    if ((st = gpu_rank_pick(g, r->cfg.device)) || (st = gpu_rank_device(g)) || (st = gpu_rank_enter(g)))
        return st;
    st = gpu_rank_words(g);
    gpu_rank_leave(g);
    return st;
}

void gpu_rank_close(RankGpu *g)
{
    if (!g->cu)
        return;
    if (g->gpu.ctx && gpu_rank_enter(g) == CDSL_OK) {
        g->cu->CtxSynchronize();        /* nothing of ours may still run on what we free */
        gpu_ports_destroy(g->ports);
        if (g->started)
            g->cu->EventDestroy(g->started);
        gpu_device_unload(g->cu, &g->gpu);
        gpu_words_free(g->cu, &g->own);
        gpu_tables_free(g->cu, &g->gpu);
        if (g->own.stream)
            g->cu->StreamDestroy(g->own.stream);
        gpu_rank_leave(g);
        g->cu->DevicePrimaryCtxRelease(g->gpu.dev);
    }
    free(g->peer_bufs);
    free(g->peer_syncs);
    free(g->peer_ports);
    free(g->loaded_src);
    cu_close(g->cu);
    memset(g, 0, sizeof *g);
}

/* ---- port channels: this rank's proxy, its blocks' requests served by a thread of this process ---- */

static int rank_site_use(void *self, int q)
{
    RankGpu *g = self;
    (void)q;        /* only this rank's lanes: its own context, on the proxy's thread too */
    CUresult r = g->cu->CtxSetCurrent(g->gpu.ctx);
    return r == CUDA_SUCCESS ? CDSL_OK : gpu_rank_fail(g, r, "making its context current for the port proxy");
}

static int rank_site_fail(void *self, int q, CUresult r, const char *what)
{
    (void)q;
    return gpu_rank_fail(self, r, "%s", what);
}

static CUdeviceptr rank_site_buf(void *self, int q, int b)
{
    return ((RankGpu *)self)->peer_bufs[(size_t)q * CDSL_ABI_MAX_BUFS + (size_t)b];
}

static CUdeviceptr rank_site_words(void *self, int q)
{
    return ((RankGpu *)self)->peer_ports[q];
}

/* A peer's GPU is not known here; false lets a refused write-value fall back to a copy, which
   is right across GPUs and only slower within one (where the driver does not refuse). */
static bool rank_site_same_device(void *self, int p, int q)
{
    (void)self;
    return p == q;
}

/* The proxy goes with the layout (its words may have moved, and the program may change); the
   next launch makes a new one, whose counts start at zero with the words. */
static void gpu_rank_ports_drop(RankGpu *g)
{
    gpu_ports_destroy(g->ports);
    g->ports = NULL;
    g->ports_ir = NULL;
}

/* After the layout: this rank's port words zeroed (a rank with no requests of its own is still
   signalled there), after its work in flight has ended. */
static int gpu_rank_ports_zero(RankGpu *g)
{
    gpu_rank_ports_drop(g);
    CUdeviceptr mine = g->peer_ports[g->rank];
    if (!mine || !g->ports_bytes)
        return CDSL_OK;
    CUresult r = g->cu->MemsetD8(mine, 0, g->ports_bytes);
    if (r == CUDA_SUCCESS)
        r = g->cu->CtxSynchronize();
    return r == CUDA_SUCCESS ? CDSL_OK : gpu_rank_fail(g, r, "zeroing its port words");
}

/* This rank's proxy for the loaded program, made at its first launch (NULL when the rank makes
   no requests). A launch inside a stream capture is refused: the proxy serves each launch as it
   is queued, and a graph's replays would have no pass. */
static int gpu_rank_ports_ready(RankGpu *g, CUstream s)
{
    if (!g->ported)
        return CDSL_OK;
    int capturing = 0;
    if (g->cu->StreamIsCapturing && g->cu->StreamIsCapturing(s, &capturing) == CUDA_SUCCESS && capturing) {
        rt_error(g->log, "rank %d: %s has port channels, whose proxy serves each launch as it is queued: it cannot "
                 "be captured into a CUDA graph", g->rank, g->ir->name);
        return CDSL_ERR_USAGE;
    }
    if (g->ports_ir == g->ir)
        return CDSL_OK;
    if (!g->peer_ports[g->rank]) {
        rt_error(g->log, "internal: rank %d runs %s without its port words laid out", g->rank, g->ir->name);
        return CDSL_ERR_USAGE;
    }
    if (!g->started)
        GPU_RANK_TRY(g, g->cu->EventCreate(&g->started, CU_EVENT_DISABLE_TIMING), "making the port proxy's event");
    PortSite site = {.cu = g->cu, .log = g->log, .first = g->rank, .last = g->rank, .spin_limit = g->spin_limit,
                     .self = g, .use = rank_site_use, .fail = rank_site_fail, .buf = rank_site_buf,
                     .words = rank_site_words, .same_device = rank_site_same_device};
    int st = gpu_ports_load(&site, g->ir, &g->ports);
    if (!st)
        g->ports_ir = g->ir;
    return st;
}

int gpu_rank_publish(RankGpu *g)
{
    int st = gpu_rank_enter(g);
    if (st)
        return st;
    CUresult r = gpu_tables_write(g->cu, &g->gpu, g->peer_bufs, g->peer_syncs, g->nranks);
    if (r == CUDA_SUCCESS)
        r = g->cu->CtxSynchronize();   /* our kernels run on other streams: be done first */
    if (r != CUDA_SUCCESS) {
        gpu_rank_leave(g);
        return gpu_rank_fail(g, r, "writing the peer tables");
    }
    st = gpu_rank_ports_zero(g);
    gpu_rank_leave(g);
    return st;
}

/* ---- this rank's code ------------------------------------------------------------------------------ */

static int gpu_rank_module(RankGpu *g, cdsl_program *p, cdsl_dtype dtype)
{
    void *cubin = NULL;
    size_t len = 0;
    int st = cdsl_compile_device_rank(p, (cdsl_backend)g->flavour, dtype, g->rank, g->gpu.arch, CDSL_CUBIN, &cubin, &len);
    if (st) {
        free(cubin);
        rt_error(g->log, "rank %d: could not build its %s code for GPU %d (%s, %s)", g->rank,
                 cdsl_backend_name((cdsl_backend)g->flavour), g->gpu.ordinal, g->gpu.name, g->gpu.arch);
        return st;
    }
    const char *what = "";
    CUresult r = gpu_device_load(g->cu, &g->gpu, cubin, &what);
    free(cubin);
    if (r != CUDA_SUCCESS)
        return gpu_rank_fail(g, r, "%s", what);
    if (!gpu_device_resident(&g->gpu)) {
        rt_error(g->log, "rank %d: GPU %d (%s) cannot keep the %d ranks placed on it resident at once", g->rank,
                 g->gpu.ordinal, g->gpu.name, g->gpu.nranks);
        return CDSL_ERR_SYSTEM;
    }
    return CDSL_OK;
}

int gpu_rank_load(RankGpu *g, cdsl_program *p, cdsl_dtype dtype)
{
    if (ir_port_proxy_op(program_ir(p)) && !cu_has_port(g->cu)) {
        rt_error(g->log, "rank %d: %s uses port channels, whose proxy needs pinned host memory, copies and stream "
                 "write-values, which this CUDA driver lacks", g->rank, program_ir(p)->name);
        return CDSL_ERR_SYSTEM;
    }
    const char *src = cdsl_emit_cuda_rank(p, (cdsl_backend)g->flavour, dtype, g->rank);
    if (!src) {     /* the emitter said why, on the program's diagnostics: say where to look */
        rt_error(g->log, "rank %d: no %s code for %s on %s elements (the program's diagnostics say why)", g->rank,
                 cdsl_backend_name((cdsl_backend)g->flavour), program_ir(p)->name, cdsl_dtype_name(dtype));
        return CDSL_ERR_USAGE;
    }
    if (ir_plan_channels(program_ir(p)) > GPU_FIXED_CHANNELS) { /* its sync words were exchanged at init */
        rt_error(g->log, "rank %d: %s uses %d channels between a pair of ranks; this engine's sync words hold %d",
                 g->rank, program_ir(p)->name, ir_plan_channels(program_ir(p)), GPU_FIXED_CHANNELS);
        return CDSL_ERR_USAGE;
    }
    if (g->gpu.module && g->loaded_src && !strcmp(g->loaded_src, src)) {
        g->ir = program_ir(p);
        g->ported = ir_port_proxy_op(g->ir) != NULL;
        return CDSL_OK;
    }
    int st = gpu_rank_enter(g);
    if (st)
        return st;
    g->cu->CtxSynchronize();
    gpu_device_unload(g->cu, &g->gpu);
    free(g->loaded_src);
    g->loaded_src = NULL;
    st = gpu_rank_module(g, p, dtype);
    if (!st && !(g->loaded_src = strdup(src))) {
        rt_error(g->log, "rank %d: out of memory", g->rank);
        st = CDSL_ERR_SYSTEM;
    }
    g->ir = st ? NULL : program_ir(p);
    g->ported = g->ir && ir_port_proxy_op(g->ir);
    gpu_rank_leave(g);
    return st;
}

/* ---- a run ----------------------------------------------------------------------------------------- */

/* Processes that share a GPU are never sure to be resident together (without MPS they take
   turns; under MPS the server places their blocks, and each process sized its share from its
   own kernel's occupancy), while each rank's blocks wait for each other at its grid barriers
   and for the peers at every wait. Such ranks keep the small grid that ran there before the
   grid grew to every SM (132 blocks each gave up waiting under MPS on one H200 from 16 MiB). */
enum { GPU_SHARED_PROCESS_BLOCKS = 32 };

/* The most blocks this rank's kernel may run with. */
static int gpu_rank_most_blocks(const RankGpu *g)
{
    long share = (long)g->gpu.blocks_per_sm * g->gpu.sm_count / (g->gpu.nranks > 0 ? g->gpu.nranks : 1);
    if (g->gpu.nranks > 1 && share > GPU_SHARED_PROCESS_BLOCKS)
        share = GPU_SHARED_PROCESS_BLOCKS;
    return (int)gpu_grid_cap(share, g->gpu.sm_count);
}

/* Every rank must launch the same grid of the same block size: block b of one rank waits for
   block b of another, and which elements a block moves depends on both (compiler/lower/partition.c).
   So each rank says what it can (gpu_rank_op_shape), rank_comm.c takes the least of all
   (gpu_rank_op_agree), and the grid follows from that and the chunk size, the same everywhere. */
static unsigned gpu_rank_grid(const RankGpu *g, size_t chunk)
{
    unsigned plan = gpu_plan_blocks(g->ir);
    if (plan)
        return plan;
    long most = g->agreed_blocks > 0 ? g->agreed_blocks : gpu_rank_most_blocks(g);
    return gpu_grid_for(most, most, chunk * (size_t)gpu_op_chunks(g->ir, g->flavour));
}

void gpu_rank_op_shape(cdsl_rank_comm *r, int *threads, int *blocks)
{
    RankGpu *g = r->engine;
    *threads = g->gpu.threads;
    *blocks = gpu_rank_most_blocks(g);
}

/* The block size becomes every rank's least (this rank's kernel takes it: it is no more than its
   own; the occupancy computed for more threads stays a safe bound). */
void gpu_rank_op_agree(cdsl_rank_comm *r, int threads, int blocks)
{
    RankGpu *g = r->engine;
    g->gpu.threads = threads;
    g->agreed_blocks = blocks;
}

/* The caller's stream belongs to our context; the caller's buffer is memory of our GPU. */
static int gpu_rank_stream_ok(RankGpu *g, CUstream s)
{
    CUcontext ctx = NULL;
    CUresult r = g->cu->StreamGetCtx(s, &ctx);
    if (r != CUDA_SUCCESS)
        return gpu_rank_fail(g, r, "looking at the stream given to the run");
    if (ctx != g->gpu.ctx) {
        rt_error(g->log, "rank %d: the stream given to the run belongs to another context than GPU %d's primary "
                 "context, where this rank runs", g->rank, g->gpu.ordinal);
        return CDSL_ERR_USAGE;
    }
    return CDSL_OK;
}

static int gpu_rank_ptr_ok(RankGpu *g, const void *p, const char *what)
{
    unsigned type = 0;
    int ordinal = -1;
    CUdeviceptr a = (CUdeviceptr)(uintptr_t)p;
    if (g->cu->PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a) != CUDA_SUCCESS ||
        type == CU_MEMORYTYPE_HOST) {
        rt_error(g->log, "rank %d: the %s given to the run (%p) is not GPU memory; this rank runs on GPU %d", g->rank,
                 what, p, g->gpu.ordinal);
        return CDSL_ERR_USAGE;
    }
    if (g->cu->PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a) == CUDA_SUCCESS &&
        type == CU_MEMORYTYPE_DEVICE && ordinal != g->gpu.ordinal) {
        rt_error(g->log, "rank %d: the %s given to the run is memory of GPU %d; this rank runs on GPU %d", g->rank,
                 what, ordinal, g->gpu.ordinal);
        return CDSL_ERR_USAGE;
    }
    return CDSL_OK;
}

static void gpu_rank_args(const RankGpu *g, size_t chunk, CdslArgs *a)
{
    gpu_args_own(a, chunk, g->spin_limit, g->rank, g->nranks, &g->gpu, &g->own);
    for (int p = 0; p < g->nranks; p++)
        gpu_args_peer(a, p, &g->peer_bufs[(size_t)p * CDSL_ABI_MAX_BUFS], g->peer_syncs[p]);
    if (g->ports)
        gpu_ports_args(g->ports, g->rank, a);
    else if (g->peer_ports[g->rank])    /* signalled, but no requests of its own */
        a->port = (unsigned long long *)(uintptr_t)g->peer_ports[g->rank];
}

static int gpu_rank_enqueue(RankGpu *g, size_t chunk, const void *in, size_t in_bytes, void *out, size_t out_bytes,
                            CUstream s)
{
    CdslArgs args;
    gpu_rank_args(g, chunk, &args);
    CUdeviceptr sym_in = (CUdeviceptr)(uintptr_t)args.buf[IR_INPUT], sym_out = (CUdeviceptr)(uintptr_t)args.buf[IR_OUTPUT];
    CUdeviceptr cin = (CUdeviceptr)(uintptr_t)in, cout = (CUdeviceptr)(uintptr_t)out;
    if (in && in_bytes && cin != sym_in)
        GPU_RANK_TRY(g, g->cu->MemcpyDtoDAsync(sym_in, cin, in_bytes, s), "copying the input in (%zu bytes)", in_bytes);
    if (g->ports) {     /* the pass first (it waits for the last one), counted from the kernel's start */
        GPU_RANK_TRY(g, g->cu->EventRecord(g->started, s), "marking the start of the kernel for the port proxy");
        int st = gpu_ports_post(g->ports, chunk, g->started);
        if (st)
            return st;
    }
    void *params[] = {&args};
    unsigned blocks = gpu_rank_grid(g, chunk);
    GPU_RANK_TRY(g, g->cu->LaunchKernel(g->gpu.fn, blocks, 1, 1, (unsigned)g->gpu.threads, 1, 1, 0, s, params, NULL),
                 "launching the kernel (%u blocks of %d threads)", blocks, g->gpu.threads);
    if (out && out_bytes && cout != sym_out)
        GPU_RANK_TRY(g, g->cu->MemcpyDtoDAsync(cout, sym_out, out_bytes, s), "copying the output out (%zu bytes)",
                     out_bytes);
    return CDSL_OK;
}

int gpu_rank_launch(RankGpu *g, size_t chunk, const void *in, size_t in_bytes, void *out, size_t out_bytes,
                    void *stream)
{
    if (!g->gpu.fn || !g->ir) {
        rt_error(g->log, "internal: rank %d runs without loaded code", g->rank);
        return CDSL_ERR_USAGE;
    }
    int st = gpu_rank_enter(g);
    if (st)
        return st;
    CUstream s = stream ? (CUstream)stream : g->own.stream;
    if ((uintptr_t)stream > 2)          /* 1, 2: the legacy and per-thread default streams of
                                           the current context, which is ours now */
        st = gpu_rank_stream_ok(g, s);
    /* The caller's memory is looked at once per new pointer (not in a graph capture that
     * repeats a warm-up run), and the symmetric buffers are ours. */
    const void *sym_in = (const void *)(uintptr_t)g->peer_bufs[(size_t)g->rank * CDSL_ABI_MAX_BUFS + IR_INPUT];
    const void *sym_out = (const void *)(uintptr_t)g->peer_bufs[(size_t)g->rank * CDSL_ABI_MAX_BUFS + IR_OUTPUT];
    if (!st && in && in_bytes && in != sym_in && in != g->checked_in && !(st = gpu_rank_ptr_ok(g, in, "input")))
        g->checked_in = in;
    if (!st && out && out_bytes && out != sym_out && out != g->checked_out && !(st = gpu_rank_ptr_ok(g, out, "output")))
        g->checked_out = out;
    if (!st)
        st = gpu_rank_ports_ready(g, s);
    if (!st)
        st = gpu_rank_enqueue(g, chunk, in, in_bytes, out, out_bytes, s);
    gpu_rank_leave(g);
    return st;
}

int gpu_rank_op_load(cdsl_rank_comm *r, cdsl_program *p, cdsl_dtype dtype)
{
    return gpu_rank_load(r->engine, p, dtype);
}

int gpu_rank_op_run(cdsl_rank_comm *r, size_t chunk, const void *in, size_t in_bytes, void *out, size_t out_bytes,
                    void *stream)
{
    return gpu_rank_launch(r->engine, chunk, in, in_bytes, out, out_bytes, stream);
}

int gpu_rank_op_zero(cdsl_rank_comm *r, void *at, size_t bytes)
{
    RankGpu *g = r->engine;
    int st = gpu_rank_enter(g);
    if (st)
        return st;
    CUresult e = g->cu->CtxSynchronize(); /* this rank's launches in flight have read their packets */
    if (e == CUDA_SUCCESS)
        e = g->cu->MemsetD8((CUdeviceptr)at, 0, bytes);
    if (e == CUDA_SUCCESS)
        e = g->cu->CtxSynchronize();
    gpu_rank_leave(g);
    return e == CUDA_SUCCESS ? CDSL_OK : gpu_rank_fail(g, e, "zeroing the packet slots");
}

int gpu_rank_status(RankGpu *g, int dead, long dead_pid)
{
    unsigned rec[CDSL_ERROR_WORDS] = {0};
    int st = gpu_rank_enter(g);
    if (st)
        return st;
    CUresult r = g->cu->MemcpyDtoH(rec, g->own.error, sizeof rec);
    /* The pass of the last launch, ended; given up at once when the kernel gave up (its blocks
       make no more requests), rather than after the proxy's own bound. */
    int ports = CDSL_OK;
    if (g->ports && r == CUDA_SUCCESS && rec[0])
        gpu_ports_reset(g->ports);
    else if (g->ports)
        ports = gpu_ports_drain(g->ports);
    gpu_rank_leave(g);
    if (r != CUDA_SUCCESS) {
        gpu_rank_fail(g, r, "reading the error record");
        return CDSL_ERR_RUNTIME;        /* a kernel fault is sticky: the context is gone */
    }
    if (!rec[0])
        return ports;
    gpu_report_record(g->log, g->ir, g->nranks, g->rank, rec, g->spin_limit);
    if (dead >= 0)
        rt_error(g->log, "rank %d: rank %d's process (pid %ld) has exited", g->rank, dead, dead_pid);
    return CDSL_ERR_RUNTIME;
}
