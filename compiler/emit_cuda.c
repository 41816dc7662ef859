/*
 * emit_cuda.c - CUDA source from the checked per-rank IR (see emit.h for the file's shape).
 *
 * For each rank we print its operations in program order, one helper call each, and insert
 * only the intra-rank synchronisation the order needs:
 *   - a grid barrier before an operation the checker marked sync_before (it reads or
 *     overwrites what other blocks of the rank touched since the last grid barrier, signals
 *     and waits included, since they do not make every block wait), unless no data operation
 *     happened since the last grid barrier;
 *   - signals arrive block by block (CDSL_BY_BLOCK: block b vouches for its own share of the
 *     rank's work, on its partner's word b) when every data operation since the rank's last
 *     grid barrier is reached through the same blocks on every rank (partition.c's
 *     same_blocks); otherwise the rank's blocks converge first (block 0 waits for all of
 *     them; the others go on) and block 0 arrives for every block (CDSL_FOR_ALL). The
 *     convergence is skipped when only signals came since the last one;
 *   - waits need no barrier: every block's thread 0 polls its own word of the counter and
 *     releases its own block;
 *   - nvls only: fence.proxy.alias where emit_fence.c says so.
 * Convergences are numbered per launch (the k-th one completes when the rank's arrival count
 * has grown by k blocks' worth), and so are the waits on each counter (the n-th wait on peer p
 * needs n arrivals beyond what earlier launches consumed); the numbers are printed into the
 * calls, and rank_<r>_consumed() gives the totals that the leave function hands to the next
 * launch (runtime/abi.h: two copies of the bases, no atomics at exit).
 */
#include "emit.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Straight-line code for more operations than this would be too big for NVRTC anyway. */
enum { EMIT_MAX_OPS = 1 << 20 };

/* ---- The string buffer ------------------------------------------------------------------------ */

static void reserve(EmitBuf *b, size_t more)
{
    if (b->len + more + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->len + more + 1)
        cap *= 2;
    b->s = arena_grow(b->arena, b->s, b->len, cap, 1);
    b->cap = cap;
}

static void count_lines(EmitBuf *b, size_t from)
{
    for (const char *c = b->s + from; (c = strchr(c, '\n')); c++)
        b->lines++;
}

void emit_puts(EmitBuf *b, const char *s)
{
    size_t n = strlen(s);
    reserve(b, n);
    memcpy(b->s + b->len, s, n + 1);
    count_lines(b, b->len);
    b->len += n;
}

void emit_printf(EmitBuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    count_lines(b, b->len);
    b->len += (size_t)n;
}

/* The file's base name inside a C string literal: quotes, backslashes and control bytes
   replaced, at most 240 bytes (user text never reaches the source unchecked). The base name
   only, so that the source, and so the JIT cache's key, do not depend on how the file was
   named (a relative path, the stdlib found by name); tools are told the folder instead
   (compute-sanitizer prints the name, Nsight asks for source folders). */
static void put_path(EmitBuf *b, const char *path)
{
    const char *slash = strrchr(path, '/');
    char s[241];
    size_t n = 0;
    for (const char *c = slash && slash[1] ? slash + 1 : path; *c && n < sizeof s - 1; c++) {
        unsigned char u = (unsigned char)*c;
        s[n++] = u < 0x20 || u == 0x7f || u == '"' || u == '\\' ? '_' : (char)u;
    }
    s[n] = 0;
    emit_puts(b, s);
}

void emit_line_at(EmitBuf *b, Loc loc)
{
    if (!b->cu_name || !loc.src || !loc.src->path || loc.line <= 0)
        return;
    emit_printf(b, "#line %d \"", loc.line);
    put_path(b, loc.src->path);
    emit_puts(b, "\"\n");
}

void emit_line_back(EmitBuf *b)
{
    if (b->cu_name)   /* the directive is on line lines + 1, so the next line is lines + 2 */
        emit_printf(b, "#line %d \"%s\"\n", b->lines + 2, b->cu_name);
}

/* ---- Element types and what the switch can do with them -------------------------------------- */

/* multimem.ld_reduce .add (PTX ISA 8.1+, sm_90): f32 and the half types have vector forms
   (16 bytes = .v4 of 32-bit lanes; the half types summed in f32 with .acc::f32, PTX 8.2);
   the integers have scalar forms only, and s64 would have none. A store (multimem.st) moves
   bit patterns and exists for every type. */
