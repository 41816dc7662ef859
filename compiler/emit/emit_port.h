/*
 * emit_port.h - a port channel's operations as a block issues them on the GPU: requests to the
 * host's proxy, the waits of flushes and the waits on a port channel's semaphore.
 *
 * The lowering (compiler/lower/port_proxy.h) turned port(p).put/signal/flush into signals of the
 * rank to itself (a request; a flush's "done") and port(p).wait into a wait on a semaphore that
 * only the peer's proxy signals. On the GPU those become the port words of runtime/abi.h, and the
 * proxy units' own ops run on the host (runtime/engines/gpu_port.c), never in the kernel.
 */
#ifndef CDSL_EMIT_PORT_H
#define CDSL_EMIT_PORT_H

#include <stdbool.h>

#include "arena.h"
#include "diag.h"
#include "emit_buf.h"
#include "ir.h"

/* What a block does for op, a port op of `rank`, if it is one. */
typedef enum EmitPortKind { EMIT_PORT_NONE, EMIT_PORT_REQUEST, EMIT_PORT_FLUSH_WAIT, EMIT_PORT_WAIT } EmitPortKind;
EmitPortKind emit_port_kind(const IrOp *op, int rank);

/* The call for a port op of `rank` (emit_port_kind not NONE), one line with its indent; npairs
   is the program's port channel ordinals per pair (ir_port_shape, found once per emission). */
void emit_port_call(EmitBuf *b, const IrProgram *p, int npairs, int rank, const IrOp *op, const char *indent);

/* False, with an error at the op, where the device code cannot hold the program's port
   channels: two thread blocks of a rank waiting on one port channel's semaphore (its count of
   waits has one copy). */
bool emit_port_emittable(const IrProgram *p, Diag *d, Arena *a);

#endif
