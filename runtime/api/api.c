/*
 * api.c - communicators and runs: the running half of cdsl.h, over runtime/engines/backend.h.
 *
 * A communicator is a backend's state plus what the API checks before handing a call down:
 * the rank count, the buffer layout of the last allocation (so a program is only run on
 * buffers made for its layout, whether the backend allocated them or the caller registered
 * its own), and bounds of every host <-> buffer transfer. A run is either synchronous
 * (cdsl_run) or enqueued on the caller's streams (cdsl_run_async, then cdsl_comm_status once
 * the caller has synchronised them); both check and load the program the same way. Backends
 * get a message stream of their own (a stdio cookie that forwards to the user's log), which
 * lets the default choice probe p2p quietly: on a machine without GPUs, p2p's refusal is not
 * shown, and the communicator silently becomes a sim one; on fewer GPUs than ranks, p2p is
 * tried with several ranks per GPU. nvls is never chosen by default.
 *
 * In place (a program compiled with cdsl_compile_opts.in_place): one of input and output is a
 * part of the other on every rank (ir_in_place). The program's operations name the holder
 * only, so the backend never touches its own copy of the aliased buffer; transfers and the
 * address of the aliased buffer go to its part of the holder instead. Registered buffers are
 * checked for overlap: two buffers of a rank may share memory only as that in-place form, and
 * only for a program compiled in place.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "backend.h"
#include "backends.h"
#include "cdsl.h"
#include "last_error.h"
#include "log.h"
#include "program.h"
#include "program_layout.h"
#include "verify.h"

struct cdsl_comm {
    const RtBackend *backend;       /* its row of the registry (backends.h) */
    const RtBackendOps *ops;        /* backend->ops */
    void *state;
    RtConfig cfg;                   /* cfg.log is `log` below */
    FILE *user_log;                 /* where messages end up */
    FILE *log;                      /* every message's stream: forwards to user_log unless muted */
    bool muted;
    RtLastError *errs;              /* what passed through log: cdsl_get_last_error */
    /* The last allocation or registration (the caller's buffers): */
    bool allocated;
    int nbufs;
    int chunks[IR_MAX_BUFS];
    bool internal[IR_MAX_BUFS];     /* the runtime's own (the packet slots), never the caller's */
    size_t bytes[IR_MAX_BUFS];
    size_t chunk_bytes;
    /* In place (ir_in_place): `aliased` is the part of `holder` that starts at chunk
     * rank * stride of it on each rank; aliased is -1 otherwise. */
    int aliased, holder, stride;
};

/* ---- the backends' message stream ---------------------------------------------------------- */

static ssize_t comm_log_write(void *cookie, const char *buf, size_t len)
{
    cdsl_comm *c = cookie;
    if (!c->muted) {
        rt_last_error_feed(c->errs, buf, len);
        fwrite(buf, 1, len, c->user_log);
        fflush(c->user_log);
    } else {   /* why the default choice did not take a GPU backend: only on the debug log */
        const char *prefix = "cdsl: error: ";
        bool error = len > strlen(prefix) && !strncmp(buf, prefix, strlen(prefix));
        const char *text = error ? buf + strlen(prefix) : buf;
        int n = (int)(len - (size_t)(text - buf));
        log_msg(LOG_INFO, "backend %s at %d per GPU not used: %.*s", c->backend->name, c->cfg.ranks_per_gpu,
                n > 0 && text[n - 1] == '\n' ? n - 1 : n, text);
    }
    return (ssize_t)len;
}

static FILE *comm_log_open(cdsl_comm *c)
{
    cookie_io_functions_t fns = {.write = comm_log_write};
    FILE *f = fopencookie(c, "w", fns);
    if (f)
        setvbuf(f, NULL, _IOLBF, BUFSIZ);
    return f;
}

FILE *rt_comm_log(const cdsl_comm *c)
{
    return c ? c->log : stderr;
}

const char *cdsl_get_last_error(const cdsl_comm *c)
{
    return rt_last_error_text(c ? c->errs : NULL);
}

/* ---- create / destroy ---------------------------------------------------------------------- */