static const EmitDtype DTYPES[] = {
    [CDSL_F32] = {"f32", "add.v4.f32", "add.f32", 1201},
    [CDSL_F16] = {"f16", "add.acc::f32.v4.f16x2", "add.acc::f32.f16x2", 1202},
    [CDSL_BF16] = {"bf16", "add.acc::f32.v4.bf16x2", "add.acc::f32.bf16x2", 1202},
    [CDSL_U32] = {"u32", NULL, "add.u32", 1201},
    [CDSL_S32] = {"s32", NULL, "add.s32", 1201},
};

const EmitDtype *emit_dtype(cdsl_dtype t)
{
    if ((int)t < 0 || (size_t)t >= sizeof DTYPES / sizeof *DTYPES)
        return NULL;
    return &DTYPES[t];
}

static bool has_switch_sum(const IrProgram *p)
{
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++)
            if (p->ranks[r].ops[i].kind == IR_SW_REDUCE || p->ranks[r].ops[i].kind == IR_SW_REDUCE_STORE)
                return true;
    return false;
}

int emit_min_nvrtc(const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype)
{
    /* __grid_constant__ needs CUDA 11.7; multimem PTX 8.1 (CUDA 12.1); .acc::f32 PTX 8.2. */
    if (flavour != CDSL_BACKEND_NVLS)
        return 1107;
    const EmitDtype *t = emit_dtype(dtype);
    return t && has_switch_sum(p) ? t->min_nvrtc : 1201;
}

int emit_min_sm(cdsl_backend flavour)
{
    /* multimem needs sm_90; acquire/release loads and reductions need sm_70. */
    return flavour == CDSL_BACKEND_NVLS ? 90 : 70;
}

/* ---- Names and canonical forms, printed from the IR ------------------------------------------ */

typedef struct SinceBarrier { /* what came since the rank's last grid barrier: */
    bool data, wait;           /* a data op; a wait */
    bool recv;                 /* a recv_packets */
    bool mixed;                /* a data op that is not same_blocks */
} SinceBarrier;

typedef struct SinceMeet {     /* ... since the last grid barrier or convergence */
    bool data, wait;
} SinceMeet;

typedef struct Emitter {
    const IrProgram *p;
    cdsl_backend flavour;
    EmitBuf out;
    const char *bufname[IR_MAX_BUFS];   /* sanitised buffer names, "B_output" */
    EmitFence *fence;                   /* nvls only */
    int only;                           /* -1: every rank's code; else this rank's alone */
    int *peer_waits;                    /* [nranks]: waits on each peer so far, this rank */
    int switch_waits, meets;            /* switch waits and block convergences so far */
    SinceBarrier since_barrier;
    SinceMeet since_meet;
    bool data_in_launch;       /* a data op anywhere before, in this rank's code */
} Emitter;

/* Keep [A-Za-z0-9_], replace anything else: user text never reaches the source verbatim. */
static char *sanitise(Arena *a, const char *s, const char *extra, size_t max)
{
    size_t n = s ? strlen(s) : 0;
    if (n > max)
        n = max;
    char *t = arena_strndup(a, s ? s : "", n);
    for (char *c = t; *c; c++) {
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                  *c == '_' || (extra && strchr(extra, *c));
        if (!ok)
            *c = '_';
    }
    return t;
}

static void name_buffers(Emitter *e, Arena *a)
{
    for (int b = 0; b < e->p->nbufs; b++) {
        const char *raw = e->p->bufs[b].name;
        char *s = sanitise(a, raw, NULL, 64);
        bool clash = !*s || strcmp(s, raw ? raw : "") != 0;
        for (int c = 0; c < b && !clash; c++)
            clash = strcmp(e->bufname[c] + 2, s) == 0;
        e->bufname[b] = clash ? arena_printf(a, "B%d", b) : arena_printf(a, "B_%s", s);
    }
}

static const char *bufname(const Emitter *e, int b)
{
    return b >= 0 && b < e->p->nbufs ? e->bufname[b] + (e->bufname[b][1] == '_' ? 2 : 0) : "?";
}

static void put_range(Emitter *e, IrRange r)
{
    if (r.count == 1)
        emit_printf(&e->out, "%s[%d]", bufname(e, r.buf), r.first);
    else
        emit_printf(&e->out, "%s[%d..%d]", bufname(e, r.buf), r.first, r.first + r.count);
}

