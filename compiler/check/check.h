/*
 * check.h - the checker: proves an evaluated program free of cross-rank races and deadlocks,
 * checks that it computes its collective, and orders each rank's data operations for the code
 * generator.
 *
 * The checking model (docs/language.md has the user's version): every rank's operations run in
 * program order between two boundary events, its start (the work before the collective is
 * complete and visible) and its end (the work after it reads and writes all the rank's
 * buffers). The k-th p.wait() on rank r matches the k-th peer(r).signal() on rank p; the k-th
 * switch.wait() on a rank follows the k-th switch.signal() of every rank. Execution order
 * (EXEC) is program order plus every matched edge; visibility order (SYNC) is program order
 * plus the release -> acquire edges only. The rules (docs/language.md, "The four rules"):
 * 1 data races (data_races.c), 2 unmatched synchronisation and deadlocks (sync_schedule.c),
 * 4 the collective's postcondition (postcondition.c). Rule 3 (bounds and shapes) is eval.c's.
 */
#ifndef CDSL_CHECK_H
#define CDSL_CHECK_H

#include <stdio.h>

#include "diag.h"
#include "ir.h"

struct CheckResult; /* the checker's facts and findings (happens_before.h), allocated in p->arena */

/* What checking may spend: bytes of its own structures and steps of work (chunk_runs.h). */
typedef struct CheckLimits {
    size_t memory;
    unsigned long long steps;
} CheckLimits;

/* Rules 1, 2 and 4 of docs/language.md on an evaluated program (rule 3, bounds/shapes, is already
   done by eval.c). Reports through d (diag_error + diag_note). Also sets IrOp.sync_before
   (order.c). Past a limit it stops with an error naming it. Returns the result (never NULL);
   d->nerrors tells whether it passed. limits NULL: cdsl.h's defaults. */
struct CheckResult *check_program(IrProgram *p, Diag *d, const CheckLimits *limits);

/* Graphviz for --emit-dot: ranks as columns (clusters), ops as nodes in program order,
   start/end nodes per rank, signal->wait edges (dashed when relaxed), races and deadlock-cycle
   edges in red. r may be NULL (then only the program's structure is drawn). */
void check_emit_dot(const IrProgram *p, const struct CheckResult *r, FILE *out);

#endif
