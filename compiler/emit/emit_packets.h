/*
 * emit_packets.h - the CUDA side of packets (docs/language.md, section 8): the #include of
 * runtime/device/cdsl_packets.cuh, one call per packet op, and the epoch in a rank's
 * consumed().
 */
#ifndef CDSL_EMIT_PACKETS_H
#define CDSL_EMIT_PACKETS_H

#include <stdbool.h>

#include "emit_buf.h"
#include "ir.h"

bool emit_packets_used(const IrProgram *p);
void emit_packets_prelude(EmitBuf *b, const IrProgram *p);
void emit_packets_op(EmitBuf *b, const IrProgram *p, const IrOp *op, const char *const *bufname, bool after_data);
void emit_packets_leave(EmitBuf *b, const IrProgram *p);
/* A plan's packet op (IR_MPKT_*): one cdsl_tb_msc_* call. */
void emit_packets_msc_op(EmitBuf *b, const IrProgram *p, const IrOp *op, const char *const *bufname);

#endif
