/*
 * rank_comm.c - one process per rank: the public functions of cdsl.h's per-rank API, over an
 * engine (rank.h).
 *
 * What is the same for every engine lives here:
 *   - checks of every argument, with messages that name this rank;
 *   - the handshake: the first run of a (program, dtype, chunk size) is collective. Every rank
 *     sends a record (its status, the program's digest and name, dtype, chunk size, region
 *     size) and every rank compares all of them the same way, so every rank prints the same
 *     explanation of a mismatch, naming the rank. Then the symmetric region grows if it must
 *     (the same decision everywhere, from the same records), the program's buffers are laid
 *     out in it (the same offsets on every rank), and this rank's code is loaded; a second
 *     exchange makes sure every rank loaded it before any rank runs. Later runs of the same
 *     triple only enqueue;
 *   - the caller's buffers: how many bytes a run needs from them, and refusal when a buffer
 *     is smaller.
 * A run that fails marks the communicator failed: like ncclCommAbort, it can only be
 * destroyed, because its counters no longer match any program point on every rank.
 */
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "backends.h"
#include "last_error.h"
#include "log.h"
#include "program.h"
#include "program_layout.h"
#include "rank.h"
#include "sha256.h"

enum { RT_REGION_ALIGN = 4096 };    /* NCCL windows want 4 KiB; the GPU kernels 16 bytes */
#define RT_DEFAULT_TIMEOUT_S 60.0

/* ---- configuration ----------------------------------------------------------------------------- */

void cdsl_rank_config_init(cdsl_rank_config *c)
{
    if (!c)
        return;
    memset(c, 0, sizeof *c);
    c->flavour = CDSL_BACKEND_P2P;
    c->device = -1;
}

double rt_rank_timeout(const cdsl_rank_config *cfg)
{
    if (cfg && cfg->timeout_s > 0)
        return cfg->timeout_s;
    const char *v = getenv("CDSL_TIMEOUT");
    char *end;
    double t = v ? strtod(v, &end) : 0;
    return v && *v && !*end && t > 0 ? t : RT_DEFAULT_TIMEOUT_S;
}

void *rt_engine_new(cdsl_rank_comm *r, size_t size)
{
    r->engine = calloc(1, size);
    if (!r->engine)
        rt_error(r->log, "rank %d: out of memory", r->rank);
    return r->engine;
}

/* ---- init / destroy ---------------------------------------------------------------------------- */

/* The communicator's own message stream: every message reaches the caller's log through it
 * and is kept for cdsl_rank_get_last_error. False when out of memory. */
static bool rt_log_open(cdsl_rank_comm *c, FILE *to)
{
    c->errs = rt_last_error_new();
    c->log = rt_last_error_stream(c->errs, to);
    if (c->log)
        return true;
    rt_last_error_free(c->errs);
    rt_error(to, "out of memory");
    return false;
}

static void rt_free(cdsl_rank_comm *c)
{
    fclose(c->log);
    rt_last_error_free(c->errs);
    free(c);
}

const char *cdsl_rank_get_last_error(const cdsl_rank_comm *c)
{
    return rt_last_error_text(c ? c->errs : NULL);
}

static int rt_init_args_ok(cdsl_rank_comm **comm, int nranks, const cdsl_unique_id *id, int rank,
                           const cdsl_rank_config *cfg, FILE *log)
{
    if (!comm || !id) {
        rt_error(log, "cdsl_comm_init_rank needs a place for the communicator and the unique id");
        return CDSL_ERR_USAGE;
    }
    if (nranks < 1 || nranks > IR_MAX_RANKS || rank < 0 || rank >= nranks) {
        rt_error(log, "rank %d of %d: ranks are 0 to nranks - 1, and nranks is 1 to %d", rank, nranks, IR_MAX_RANKS);
        return CDSL_ERR_USAGE;
    }
    if (cdsl_unique_id_engine(id) == CDSL_ENGINE_AUTO) {
        rt_error(log, "rank %d: this is not a unique id that cdsl_get_unique_id made (was it passed on whole, "
                 "all %d bytes?)", rank, CDSL_UNIQUE_ID_BYTES);
        return CDSL_ERR_USAGE;
    }
    char names[128];
    if (cfg && !rt_flavour_of(cfg->flavour)) {
        rt_error(log, "rank %d: the device code's flavour is %s, not %s", rank,
                 rt_backend_names(CDSL_LIST_FLAVOURS, " or ", names, sizeof names),
                 cdsl_backend_name((cdsl_backend)cfg->flavour));
        return CDSL_ERR_USAGE;
    }
    return CDSL_OK;
}

