/*
 * emit_plan.h - an imported MSCCL++ plan's side of the emitter (emit_cuda.c walks both kinds of
 * program). A plan's rank is several units (ir.h), each one thread block with its own op list,
 * and its counters are a word per (peer, channel) rather than a word per block: its signals and
 * waits are thread 0's on the op's channel, a nop is __syncthreads(), a barrier counts among the
 * blocks that use it. Here: whether the device code has room for the plan, each op's comment,
 * each synchronisation op's call, and what a rank's launch consumes on each counter.
 */
#ifndef CDSL_EMIT_PLAN_H
#define CDSL_EMIT_PLAN_H

#include <stdbool.h>

#include "arena.h"
#include "diag.h"
#include "emit_buf.h"
#include "ir.h"

typedef struct EmitPlan EmitPlan;   /* the waits and barrier uses counted so far, one rank */

/* The thread blocks fit the device code's slots, and each channel c >= 1 is waited on from one
   block (runtime/abi.h); the counters are sized from the plan, so there is no limit on its
   channels. */
bool emit_plan_emittable(const IrProgram *p, Diag *d, Arena *a);
EmitPlan *emit_plan_new(const IrProgram *p, Arena *a);
void emit_plan_begin_rank(EmitPlan *e, int rank);
void emit_plan_begin_block(EmitPlan *e);
/* "    // 64:23  reduce peer 1 output[0] <- output[0] + output[0]  (threadblock 0)" */
void emit_plan_comment(EmitBuf *b, const IrProgram *p, const IrOp *op);
/* The call of a signal, wait, nop or barrier of the block. */
void emit_plan_sync(EmitBuf *b, EmitPlan *e, const IrOp *op);
/* At the end of block tb: what it consumed on each channel c >= 1 it waits on, handed to the
   next launch (its one-copy bases, runtime/abi.h). */
void emit_plan_end_block(EmitBuf *b, const EmitPlan *e, int tb);
/* The cases of the rank's consumed(w): the arrivals its launch consumed on each counter. */
void emit_plan_consumed(EmitBuf *b, const EmitPlan *e);

#endif
