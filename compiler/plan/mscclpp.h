/*
 * mscclpp.h - MSCCL++ execution plans in and out (docs/mscclpp.md has the format, its
 * semantics and what cdsl does with each part of it).
 *
 * Import (mscclpp_import.c, the file and the plan's layout; mscclpp_decode.c, one op of either
 * format generation to a DecOp; mscclpp_map.c, a DecOp to IR ops with the bounds and shapes
 * of rule 3): a plan becomes an IrProgram with one unit per plan thread block (ir.h), every
 * position a Loc into the JSON text. Every op the format defines is mapped or rejected with
 * "not supported: OP at gpu G, threadblock T, op K: why"; nothing is dropped.
 * Export (mscclpp_export.c): a checked one-unit-per-rank IrProgram as a current-format plan.
 */
#ifndef CDSL_MSCCLPP_H
#define CDSL_MSCCLPP_H

#include <stdbool.h>
#include <stdio.h>

#include "arena.h"
#include "diag.h"
#include "ir.h"

/* A file is read as a plan when its name ends in .json or its first non-space byte is '{'. */
bool mscclpp_is_plan(const char *path);

/* Reads the plan at path into an IrProgram. nranks 0: the plan's gpu count; otherwise it must
 * be that. pipe_iters: the size class to read a plan with pipelines for (how many times each
 * pipeline runs; docs/mscclpp.md §3.3), 1 for the smallest sizes. NULL after errors (*usage set
 * when the only error is a disagreeing -n). */
IrProgram *mscclpp_import(Arena *a, Diag *d, const char *path, int nranks, int pipe_iters, bool *usage);
/* The same from text already in memory (the fuzz harness; src->text NUL-terminated). */
IrProgram *mscclpp_import_source(Arena *a, Diag *d, const Source *src, int nranks, int pipe_iters, bool *usage);

/* Writes p (checked, one unit per rank) as a current-format plan. False after a diag_error
 * saying what cannot be written (a get whose offsets the executor would swap, ...). */
bool mscclpp_export(const IrProgram *p, FILE *out, Diag *d);
/* The program as the plan says it (one thread block per rank, nops, switch.reduce lowered),
 * checked: what importing the exported plan gives back. NULL after errors. */
IrProgram *mscclpp_lower(const IrProgram *p, Diag *d);

#endif
