/*
 * emit_plan.c - an imported MSCCL++ plan's synchronisation and comments, for the walk of
 * emit_cuda.c (emit_plan.h).
 *
 * Block t of rank r runs plan_<r>_<t>(), its ops one call each in order, and nothing between
 * blocks but what the plan says (barriers, and signals and waits through other ranks). The
 * helpers are the device library's block instances (cdsl_device.cuh with CDSL_PLAN): signals
 * and waits by thread 0 on the counter of the op's channel (abi.h's plan words), nop as
 * __syncthreads(), barriers counted in the rank's state words. A wait here is the library's,
 * which makes the whole block wait: stronger than the executor's (where only the waiting
 * thread does) and so within what the checker proved, since plan_blocks.c asked for a nop after
 * every wait anyway. The waits on each counter are numbered per launch, and so are each
 * barrier's uses by each block; the totals are what the rank's leave function hands on, except
 * for a channel c >= 1, whose one waiting block hands its own count on as it ends (abi.h:
 * CDSL_STATE_CHAN). The counters are sized from the plan's channels per pair
 * (ir_plan_channels), and so is the runtime's allocation of them: no plan is refused for them.
 */
#include "emit_plan.h"

#include <string.h>

#include "abi.h"
#include "emit_port.h"

struct EmitPlan {
    const IrProgram *p;
    int rank;              /* the rank being printed */
    int chans;             /* channels per pair the plan uses (ir_plan_channels) */
    int *waits;            /* [nranks * chans]: waits per (peer, channel), this rank */
    int switch_waits;
    int bar_uses[CDSL_PLAN_BARRIERS]; /* this block's uses of each barrier */
    int bar_total[CDSL_PLAN_BARRIERS]; /* arrivals on each barrier per launch, this rank */
    int sem_acquires[CDSL_PLAN_SEMAPHORES]; /* acquires of each semaphore per launch, this rank */
};

static int sync_word(const EmitPlan *e, int chan, int peer)
{
    return CDSL_SYNC_CHAN(e->p->nranks, chan, peer);
}

static int state_word(const EmitPlan *e, int chan, int peer)
{
    return CDSL_STATE_CHAN(e->p->nranks, chan, peer);
}

static const char *order_of(const IrOp *op)
{
    bool wait = op->kind == IR_WAIT || op->kind == IR_SW_WAIT;
    return op->relaxed ? "CDSL_RELAXED" : wait ? "CDSL_ACQUIRE" : "CDSL_RELEASE";
}

/* A channel c >= 1 of rank r is waited on from one thread block: its base has one copy, which
   that block advances (abi.h). The importer refuses two blocks on one memory channel; false,
   with an error, for a plan that reaches here otherwise. */
static bool one_waiting_block(const IrProgram *p, int r, int chans, Diag *d, Arena *a)
{
    int *by = ARENA_ARRAY(a, int, (size_t)p->nranks * (size_t)chans);
    for (int i = 0; i < p->ranks[r].nops; i++) {
        const IrOp *op = &p->ranks[r].ops[i];
        if (op->kind != IR_WAIT || op->chan < 1 || emit_port_kind(op, r) != EMIT_PORT_NONE)
            continue;
        int *tb = &by[op->peer * chans + op->chan];
        if (*tb && *tb != op->tb + 1) {
            diag_error(d, op->loc, "gpu %d waits on its channel %d from gpu %d in thread blocks %d and %d; the "
                       "device code keeps that channel's count for one block", r, op->chan, op->peer, *tb - 1,
                       op->tb);
            return false;
        }
        *tb = op->tb + 1;
    }
    return true;
}

bool emit_plan_emittable(const IrProgram *p, Diag *d, Arena *a)
{
    if (!emit_port_emittable(p, d, a))
        return false;
    for (int r = 0; r < p->nranks; r++)
        if (ir_ntbs(p, r) > CDSL_MAX_BLOCKS) {
            diag_error(d, p->loc, "gpu %d of the plan has %d thread blocks; the device code has room for %d", r,
                       ir_ntbs(p, r), CDSL_MAX_BLOCKS);
            return false;
        }
    int chans = ir_plan_channels(p);
    for (int r = 0; r < p->nranks; r++) {
        if (!one_waiting_block(p, r, chans, d, a))
            return false;
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const IrOp *op = &p->ranks[r].ops[i];
            if (ir_is_semaphore(op->kind) && op->chan >= CDSL_PLAN_SEMAPHORES) {
                diag_error(d, op->loc, "gpu %d of the plan uses semaphore %d; the device code has words for %d", r,
                           op->chan, CDSL_PLAN_SEMAPHORES);
                return false;
            }
        }
    }
    return true;
}

EmitPlan *emit_plan_new(const IrProgram *p, Arena *a)
{
    EmitPlan *e = ARENA_NEW(a, EmitPlan);
    e->p = p;
    e->chans = ir_plan_channels(p);
    e->waits = ARENA_ARRAY(a, int, (size_t)p->nranks * (size_t)e->chans);
    return e;
}

void emit_plan_begin_rank(EmitPlan *e, int rank)
{
    e->rank = rank;
    e->switch_waits = 0;
    memset(e->waits, 0, (size_t)e->p->nranks * (size_t)e->chans * sizeof *e->waits);
    memset(e->bar_total, 0, sizeof e->bar_total);
    memset(e->sem_acquires, 0, sizeof e->sem_acquires);
}

void emit_plan_begin_block(EmitPlan *e)
{
    memset(e->bar_uses, 0, sizeof e->bar_uses);
}