static const char *order_name(const IrOp *op)
{
    bool wait = op->kind == IR_WAIT || op->kind == IR_SW_WAIT;
    return op->relaxed ? "relaxed" : wait ? "acquire" : "release";
}

/* "// 9:9  put to rank 1: output[3] <- output[3]  (step=2)" */
static void put_comment(Emitter *e, const IrOp *op, Arena *a)
{
    EmitBuf *o = &e->out;
    emit_printf(o, "    // %d:%d  ", op->loc.line, op->loc.col);
    switch (op->kind) {
    case IR_COPY: emit_puts(o, "copy "); break;
    case IR_REDUCE: emit_puts(o, "reduce "); break;
    case IR_PUT: emit_printf(o, "put to rank %d: ", op->peer); break;
    case IR_GET: emit_printf(o, "get from rank %d: ", op->peer); break;
    case IR_SIGNAL: emit_printf(o, "signal rank %d (%s)", op->peer, order_name(op)); break;
    case IR_WAIT: emit_printf(o, "wait for rank %d (%s)", op->peer, order_name(op)); break;
    case IR_SW_SIGNAL:
    case IR_SW_WAIT: emit_printf(o, "%s (%s)", ir_kind_name(op->kind), order_name(op)); break;
    case IR_PKT_SEND: emit_printf(o, "send_packets to rank %d: ", op->peer), put_range(e, op->src); break;
    case IR_PKT_RECV: emit_printf(o, "recv_packets from rank %d: ", op->peer), put_range(e, op->dst); break;
    default: emit_printf(o, "%s ", ir_kind_name(op->kind)); break;
    }
    if (ir_is_data(op->kind) && !ir_is_packet(op->kind)) {
        put_range(e, op->dst);
        emit_puts(o, op->kind == IR_SW_REDUCE || op->kind == IR_SW_REDUCE_STORE ? " <- sum of " : " <- ");
        put_range(e, op->src);
        if (op->kind == IR_REDUCE) {
            emit_puts(o, " + ");
            put_range(e, op->src2);
        }
    }
    if (op->ctx)   /* loop variables and def calls: a safe character set, never a backslash */
        emit_printf(o, "  (%s)", sanitise(a, op->ctx, "=,:() .+-", 240));
    emit_puts(o, "\n");
}

/* ---- One rank ------------------------------------------------------------------------------- */

static Loc p_loc(const Emitter *e)
{
    return e->p->loc;
}

static void put_data_call(Emitter *e, const IrOp *op)
{
    static const char *const fn[] = {
        [IR_COPY] = "cdsl_copy", [IR_REDUCE] = "cdsl_reduce", [IR_PUT] = "cdsl_put",
        [IR_GET] = "cdsl_get", [IR_SW_STORE] = "cdsl_switch_store",
        [IR_SW_REDUCE] = "cdsl_switch_reduce", [IR_SW_REDUCE_STORE] = "cdsl_switch_reduce_store",
    };
    EmitBuf *o = &e->out;
    emit_printf(o, "    %s(a, ", fn[op->kind]);
    if (op->kind == IR_PUT || op->kind == IR_GET)
        emit_printf(o, "%d, ", op->peer);
    emit_printf(o, "%s, %d, %s, %d, ", e->bufname[op->dst.buf], op->dst.first, e->bufname[op->src.buf],
                op->src.first);
    if (op->kind == IR_REDUCE)
        emit_printf(o, "%s, %d, ", e->bufname[op->src2.buf], op->src2.first);
    emit_printf(o, "%d);\n", op->dst.count);
}

