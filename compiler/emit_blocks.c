/*
 * emit_blocks.c - CUDA source for an imported MSCCL++ plan: one code path per thread block.
 *
 * A plan's rank is several units (ir.h), each one CUDA block with its own op list, as
 * MSCCL++'s executor runs it: block t of rank r runs plan_<r>_<t>(), its ops one call each in
 * order under a comment with the plan's line:col, and nothing between blocks but what the
 * plan says (barriers, and signals and waits through other ranks). The helpers are the
 * device library's (runtime/device/cdsl_device.cuh, the same as for .cdsl programs) and
 * cdsl_plan.cuh's block-level ones (CDSL_PLAN): data ops spread over the block's own threads, signals
 * and waits by thread 0 on the counter of the op's channel (abi.h's plan words), nop as
 * __syncthreads(), barriers counted in the rank's state words. A wait here is the prelude's,
 * which makes the whole block wait: stronger than the executor's (where only the waiting
 * thread does) and so within what the checker proved, since blocks.c asked for a nop after
 * every wait anyway.
 *
 * The rank's leave function, run by every block, hands what its waits and barriers consumed
 * to the next launch (cdsl_leave: block 0 writes the other copy of the bases, plain stores). The grid must have a block for each thread block of the
 * busiest rank (gpu_common.c launches exactly that many); others leave at once.
 *
 * Kept apart from emit_cuda.c, which emits .cdsl programs (one unit per rank spread over the
 * grid), so that the two can change independently.
 */
#include "emit.h"

#include <string.h>

#include "abi.h"

typedef struct Blocks {
    const IrProgram *p;
    cdsl_backend flavour;
    EmitBuf out;
    int rank;              /* the rank being printed */
    int *waits;            /* [nranks * CDSL_PLAN_CHANNELS]: waits per (peer, channel), this rank */
    int switch_waits;
    int bar_uses[CDSL_PLAN_BARRIERS]; /* this block's uses of each barrier */
    int bar_total[CDSL_PLAN_BARRIERS]; /* arrivals on each barrier per launch, this rank */
} Blocks;

static const char *const BUF_NAMES[] = {"B_input", "B_output", "B_scratch"};

static int sync_word(const Blocks *e, int chan, int peer)
{
    return CDSL_SYNC_CHAN(e->p->nranks, chan, peer);
}

static int state_word(const Blocks *e, int chan, int peer)
{
    return CDSL_STATE_CHAN(e->p->nranks, chan, peer);
}

static const char *order_of(const IrOp *op)
{
    bool wait = op->kind == IR_WAIT || op->kind == IR_SW_WAIT;
    return op->relaxed ? "CDSL_RELAXED" : wait ? "CDSL_ACQUIRE" : "CDSL_RELEASE";
}

static void put_range_text(Blocks *e, IrRange r)
{
    if (r.count == 1)
        emit_printf(&e->out, "%s[%d]", e->p->bufs[r.buf].name, r.first);
    else
        emit_printf(&e->out, "%s[%d..%d]", e->p->bufs[r.buf].name, r.first, r.first + r.count);
}

/* "    // 64:23  reduce output[0] <- output[0] + output[0]@1  (rres at threadblock 0, op 5)" */
static void put_comment(Blocks *e, const IrOp *op)
{
    emit_printf(&e->out, "    // %d:%d  %s", op->loc.line, op->loc.col, ir_kind_name(op->kind));
    if (op->peer >= 0)
        emit_printf(&e->out, " peer %d", op->peer);
    if (op->kind == IR_SIGNAL || op->kind == IR_WAIT)
        emit_printf(&e->out, " channel %d", op->chan);
    if (op->kind == IR_BARRIER)
        emit_printf(&e->out, " %d of %d blocks", op->barrier, op->blocks);
    if (ir_is_data(op->kind)) {
        emit_puts(&e->out, " ");
        put_range_text(e, op->dst);
        emit_puts(&e->out, " <- ");
        put_range_text(e, op->src);
        if (op->src2.buf >= 0) {
            emit_puts(&e->out, " + ");
            put_range_text(e, op->src2);
        }
    }
    if (op->ctx) /* the importer's own text: "threadblock 0, op 5", maybe with an op name */
        emit_printf(&e->out, "  (threadblock %d)", op->tb);
    emit_puts(&e->out, "\n");
}