void emit_plan_comment(EmitBuf *b, const IrProgram *p, const IrOp *op)
{
    emit_printf(b, "    // %d:%d  %s", op->loc.line, op->loc.col, ir_kind_name(op->kind));
    if (ir_is_semaphore(op->kind))
        emit_printf(b, " semaphore %d", op->chan);
    else if (op->peer >= 0)
        emit_printf(b, " peer %d", op->peer);
    if (op->kind == IR_SIGNAL || op->kind == IR_WAIT)
        emit_printf(b, " channel %d", op->chan);
    if (op->kind == IR_BARRIER)
        emit_printf(b, " %d of %d blocks", op->barrier, op->blocks);
    if (ir_is_data(op->kind)) {
        emit_puts(b, " ");
        emit_range(b, p->bufs[op->dst.buf].name, op->dst);
        emit_puts(b, " <- ");
        emit_range(b, p->bufs[op->src.buf].name, op->src);
        if (op->src2.buf >= 0) {
            emit_puts(b, " + ");
            emit_range(b, p->bufs[op->src2.buf].name, op->src2);
        }
    }
    if (op->ctx) /* the importer's own text: "threadblock 0, op 5", maybe with an op name */
        emit_printf(b, "  (threadblock %d)", op->tb);
    emit_puts(b, "\n");
}

void emit_plan_sync(EmitBuf *b, EmitPlan *e, const IrOp *op)
{
    switch (op->kind) {
    case IR_SIGNAL:
        emit_printf(b, "    cdsl_tb_signal(a, %d, %d, %s);\n", op->peer, sync_word(e, op->chan, e->rank),
                    order_of(op));
        break;
    case IR_WAIT: {
        int *n = &e->waits[op->peer * e->chans + op->chan];
        emit_printf(b, "    CDSL_TRY(%s(a, &a.sync[%d], %d, %d, %s, %d, %d));\n",
                    op->chan ? "cdsl_wait_chan" : "cdsl_wait_word", sync_word(e, op->chan, op->peer),
                    state_word(e, op->chan, op->peer), ++*n, order_of(op), op->loc.line,
                    sync_word(e, op->chan, op->peer));
        break;
    }
    case IR_SW_SIGNAL:
        emit_printf(b, "    cdsl_tb_switch_signal(a, %s);\n", order_of(op));
        break;
    case IR_SW_WAIT:
        emit_printf(b, "    CDSL_TRY(cdsl_plan_switch_wait(a, %d, %s, %d));\n    cdsl_tb_after_wait();\n",
                    ++e->switch_waits, order_of(op), op->loc.line);
        break;
    case IR_NOP:
        emit_puts(b, "    __syncthreads();\n");
        break;
    case IR_SEM_RELEASE:
        emit_printf(b, "    cdsl_tb_sem_release(a, %d);\n", op->chan);
        break;
    case IR_SEM_ACQUIRE:
        emit_printf(b, "    CDSL_TRY(cdsl_tb_sem_acquire(a, %d, %d, %d));\n", op->chan, ++e->sem_acquires[op->chan],
                    op->loc.line);
        break;
    case IR_BARRIER:
        emit_printf(b, "    CDSL_TRY(cdsl_tb_barrier(a, %d, %d, %d));\n", op->barrier,
                    ++e->bar_uses[op->barrier] * op->blocks, op->loc.line);
        if (e->bar_uses[op->barrier] * op->blocks > e->bar_total[op->barrier])
            e->bar_total[op->barrier] = e->bar_uses[op->barrier] * op->blocks;
        break;
    default:
        break;
    }
}

void emit_plan_end_block(EmitBuf *b, const EmitPlan *e, int tb)
{
    const IrSeq *s = &e->p->ranks[e->rank];
    for (int q = 0; q < e->p->nranks; q++)
        for (int c = 1; c < e->chans; c++) {
            bool waits_here = false; /* then all the rank's waits on the channel are this block's */
            for (int i = 0; i < s->nops && !waits_here; i++)
                waits_here = s->ops[i].kind == IR_WAIT && s->ops[i].chan < IR_PORT_REQ_CHAN && s->ops[i].peer == q && s->ops[i].chan == c &&
                             s->ops[i].tb == tb;
            if (waits_here)
                emit_printf(b, "    cdsl_tb_chan_leave(a, %d, %d);  // from rank %d, channel %d\n",
                            state_word(e, c, q), e->waits[q * e->chans + c], q, c);
        }
}

void emit_plan_consumed(EmitBuf *b, const EmitPlan *e)
{
    int n = e->p->nranks;
    if (e->switch_waits)
        emit_printf(b, "    case CDSL_STATE_SWITCH: return %d * CDSL_NRANKS;\n", e->switch_waits);
    for (int q = 0; q < n; q++) /* channel 0; a channel c >= 1 is its waiting block's (emit_plan_end_block) */
        if (e->waits[q * e->chans])
            emit_printf(b, "    case %d: return %d;  // from rank %d, channel 0\n", state_word(e, 0, q),
                        e->waits[q * e->chans], q);
    for (int c = 0; c < CDSL_PLAN_BARRIERS; c++)
        if (e->bar_total[c])
            emit_printf(b, "    case %d: return %d;  // barrier %d\n", CDSL_STATE_BARRIER(n) + c, e->bar_total[c], c);
    for (int s = 0; s < CDSL_PLAN_SEMAPHORES; s++)
        if (e->sem_acquires[s])
            emit_printf(b, "    case %d: return %d;  // semaphore %d\n", CDSL_STATE_SEM(n) + s, e->sem_acquires[s], s);
}
