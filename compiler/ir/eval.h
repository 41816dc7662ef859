/*
 * eval.h - from the resolved syntax tree to per-rank operation sequences (ir.h).
 *
 * nranks is fixed at compile time, so every loop, branch, let and def call is resolved here,
 * once per rank, into straight-line operations. Rule 3 of the checker (bounds and shapes)
 * lives here, where the values are known: chunks outside their buffer, empty or negative
 * ranges, operands of different chunk counts, overlapping copy operands, peer(rank), peers
 * outside 0 .. nranks, division by zero, integer overflow. Each error is reported once per
 * source position (with the first rank and loop iteration that hit it), not once per rank.
 */
#ifndef CDSL_EVAL_H
#define CDSL_EVAL_H

#include "ast.h"
#include "ir.h"

typedef struct EvalOptions {
    int nranks;
    const char *const *defines;   /* "name=value" overriding program parameters */
    int ndefines;
    bool in_place;                /* cdsl_compile_opts.in_place: see ir_in_place */
} EvalOptions;

/* NULL after reporting errors. */
IrProgram *eval_program(Arena *a, Diag *d, const Decl *program, const EvalOptions *opt);

#endif
