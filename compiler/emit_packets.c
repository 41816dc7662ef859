/*
 * emit_packets.c - the CUDA side of packets (docs/language.md, section 8), kept apart from
 * emit_cuda.c, which calls in at four places: the helpers after the prelude, one call per
 * packet op, the op's comment, and the epoch in the leave function. The device code itself is
 * compiler/device/packets.cu (the Makefile turns it into cdsl_packets_cu, an array of lines).
 */
#include "abi.h"
#include "emit.h"

extern const char *const cdsl_packets_cu[]; /* compiler/device/packets.cu, as lines */

bool emit_packets_used(const IrProgram *p)
{
    return ir_packet_buf(p) >= 0;
}

void emit_packets_prelude(EmitBuf *b, const IrProgram *p)
{
    if (!emit_packets_used(p))
        return;
    emit_printf(b, "/* ---- Packets: compiler/device/packets.cu ---- */\n\n"
                   "#define CDSL_STATE_PKT_EPOCH %d  /* state word: launches with packets so far */\n"
                   "#define CDSL_PKT_COUNTER(p) (0x%xu + (u32)(p))  /* error[3]: a receive from p */\n\n",
                CDSL_STATE_PKT_EPOCH(p->nranks), CDSL_PKT_COUNTER(0));
    for (const char *const *line = cdsl_packets_cu; *line; line++)
        emit_puts(b, *line);
    emit_puts(b, "\n");
}

/* One call; bufname[b] is the enum name of buffer b in the source. */
void emit_packets_op(EmitBuf *b, const IrProgram *p, const IrOp *op, const char *const *bufname)
{
    const char *slots = bufname[ir_packet_buf(p)];
    if (op->kind == IR_PKT_SEND)
        emit_printf(b, "    cdsl_send_packets(a, %d, %s, %d, %s, %d, %d);\n", op->peer, slots, op->arg,
                    bufname[op->src.buf], op->src.first, op->src.count);
    else
        emit_printf(b, "    CDSL_TRY(cdsl_recv_packets(a, %d, %s, %d, %s, %d, %d, %d));\n", op->peer, slots, op->arg,
                    bufname[op->dst.buf], op->dst.first, op->dst.count, op->loc.line);
}

/* Inside the leave function's last-block-out branch: the next launch is another epoch. */
void emit_packets_leave(EmitBuf *b, const IrProgram *p)
{
    if (emit_packets_used(p))
        emit_puts(b, "        a.state[CDSL_STATE_PKT_EPOCH] += 1;  // the next launch's packets: the other parity\n");
}
