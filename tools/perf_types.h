/*
 * perf_types.h - nccl-tests' names of the element types cdsl runs, beside cdsl's own: what
 * cdsl-perf's -d accepts, what its rows print (cdsl-perf.c) and what its results files write
 * (perf_files.c). Header-only, a table and its lookup, so that both read it and neither file
 * calls the other for it.
 */
#ifndef CDSL_PERF_TYPES_H
#define CDSL_PERF_TYPES_H

#include "cdsl.h"

enum { PERF_NTYPES = 5 };

typedef struct PerfType {
    const char *nccl, *cdsl;    /* "float", "f32" */
    cdsl_dtype t;
} PerfType;

/* Every type, in the order -d all runs them. */
static inline const PerfType *perf_types(void)
{
    static const PerfType types[PERF_NTYPES] = {
        {"float", "f32", CDSL_F32}, {"half", "f16", CDSL_F16}, {"bfloat16", "bf16", CDSL_BF16},
        {"int32", "s32", CDSL_S32}, {"uint32", "u32", CDSL_U32},
    };
    return types;
}

/* nccl-tests' name of t: "float", "half", "bfloat16", "uint32", "int32"; "?" for another. */
static inline const char *perf_type_name(cdsl_dtype t)
{
    for (int i = 0; i < PERF_NTYPES; i++)
        if (perf_types()[i].t == t)
            return perf_types()[i].nccl;
    return "?";
}

#endif
