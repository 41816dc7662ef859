/*
 * resolve.h - names: which program to compile, what every name and call refers to.
 *
 * Runs on the whole AstUnit before any evaluation, so that a misspelt name in a branch no rank
 * takes is still reported. Checks: duplicate defs and programs, the program chosen by
 * --program, unknown collectives, unknown names, unknown operations (calls and channel
 * methods), argument counts, memory-order arguments, recursive defs, and where buffer
 * declarations may stand. Fills Stmt.target for calls to defs.
 */
#ifndef CDSL_RESOLVE_H
#define CDSL_RESOLVE_H

#include "ast.h"
#include "ir.h"

/* The program to compile (NULL after reporting errors). want: --program NAME or NULL. */
Decl *resolve_unit(Arena *a, Diag *d, AstUnit *u, const char *want);

#endif
