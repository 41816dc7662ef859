/*
 * port_proxy.c - port channel operations lowered to a thread block's requests and a proxy unit
 * that serves them in order (port_proxy.h says what each becomes and why).
 */
#include "port_proxy.h"

#include <string.h>

static void seq_append(Arena *a, IrSeq *s, IrOp op)
{
    if (s->nops == s->cap) {
        int cap = s->cap ? s->cap * 2 : 8;
        s->ops = arena_grow(a, s->ops, (size_t)s->nops, (size_t)cap, sizeof(IrOp));
        s->cap = cap;
    }
    s->ops[s->nops++] = op;
}

static int proxy_of(IrProgram *p, PortProxies *pp, int issuer, int peer, int pair)
{
    for (int k = 0; k < pp->n; k++)
        if (pp->v[k].issuer == issuer && pp->v[k].peer == peer && pp->v[k].pair == pair)
            return k;
    if (pp->n == pp->cap) {
        int cap = pp->cap ? pp->cap * 2 : 4;
        pp->v = arena_grow(p->arena, pp->v, (size_t)pp->n, (size_t)cap, sizeof *pp->v);
        pp->cap = cap;
    }
    if (pp->n == IR_PORT_MAX_PROXIES)
        return -1;
    pp->v[pp->n] = (PortProxy){issuer, peer, pair, {0}};
    return pp->n++;
}

static IrOp sync_op(IrOp issue, IrKind kind, int peer, int chan)
{
    IrOp o = issue;
    o.kind = kind;
    o.peer = peer;
    o.chan = (int16_t)chan;
    o.relaxed = false;
    o.dst = o.src = o.src2 = (IrRange){-1, 0, 0};
    return o;
}

bool port_request(IrProgram *p, PortProxies *pp, IrOp issue, int peer, int pair, unsigned work, const IrOp *put)
{
    int k = proxy_of(p, pp, issue.tb, peer, pair), me = pp->rank;
    if (k < 0)
        return false;
    IrSeq *proxy = &pp->v[k].ops;
    issue.port_peer = (int16_t)peer;
    IrOp served = issue;
    served.thread = -1;
    served.ctx = arena_printf(p->arena, "the port proxy of %s", issue.ctx ? issue.ctx : "the rank");
    issue.ctx = arena_printf(p->arena, "a request to the port proxy, %s", issue.ctx ? issue.ctx : "the rank");
    ir_append(p, me, sync_op(issue, IR_SIGNAL, me, IR_PORT_REQ_CHAN + 2 * k));
    seq_append(p->arena, proxy, sync_op(served, IR_WAIT, me, IR_PORT_REQ_CHAN + 2 * k));
    if (work & PORT_PUT) {
        IrOp o = sync_op(served, put->kind, put->peer, put->chan);
        o.dst = put->dst;
        o.src = put->src;
        o.match = put->match;
        seq_append(p->arena, proxy, o);
    }
    if (work & PORT_SIGNAL)
        seq_append(p->arena, proxy, sync_op(served, IR_SIGNAL, peer, IR_PORT_CHAN + pair));
    if (work & PORT_FLUSH) {
        seq_append(p->arena, proxy, sync_op(served, IR_SIGNAL, me, IR_PORT_REQ_CHAN + 2 * k + 1));
        ir_append(p, me, sync_op(issue, IR_WAIT, me, IR_PORT_REQ_CHAN + 2 * k + 1));
    }
    return true;
}

void port_wait(IrProgram *p, int rank, IrOp issue, int peer, int pair)
{
    issue.port_peer = (int16_t)peer;
    ir_append(p, rank, sync_op(issue, IR_WAIT, peer, IR_PORT_CHAN + pair));
}

void port_finish(IrProgram *p, PortProxies *pp)
{
    if (!pp->n)
        return;
    if (!p->ntbs) { /* a .cdsl program: one unit per rank so far */
        p->ntbs = ARENA_ARRAY(p->arena, int, (size_t)p->nranks);
        for (int r = 0; r < p->nranks; r++)
            p->ntbs[r] = 1;
    }
    int first = p->ntbs[pp->rank];
    for (int k = 0; k < pp->n; k++)
        for (int i = 0; i < pp->v[k].ops.nops; i++) {
            IrOp op = pp->v[k].ops.ops[i];
            op.tb = first + k;
            ir_append(p, pp->rank, op);
        }
    p->ntbs[pp->rank] = first + pp->n;
}