void cdsl_comm_opts_init(cdsl_comm_opts *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->backend = CDSL_BACKEND_AUTO;
}

static int comm_opts_ok(const cdsl_comm_opts *o, FILE *log)
{
    if (o->backend != CDSL_BACKEND_AUTO && !rt_backend_of(RT_ALL_RANKS, o->backend)) {
        rt_error(log, "unknown backend %d", o->backend);
        return CDSL_ERR_USAGE;
    }
    if (o->nranks < 1 || o->nranks > IR_MAX_RANKS) {
        rt_error(log, "a communicator has 1 to %d ranks, not %d", IR_MAX_RANKS, o->nranks);
        return CDSL_ERR_USAGE;
    }
    if (o->ranks_per_gpu < 0 || o->first_device < 0 || o->jitter_us < 0) {
        rt_error(log, "ranks per GPU, first device and jitter cannot be negative");
        return CDSL_ERR_USAGE;
    }
    return CDSL_OK;
}

static int comm_create_on(cdsl_comm *c, const RtBackend *b)
{
    if (c->cfg.ranks_per_gpu < 1)
        c->cfg.ranks_per_gpu = 1;
    c->backend = b;
    c->ops = b->ops;
    c->state = NULL;
    int rc = c->ops->create(&c->cfg, &c->state);
    if (rc)
        c->state = NULL; /* a failed create owns nothing */
    return rc;
}

/* A backend on GPUs: unless the caller fixed the ranks per GPU, it is tried with 1, 2, 4, ...
 * ranks per GPU up to all of them on one, so that a machine with fewer GPUs than ranks still
 * runs on them. */
static int comm_create_spread(cdsl_comm *c, const RtBackend *b, int fixed)
{
    int n = c->cfg.nranks, rc = CDSL_ERR_SYSTEM;
    for (int rpg = fixed ? fixed : 1; rc != CDSL_OK; rpg = rpg * 2 < n ? rpg * 2 : n) {
        c->cfg.ranks_per_gpu = rpg;
        rc = comm_create_on(c, b);
        if (fixed || rpg >= n)
            break;
    }
    return rc;
}

/* The backends in the registry's "auto" order (p2p, then sim), the first that can run here.
 * The refusals of all but the last are not shown: not having a GPU is the normal case on a
 * CPU machine, and the caller can ask which backend was chosen. */
static int comm_create_default(cdsl_comm *c)
{
    int fixed = c->cfg.ranks_per_gpu, rc = CDSL_ERR_SYSTEM;
    const RtBackend *b;
    for (int i = 0; rc != CDSL_OK && (b = rt_backend_auto(RT_ALL_RANKS, i)); i++) {
        c->muted = rt_backend_auto(RT_ALL_RANKS, i + 1) != NULL;
        rt_last_error_quiet(c->muted);  /* nor are its refusals this thread's last error */
        if (b->flags & RT_GPU) {
            rc = comm_create_spread(c, b, fixed);
        } else {
            c->cfg.ranks_per_gpu = 1;
            rc = comm_create_on(c, b);
        }
        fflush(c->log);
    }
    c->muted = false;
    rt_last_error_quiet(false);
    return rc;
}

static void comm_free(cdsl_comm *c)
{
    if (c->state)
        c->ops->destroy(c->state);
    if (c->log)
        fclose(c->log);
    rt_last_error_free(c->errs);
    free(c);
}

