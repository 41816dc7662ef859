/*
 * emit_cuda.c - CUDA source from the checked per-rank IR (see emit.h for the file's shape), for
 * a .cdsl program and an imported MSCCL++ plan alike: one device function per unit (a .cdsl
 * rank, run by the rank's whole grid; a plan's thread block), one call per operation for the
 * unit's group (the device library's instances: cdsl_<op> for the grid, cdsl_tb_<op> for a
 * block), then what the rank's launch consumed and its leave function, then the kernel.
 *
 * A .cdsl rank's operations are spread over every block of the rank, so we insert the
 * intra-rank synchronisation its order needs (a plan's blocks say their own, emit_plan.c):
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

#include <string.h>

#include "emit_buf.h"
#include "emit_fence.h"
#include "emit_headers.h"
#include "emit_packets.h"
#include "emit_plan.h"
#include "emit_port.h"
#include "emit_target.h"

/* Straight-line code for more operations than this would be too big for NVRTC anyway. */
enum { EMIT_MAX_OPS = 1 << 20 };

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
    EmitPlan *plan;                     /* an imported plan's counters; NULL: a .cdsl program */
    int only;                           /* -1: every rank's code; else this rank's alone */
    int rank;                           /* the .cdsl rank being printed */
    int port_pairs;                     /* port channel ordinals per pair (ir_port_shape) */
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
    emit_range(&e->out, bufname(e, r.buf), r);
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

/* A data op's call, for the unit's group: the device library's instance for the grid,
   cdsl_<op>(), or for a plan's thread block, cdsl_tb_<op>(), whose reduce may read its second
   operand on another rank (a .cdsl program's is its own). */