static void put_sync_call(Emitter *e, const IrOp *op, bool after_data, const char *how)
{
    EmitBuf *o = &e->out;
    bool wait = op->kind == IR_WAIT || op->kind == IR_SW_WAIT;
    const char *order = op->relaxed ? "CDSL_RELAXED" : wait ? "CDSL_ACQUIRE" : "CDSL_RELEASE";
    /* A relaxed signal orders the rank's earlier operations before what its partner does
       after the wait (docs/language.md: rule 1 takes execution order for a read followed by
       a write). Observing a relaxed arrival does not order the reads of other threads (or a
       remote load still in flight) in PTX's model, so after data operations the arrival is
       fenced all the same: the code of a release. */
    if (!wait && op->relaxed && after_data)
        order = "CDSL_RELEASE /* relaxed, after data operations: fenced */";
    switch (op->kind) {
    case IR_SIGNAL:
        emit_printf(o, "    cdsl_peer_signal(a, %d, %s, %s);\n", op->peer, order, how);
        break;
    case IR_SW_SIGNAL:
        emit_printf(o, "    cdsl_switch_signal(a, %s, %s);\n", order, how);
        break;
    case IR_WAIT:
        emit_printf(o, "    CDSL_TRY(cdsl_peer_wait(a, %d, %d, %s, %d));\n", op->peer,
                    ++e->peer_waits[op->peer], order, op->loc.line);
        break;
    case IR_SW_WAIT:
        emit_printf(o, "    CDSL_TRY(cdsl_switch_wait(a, %d, %s, %d));\n", ++e->switch_waits, order,
                    op->loc.line);
        break;
    default:
        break;
    }
}

/* Grid barrier or convergence before op, when its data needs one. */
/* Packets are ordered word by word on the GPU, but the checker takes a send as done, all of it,
   before its receive, like a signal before its wait (docs/language.md, section 8). So all of
   the rank's blocks meet before a send when data operations came since the last meeting (the
   send's packets then say that everything before it is done, not only the words of the block
   that sent them), and after a receive before the next data operation (which may touch words
   other blocks received). Signals after a receive converge as after any data operation. */
static bool packet_meeting(const Emitter *e, const IrOp *op)
{
    return op->kind == IR_PKT_SEND || e->since_barrier.recv;
}

/* A send's packets vouch for everything before it on the rank, like a signal for all blocks, but
   each thread sends only its own words: so the blocks meet before it after data operations, and
   after a wait, which may have brought a block only its own share of a partner's work (a signal
   that arrived block by block). */
static bool send_meeting(const Emitter *e, const IrOp *op)
{
    return op->kind == IR_PKT_SEND && e->since_barrier.wait;
}

/* A grid barrier before a data op that needs one. */
static void put_barrier(Emitter *e, const IrOp *op)
{
    if (!(ir_is_data(op->kind) &&
          ((e->since_barrier.data && (op->sync_before || packet_meeting(e, op))) || send_meeting(e, op))))
        return;
    emit_line_at(&e->out, op->loc);
    emit_printf(&e->out, "    CDSL_TRY(cdsl_grid_barrier(a, %d, %d));  "
                "// after the other blocks' work above\n", ++e->meets, op->loc.line);
    e->since_barrier = (SinceBarrier){0};
    e->since_meet = (SinceMeet){0};
}

/* How a signal arrives (cdsl_device.cuh, cdsl_arrive), with the convergence it needs first.
   Block by block unless a data op since the last grid barrier may be reached through other
   blocks on another rank (partition.c): then block 0 arrives for all, after the blocks
   converged, unless only signals came since the last convergence (block 0 still knows all
   the others had done then). */
static const char *put_arrival(Emitter *e, const IrOp *op)
{
    if (!e->since_barrier.mixed)
        return "CDSL_BY_BLOCK";
    if (e->since_meet.data || e->since_meet.wait) {
        emit_line_at(&e->out, op->loc);
        emit_printf(&e->out, "    CDSL_TRY(cdsl_converge(a, %d, %d));  "
                    "// the rank's work above is done (other blocks reach some of it elsewhere)\n",
                    ++e->meets, op->loc.line);
        e->since_meet = (SinceMeet){0};
    }
    return "CDSL_FOR_ALL";
}

static void put_fence(Emitter *e, const char *why, Loc loc)
{
    if (!why)
        return;
    emit_line_at(&e->out, loc);
    emit_printf(&e->out, "    cdsl_fence_alias();  // %s\n", why);
}