int cdsl_comm_create(const cdsl_comm_opts *opts, cdsl_comm **out)
{
    FILE *user = opts && opts->log ? opts->log : stderr;
    if (out)
        *out = NULL;
    if (!opts || !out) {
        rt_error(user, "cdsl_comm_create needs options and a place for the communicator");
        return CDSL_ERR_USAGE;
    }
    int rc = comm_opts_ok(opts, user);
    if (rc)
        return rc;
    cdsl_comm *c = calloc(1, sizeof *c);
    if (c) {
        c->user_log = user;
        c->errs = rt_last_error_new();
        c->log = comm_log_open(c);
        c->aliased = c->holder = -1;
    }
    if (!c || !c->log || !c->errs) {
        if (c && c->log)
            fclose(c->log);
        if (c)
            rt_last_error_free(c->errs);
        free(c);
        rt_error(user, "out of memory creating a communicator");
        return CDSL_ERR_SYSTEM;
    }
    c->cfg = (RtConfig){
        .nranks = opts->nranks,
        .ranks_per_gpu = opts->ranks_per_gpu,
        .first_device = opts->first_device,
        .seed = opts->seed,
        .jitter_us = opts->jitter_us,
        .spin_limit = opts->spin_limit,
        .log = c->log,
    };
    double t = log_clock();
    rc = opts->backend == CDSL_BACKEND_AUTO ? comm_create_default(c)
                                            : comm_create_on(c, rt_backend_of(RT_ALL_RANKS, opts->backend));
    if (rc) {
        comm_free(c);
        return rc;
    }
    bool cpu = !(c->backend->flags & RT_GPU);
    log_msg(LOG_INFO, "backend %s: %d rank%s%s, %s (%.3f ms to create)", c->backend->name, c->cfg.nranks,
            c->cfg.nranks == 1 ? "" : "s", cpu ? " as CPU threads" : "",
            opts->backend == CDSL_BACKEND_AUTO ? "chosen by default" : "asked for", log_ms_since(t));
    if (cpu && (c->cfg.seed || c->cfg.jitter_us))
        log_msg(LOG_INFO, "%s: jitter seed %u, up to %d us", c->backend->name, c->cfg.seed,
                c->cfg.jitter_us ? c->cfg.jitter_us : 20);
    *out = c;
    return CDSL_OK;
}

void cdsl_comm_destroy(cdsl_comm *c)
{
    if (c)
        comm_free(c);
}

cdsl_backend cdsl_comm_backend(const cdsl_comm *c)
{
    return c ? (cdsl_backend)c->backend->id : (cdsl_backend)CDSL_BACKEND_AUTO;
}

int cdsl_comm_nranks(const cdsl_comm *c)
{
    return c ? c->cfg.nranks : 0;
}

int cdsl_comm_device_info(const cdsl_comm *c, int rank, cdsl_device_info *info)
{
    if (!c || !info || rank < 0 || rank >= c->cfg.nranks) {
        rt_error(c ? c->log : NULL, "cdsl_comm_device_info needs a communicator, one of its ranks and a "
                 "place for the answer");
        return CDSL_ERR_USAGE;
    }
    if (!(c->backend->flags & RT_GPU)) {
        *info = (cdsl_device_info){.device = -1};
        snprintf(info->name, sizeof info->name, "%s (CPU threads)", c->backend->name);
        return CDSL_OK;
    }
    int rpg = c->cfg.ranks_per_gpu > 0 ? c->cfg.ranks_per_gpu : 1;
    return rt_device_describe(c->cfg.first_device + rank / rpg, info, c->log);
}

/* ---- a program's buffers ------------------------------------------------------------------- */

int cdsl_program_nbufs(const cdsl_program *p)
{
    const IrProgram *ir = program_ir(p);
    return ir ? ir->nbufs : 0;
}

int cdsl_program_buf_chunks(const cdsl_program *p, int buf)
{
    const IrProgram *ir = program_ir(p);
    if (!ir || buf < 0 || buf >= ir->nbufs)
        return -1;
    return ir->bufs[buf].nchunks;
}

const char *cdsl_program_buf_name(const cdsl_program *p, int buf)
{
    const IrProgram *ir = program_ir(p);
    if (!ir || buf < 0 || buf >= ir->nbufs)
        return NULL;
    return ir->bufs[buf].name;
}

/* ---- buffers --------------------------------------------------------------------------------- */

static const IrProgram *comm_ir(cdsl_comm *c, const cdsl_program *p)
{
    if (!program_ir(p)) {
        rt_error(c->log, "the program was not evaluated; there is nothing to run");
        return NULL;
    }
    return program_ir(p);
}

/* bytes[b] = chunks(b) * chunk_bytes for p's layout, refusing a chunk size that is not a
 * multiple of 4, a buffer whose size does not fit in a size_t, and an in-place layout whose
 * aliased buffer does not fit in its holder (program_layout.c). */
