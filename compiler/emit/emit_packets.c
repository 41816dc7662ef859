/*
 * emit_packets.c - the CUDA side of packets (docs/language.md, section 8), kept apart from
 * the walk of emit_cuda.c, which calls in at four places: the #include after the library's, one call per
 * packet op, the op's comment, and the epoch in the rank's consumed(). The device code itself
 * is runtime/device/cdsl_packets.cuh, embedded with the other device headers.
 */
#include "emit_packets.h"

#include "abi.h"

bool emit_packets_used(const IrProgram *p)
{
    return ir_packet_buf(p) >= 0;
}

/* After the library's #include: the packet helpers (runtime/device/cdsl_packets.cuh). */
void emit_packets_prelude(EmitBuf *b, const IrProgram *p)
{
    if (emit_packets_used(p))
        emit_puts(b, "#include \"cdsl_packets.cuh\"  // runtime/device/: packets\n\n");
}

/* One call; bufname[b] is the enum name of buffer b in the source. A send after data operations
   is a release: each sending thread fences at system scope first (the grid barrier before it
   fences at GPU scope only, emit_cuda.c). */
void emit_packets_op(EmitBuf *b, const IrProgram *p, const IrOp *op, const char *const *bufname, bool after_data)
{
    const char *slots = bufname[ir_packet_buf(p)];
    if (op->kind == IR_PKT_SEND)
        emit_printf(b, "    cdsl_send_packets(a, %d, %s, %d, %s, %d, %d, %s);\n", op->peer, slots, op->slot,
                    bufname[op->src.buf], op->src.first, op->src.count,
                    after_data ? "CDSL_RELEASE /* after data operations */" : "CDSL_RELAXED");
    else
        emit_printf(b, "    CDSL_TRY(cdsl_recv_packets(a, %d, %s, %d, %s, %d, %d, %d));\n", op->peer, slots, op->slot,
                    bufname[op->dst.buf], op->dst.first, op->dst.count, op->loc.line);
}

/* In the rank's consumed(): every launch of a program with packets is the next epoch, on every
   rank, whatever the rank itself sends or receives. */
void emit_packets_leave(EmitBuf *b, const IrProgram *p)
{
    if (emit_packets_used(p))
        emit_puts(b, "    case CDSL_STATE_PKT_EPOCH(CDSL_NRANKS): return 1;  // the next launch's packets: the other parity\n");
}

/* A plan's packet op (IR_MPKT_*), for its thread block: runtime/device/cdsl_packets.cuh's
   cdsl_tb_msc_* with the packet buffer, the chunks of its upper half when the plan has the
   double scratch buffer (0 otherwise), and the packets' data chunk. */
void emit_packets_msc_op(EmitBuf *b, const IrProgram *p, const IrOp *op, const char *const *bufname)
{
    const char *pb = bufname[p->msc_packets];
    int half = p->msc_halves == 2 ? p->bufs[p->msc_packets].nchunks / 2 : 0;
    if (op->kind == IR_MPKT_PUT)
        emit_printf(b, "    cdsl_tb_msc_put_packets(a, %d, %s, %d, %d, %s, %d, %d);\n", op->peer, pb, half, op->dst.first,
                    bufname[op->src.buf], op->src.first, op->dst.count);
    else if (op->kind == IR_MPKT_READ)
        emit_printf(b, "    CDSL_TRY(cdsl_tb_msc_read_packets(a, %d, %s, %d, %d, %s, %d, %d, %d));\n", op->peer, pb, half,
                    op->src.first, bufname[op->dst.buf], op->dst.first, op->dst.count, op->loc.line);
    else
        emit_printf(b, "    CDSL_TRY(cdsl_tb_msc_reduce_packets(a, %d, %s, %d, %d, %s, %d, %s, %d, %d, %d));\n", op->peer,
                    pb, half, op->src2.first, bufname[op->src.buf], op->src.first, bufname[op->dst.buf],
                    op->dst.first, op->dst.count, op->loc.line);
}