int cdsl_comm_init_rank(cdsl_rank_comm **comm, int nranks, const cdsl_unique_id *uid, int rank,
                        const cdsl_rank_config *config)
{
    FILE *log = config && config->log ? config->log : stderr;
    if (comm)
        *comm = NULL;
    int st = rt_init_args_ok(comm, nranks, uid, rank, config, log);
    if (st)
        return st;
    RtId id;
    memcpy(&id, uid->internal, sizeof id);
    cdsl_rank_comm *c = calloc(1, sizeof *c);
    if (!c || !rt_log_open(c, log)) {
        if (!c)
            rt_error(log, "out of memory");
        free(c);
        return CDSL_ERR_SYSTEM;
    }
    if (config)
        c->cfg = *config;
    else
        cdsl_rank_config_init(&c->cfg);
    c->cfg.timeout_s = rt_rank_timeout(&c->cfg);
    c->cfg.log = c->log;
    c->rank = rank;
    c->nranks = nranks;
    c->kind = rt_backend_of(RT_PER_RANK, id.engine);
    c->ops = c->kind->rank_ops;
    c->device = -1;
    if ((c->kind->flags & RT_ONE_HOST) && id.ctl.host != rt_ctl_host_id()) {
        rt_error(c->log, "rank %d: the unique id was made on another host; the %s engine runs the ranks of one host "
                 "(the nccl engine crosses hosts)", rank, c->kind->name);
        rt_free(c);
        return CDSL_ERR_USAGE;
    }
    double t = log_clock();
    if ((st = c->ops->init(c, &id))) {
        c->ops->destroy(c);
        rt_free(c);
        return st;
    }
    char where[32] = "no GPU";
    if (c->device >= 0)
        snprintf(where, sizeof where, "GPU %d", c->device);
    log_msg(LOG_INFO, "engine %s: rank %d of %d, %s (%.3f ms to join, time bound %.0f s)", c->kind->name,
            rank, nranks, where, log_ms_since(t), c->cfg.timeout_s);
    *comm = c;
    return CDSL_OK;
}

void cdsl_rank_comm_destroy(cdsl_rank_comm *c)
{
    if (!c)
        return;
    c->ops->destroy(c);
    rt_free(c);
}

int cdsl_rank_comm_rank(const cdsl_rank_comm *c)
{
    return c ? c->rank : -1;
}

int cdsl_rank_comm_nranks(const cdsl_rank_comm *c)
{
    return c ? c->nranks : 0;
}

cdsl_engine cdsl_rank_comm_engine(const cdsl_rank_comm *c)
{
    return c ? (cdsl_engine)c->kind->id : CDSL_ENGINE_AUTO;
}

int cdsl_rank_comm_device(const cdsl_rank_comm *c)
{
    return c ? c->device : -1;
}

/* ---- a program's buffers in the region --------------------------------------------------------- */

int rt_program_digest(const cdsl_program *p, unsigned char digest[32])
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return CDSL_ERR_SYSTEM;
    ir_dump(program_ir(p), f);
    if (fclose(f) != 0) {
        free(text);
        return CDSL_ERR_SYSTEM;
    }
    rt_sha256(text, len, digest);
    free(text);
    return CDSL_OK;
}

/* "rank 3: ", what this rank's messages begin with. */
static const char *rt_who(const cdsl_rank_comm *c, char who[24])
{
    snprintf(who, 24, "rank %d: ", c->rank);
    return who;
}