static int comm_layout_bytes(cdsl_comm *c, const IrProgram *ir, size_t chunk_bytes, size_t *bytes)
{
    if (!rt_in_place_fits(ir, c->log))
        return CDSL_ERR_USAGE;
    int rc = rt_chunk_ok(chunk_bytes, 1, true, c->log, "");
    if (rc || (rc = rt_size_class_ok(ir, chunk_bytes, c->log, "")))
        return rc;
    int b = rt_layout_bytes(ir, chunk_bytes, SIZE_MAX, bytes);
    if (b < 0)
        return CDSL_OK;
    rt_error(c->log, "out of memory: buffer %s of %zu chunks of %zu bytes", ir->bufs[b].name,
             (size_t)ir->bufs[b].nchunks, chunk_bytes);
    return CDSL_ERR_SYSTEM;
}

/* The backend now holds buffers for ir's layout: remember it, so runs can be checked. */
static void comm_set_layout(cdsl_comm *c, const IrProgram *ir, size_t chunk_bytes, const size_t *bytes)
{
    c->allocated = true;
    c->nbufs = ir->nbufs;
    c->chunk_bytes = chunk_bytes;
    for (int b = 0; b < ir->nbufs; b++) {
        c->chunks[b] = ir->bufs[b].nchunks;
        c->internal[b] = ir->bufs[b].internal;
        c->bytes[b] = bytes[b];
    }
    c->aliased = c->holder = -1;
    c->stride = 0;
    if (ir_in_place(ir, &c->aliased, &c->holder))
        c->stride = ir_in_place_first(ir, 1);
}

/* In place: where rank's aliased buffer starts in its holder, in bytes (rt_alias_offset for
 * the program the layout was made for: every collective's window starts at rank * stride). */
static size_t comm_alias_offset(const cdsl_comm *c, int rank)
{
    return (size_t)rank * (size_t)c->stride * c->chunk_bytes;
}

/* Two buffers of one rank that share memory are refused unless they are the in-place form of
 * a program compiled in place (program_layout.h). */
static int comm_ptrs_alias_ok(cdsl_comm *c, const IrProgram *ir, size_t chunk_bytes, const size_t *bytes,
                              void *const *ptrs, int r)
{
    int aliased = -1, holder = -1, n = ir->nbufs;
    ir_in_place(ir, &aliased, &holder);
    for (int x = 0; x < n; x++)
        for (int y = x + 1; y < n; y++) {
            RtShare share = rt_buffers_share(ir, r, chunk_bytes, (const void *const *)&ptrs[r * n], bytes, x, y);
            if (share == RT_SHARE_NONE || share == RT_SHARE_IN_PLACE)
                continue;
            if (share == RT_SHARE_MISPLACED)
                rt_error(c->log, "rank %d's %s (ptrs[%d]) overlaps its %s but is not its part of it: %s compiled "
                         "in place needs %s == %s + %zu bytes on rank %d", r, ir->bufs[aliased].name, r * n + aliased,
                         ir->bufs[holder].name, ir->name, ir->bufs[aliased].name, ir->bufs[holder].name,
                         rt_alias_offset(ir, r, chunk_bytes), r);
            else
                rt_error(c->log, "rank %d's buffers %s (ptrs[%d]) and %s (ptrs[%d]) overlap; %s%s", r,
                         ir->bufs[x].name, r * n + x, ir->bufs[y].name, r * n + y,
                         x == IR_INPUT && y == IR_OUTPUT && coll_info(ir->coll)->in_place == COLL_IN_PLACE_NCCL
                             ? "an input that shares the output's memory needs the program compiled in place "
                               "(cdsl_compile_opts.in_place), which checks it for that: "
                             : "a program's buffers must not share memory: ",
                         ir->name);
            return CDSL_ERR_USAGE;
        }
    return CDSL_OK;
}

/* The packet slots (ir.h: the internal buffer) start zeroed on every rank: no packet's flag
 * is 0, so nothing in them passes for a packet until one is written (docs/language.md §8). */