static void put_data_call(Emitter *e, const IrOp *op, int rank)
{
    static const char *const fn[] = {
        [IR_COPY] = "copy", [IR_REDUCE] = "reduce", [IR_PUT] = "put",
        [IR_GET] = "get", [IR_SW_STORE] = "switch_store",
        [IR_SW_REDUCE] = "switch_reduce", [IR_SW_REDUCE_STORE] = "switch_reduce_store",
    };
    EmitBuf *o = &e->out;
    emit_printf(o, "    cdsl_%s%s(a, ", e->plan ? "tb_" : "", fn[op->kind]);
    if (op->kind == IR_PUT || op->kind == IR_GET)
        emit_printf(o, "%d, ", op->peer);
    emit_printf(o, "%s, %d, %s, %d, ", e->bufname[op->dst.buf], op->dst.first, e->bufname[op->src.buf],
                op->src.first);
    if (op->kind == IR_REDUCE && e->plan)
        emit_printf(o, "%d, ", op->peer >= 0 ? op->peer : rank);
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

/* A port op of a .cdsl rank (emit_port.h), whose counts have one copy: block 0 makes it. A
   request reads what every block did before (the proxy copies it), so block 0 waits for the
   others first; after a wait, every block waits for block 0 at a grid barrier. */
static void put_grid_port(Emitter *e, const IrOp *op)
{
    bool request = emit_port_kind(op, e->rank) == EMIT_PORT_REQUEST;
    if (request && (e->since_meet.data || e->since_meet.wait)) {
        emit_line_at(&e->out, op->loc);
        emit_printf(&e->out, "    CDSL_TRY(cdsl_converge(a, %d, %d));  // the rank's work above is done\n", ++e->meets,
                    op->loc.line);
        e->since_meet = (SinceMeet){0};
    }
    emit_line_at(&e->out, op->loc);
    emit_puts(&e->out, "    if (blockIdx.x == 0)\n");
    emit_port_call(&e->out, e->p, e->port_pairs, e->rank, op, "        ");
    if (request)
        return;
    emit_printf(&e->out, "    CDSL_TRY(cdsl_grid_barrier(a, %d, %d));  // every block after block 0's wait\n", ++e->meets,
                op->loc.line);
    e->since_barrier = (SinceBarrier){0};
    e->since_meet = (SinceMeet){0};
}

/* One op of a .cdsl rank, whose group is the grid: the synchronisation it needs first, then its
   call. */
static void put_grid_op(Emitter *e, const IrOp *op, Arena *a)
{
    put_comment(e, op, a);
    if (emit_port_kind(op, e->rank) != EMIT_PORT_NONE) {
        put_grid_port(e, op);
        return;
    }
    put_barrier(e, op);
    bool signal = op->kind == IR_SIGNAL || op->kind == IR_SW_SIGNAL;
    /* Whether the arriving threads fence at system scope even for a relaxed signal, or a send:
       after any data op. Not only since the last meeting: a convergence or grid barrier fences
       at GPU scope only, and the threads that arrive for all blocks need not be the ones that
       fenced for an earlier signal. */
    bool after_data = e->data_in_launch;
    const char *how = signal ? put_arrival(e, op) : NULL;
    if (ir_is_data(op->kind)) {
        put_fence(e, e->fence ? emit_fence_before(e->fence, op) : NULL, op->loc);
        emit_line_at(&e->out, op->loc);
        if (ir_is_packet(op->kind))
            emit_packets_op(&e->out, e->p, op, e->bufname, after_data);
        else
            put_data_call(e, op, -1);
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

/* The same packets as the op before: a write that several reads take is paired once per read
   (compiler/plan/mscclpp_packets.c), and storing the same words again changes nothing. */
static bool same_packets(const IrOp *op, const IrOp *prev)
{
    return prev && op->kind == IR_MPKT_PUT && prev->kind == IR_MPKT_PUT && prev->peer == op->peer &&
           prev->tb == op->tb && !memcmp(&prev->dst, &op->dst, sizeof op->dst) &&
           !memcmp(&prev->src, &op->src, sizeof op->src);
}

/* One op of a plan's thread block: the plan says all of its synchronisation itself. */
static void put_block_op(Emitter *e, const IrOp *op, const IrOp *prev, int rank)
{
    emit_plan_comment(&e->out, e->p, op);
    emit_line_at(&e->out, op->loc);
    if (same_packets(op, prev))
        emit_puts(&e->out, "    // the same packets as above, paired with another read\n");
    else if (emit_port_kind(op, rank) != EMIT_PORT_NONE)
        emit_port_call(&e->out, e->p, e->port_pairs, rank, op, "    ");
    else if (ir_is_msc_packet(op->kind))
        emit_packets_msc_op(&e->out, e->p, op, e->bufname);
    else if (ir_is_data(op->kind))
        put_data_call(e, op, rank);
    else
        emit_plan_sync(&e->out, e->plan, op);
}

/* The cases of a .cdsl rank's consumed(w). */
static void put_grid_consumed(Emitter *e, int r)
{
    EmitBuf *o = &e->out;
    const IrSeq *s = &e->p->ranks[r];
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
}

/* What the rank's launch consumed on each counter (base word), then the leave function, which
   hands the bases and the launch number to the next launch (cdsl_leave: plain stores, run by
   every block). `unit` names the rank's functions: "rank" or "plan". */
static void put_leave(Emitter *e, const char *unit, int r)
{
    EmitBuf *o = &e->out;
    emit_printf(o, "__device__ __forceinline__ u64 %s_%d_consumed(u32 w)\n{\n    switch (w) {\n", unit, r);
    if (e->plan) {
        emit_plan_consumed(o, e->plan);
        emit_packets_leave(o, e->p);
    } else
        put_grid_consumed(e, r);
    emit_puts(o, "    default: return 0;\n    }\n}\n\n");
    emit_printf(o, "__device__ void %s_%d_leave(const CdslArgs &a)\n{\n    cdsl_leave(a, %s_%d_consumed);\n}\n\n",
                unit, r, unit, r);
}

/* A .cdsl rank: one unit, rank_<r>(), run by the rank's whole grid. */
static void put_grid_rank(Emitter *e, int r, Arena *a)
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
    e->rank = r;
    for (int i = 0; i < s->nops; i++)
        if (s->ops[i].thread >= 0)  /* a port proxy's ops run on the host */
            put_grid_op(e, &s->ops[i], a);
    put_fence(e, e->fence ? emit_fence_at_end(e->fence) : NULL, s->nops ? s->ops[s->nops - 1].loc : p_loc(e));
    emit_line_back(&e->out);
    emit_puts(&e->out, "    return true;\n}\n\n");
    put_leave(e, "rank", r);
}

/* A plan's rank: one unit per thread block, plan_<r>_<t>() (the block's ops are consecutive in
   the rank's sequence), and plan_<r>(), which runs block t's unit on block t. */
static void put_plan_rank(Emitter *e, int r)
{
    const IrSeq *s = &e->p->ranks[r];
    int ntbs = ir_block_units(e->p, r), i = 0;   /* the port proxies run on the host */
    emit_plan_begin_rank(e->plan, r);
    emit_printf(&e->out, "/* ---- rank %d: %d thread block%s, %d operations */\n\n", r, ntbs, ntbs == 1 ? "" : "s",
                s->nops);
    for (int t = 0; t < ntbs; t++) {
        emit_printf(&e->out, "__device__ bool plan_%d_%d(const CdslArgs &a)\n{\n", r, t);
        emit_plan_begin_block(e->plan);
        for (; i < s->nops && s->ops[i].tb == t; i++)
            put_block_op(e, &s->ops[i], i > 0 ? &s->ops[i - 1] : NULL, r);
        emit_line_back(&e->out);
        emit_plan_end_block(&e->out, e->plan, t);
        emit_puts(&e->out, "    return true;\n}\n\n");
    }
    put_leave(e, "plan", r);
    emit_printf(&e->out, "__device__ void plan_%d(const CdslArgs &a)\n{\n", r);
    /* In place, the input already lies inside the output (the runtime lays it out so). */
    emit_puts(&e->out, "    switch (blockIdx.x) {\n");
    for (int t = 0; t < ntbs; t++)
        emit_printf(&e->out, "    case %d: plan_%d_%d(a); break;\n", t, r, t);
    emit_printf(&e->out, "    default: break;\n    }\n    plan_%d_leave(a);\n}\n\n", r);
}

/* ---- The whole source ------------------------------------------------------------------------ */

static const char *flavour_text(const Emitter *e)
{
    return e->flavour == CDSL_BACKEND_NVLS ? "nvls (multimem through the NVLink switch)"
                                           : "p2p (peer memory, switch emulated)";
}

static void put_only(Emitter *e)
{
    if (e->only >= 0)
        emit_printf(&e->out, "// Rank %d's code only (cdslc --rank %d): the checker checked every rank.\n",
                    e->only, e->only);
}

static void put_header(Emitter *e, cdsl_dtype dtype, Arena *a)
{
    const IrProgram *p = e->p;
    if (e->plan) {
        emit_printf(&e->out,
                    "// CUDA for the MSCCL++ plan %s (%s), imported and checked by cdslc:\n"
                    "// %d ranks, flavour %s, element type %s.\n"
                    "// plan_<r>_<t>() is thread block t of rank r: the block's checked ops in order, each\n"
                    "// under a comment with the plan's line:col and a #line naming it. The helpers are\n"
                    "// cdsl's device library, cdsl_device.cuh with CDSL_PLAN (NVRTC gets it by name;\n"
                    "// cdslc --emit-cuda --standalone pastes it in for nvcc).\n",
                    sanitise(a, p->name, NULL, 64), ir_coll_name(p->coll), p->nranks, flavour_text(e),
                    emit_dtype(dtype)->name);
        put_only(e);
        emit_puts(&e->out, "\n");
        return;
    }
    emit_printf(&e->out,
                "// CUDA for the cdsl program %s (implements %s), generated by cdslc:\n"
                "// %d ranks, chunks = %d, flavour %s, element type %s.\n",
                sanitise(a, p->name, NULL, 64), ir_coll_name(p->coll), p->nranks, p->chunks, flavour_text(e),
                emit_dtype(dtype)->name);
    put_only(e);
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
    if (e->plan) {
        emit_puts(&e->out, "/* ---- The plan's buffers ---- */\n\n"
                           "enum { B_input = 0, B_output = 1, B_scratch = 2 };\n");
        if (e->p->msc_packets) /* the scratch as packets (compiler/plan/mscclpp_map.c) */
            emit_printf(&e->out, "enum { %s = %d };  /* the plan's packets: %d chunks */\n", e->bufname[e->p->msc_packets],
                        e->p->msc_packets, e->p->bufs[e->p->msc_packets].nchunks);
        emit_puts(&e->out, "\n");
        return;
    }
    emit_puts(&e->out, "/* ---- The program's buffers (chunk counts) ---- */\n\nenum {\n");
    for (int b = 0; b < e->p->nbufs; b++)
        emit_printf(&e->out, "    %s = %d,  /* %d chunk%s */\n", e->bufname[b], b, e->p->bufs[b].nchunks,
                    e->p->bufs[b].nchunks == 1 ? "" : "s");
    emit_puts(&e->out, "};\n\n");
}

static void put_kernel(Emitter *e)
{
    EmitBuf *o = &e->out;
    if (!e->plan)
        emit_puts(o, "/* ---- The kernel: one launch per rank; a __grid_constant__ argument block is read in\n"
                     "   place, never copied to local memory. ---- */\n\n");
    emit_puts(o, "extern \"C\" __global__ void cdsl_main(const __grid_constant__ CdslArgs a)\n{\n"
                 "    cdsl_enter(a);  // this launch's number, for the bases of its counters\n"
                 "    switch (a.rank) {\n");
    for (int r = 0; r < e->p->nranks; r++) {
        if (e->only >= 0 && r != e->only)
            continue;
        if (e->plan)
            emit_printf(o, "    case %d: plan_%d(a); break;\n", r, r);
        else
            emit_printf(o, "    case %d: rank_%d(a); rank_%d_leave(a); break;\n", r, r, r);
    }
    emit_puts(o, "    }\n}\n");
}

static bool check_emittable(const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, Diag *d)
{
    const EmitDtype *t = emit_dtype(dtype);
    /* jit.c refuses a backend without device code first, naming it from the runtime's registry */
    if (flavour != CDSL_BACKEND_P2P && flavour != CDSL_BACKEND_NVLS) {
        diag_error(d, p->loc, "backend %d has no CUDA source; emit for the p2p or nvls backend", (int)flavour);
        return false;
    }
    if (!t) {
        diag_error(d, p->loc, "unknown element type (%d)", (int)dtype);
        return false;
    }
    if (flavour == CDSL_BACKEND_NVLS && !t->mc_sum_word && emit_switch_sums(p)) {
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
    if (!check_emittable(p, flavour, dtype, d) || (p->ntbs && !emit_plan_emittable(p, d, a)))
        return NULL;
    Emitter e = {.p = p, .flavour = flavour, .out = {.arena = a}, .only = rank};
    e.peer_waits = ARENA_ARRAY(a, int, (size_t)p->nranks);
    int port_proxies;
    ir_port_shape(p, &e.port_pairs, &port_proxies);
    if (p->plan) /* an imported plan: one unit per thread block, which places its own fences */
        e.plan = emit_plan_new(p, a);
    else if (flavour == CDSL_BACKEND_NVLS)
        e.fence = emit_fence_new(p, a);
    name_buffers(&e, a);
    char name[160];
    emit_cu_name(name, sizeof name, p, flavour, dtype, rank);
    e.out.cu_name = name;
    put_header(&e, dtype, a);
    emit_include(&e.out, p, flavour, dtype, e.plan != NULL, rank);
    emit_packets_prelude(&e.out, p);
    put_buffers(&e);
    for (int r = 0; r < p->nranks; r++) {
        if ((rank < 0 || r == rank) && e.plan)
            put_plan_rank(&e, r);
        else if (rank < 0 || r == rank)
            put_grid_rank(&e, r, a);
        else if (e.fence)
            emit_fence_begin_rank(e.fence);   /* the fence pass counts ranks as they pass */
    }
    put_kernel(&e);
    return e.out.s;
}