/* The program's checks that need no other rank. */
static int rt_program_ok(cdsl_rank_comm *c, const cdsl_program *p, const char *what)
{
    char who[24];
    if (!program_ir(p)) {
        rt_error(c->log, "rank %d: %s needs an evaluated program", c->rank, what);
        return CDSL_ERR_USAGE;
    }
    return rt_program_fits(p, c->nranks, c->log, rt_who(c, who));
}

/* A program with port channels keeps its port words in each rank's region, after its buffers,
   where its peers' proxies reach them (gpu_port.h); the sim runs port channels without them. */
static size_t rt_port_bytes(const IrProgram *ir)
{
    int npairs = 0, nprox = 0;
    if (!ir_port_proxy_op(ir))
        return 0;
    ir_port_shape(ir, &npairs, &nprox);
    return 8 * (size_t)CDSL_PORT_WORDS(ir->nranks, npairs, nprox);
}

/* Offsets of p's buffers at chunk_bytes, each aligned, and of its port words; *total is the
   region they need. */
static int rt_layout(cdsl_rank_comm *c, const IrProgram *ir, size_t chunk, size_t *off, size_t *bytes, size_t *total)
{
    char who[24];
    int st = rt_chunk_ok(chunk, 1, false, c->log, rt_who(c, who));
    if (!st)
        st = rt_size_class_ok(ir, chunk, c->log, rt_who(c, who));
    if (st)
        return st;
    if (!rt_in_place_fits(ir, c->log))
        return CDSL_ERR_USAGE;
    int big = rt_layout_bytes(ir, chunk, SIZE_MAX / 2, bytes);
    if (big >= 0) {
        rt_error(c->log, "rank %d: buffer %s of %zu chunks of %zu bytes is too large", c->rank, ir->bufs[big].name,
                 (size_t)ir->bufs[big].nchunks, chunk);
        return CDSL_ERR_SYSTEM;
    }
    size_t at = 0;
    int aliased = -1, holder = -1;
    ir_in_place(ir, &aliased, &holder);
    for (int b = 0; b < ir->nbufs; b++) {
        if (b == aliased)
            continue;
        off[b] = at;
        at += (bytes[b] + RT_REGION_ALIGN - 1) / RT_REGION_ALIGN * RT_REGION_ALIGN;
    }
    /* In place, the aliased buffer is this rank's part of the holder (its offset differs from
     * rank to rank, which is fine: only this rank reaches it; the program names the holder). */
    if (aliased >= 0)
        off[aliased] = off[holder] + rt_alias_offset(ir, c->rank, chunk);
    bytes[RT_PORT_SLOT] = rt_port_bytes(ir);
    off[RT_PORT_SLOT] = at;
    at += (bytes[RT_PORT_SLOT] + RT_REGION_ALIGN - 1) / RT_REGION_ALIGN * RT_REGION_ALIGN;
    *total = at ? at : RT_REGION_ALIGN;
    return CDSL_OK;
}

static int rt_set_layout(cdsl_rank_comm *c, const IrProgram *ir, const size_t *off, const size_t *bytes)
{
    int st = c->ops->layout(c, off, bytes, ir->nbufs);
    if (st) {
        c->nbufs = 0;
        return st;
    }
    c->nbufs = ir->nbufs;
    memcpy(c->off, off, sizeof c->off);
    memcpy(c->bytes, bytes, sizeof c->bytes);
    return CDSL_OK;
}

/* ---- the handshake ----------------------------------------------------------------------------- */

typedef struct RtHello {
    int32_t status;                 /* 0, or this rank cannot run it (it said why) */
    int32_t dtype;
    uint64_t chunk_bytes;
    uint64_t region;                /* bytes the layout needs */
    unsigned char digest[32];
    char name[64];
    int32_t threads, blocks;        /* after loading (GPU engines): the launch shape it can run */
} RtHello;