static int comm_zero_slots(cdsl_comm *c, const IrProgram *ir, const size_t *bytes)
{
    int b = rt_slots_to_zero(ir, bytes);
    if (b < 0)
        return CDSL_OK;
    void *zeros = calloc(1, bytes[b]);
    if (!zeros) {
        rt_error(c->log, "out of memory zeroing the packet slots");
        return CDSL_ERR_SYSTEM;
    }
    int rc = CDSL_OK;
    for (int r = 0; r < c->cfg.nranks && !rc; r++)
        rc = c->ops->write(c->state, r, b, zeros, bytes[b]);
    free(zeros);
    return rc;
}

int cdsl_comm_alloc(cdsl_comm *c, const cdsl_program *p, size_t chunk_bytes)
{
    if (!c)
        return rt_comm_null(__func__);
    const IrProgram *ir = comm_ir(c, p);
    size_t bytes[IR_MAX_BUFS] = {0};
    int rc = ir ? comm_layout_bytes(c, ir, chunk_bytes, bytes) : CDSL_ERR_USAGE;
    if (rc)
        return rc;
    c->allocated = false;
    if ((rc = c->ops->alloc(c->state, bytes, ir->nbufs)) || (rc = comm_zero_slots(c, ir, bytes)))
        return rc;
    comm_set_layout(c, ir, chunk_bytes, bytes);
    return CDSL_OK;
}

/* Every pointer the layout needs is there and 16-byte aligned (the kernels move 16-byte
 * packs when a chunk is a multiple of 16 bytes). */
static int comm_ptrs_ok(cdsl_comm *c, const IrProgram *ir, size_t chunk_bytes, const size_t *bytes, void *const *ptrs)
{
    if (!ptrs) {
        rt_error(c->log, "cdsl_comm_register needs %d pointers (ranks x buffers), not NULL",
                 c->cfg.nranks * ir->nbufs);
        return CDSL_ERR_USAGE;
    }
    for (int r = 0; r < c->cfg.nranks; r++)
        for (int b = 0; b < ir->nbufs; b++) {
            int i = r * ir->nbufs + b;
            uintptr_t a = (uintptr_t)ptrs[i];
            if ((a == 0 && bytes[b]) || a % 16) {
                rt_error(c->log, "rank %d's buffer %s (ptrs[%d]) is %p: a registered buffer must be %s",
                         r, ir->bufs[b].name, i, ptrs[i],
                         a ? "16-byte aligned" : "there (NULL only for a buffer of no chunks)");
                return CDSL_ERR_USAGE;
            }
        }
    for (int r = 0; r < c->cfg.nranks; r++) {
        int rc = comm_ptrs_alias_ok(c, ir, chunk_bytes, bytes, ptrs, r);
        if (rc)
            return rc;
    }
    return CDSL_OK;
}

int cdsl_comm_register(cdsl_comm *c, const cdsl_program *p, size_t chunk_bytes, void *const *ptrs)
{
    if (!c)
        return rt_comm_null(__func__);
    const IrProgram *ir = comm_ir(c, p);
    size_t bytes[IR_MAX_BUFS] = {0};
    int rc = ir ? comm_layout_bytes(c, ir, chunk_bytes, bytes) : CDSL_ERR_USAGE;
    if (!rc)
        rc = comm_ptrs_ok(c, ir, chunk_bytes, bytes, ptrs);
    if (rc)
        return rc;
    if (!c->ops->attach) {
        rt_error(c->log, "the %s backend cannot run on caller buffers; use cdsl_comm_alloc",
                 c->backend->name);
        return CDSL_ERR_USAGE;
    }
    c->allocated = false;
    if ((rc = c->ops->attach(c->state, bytes, ir->nbufs, ptrs)) || (rc = comm_zero_slots(c, ir, bytes)))
        return rc;
    comm_set_layout(c, ir, chunk_bytes, bytes);
    return CDSL_OK;
}

size_t cdsl_comm_chunk_bytes(const cdsl_comm *c)
{
    return c && c->allocated ? c->chunk_bytes : 0;
}

size_t cdsl_comm_buf_bytes(const cdsl_comm *c, int buf)
{
    return c && c->allocated && buf >= 0 && buf < c->nbufs ? c->bytes[buf] : 0;
}

