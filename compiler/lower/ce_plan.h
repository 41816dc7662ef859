/*
 * ce_plan.h - the copy-engine lowering of a checked program: the IR as a list of stream
 * operations per rank, and one order in which to enqueue them.
 *
 * A program whose every data operation is a copy, put, get or switch.store moves data without
 * computing on it, so the GPUs' copy engines can do all of it: each data operation becomes
 * cuMemcpyAsync calls (a switch.store one per rank, the p2p emulation of multimem.st), each
 * signal becomes stream write-value operations on the receivers' words, each wait a stream
 * wait-value on the rank's own words. A program with any reduction keeps the kernel path
 * (reductions need the SMs). This file is pure: no driver, no memory but its own. It is a
 * lowering, so it lives with the compiler: cdslc --dump-ce prints a plan, and runtime/engines/ce.c runs
 * one on the p2p backend, reaching ce_plan_build through program.h's code generator
 * (docs/internals.md has the ordering argument: why program order, release and acquire hold).
 *
 * The words (u64, on every rank, zeroed at the start of every copy-engine run, ce.c):
 *   CE_WORD_PEER(r)       how many times rank r has signalled this rank
 *   CE_WORD_SWITCH(n, r)  how many switch arrivals rank r has made (every rank holds a copy)
 *   CE_WORD_DONE(n)       1 once this rank has finished the runs of one chain (the watchdog's)
 * A write-value stores, it cannot add, so a word has exactly one writer: the k-th signal from
 * r to p stores k into p's CE_WORD_PEER(r), and p's k-th wait for r waits until that word is
 * at least k. For the switch that means one word per arriving rank, and a switch wait waits
 * for every rank's word: per-rank counting, the checker's own model of the switch (stronger
 * than the aggregate counter the kernels use, so the round rule is not even needed here).
 *
 * Runs chained back to back (cdsl_run with iters > 1, a captured graph) continue the counts:
 * in run j of a chain a step's value is value + j * per_run. A wait's value is an immediate of
 * the stream operation (of the graph node, once captured), which is why the words restart
 * from zero with every chain rather than grow for the communicator's life.
 *
 * Lanes: a rank's stream is lane 0; lanes 1.. are streams of its own that copies fan out to.
 * A batch of copies that touch nothing another of them writes runs concurrently: FORK (lanes
 * 1..k start after lane 0's work so far), the copies spread over lanes 0..k, JOIN (lane 0
 * continues after lanes 1..k's work). Every signal and wait sits on lane 0 after a JOIN, so a
 * signal comes after every copy before it and a copy after a wait starts after the wait.
 */
#ifndef CDSL_CE_PLAN_H
#define CDSL_CE_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ir.h"

enum { CE_MAX_LANES = 8 };      /* streams per rank a batch of copies fans out to */
enum { CE_MAX_BATCH = 64 };     /* copies compared with each other for one batch */

#define CE_WORD_PEER(r) (r)
#define CE_WORD_SWITCH(n, r) ((n) + (r))
#define CE_WORD_DONE(n) (2 * (n))
#define CE_WORDS(n) (2 * (n) + 1)

typedef enum CeStepKind { CE_COPY, CE_WRITE, CE_WAIT, CE_FORK, CE_JOIN } CeStepKind;

/* Chunk `first` of rank `rank`'s buffer `buf`. */
typedef struct CePlace {
    int rank, buf, first;
} CePlace;

typedef struct CeStep {
    CeStepKind kind;
    int lane;                   /* COPY: its lane; FORK/JOIN: lanes 1..lane take part */
    CePlace dst, src;           /* COPY */
    int count;                  /* COPY: chunks */
    int word_rank, word;        /* WRITE: the receiver's word; WAIT: this rank's own */
    unsigned long long value;   /* WRITE: stored, WAIT: awaited, in run 0 of a chain */
    unsigned long long per_run; /* ... plus this for every run before it in the chain */
    bool ordered;               /* WRITE: release (else relaxed); WAIT: acquire (else relaxed) */
    int sig;                    /* WRITE: the first of its signal: the signal's number among
                                   this rank's signal and switch.signal operations; else -1 */
    int from_rank, from_sig;    /* WAIT: the signal it waits for (rank, number as above) */
    int op;                     /* the IR operation (index in the rank's list) */
} CeStep;

typedef struct CeRankPlan {
    CeStep *steps;
    int nsteps, cap;
    int nlanes;                 /* lanes used: 1 + the most a FORK starts */
    int nsigs;                  /* signal operations (events, one per signal) */
} CeRankPlan;

/* Part of the enqueue order: steps [begin, end) of rank `rank`. */
typedef struct CeSegment {
    int rank, begin, end;
} CeSegment;

typedef struct CePlan {
    const IrProgram *ir;
    int nranks;
    CeRankPlan *ranks;          /* [nranks] */
    CeSegment *order;           /* every step of every rank once, each wait after the write
                                   it waits for: the host enqueues in this order */
    int norder, order_cap;
} CePlan;

/* Lower ir (a checked program) with copies fanned out to at most max_lanes lanes (1 .. 
 * CE_MAX_LANES). CDSL_OK with *out set; CDSL_ERR_PROGRAM when the program has a reduction (or
 * is otherwise not lowered), with the reason in why ("rank 0's switch.reduce_store at
 * f.cdsl:5:12 is a reduction: reductions need the SMs"); CDSL_ERR_SYSTEM when out of memory. */
int ce_plan_build(const IrProgram *ir, int max_lanes, CePlan **out, char *why, size_t whylen);
void ce_plan_free(CePlan *p);

/* The plan as text (cdslc --dump-ce): one line per step, then the enqueue order. */
void ce_plan_dump(const CePlan *p, FILE *out);

/* cdslc --dump-ce for a checked program: the plan, or one line saying why it has none. */
int ce_plan_print(const IrProgram *ir, FILE *out);

#endif
