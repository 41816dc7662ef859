/*
 * collective.h - what cdslrun and cdsl-perf say about a collective's figures, alike: nccl-tests'
 * bus-bandwidth factor (busbw = algbw x it) and whether there is a postcondition to verify.
 * Header-only, so that tools/ keeps one .c per tool.
 */
#ifndef CDSL_COLLECTIVE_H
#define CDSL_COLLECTIVE_H

#include <stdbool.h>
#include <string.h>

#include "cdsl.h"

/* nccl-tests' factors (doc/PERFORMANCE.md there): (n-1)/n for allgather and reducescatter,
 * 2(n-1)/n for allreduce; a barrier moves nothing; anything else moves its bytes once. */
static inline double collective_busbw_factor(const cdsl_program *p)
{
    const char *c = cdsl_program_collective(p);
    double n = cdsl_program_nranks(p);
    if (!strcmp(c, "allgather") || !strcmp(c, "reducescatter"))
        return (n - 1) / n;
    if (!strcmp(c, "allreduce"))
        return 2 * (n - 1) / n;
    if (!strcmp(c, "barrier"))
        return 0;
    return 1;
}

/* barrier and custom programs have no result on data to check. */
static inline bool collective_has_postcondition(const cdsl_program *p)
{
    const char *c = cdsl_program_collective(p);
    return strcmp(c, "barrier") && strcmp(c, "custom");
}

#endif
