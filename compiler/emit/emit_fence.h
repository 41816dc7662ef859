/*
 * emit_fence.h - for the nvls flavour, where an access through one mapping (multicast or
 * unicast) may meet an earlier access of the same bytes through the other, one of the two a
 * write, so that fence.proxy.alias goes there (emit_fence.c says why). Walk one rank's
 * operations in order: ask emit_fence_before() for each operation (not NULL: emit the fence
 * before it, with that text as its comment), then tell emit_fence_after(); at the end ask
 * emit_fence_at_end() (the same).
 */
#ifndef CDSL_EMIT_FENCE_H
#define CDSL_EMIT_FENCE_H

#include "arena.h"
#include "ir.h"

typedef struct EmitFence EmitFence;

EmitFence *emit_fence_new(const IrProgram *p, Arena *a);
void emit_fence_begin_rank(EmitFence *f);
const char *emit_fence_before(EmitFence *f, const IrOp *op);
void emit_fence_after(EmitFence *f, const IrOp *op);
const char *emit_fence_at_end(EmitFence *f);

#endif
