/*
 * emit_target.h - what the target of an emitted program can do: the switch's sums for each
 * element type (multimem.ld_reduce), and the oldest NVRTC and architecture that have every
 * instruction the emitter uses. Read by the emitter, cdslc and the JIT.
 */
#ifndef CDSL_EMIT_TARGET_H
#define CDSL_EMIT_TARGET_H

#include <stdbool.h>

#include "cdsl.h"
#include "ir.h"

/* What the switch can do for one element type (PTX ISA, multimem.ld_reduce). */
typedef struct EmitDtype {
    const char *name;          /* "f32" */
    const char *mc_sum_pack;   /* ld_reduce form for a 16-byte pack; NULL: four scalar loads */
    const char *mc_sum_word;   /* ld_reduce form for a 4-byte word; NULL: no .add at all */
    int min_nvrtc;             /* NVRTC (CUDA) version its nvls reductions need, e.g. 1202 */
} EmitDtype;

const EmitDtype *emit_dtype(cdsl_dtype t);
/* Whether p sums through the switch (switch.reduce or switch.reduce_store). */
bool emit_switch_sums(const IrProgram *p);
/* The oldest NVRTC whose PTX has every instruction emit_cuda() uses for this combination
 * (major * 100 + minor), and the oldest architecture (sm number, e.g. 90). */
int emit_min_nvrtc(const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype);
int emit_min_sm(cdsl_backend flavour);

#endif
