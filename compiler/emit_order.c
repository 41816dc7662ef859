/*
 * emit_order.c - grid barriers for conflicts the checker's ordering pass stops looking for.
 *
 * The emitted code gives element i of a range to the same thread in every operation, so two
 * operations on the same range through the same path need nothing between them, while
 * overlapping but differently placed ranges (or two mappings of one location) need all the
 * rank's blocks to have finished the first before any starts the second: a grid barrier.
 * order.c decides that (IrOp.sync_before) within each stretch between signals and waits, since
 * it assumes the blocks converge there. They do not quite: at a signal only block 0 waits for
 * the others, and at a wait every block goes on as soon as its own thread 0 has seen the
 * arrival. So here we keep the accesses made before the latest signal or wait since the last
 * grid barrier and check each data operation against them with order.c's rule; within the
 * current stretch order.c's answer stands. The list is bounded: past EMIT_ORDER_MAX entries we
 * ask for a barrier, which empties it, so the cost stays linear.
 */
#include "emit.h"

enum { EMIT_ORDER_MAX = 4096, PATH_LOCAL = -2, PATH_SWITCH = -1 };

typedef struct Touch {
    int owner;            /* the rank whose memory it is; -1: every rank (the switch) */
    int buf, first, count;
    int path;             /* PATH_LOCAL, PATH_SWITCH or the peer whose mapping is used */
    bool write;
} Touch;

typedef struct TouchList {
    Touch *t;
    int n, cap;
} TouchList;

struct EmitOrder {
    const IrProgram *p;
    Arena *arena;
    int rank;
    TouchList before;     /* made before the latest signal or wait, since the last barrier */
    TouchList current;    /* made since the latest signal or wait: order.c's business */
};

EmitOrder *emit_order_new(const IrProgram *p, Arena *a)
{
    EmitOrder *o = ARENA_NEW(a, EmitOrder);
    o->p = p;
    o->arena = a;
    return o;
}

void emit_order_begin_rank(EmitOrder *o, int rank)
{
    o->rank = rank;
    o->before.n = o->current.n = 0;
}

void emit_order_barrier(EmitOrder *o)
{
    o->before.n = o->current.n = 0;
}

static int touches(const EmitOrder *o, const IrOp *op, Touch out[3])
{
    int me = o->rank;
    Touch dst = {me, op->dst.buf, op->dst.first, op->dst.count, PATH_LOCAL, true};
    Touch src = {me, op->src.buf, op->src.first, op->src.count, PATH_LOCAL, false};
    switch (op->kind) {
    case IR_COPY: break;
    case IR_REDUCE:
        out[2] = (Touch){me, op->src2.buf, op->src2.first, op->src2.count, PATH_LOCAL, false};
        break;
    case IR_PUT: dst.owner = dst.path = op->peer; break;
    case IR_GET: src.owner = src.path = op->peer; break;
    case IR_SW_STORE: dst.owner = -1, dst.path = PATH_SWITCH; break;
    case IR_SW_REDUCE: src.owner = -1, src.path = PATH_SWITCH; break;
    case IR_SW_REDUCE_STORE:
        dst.owner = src.owner = -1;
        dst.path = src.path = PATH_SWITCH;
        break;
    default: return 0;
    }
    out[0] = dst;
    out[1] = src;
    return op->kind == IR_REDUCE ? 3 : 2;
}

/* Two accesses to overlapping bytes, one a write, not placed identically. */
static bool conflict(const Touch *a, const Touch *b)
{
    if (!a->write && !b->write)
        return false;
    if (a->buf != b->buf || (a->owner != b->owner && a->owner >= 0 && b->owner >= 0))
        return false;
    if (a->first + a->count <= b->first || b->first + b->count <= a->first)
        return false;
    return !(a->path == b->path && a->first == b->first && a->count == b->count);
}

bool emit_order_needs_barrier(EmitOrder *o, const IrOp *op)
{
    Touch t[3];
    int n = touches(o, op, t);
    if (n && o->before.n + o->current.n > EMIT_ORDER_MAX)
        return true;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < o->before.n; i++)
            if (conflict(&t[k], &o->before.t[i]))
                return true;
    return false;
}

static void push(EmitOrder *o, TouchList *l, Touch t)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 32;
        l->t = arena_grow(o->arena, l->t, (size_t)l->n, (size_t)cap, sizeof *l->t);
        l->cap = cap;
    }
    l->t[l->n++] = t;
}

void emit_order_note(EmitOrder *o, const IrOp *op)
{
    if (!ir_is_data(op->kind)) {   /* a signal or wait: order.c starts a new stretch here */
        for (int i = 0; i < o->current.n; i++)
            push(o, &o->before, o->current.t[i]);
        o->current.n = 0;
        return;
    }
    Touch t[3];
    int n = touches(o, op, t);
    for (int k = 0; k < n; k++)
        push(o, &o->current, t[k]);
}
