/*
 * emit_target.c - what the switch can do with each element type, and the oldest NVRTC and
 * architecture an emitted program needs (emit_target.h).
 */
#include "emit_target.h"

#include <stddef.h>

/* multimem.ld_reduce .add (PTX ISA 8.1+, sm_90): f32 and the half types have vector forms
   (16 bytes = .v4 of 32-bit lanes; the half types summed in f32 with .acc::f32, PTX 8.2);
   the integers have scalar forms only, and s64 would have none. A store (multimem.st) moves
   bit patterns and exists for every type. */
static const EmitDtype DTYPES[] = {
    [CDSL_F32] = {"f32", "add.v4.f32", "add.f32", 1201},
    [CDSL_F16] = {"f16", "add.acc::f32.v4.f16x2", "add.acc::f32.f16x2", 1202},
    [CDSL_BF16] = {"bf16", "add.acc::f32.v4.bf16x2", "add.acc::f32.bf16x2", 1202},
    [CDSL_U32] = {"u32", NULL, "add.u32", 1201},
    [CDSL_S32] = {"s32", NULL, "add.s32", 1201},
};

const EmitDtype *emit_dtype(cdsl_dtype t)
{
    if ((int)t < 0 || (size_t)t >= sizeof DTYPES / sizeof *DTYPES)
        return NULL;
    return &DTYPES[t];
}

bool emit_switch_sums(const IrProgram *p)
{
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++)
            if (p->ranks[r].ops[i].kind == IR_SW_REDUCE || p->ranks[r].ops[i].kind == IR_SW_REDUCE_STORE)
                return true;
    return false;
}

int emit_min_nvrtc(const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype)
{
    /* __grid_constant__ needs CUDA 11.7; multimem PTX 8.1 (CUDA 12.1); .acc::f32 PTX 8.2. */
    if (flavour != CDSL_BACKEND_NVLS)
        return 1107;
    const EmitDtype *t = emit_dtype(dtype);
    return t && emit_switch_sums(p) ? t->min_nvrtc : 1201;
}

int emit_min_sm(cdsl_backend flavour)
{
    /* multimem needs sm_90; acquire/release loads and reductions need sm_70. */
    return flavour == CDSL_BACKEND_NVLS ? 90 : 70;
}