static void put_op(Emitter *e, const IrOp *op, Arena *a)
{
    put_comment(e, op, a);
    put_barrier(e, op);
    bool signal = op->kind == IR_SIGNAL || op->kind == IR_SW_SIGNAL;
    /* Whether the arriving threads fence at system scope even for a relaxed signal, or a send:
       after any data op. Not only since the last meeting: a convergence or grid barrier fences
       at GPU scope only, and the threads that arrive for all blocks need not be the ones that
       fenced for an earlier signal (found by review). */
    bool after_data = e->data_in_launch;
    const char *how = signal ? put_arrival(e, op) : NULL;
    if (ir_is_data(op->kind)) {
        put_fence(e, e->fence ? emit_fence_before(e->fence, op) : NULL, op->loc);
        emit_line_at(&e->out, op->loc);
        if (ir_is_packet(op->kind))
            emit_packets_op(&e->out, e->p, op, e->bufname, after_data);
        else
            put_data_call(e, op);
        e->since_barrier.data = e->since_meet.data = e->data_in_launch = true;
        e->since_barrier.recv |= op->kind == IR_PKT_RECV;
        e->since_barrier.mixed |= !op->same_blocks;
    } else {
        emit_line_at(&e->out, op->loc);
        put_sync_call(e, op, after_data, how);
        bool wait = op->kind == IR_WAIT || op->kind == IR_SW_WAIT;
        e->since_meet.wait |= wait;
        e->since_barrier.wait |= wait;
    }
    if (e->fence)
        emit_fence_after(e->fence, op);
}

/* What the rank's launch consumed on each counter (base word), then the leave function, which
   hands the bases and the launch number to the next launch (cdsl_leave: plain stores). */
static void put_leave(Emitter *e, int r)
{
    EmitBuf *o = &e->out;
    const IrSeq *s = &e->p->ranks[r];
    emit_printf(o, "__device__ __forceinline__ u64 rank_%d_consumed(u32 w)\n{\n    switch (w) {\n", r);
    if (e->switch_waits)
        emit_printf(o, "    case CDSL_STATE_SWITCH: return %d * CDSL_NRANKS;\n", e->switch_waits);
    for (int i = 0; i < s->nops; i++) {
        int q = s->ops[i].peer;
        if (s->ops[i].kind == IR_WAIT && e->peer_waits[q]) {
            emit_printf(o, "    case CDSL_STATE_PEER + %d: return %d;\n", q, e->peer_waits[q]);
            e->peer_waits[q] = 0;
        }
    }
    if (e->meets)
        emit_printf(o, "    case CDSL_STATE_GRID(CDSL_NRANKS): return cdsl_meet_arrivals(%d);\n", e->meets);
    emit_packets_leave(o, e->p);
    emit_puts(o, "    default: return 0;\n    }\n}\n\n");
    emit_printf(o, "__device__ void rank_%d_leave(const CdslArgs &a)\n{\n    cdsl_leave(a, rank_%d_consumed);\n}\n\n",
                r, r);
}

static void put_rank(Emitter *e, int r, Arena *a)
{
    const IrSeq *s = &e->p->ranks[r];
    e->switch_waits = e->meets = 0;
    e->since_barrier = (SinceBarrier){0};
    e->since_meet = (SinceMeet){0};
    e->data_in_launch = false;
    if (e->fence)
        emit_fence_begin_rank(e->fence);
    emit_printf(&e->out, "/* ---- rank %d: %d operation%s */\n\n", r, s->nops, s->nops == 1 ? "" : "s");
    emit_printf(&e->out, "__device__ bool rank_%d(const CdslArgs &a)\n{\n", r);
    for (int i = 0; i < s->nops; i++)
        put_op(e, &s->ops[i], a);
    put_fence(e, e->fence ? emit_fence_at_end(e->fence) : NULL, s->nops ? s->ops[s->nops - 1].loc : p_loc(e));
    emit_line_back(&e->out);
    emit_puts(&e->out, "    return true;\n}\n\n");
    put_leave(e, r);
}

/* ---- The whole source ------------------------------------------------------------------------ */

static void put_header(Emitter *e, cdsl_dtype dtype, Arena *a)
{
    const IrProgram *p = e->p;
    bool nvls = e->flavour == CDSL_BACKEND_NVLS;
    emit_printf(&e->out,
                "// CUDA for the cdsl program %s (implements %s), generated by cdslc:\n"
                "// %d ranks, chunks = %d, flavour %s, element type %s.\n",
                sanitise(a, p->name, NULL, 64), ir_coll_name(p->coll), p->nranks, p->chunks,
                nvls ? "nvls (multimem through the NVLink switch)" : "p2p (peer memory, switch emulated)",
                emit_dtype(dtype)->name);
    if (e->only >= 0)
        emit_printf(&e->out, "// Rank %d's code only (cdslc --rank %d): the checker checked every rank.\n",
                    e->only, e->only);
    emit_printf(&e->out,
                "//\n"
                "// cdsl_main runs once per rank. rank_<r>() below is that rank's checked list of\n"
                "// operations, one call per operation in program order, each under a comment with\n"
                "// its .cdsl line:col and a #line naming it. Every data operation is spread over all\n"
                "// of the rank's threads. The helpers are cdsl's device library, cdsl_device.cuh\n"
                "// (NVRTC gets it by name; cdslc --emit-cuda --standalone pastes it in for nvcc).\n\n");
}

