/*
 * emit_port.c - a port channel's operations as a block issues them on the GPU (emit_port.h).
 */
#include "emit_port.h"

#include "abi.h"

EmitPortKind emit_port_kind(const IrOp *op, int rank)
{
    if (op->thread < 0 || (op->kind != IR_SIGNAL && op->kind != IR_WAIT) || op->chan < IR_PORT_REQ_CHAN)
        return EMIT_PORT_NONE;
    if (op->chan >= IR_PORT_CHAN)
        return op->kind == IR_WAIT ? EMIT_PORT_WAIT : EMIT_PORT_NONE;
    if (op->peer != rank)
        return EMIT_PORT_NONE;
    bool flush = (op->chan - IR_PORT_REQ_CHAN) % 2;
    return op->kind == IR_SIGNAL && !flush ? EMIT_PORT_REQUEST : op->kind == IR_WAIT && flush ? EMIT_PORT_FLUSH_WAIT
                                                                                          : EMIT_PORT_NONE;
}

void emit_port_call(EmitBuf *b, const IrProgram *p, int npairs, int rank, const IrOp *op, const char *indent)
{
    int n = p->nranks, k = (op->chan - IR_PORT_REQ_CHAN) / 2, pair = op->chan - IR_PORT_CHAN;
    switch (emit_port_kind(op, rank)) {
    case EMIT_PORT_REQUEST:
        if (p->msc_packets) /* the proxy may copy this launch's packets: it needs their half */
            emit_printf(b, "%scdsl_port_request_flag(a, %d, %d, %d);  // to proxy %d (port channel to rank %d)\n",
                        indent, CDSL_PORT_REQ_MADE(n, npairs, k), CDSL_PORT_HOST_REQ(k), CDSL_PORT_HOST_FLAG(k), k,
                        op->port_peer);
        else
            emit_printf(b, "%scdsl_port_request(a, %d, %d);  // to proxy %d (port channel to rank %d)\n", indent,
                        CDSL_PORT_REQ_MADE(n, npairs, k), CDSL_PORT_HOST_REQ(k), k, op->port_peer);
        break;
    case EMIT_PORT_FLUSH_WAIT:
        emit_printf(b, "%sCDSL_TRY(cdsl_port_flush_wait(a, %d, %d, %d, 0x%xu));  // proxy %d's flush\n", indent,
                    CDSL_PORT_FLUSH_MADE(n, npairs, k), CDSL_PORT_HOST_FLUSHED(k), op->loc.line,
                    CDSL_PORT_FLUSH_COUNTER(k), k);
        break;
    case EMIT_PORT_WAIT:
        emit_printf(b, "%sCDSL_TRY(cdsl_port_wait(a, %d, %d, %d, 0x%xu));  // port channel %d from rank %d\n",
                    indent, CDSL_PORT_ARRIVED(n, pair, op->peer), CDSL_PORT_CONSUMED(n, npairs, pair, op->peer),
                    op->loc.line, CDSL_PORT_SEM_COUNTER(op->peer), pair, op->peer);
        break;
    case EMIT_PORT_NONE:
        break;
    }
}

bool emit_port_emittable(const IrProgram *p, Diag *d, Arena *a)
{
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const IrOp *op = &p->ranks[r].ops[i];
            if (op->thread < 0 && op->kind == IR_MPKT_PUT && op->src.buf != p->msc_packets) {
                diag_error(d, op->loc, "%s", IR_PORT_PACKETS_GPU_REFUSAL);
                return false;
            }
        }
    int npairs, nprox;
    ir_port_shape(p, &npairs, &nprox);
    if (!npairs)
        return true;
    int *by = ARENA_ARRAY(a, int, (size_t)p->nranks * (size_t)npairs);
    for (int r = 0; r < p->nranks; r++) {
        for (int i = 0; i < p->nranks * npairs; i++)
            by[i] = 0;
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const IrOp *op = &p->ranks[r].ops[i];
            if (emit_port_kind(op, r) != EMIT_PORT_WAIT)
                continue;
            int *tb = &by[op->peer * npairs + op->chan - IR_PORT_CHAN];
            if (*tb && *tb != op->tb + 1) {
                diag_error(d, op->loc, "gpu %d waits on its port channel %d from gpu %d in thread blocks %d and %d; "
                           "the device code counts that semaphore's waits for one block", r,
                           op->chan - IR_PORT_CHAN, op->peer, *tb - 1, op->tb);
                return false;
            }
            *tb = op->tb + 1;
        }
    }
    return true;
}
