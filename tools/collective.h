/*
 * collective.h - what cdslrun and cdsl-perf say about a collective's figures, alike: nccl-tests'
 * bus-bandwidth factor (busbw = algbw x it), whether there is a result to verify, whether it
 * sums, whether it has an in-place form. All of it is the collective's row of the table
 * (compiler/ir/colls.def), asked through cdsl.h's cdsl_collective_* accessors.
 * Header-only, so that tools/ keeps one .c per tool.
 */
#ifndef CDSL_COLLECTIVE_H
#define CDSL_COLLECTIVE_H

#include <stdbool.h>

#include "cdsl.h"

static inline int collective_of(const cdsl_program *p)
{
    return cdsl_collective_find(cdsl_program_collective(p));
}

static inline double collective_busbw_factor(const cdsl_program *p)
{
    return cdsl_collective_busbw_factor(collective_of(p), cdsl_program_nranks(p));
}

/* Barrier and custom programs have no result on data to check. */
static inline bool collective_has_postcondition(const cdsl_program *p)
{
    cdsl_postcondition post = cdsl_collective_postcondition(collective_of(p));
    return post != CDSL_POST_NONE && post != CDSL_POST_BARRIER;
}

/* A barrier: its postcondition is an ordering, proved by the checker; a run just completes. */
static inline bool collective_is_barrier(const cdsl_program *p)
{
    return cdsl_collective_postcondition(collective_of(p)) == CDSL_POST_BARRIER;
}

/* Its outputs are sums of the inputs (nccl-tests' redop "sum"). */
static inline bool collective_sums(const cdsl_program *p)
{
    cdsl_postcondition post = cdsl_collective_postcondition(collective_of(p));
    return post == CDSL_POST_SUM || post == CDSL_POST_REDUCE;
}

#endif