static void rt_hex8(const unsigned char *d, char *out)
{
    snprintf(out, 17, "%02x%02x%02x%02x%02x%02x%02x%02x", d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
}

/* The first rank whose record differs from rank 0's, said the same way on every rank. */
static int rt_compare(cdsl_rank_comm *c, const RtHello *all, const char *what)
{
    const RtHello *z = &all[0];
    for (int q = 0; q < c->nranks; q++) {
        if (all[q].status) {
            if (q != c->rank)   /* we said why already */
                rt_error(c->log, "rank %d cannot take part in %s (its own message says why)", q, what);
            return CDSL_ERR_USAGE;
        }
    }
    for (int q = 1; q < c->nranks; q++) {
        const RtHello *h = &all[q];
        char dq[17], d0[17];
        rt_hex8(h->digest, dq);
        rt_hex8(z->digest, d0);
        if (memcmp(h->digest, z->digest, sizeof h->digest)) {
            rt_error(c->log, "rank %d runs %.63s (program digest %s) but rank 0 runs %.63s (digest %s): every rank must "
                     "run the same checked program, compiled for the same rank count and parameters", q, h->name, dq,
                     z->name, d0);
            return CDSL_ERR_USAGE;
        }
        if (h->dtype != z->dtype || h->chunk_bytes != z->chunk_bytes) {
            rt_error(c->log, "rank %d runs %.63s on %s with chunks of %llu bytes but rank 0 on %s with chunks of %llu "
                     "bytes: every rank must run the same size and type", q, h->name,
                     cdsl_dtype_name((cdsl_dtype)h->dtype), (unsigned long long)h->chunk_bytes,
                     cdsl_dtype_name((cdsl_dtype)z->dtype), (unsigned long long)z->chunk_bytes);
            return CDSL_ERR_USAGE;
        }
    }
    return CDSL_OK;
}

static int rt_exchange(cdsl_rank_comm *c, const char *what, const RtHello *mine, RtHello **all)
{
    *all = calloc((size_t)c->nranks, sizeof **all);
    if (!*all) {
        rt_error(c->log, "rank %d: out of memory", c->rank);
        return CDSL_ERR_SYSTEM;
    }
    int st = c->ops->exchange(c, what, mine, sizeof *mine, *all);
    if (st) {
        free(*all);
        *all = NULL;
    }
    return st;
}

/* Every rank has loaded its code (or one says it could not); GPU engines then launch the
   least block size and grid of all ranks. */
static int rt_loaded_everywhere(cdsl_rank_comm *c, int mine)
{
    RtHello h = {.status = mine}, *all;
    if (!mine && c->ops->shape)
        c->ops->shape(c, &h.threads, &h.blocks);
    int st = rt_exchange(c, "loading a run's code", &h, &all);
    if (st)
        return st;
    int32_t threads = h.threads, blocks = h.blocks;
    st = mine;   /* this rank's own failure was said where it happened, and stays its last error */
    for (int q = 0; q < c->nranks && !st; q++) {
        if (all[q].status) {
            rt_error(c->log, "rank %d could not load its code for the run (its own message says why)", q);
            st = CDSL_ERR_SYSTEM;
        }
        threads = all[q].threads < threads ? all[q].threads : threads;
        blocks = all[q].blocks < blocks ? all[q].blocks : blocks;
    }
    if (!st && c->ops->agree)
        c->ops->agree(c, threads, blocks);
    free(all);
    return st;
}

/* A layout that moved may put the packet slots (docs/language.md §8) on memory a kept region
 * held other data in, which could pass for a packet's flag: zero them. Every rank does it
 * before the handshake's last exchange, so no peer's next launch can write into them first;
 * the engine waits for this rank's launches in flight, which have read their packets. */
static int rt_zero_slots(cdsl_rank_comm *c, const IrProgram *ir, const size_t *bytes)
{
    int b = rt_slots_to_zero(ir, bytes);
    if (b < 0)
        return CDSL_OK;
    if (!c->ops->zero) {
        rt_error(c->log, "rank %d: the %s engine cannot zero the packet slots %s needs", c->rank, c->kind->name, ir->name);
        return CDSL_ERR_USAGE;
    }
    return c->ops->zero(c, c->ops->address(c, b), bytes[b]);
}

/* Grow the region if the layout needs more (the same answer on every rank), lay the buffers
 * out, and load this rank's code. */
static int rt_prepare(cdsl_rank_comm *c, cdsl_program *p, cdsl_dtype dtype, const RtHello *h, const size_t *off,
                      const size_t *bytes)
{
    int st = CDSL_OK;
    if (h->region > c->reserved) {
        c->nbufs = 0;
        c->agreed.p = NULL;
        if ((st = c->ops->reserve(c, (size_t)h->region)))
            return st;
        c->reserved = (size_t)h->region;
    }
    bool same = c->agreed.p && c->agreed.serial == program_serial(p) && c->agreed.ir == program_ir(p);
    bool moved = !same || c->agreed.chunk_bytes != h->chunk_bytes;
    if (!st)
        st = rt_set_layout(c, program_ir(p), off, bytes);
    if (!st && moved)
        st = rt_zero_slots(c, program_ir(p), bytes);
    if (!st && (!same || c->agreed.dtype != dtype))
        st = c->ops->load(c, p, dtype);
    return st;
}

static int rt_handshake(cdsl_rank_comm *c, cdsl_program *p, cdsl_dtype dtype, size_t chunk, int local)
{
    RtHello mine = {.status = local, .dtype = (int32_t)dtype, .chunk_bytes = chunk}, *all;
    size_t off[RT_LAYOUT_SLOTS] = {0}, bytes[RT_LAYOUT_SLOTS] = {0}, total = 0;
    if (!local) {
        snprintf(mine.name, sizeof mine.name, "%s", program_ir(p)->name);
        memcpy(mine.digest, c->digest, sizeof mine.digest);
        mine.status = rt_layout(c, program_ir(p), chunk, off, bytes, &total);
        mine.region = total;
    }
    int st = rt_exchange(c, "a run's handshake", &mine, &all);
    if (st)
        return st;
    st = rt_compare(c, all, "the run");
    free(all);
    if (st || local || mine.status)
        return st ? st : local ? local : mine.status;
    st = rt_prepare(c, p, dtype, &mine, off, bytes);
    int everywhere = rt_loaded_everywhere(c, st);
    if (st || everywhere)
        return st ? st : everywhere;
    c->agreed = (RtAgreed){.p = p, .serial = program_serial(p), .ir = program_ir(p), .dtype = dtype, .chunk_bytes = chunk};
    memcpy(c->agreed.digest, c->digest, sizeof c->digest);
    return CDSL_OK;
}

/* ---- alloc, buffers ---------------------------------------------------------------------------- */

static int rt_failed(cdsl_rank_comm *c)
{
    rt_error(c->log, "rank %d: the communicator failed in an earlier run; destroy it and make a new one", c->rank);
    return CDSL_ERR_RUNTIME;
}

int cdsl_rank_alloc(cdsl_rank_comm *c, const cdsl_program *p, size_t chunk)
{
    if (!c)
        return rt_comm_null(__func__);
    rt_last_error_begin(c->errs);
    if (c->failed)
        return rt_failed(c);
    size_t off[RT_LAYOUT_SLOTS] = {0}, bytes[RT_LAYOUT_SLOTS] = {0}, total = 0;
    int local = rt_program_ok(c, p, "cdsl_rank_alloc");
    if (!local)
        local = rt_layout(c, program_ir(p), chunk, off, bytes, &total);
    RtHello mine = {.status = local, .chunk_bytes = chunk, .region = total}, *all;
    if (!local)
        snprintf(mine.name, sizeof mine.name, "%s", program_ir(p)->name);
    int st = rt_exchange(c, "cdsl_rank_alloc", &mine, &all);
    if (st)
        return st;
    for (int q = 0; q < c->nranks && !st; q++) {
        if (all[q].status) {
            rt_error(c->log, "rank %d cannot take part in cdsl_rank_alloc (its own message says why)", q);
            st = CDSL_ERR_USAGE;
        } else if (all[q].region != all[0].region) {
            rt_error(c->log, "rank %d asks cdsl_rank_alloc for %llu bytes (%.63s, chunks of %llu bytes) but rank 0 for "
                     "%llu (%.63s, chunks of %llu bytes): every rank must allocate the same", q,
                     (unsigned long long)all[q].region, all[q].name, (unsigned long long)all[q].chunk_bytes,
                     (unsigned long long)all[0].region, all[0].name, (unsigned long long)all[0].chunk_bytes);
            st = CDSL_ERR_USAGE;
        }
    }
    free(all);
    if (st)
        return st;
    c->agreed.p = NULL;             /* the next run lays its own program out again */
    if (total > c->reserved) {
        c->nbufs = 0;
        if ((st = c->ops->reserve(c, total)))
            return st;
        c->reserved = total;
    }
    return rt_set_layout(c, program_ir(p), off, bytes);
}

int cdsl_rank_buffer(cdsl_rank_comm *c, int buf, void **ptr)
{
    if (!c || !ptr)
        return CDSL_ERR_USAGE;
    rt_last_error_begin(c->errs);
    *ptr = NULL;
    if (buf < 0 || buf >= c->nbufs) {
        rt_error(c->log, "rank %d: there is no buffer %d (%d buffers laid out; cdsl_rank_alloc or a run lays them out)",
                 c->rank, buf, c->nbufs);
        return CDSL_ERR_USAGE;
    }
    *ptr = c->bytes[buf] ? c->ops->address(c, buf) : NULL;
    return CDSL_OK;
}

size_t cdsl_rank_buffer_bytes(const cdsl_rank_comm *c, int buf)
{
    return c && buf >= 0 && buf < c->nbufs ? c->bytes[buf] : 0;
}

/* ---- runs -------------------------------------------------------------------------------------- */

/* The caller's buffer holds what the run needs. */
static int rt_io_fits(cdsl_rank_comm *c, const IrProgram *ir, int b, size_t chunk, const void *ptr, size_t have)
{
    if (!ptr || b >= ir->nbufs)
        return CDSL_OK;
    size_t need = (size_t)ir->bufs[b].nchunks * chunk;
    if (have >= need)
        return CDSL_OK;
    rt_error(c->log, "rank %d: the %s given to the run holds %zu bytes, but %s needs %zu (%d chunk%s of %zu bytes)",
             c->rank, b == IR_INPUT ? "input" : "output", have, ir->name, need, ir->bufs[b].nchunks,
             ir->bufs[b].nchunks == 1 ? "" : "s", chunk);
    return CDSL_ERR_USAGE;
}

/* An input and output that share memory are the in-place form of a program compiled in place,
 * or refused (program_layout.h): the copies in and out would hide nothing the checker looked
 * at, but what runs must be what the program was checked as. */
static int rt_io_alias_ok(cdsl_rank_comm *c, const IrProgram *ir, size_t chunk, const cdsl_rank_io *io)
{
    if (!io || !io->input || !io->output || ir->nbufs <= IR_OUTPUT)
        return CDSL_OK;
    const void *at[] = {[IR_INPUT] = io->input, [IR_OUTPUT] = io->output};
    size_t bytes[] = {[IR_INPUT] = (size_t)ir->bufs[IR_INPUT].nchunks * chunk,
                      [IR_OUTPUT] = (size_t)ir->bufs[IR_OUTPUT].nchunks * chunk};
    RtShare share = rt_buffers_share(ir, c->rank, chunk, at, bytes, IR_INPUT, IR_OUTPUT);
    if (share == RT_SHARE_NONE || share == RT_SHARE_IN_PLACE)
        return CDSL_OK;
    int aliased, holder;
    if (!ir_in_place(ir, &aliased, &holder)) {
        rt_error(c->log, "rank %d: the input and output given to the run share memory; %s was compiled out of place: "
                 "compile it in place (cdsl_compile_opts.in_place), which checks it for that, or give separate buffers",
                 c->rank, ir->name);
        return CDSL_ERR_USAGE;
    }
    size_t at_bytes = rt_alias_offset(ir, c->rank, chunk);
    rt_error(c->log, "rank %d: the input and output given to the run share memory, but not as %s in place: its %s "
             "must be its %s + %zu bytes on rank %d", c->rank, ir->name, ir->bufs[aliased].name,
             ir->bufs[holder].name, at_bytes, c->rank);
    return CDSL_ERR_USAGE;
}

static int rt_run_ok(cdsl_rank_comm *c, cdsl_program *p, cdsl_dtype dtype, size_t chunk, const cdsl_rank_io *io)
{
    int st = rt_program_ok(c, p, "cdsl_rank_run");
    if (st)
        return st;
    if (!rt_dtype_known(dtype)) {
        rt_error(c->log, "rank %d: unknown element type %d", c->rank, (int)dtype);
        return CDSL_ERR_USAGE;
    }
    char who[24];
    if ((st = rt_chunk_ok(chunk, cdsl_dtype_size(dtype), false, c->log, rt_who(c, who))))
        return st;
    if (io && (st = rt_io_fits(c, program_ir(p), IR_INPUT, chunk, io->input, io->input_bytes)))
        return st;
    if (io && (st = rt_io_fits(c, program_ir(p), IR_OUTPUT, chunk, io->output, io->output_bytes)))
        return st;
    if ((st = rt_io_alias_ok(c, program_ir(p), chunk, io)))
        return st;
    bool digested = c->digested == p && c->digested_serial == program_serial(p) && c->digested_ir == program_ir(p);
    if (!digested && (st = rt_program_digest(p, c->digest))) {
        rt_error(c->log, "rank %d: out of memory digesting %s", c->rank, program_ir(p)->name);
        return st;
    }
    c->digested = p;
    c->digested_serial = program_serial(p);
    c->digested_ir = program_ir(p);
    return CDSL_OK;
}

static bool rt_agreed(const cdsl_rank_comm *c, const cdsl_program *p, cdsl_dtype dtype, size_t chunk)
{
    const RtAgreed *a = &c->agreed;
    return a->p == p && a->serial == program_serial(p) && a->ir == program_ir(p) && a->dtype == dtype && a->chunk_bytes == chunk &&
           !memcmp(a->digest, c->digest, sizeof a->digest);
}

int cdsl_rank_run(cdsl_rank_comm *c, cdsl_program *p, cdsl_dtype dtype, size_t chunk, const cdsl_rank_io *io,
                  void *stream)
{
    if (!c)
        return rt_comm_null(__func__);
    rt_last_error_begin(c->errs);
    if (c->failed)
        return rt_failed(c);
    int local = rt_run_ok(c, p, dtype, chunk, io);
    /* A run the others handshake for (a new program, type or size) hears why we cannot run;
     * a repeated run fails here alone, and the peers' waits run out of their bound. This rank
     * has then skipped a run its peers make, so the communicator is failed here too: were it to
     * go on, its next run would pair with the peers' run before (its signals answering their
     * waits of the skipped run) and could verify with data of two different runs. */
    bool repeated = p && p == c->agreed.p && program_serial(p) == c->agreed.serial && dtype == c->agreed.dtype && chunk == c->agreed.chunk_bytes;
    if (local && repeated) {
        c->failed = true;
        return local;
    }
    if (local)
        return rt_handshake(c, p, dtype, chunk, local);
    int st = rt_agreed(c, p, dtype, chunk) ? CDSL_OK : rt_handshake(c, p, dtype, chunk, CDSL_OK);
    if (st)
        return st;
    const IrProgram *ir = program_ir(p);
    size_t in_bytes = ir->nbufs > IR_INPUT ? c->bytes[IR_INPUT] : 0;
    size_t out_bytes = ir->nbufs > IR_OUTPUT ? c->bytes[IR_OUTPUT] : 0;
    st = c->ops->run(c, chunk, io ? io->input : NULL, in_bytes, io ? io->output : NULL, out_bytes, stream);
    if (st == CDSL_ERR_RUNTIME)
        c->failed = true;
    return st;
}

int cdsl_rank_status(cdsl_rank_comm *c)
{
    if (!c)
        return rt_comm_null(__func__);
    rt_last_error_begin(c->errs);
    int st = c->ops->status(c);
    if (st == CDSL_ERR_RUNTIME)
        c->failed = true;
    return st;
}