static int comm_transfer_ok(cdsl_comm *c, const char *what, int rank, int buf, const void *host, size_t bytes)
{
    if (!c->allocated) {
        rt_error(c->log, "cannot %s a buffer before cdsl_comm_alloc or cdsl_comm_register", what);
        return CDSL_ERR_USAGE;
    }
    if (rank < 0 || rank >= c->cfg.nranks || buf < 0 || buf >= c->nbufs || bytes > c->bytes[buf]) {
        rt_error(c->log, "cannot %s %zu bytes of rank %d's buffer %d: out of range", what, bytes, rank, buf);
        return CDSL_ERR_USAGE;
    }
    if (!host && bytes) {
        rt_error(c->log, "cannot %s %zu bytes of rank %d's buffer %d: the host pointer is NULL", what, bytes,
                 rank, buf);
        return CDSL_ERR_USAGE;
    }
    return CDSL_OK;
}

/* In place, the aliased buffer is a part of the holder: a backend transfers whole-buffer
 * prefixes, so the holder's prefix up to the end of that part goes through host memory (a
 * write reads it first). Transfers are set-up and checking, not the timed path. */
static int comm_alias_transfer(cdsl_comm *c, int rank, bool write, void *host, size_t bytes)
{
    size_t off = comm_alias_offset(c, rank);
    if (!bytes)     /* an aliased buffer of no chunks: nothing to move */
        return CDSL_OK;
    char *tmp = malloc(off + bytes);
    if (!tmp) {
        rt_error(c->log, "out of memory: %zu bytes of host memory for rank %d's %s", off + bytes, rank,
                 write ? "write" : "read");
        return CDSL_ERR_SYSTEM;
    }
    int rc = c->ops->read(c->state, rank, c->holder, tmp, off + bytes);
    if (!rc && write) {
        memcpy(tmp + off, host, bytes);
        rc = c->ops->write(c->state, rank, c->holder, tmp, off + bytes);
    } else if (!rc) {
        memcpy(host, tmp + off, bytes);
    }
    free(tmp);
    return rc;
}

int cdsl_comm_write(cdsl_comm *c, int rank, int buf, const void *src, size_t bytes)
{
    if (!c)
        return rt_comm_null(__func__);
    int rc = comm_transfer_ok(c, "write", rank, buf, src, bytes);
    if (!rc && buf == c->aliased)
        return comm_alias_transfer(c, rank, true, (void *)src, bytes);
    return rc ? rc : c->ops->write(c->state, rank, buf, src, bytes);
}

int cdsl_comm_read(cdsl_comm *c, int rank, int buf, void *dst, size_t bytes)
{
    if (!c)
        return rt_comm_null(__func__);
    int rc = comm_transfer_ok(c, "read", rank, buf, dst, bytes);
    if (!rc && buf == c->aliased)
        return comm_alias_transfer(c, rank, false, dst, bytes);
    return rc ? rc : c->ops->read(c->state, rank, buf, dst, bytes);
}

int cdsl_comm_buffer(cdsl_comm *c, int rank, int buf, void **ptr)
{
    if (!c)
        return rt_comm_null(__func__);
    if (!ptr) {
        rt_error(c->log, "cdsl_comm_buffer needs a place for the address");
        return CDSL_ERR_USAGE;
    }
    *ptr = NULL;
    if (!c->allocated) {
        rt_error(c->log, "no buffer to address before cdsl_comm_alloc or cdsl_comm_register");
        return CDSL_ERR_USAGE;
    }
    if (rank < 0 || rank >= c->cfg.nranks || buf < 0 || buf >= c->nbufs) {
        rt_error(c->log, "there is no buffer %d of rank %d (%d ranks, %d buffers)", buf, rank,
                 c->cfg.nranks, c->nbufs);
        return CDSL_ERR_USAGE;
    }
    if (buf != c->aliased)
        return c->ops->buffer(c->state, rank, buf, ptr);
    int rc = c->ops->buffer(c->state, rank, c->holder, ptr);
    if (!rc)
        *ptr = (char *)*ptr + comm_alias_offset(c, rank);
    return rc;
}

