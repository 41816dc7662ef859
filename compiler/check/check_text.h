/*
 * check_text.h - the wording the checker's passes share, so that ranks, chunks, thread blocks
 * and loop contexts read alike in every message (check_text.c).
 */
#ifndef CDSL_CHECK_TEXT_H
#define CDSL_CHECK_TEXT_H

#include <stdbool.h>

#include "arena.h"
#include "happens_before.h"
#include "ir.h"

const char *check_nth(Arena *a, int k);     /* 1 -> "1st", 2 -> "2nd", 11 -> "11th" */
const char *check_times(Arena *a, int k);   /* 1 -> "once", 2 -> "twice", 3 -> "3 times" */
/* "(put, step=2)" or "(put)": the op's kind and loop context. */
const char *check_op_tag(Arena *a, const IrOp *op);
/* " (step=2)" or "": the op's loop context, with its leading space. */
const char *check_ctx(Arena *a, const IrOp *op);
/* "output[3]", "output[3..5]" */
const char *check_chunks(const IrProgram *p, int buf, int first, int count);
/* "rank 0 writes output[1] of rank 1" / "rank 1 reads its output[1]" */
const char *check_access(const IrProgram *p, int rank, bool write, int owner, int buf, int first,
                         int count);
/* "ranks 0, 1 and 2" for a list of ranks */
const char *check_rank_list(Arena *a, const int *ranks, int n);
/* "ranks 0 and 1", or for a plan's units "gpu 0 threadblock 1 and gpu 1 threadblock 0" */
const char *check_unit_list(const HbFacts *f, Arena *a, const int *units, int n);

#endif