static void put_data(Blocks *e, const IrOp *op)
{
    EmitBuf *o = &e->out;
    const char *d = BUF_NAMES[op->dst.buf], *s = BUF_NAMES[op->src.buf];
    switch (op->kind) {
    case IR_COPY:
        emit_printf(o, "    cdsl_tb_copy(a, %s, %d, %s, %d, %d);\n", d, op->dst.first, s, op->src.first, op->dst.count);
        break;
    case IR_REDUCE:
        emit_printf(o, "    cdsl_tb_reduce(a, %s, %d, %s, %d, %d, %s, %d, %d);\n", d, op->dst.first, s, op->src.first,
                    op->peer >= 0 ? op->peer : e->rank, BUF_NAMES[op->src2.buf], op->src2.first, op->dst.count);
        break;
    case IR_PUT:
    case IR_GET:
        emit_printf(o, "    cdsl_tb_%s(a, %d, %s, %d, %s, %d, %d);\n", op->kind == IR_PUT ? "put" : "get", op->peer, d,
                    op->dst.first, s, op->src.first, op->dst.count);
        break;
    default: {
        const char *fn = op->kind == IR_SW_STORE    ? "cdsl_tb_switch_store"
                         : op->kind == IR_SW_REDUCE ? "cdsl_tb_switch_reduce"
                                                    : "cdsl_tb_switch_reduce_store";
        emit_printf(o, "    %s(a, %s, %d, %s, %d, %d);\n", fn, d, op->dst.first, s, op->src.first, op->dst.count);
        break;
    }
    }
}

static void put_sync(Blocks *e, const IrOp *op)
{
    EmitBuf *o = &e->out;
    switch (op->kind) {
    case IR_SIGNAL:
        emit_printf(o, "    cdsl_tb_signal(a, %d, %d, %s);\n", op->peer, sync_word(e, op->chan, e->rank),
                    order_of(op));
        break;
    case IR_WAIT: {
        int *n = &e->waits[op->peer * CDSL_PLAN_CHANNELS + op->chan];
        emit_printf(o, "    CDSL_TRY(cdsl_wait_word(a, &a.sync[%d], %d, %d, %s, %d, %d));\n",
                    sync_word(e, op->chan, op->peer), state_word(e, op->chan, op->peer), ++*n, order_of(op),
                    op->loc.line, sync_word(e, op->chan, op->peer));
        break;
    }
    case IR_SW_SIGNAL:
        emit_printf(o, "    cdsl_tb_switch_signal(a, %s);\n", order_of(op));
        break;
    case IR_SW_WAIT:
        emit_printf(o, "    CDSL_TRY(cdsl_plan_switch_wait(a, %d, %s, %d));\n    cdsl_tb_after_wait();\n",
                    ++e->switch_waits, order_of(op), op->loc.line);
        break;
    case IR_NOP:
        emit_puts(o, "    __syncthreads();\n");
        break;
    case IR_BARRIER:
        emit_printf(o, "    CDSL_TRY(cdsl_tb_barrier(a, %d, %d, %d));\n", op->barrier,
                    ++e->bar_uses[op->barrier] * op->blocks, op->loc.line);
        if (e->bar_uses[op->barrier] * op->blocks > e->bar_total[op->barrier])
            e->bar_total[op->barrier] = e->bar_uses[op->barrier] * op->blocks;
        break;
    default:
        break;
    }
}

static void put_block(Blocks *e, int r, int t, const IrSeq *s, int *i)
{
    emit_printf(&e->out, "__device__ bool plan_%d_%d(const CdslArgs &a)\n{\n", r, t);
    memset(e->bar_uses, 0, sizeof e->bar_uses);
    for (; *i < s->nops && s->ops[*i].tb == t; ++*i) {
        const IrOp *op = &s->ops[*i];
        put_comment(e, op);
        emit_line_at(&e->out, op->loc);
        if (ir_is_data(op->kind))
            put_data(e, op);
        else
            put_sync(e, op);
    }
    emit_line_back(&e->out);
    emit_puts(&e->out, "    return true;\n}\n\n");
}

/* What the rank's launch consumed on each counter (base word), and the leave function that
   hands it on (cdsl_leave: plain stores, run by every block). */
static void put_leave(Blocks *e, int r)
{
    EmitBuf *o = &e->out;
    int n = e->p->nranks;
    emit_printf(o, "__device__ __forceinline__ u64 plan_%d_consumed(u32 w)\n{\n    switch (w) {\n", r);
    if (e->switch_waits)
        emit_printf(o, "    case CDSL_STATE_SWITCH: return %d * CDSL_NRANKS;\n", e->switch_waits);
    for (int q = 0; q < n; q++)
        for (int c = 0; c < CDSL_PLAN_CHANNELS; c++)
            if (e->waits[q * CDSL_PLAN_CHANNELS + c])
                emit_printf(o, "    case %d: return %d;  // from rank %d, channel %d\n", state_word(e, c, q),
                            e->waits[q * CDSL_PLAN_CHANNELS + c], q, c);
    for (int b = 0; b < CDSL_PLAN_BARRIERS; b++)
        if (e->bar_total[b])
            emit_printf(o, "    case %d: return %d;  // barrier %d\n", CDSL_STATE_BARRIER(n) + b, e->bar_total[b], b);
    emit_printf(o, "    default: return 0;\n    }\n}\n\n"
                "__device__ void plan_%d_leave(const CdslArgs &a)\n{\n    cdsl_leave(a, plan_%d_consumed);\n}\n\n",
                r, r);
}