/* ---- runs ------------------------------------------------------------------------------------ */

bool rt_comm_layout_matches(const cdsl_comm *c, const IrProgram *ir)
{
    int aliased = -1, holder = -1;
    if (!c->allocated || c->nbufs != ir->nbufs || (c->aliased >= 0) != ir_in_place(ir, &aliased, &holder))
        return false;
    /* In place, the window's place too: buffers of the same sizes laid out for a window at
       chunk 0 (an allreduce) have no room for one at rank * stride (an alltoall's, which may
       not fit in the holder at all). The same place in buffers of the same sizes fits, as
       it did when they were laid out (comm_layout_bytes). */
    if (c->aliased >= 0 && (c->aliased != aliased || c->holder != holder || c->stride != ir_in_place_first(ir, 1)))
        return false;
    /* A program without packets must not take the packet slots for a buffer of its own: what it
       wrote there would pass for packets in the next run of the program that has them. */
    for (int b = 0; b < ir->nbufs; b++)
        if (c->chunks[b] != ir->bufs[b].nchunks || c->internal[b] != ir->bufs[b].internal)
            return false;
    return true;
}

static int comm_run_ok(cdsl_comm *c, const cdsl_program *p, const IrProgram *ir, cdsl_dtype t, int iters)
{
    int rc = rt_program_fits(p, c->cfg.nranks, c->log, "");
    if (rc)
        return rc;
    if (!rt_comm_layout_matches(c, ir)) {
        if (c->allocated && (c->aliased >= 0) != ir_in_place(ir, NULL, NULL))
            rt_error(c->log, "the communicator's buffers were laid out for a program compiled %s, and %s was "
                     "compiled %s: allocate or register them for it", c->aliased >= 0 ? "in place" : "out of place",
                     ir->name, c->aliased >= 0 ? "out of place" : "in place");
        else
            rt_error(c->log, "the communicator's buffers were not allocated for %s's layout", ir->name);
        return CDSL_ERR_USAGE;
    }
    if (iters < 1 || !rt_dtype_known(t)) {
        rt_error(c->log, "a run needs at least one iteration and a known element type");
        return CDSL_ERR_USAGE;
    }
    return CDSL_OK;
}

/* What every run needs first: a program that fits the communicator, loaded for dtype. */
static int comm_prepare(cdsl_comm *c, cdsl_program *p, cdsl_dtype dtype, int iters)
{
    const IrProgram *ir = comm_ir(c, p);
    int rc = ir ? comm_run_ok(c, p, ir, dtype, iters) : CDSL_ERR_USAGE;
    return rc ? rc : c->ops->load(c->state, p, dtype);
}

int cdsl_run(cdsl_comm *c, cdsl_program *p, cdsl_dtype dtype, int iters, double *us_per_iter)
{
    if (!c)
        return rt_comm_null(__func__);
    double t = log_clock();
    int rc = comm_prepare(c, p, dtype, iters);
    if (rc)
        return rc;
    const char *name = program_ir(p)->name;
    log_msg(LOG_TRACE, "timing: load %.3f ms (%s, %s)", log_ms_since(t), name, cdsl_dtype_name(dtype));
    double us = 0;
    t = log_clock();
    rc = c->ops->run(c->state, c->chunk_bytes, iters, &us);
    log_msg(LOG_INFO, "timing: run %.3f ms (%s on %s, %d run%s of %zu-byte chunks, %.2f us each%s)", log_ms_since(t),
            name, c->backend->name, iters, iters == 1 ? "" : "s", c->chunk_bytes, us,
            rc ? ", failed" : "");
    if (us_per_iter)
        *us_per_iter = us;
    return rc;
}

int cdsl_run_async(cdsl_comm *c, cdsl_program *p, cdsl_dtype dtype, void *const *streams)
{
    if (!c)
        return rt_comm_null(__func__);
    int rc = comm_prepare(c, p, dtype, 1);
    return rc ? rc : c->ops->launch(c->state, c->chunk_bytes, streams);
}

int cdsl_comm_status(cdsl_comm *c)
{
    if (!c)
        return rt_comm_null(__func__);
    return c->ops->status(c->state);
}