static void put_buffers(Emitter *e)
{
    emit_puts(&e->out, "/* ---- The program's buffers (chunk counts) ---- */\n\nenum {\n");
    for (int b = 0; b < e->p->nbufs; b++)
        emit_printf(&e->out, "    %s = %d,  /* %d chunk%s */\n", e->bufname[b], b, e->p->bufs[b].nchunks,
                    e->p->bufs[b].nchunks == 1 ? "" : "s");
    emit_puts(&e->out, "};\n\n");
}

static void put_kernel(Emitter *e)
{
    EmitBuf *o = &e->out;
    emit_puts(o, "/* ---- The kernel: one launch per rank; a __grid_constant__ argument block is read in\n"
                 "   place, never copied to local memory. ---- */\n\n"
                 "extern \"C\" __global__ void cdsl_main(const __grid_constant__ CdslArgs a)\n{\n"
                 "    cdsl_enter(a);  // this launch's number, for the bases of its counters\n"
                 "    switch (a.rank) {\n");
    for (int r = 0; r < e->p->nranks; r++)
        if (e->only < 0 || r == e->only)
            emit_printf(o, "    case %d: rank_%d(a); rank_%d_leave(a); break;\n", r, r, r);
    emit_puts(o, "    }\n}\n");
}

static bool check_emittable(const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, Diag *d)
{
    const EmitDtype *t = emit_dtype(dtype);
    if (flavour != CDSL_BACKEND_P2P && flavour != CDSL_BACKEND_NVLS) {
        diag_error(d, p->loc, "the %s backend runs the IR on CPU threads and has no CUDA source; "
                   "emit for the p2p or nvls backend", cdsl_backend_name(flavour));
        return false;
    }
    if (!t) {
        diag_error(d, p->loc, "unknown element type (%d)", (int)dtype);
        return false;
    }
    if (flavour == CDSL_BACKEND_NVLS && !t->mc_sum_word && has_switch_sum(p)) {
        diag_error(d, p->loc, "multimem.ld_reduce cannot add %s elements, so the switch cannot "
                   "reduce them; use the p2p backend or another element type", t->name);
        return false;
    }
    long total = 0;
    for (int r = 0; r < p->nranks; r++)
        total += p->ranks[r].nops;
    if (total > EMIT_MAX_OPS) {
        diag_error(d, p->loc, "%ld operations over %d ranks are too many for straight-line CUDA "
                   "(at most %d)", total, p->nranks, EMIT_MAX_OPS);
        return false;
    }
    return true;
}

const char *emit_cuda(const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, Arena *a, Diag *d)
{
    return emit_cuda_rank(p, flavour, dtype, -1, a, d);
}

const char *emit_cuda_rank(const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, int rank, Arena *a,
                           Diag *d)
{
    if (!check_emittable(p, flavour, dtype, d))
        return NULL;
    if (p->ntbs) /* an imported plan: one code path per thread block */
        return emit_cuda_blocks(p, flavour, dtype, rank, a, d);
    Emitter e = {.p = p, .flavour = flavour, .out = {.arena = a}, .only = rank};
    e.peer_waits = ARENA_ARRAY(a, int, (size_t)p->nranks);
    if (flavour == CDSL_BACKEND_NVLS)
        e.fence = emit_fence_new(p, a);
    name_buffers(&e, a);
    char name[160];
    emit_cu_name(name, sizeof name, p, flavour, dtype, rank);
    e.out.cu_name = name;
    put_header(&e, dtype, a);
    emit_include(&e.out, p, flavour, dtype, false, rank);
    emit_packets_prelude(&e.out, p);
    put_buffers(&e);
    for (int r = 0; r < p->nranks; r++) {
        if (rank < 0 || r == rank)
            put_rank(&e, r, a);
        else if (e.fence)
            emit_fence_begin_rank(e.fence);   /* the fence pass counts ranks as they pass */
    }
    put_kernel(&e);
    return e.out.s;
}