static void put_rank(Blocks *e, int r)
{
    const IrProgram *p = e->p;
    const IrSeq *s = &p->ranks[r];
    int ntbs = ir_ntbs(p, r), i = 0;
    e->rank = r;
    e->switch_waits = 0;
    memset(e->waits, 0, (size_t)p->nranks * CDSL_PLAN_CHANNELS * sizeof *e->waits);
    memset(e->bar_total, 0, sizeof e->bar_total);
    emit_printf(&e->out, "/* ---- rank %d: %d thread block%s, %d operations */\n\n", r, ntbs, ntbs == 1 ? "" : "s",
                s->nops);
    for (int t = 0; t < ntbs; t++)
        put_block(e, r, t, s, &i);
    put_leave(e, r);
    emit_printf(&e->out, "__device__ void plan_%d(const CdslArgs &a)\n{\n", r);
    /* In place, the input already lies inside the output (the runtime lays it out so). */
    emit_puts(&e->out, "    switch (blockIdx.x) {\n");
    for (int t = 0; t < ntbs; t++)
        emit_printf(&e->out, "    case %d: plan_%d_%d(a); break;\n", t, r, t);
    emit_printf(&e->out, "    default: break;\n    }\n    plan_%d_leave(a);\n}\n\n", r);
}

/* The plan's name for a comment: [A-Za-z0-9_] kept, anything else '_', at most 64 bytes. */
static const char *sanitised(Arena *a, const char *s)
{
    char *t = arena_strndup(a, s ? s : "", s && strlen(s) > 64 ? 64 : (s ? strlen(s) : 0));
    for (char *c = t; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
            *c = '_';
    return t;
}

/* What emit_cuda_rank did not already check (flavour, element type, size): the channels and
   the thread blocks (each needs a launch-number slot, runtime/abi.h). */
static bool blocks_emittable(const IrProgram *p, Diag *d)
{
    for (int r = 0; r < p->nranks; r++)
        if (ir_ntbs(p, r) > CDSL_MAX_BLOCKS) {
            diag_error(d, p->loc, "gpu %d of the plan has %d thread blocks; the device code has room for %d", r,
                       ir_ntbs(p, r), CDSL_MAX_BLOCKS);
            return false;
        }
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const IrOp *op = &p->ranks[r].ops[i];
            if ((op->kind == IR_SIGNAL || op->kind == IR_WAIT) && op->chan >= CDSL_PLAN_CHANNELS) {
                diag_error(d, op->loc, "the plan uses %d channels between gpus %d and %d; the device code has "
                           "counters for %d", op->chan + 1, r, op->peer, CDSL_PLAN_CHANNELS);
                return false;
            }
        }
    return true;
}

const char *emit_cuda_blocks(const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, int rank, Arena *a,
                             Diag *d)
{
    if (!blocks_emittable(p, d))
        return NULL;
    Blocks e = {.p = p, .flavour = flavour, .out = {.arena = a}};
    char name[160];
    emit_cu_name(name, sizeof name, p, flavour, dtype, rank);
    e.out.cu_name = name;
    e.waits = ARENA_ARRAY(a, int, (size_t)p->nranks * CDSL_PLAN_CHANNELS);
    bool nvls = flavour == CDSL_BACKEND_NVLS;
    emit_printf(&e.out,
                "// CUDA for the MSCCL++ plan %s (%s), imported and checked by cdslc:\n"
                "// %d ranks, flavour %s, element type %s.\n"
                "// plan_<r>_<t>() is thread block t of rank r: the block's checked ops in order, each\n"
                "// under a comment with the plan's line:col and a #line naming it. The helpers are\n"
                "// cdsl's device library, cdsl_device.cuh with CDSL_PLAN (NVRTC gets it by name;\n"
                "// cdslc --emit-cuda --standalone pastes it in for nvcc).\n",
                sanitised(a, p->name), ir_coll_name(p->coll), p->nranks,
                nvls ? "nvls (multimem through the NVLink switch)" : "p2p (peer memory, switch emulated)",
                emit_dtype(dtype)->name);
    if (rank >= 0)
        emit_printf(&e.out, "// Rank %d's code only (cdslc --rank %d): the checker checked every rank.\n", rank, rank);
    emit_puts(&e.out, "\n");
    emit_include(&e.out, p, flavour, dtype, true, rank);
    emit_puts(&e.out, "/* ---- The plan's buffers ---- */\n\nenum { B_input = 0, B_output = 1, B_scratch = 2 };\n\n");
    for (int r = 0; r < p->nranks; r++)
        if (rank < 0 || r == rank)
            put_rank(&e, r);
    emit_puts(&e.out, "extern \"C\" __global__ void cdsl_main(const __grid_constant__ CdslArgs a)\n{\n"
                      "    cdsl_enter(a);  // this launch's number, for the bases of its counters\n"
                      "    switch (a.rank) {\n");
    for (int r = 0; r < p->nranks; r++)
        if (rank < 0 || r == rank)
            emit_printf(&e.out, "    case %d: plan_%d(a); break;\n", r, r);
    emit_puts(&e.out, "    }\n}\n");
    return e.out.s;
}
