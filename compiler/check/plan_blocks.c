/*
 * plan_blocks.c - inside one thread block of an imported plan: the checks that make the block's
 * op list a sequence the happens-before machinery may take in program order.
 *
 * The executor runs every op of a block with all the block's threads, and synchronises them
 * only where an op does (docs/mscclpp.md §1.6): a data op splits its bytes over the threads
 * (the same place of the same range goes to the same thread), a signal or wait on the op's
 * j-th channel is done by thread j alone, and nop (__syncthreads) and barrier make every
 * thread meet. So program order holds between two ops of a block only for a thread's own
 * work: a signal after a put publishes thread j's share of it, threads other than j run past
 * a wait at once, and two data ops touching the same bytes at different places of their
 * ranges are done by different threads in either order. The checker treats each block as a
 * sequence (one unit, ir.h) once these hold between every two ops with no nop or barrier
 * between them:
 *   - no signal (peer or switch) after a data op: it would publish only its thread's share;
 *   - no signal after a wait made by another thread: that wait does not precede it;
 *   - no data op after a wait: the other threads do not wait;
 *   - no data op that touches what an earlier data op touched otherwise than at the same
 *     place of the same range, through the same path (order.c's rule, per block, which the
 *     MSCCL++ DSL's own hazard pass also enforces by inserting nops).
 * A wait after a data op, signals after signals and waits after waits need nothing: taking
 * them in program order claims no order that the messages of other ranks could rely on. Each
 * violation is an error at the later op, naming the earlier one.
 */
#include "check_text.h"
#include "happens_before.h"

typedef struct Stretch {
    int data;      /* the latest data op since the block's threads last met, or -1 */
    int wait;      /* the first wait since then, or -1 */
    int wait_thread; /* its thread; -2 once waits of several threads were seen */
} Stretch;

static bool ranges_meet(IrRange a, IrRange b)
{
    return a.buf >= 0 && a.buf == b.buf && a.first < b.first + b.count && b.first < a.first + a.count;
}

static bool touches_same(const IrOp *a, const IrOp *b)
{
    const IrRange ra[3] = {a->dst, a->src, a->src2}, rb[3] = {b->dst, b->src, b->src2};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if ((i == 0 || j == 0) && ranges_meet(ra[i], rb[j]))
                return true;
    return false;
}

/* The earlier data op of the stretch that op clashes with (order.c found one). */
static int clash_with(const IrSeq *s, int from, int i)
{
    for (int j = i - 1; j >= from; j--)
        if (ir_is_data(s->ops[j].kind) && touches_same(&s->ops[j], &s->ops[i]))
            return j;
    return from;
}

/* One error per plan op (its IR pieces share its position), at most HB_MAX_REPORTS. */
static void report(Diag *d, Arena *a, const IrOp *op, const IrOp *before, const char *why, int *count, Loc *last)
{
    if (*count >= HB_MAX_REPORTS || (last->src == op->loc.src && last->line == op->loc.line && last->col == op->loc.col))
        return;
    ++*count;
    *last = op->loc;
    diag_error(d, op->loc, "%s%s follows the %s at %d:%d with no nop between them: %s", ir_kind_name(op->kind),
               check_ctx(a, op), ir_kind_name(before->kind), before->loc.line, before->loc.col, why);
    diag_note(d, before->loc, "the %s%s", ir_kind_name(before->kind), check_ctx(a, before));
}

static void check_block(const IrSeq *s, int first, int end, Diag *d, Arena *a, int *count)
{
    Loc last = {0};
    Stretch st = {-1, -1, -1};
    int start = first;
    for (int i = first; i < end; i++) {
        const IrOp *op = &s->ops[i];
        IrSync role = ir_op_info(op->kind)->sync;
        if (ir_threads_meet(op->kind)) {
            st = (Stretch){-1, -1, -1};
            start = i + 1;
        } else if (ir_is_data(op->kind)) {
            if (st.wait >= 0)
                report(d, a, op, &s->ops[st.wait], arena_printf(a, "only thread %d waits, and the block's other "
                       "threads go on into this %s at once", st.wait_thread < 0 ? 0 : st.wait_thread,
                       ir_kind_name(op->kind)), count, &last);
            else if (op->sync_before)
                report(d, a, op, &s->ops[clash_with(s, start, i)], "the two touch the same chunks at different "
                       "places of their ranges (or through different addresses), so different threads do them, in "
                       "either order", count, &last);
            st.data = i;
        } else if (role == SYNC_SIGNAL) {
            int t = op->thread;
            if (st.data >= 0)
                report(d, a, op, &s->ops[st.data], arena_printf(a, "the signal is thread %d's, and the block's other "
                       "threads may still be in that %s, so it publishes only thread %d's share of it", t,
                       ir_kind_name(s->ops[st.data].kind), t), count, &last);
            else if (st.wait >= 0 && st.wait_thread != t)
                report(d, a, op, &s->ops[st.wait], arena_printf(a, "the signal is thread %d's and the wait thread "
                       "%d's, so nothing orders that wait before this signal", t, st.wait_thread < 0 ? 0 :
                       st.wait_thread), count, &last);
        } else if (role == SYNC_WAIT) {
            int t = op->thread;
            if (st.wait < 0)
                st.wait = i, st.wait_thread = t;
            else if (st.wait_thread != t)
                st.wait_thread = -2;
        }
    }
}

void order_blocks_check(CheckResult *r, Diag *d)
{
    const IrProgram *p = r->p;
    int count = 0;
    if (!p->plan) /* a .cdsl program's rank is one unit (its port proxies aside) */
        return;
    for (int q = 0; q < p->nranks; q++)
        for (int u = r->hb.rank_unit[q]; u < r->hb.rank_unit[q + 1]; u++) {
            const IrSeq *s = &p->ranks[q];
            bool proxy = r->hb.unit_first[u] < r->hb.unit_end[u] && s->ops[r->hb.unit_first[u]].thread < 0;
            if (!proxy) /* a port channel's proxy is one agent that takes its requests in order */
                check_block(s, r->hb.unit_first[u], r->hb.unit_end[u], d, p->arena, &count);
        }
}
