/*
 * unneeded_sync.h - warnings about synchronisation a checked program does not need (unneeded_sync.c): a
 * signal/wait pair without which it still checks clean (-Wredundant-barrier), a release
 * signal that could be relaxed (-Wstronger-order). Both are found by checking changed copies.
 */
#ifndef CDSL_UNNEEDED_SYNC_H
#define CDSL_UNNEEDED_SYNC_H

#include "check.h"

/* After check_program passed on p (r its result): the warnings, through d, for the families
 * d does not have turned off. Changes nothing in p. */
void lint_program(IrProgram *p, const struct CheckResult *r, Diag *d, const CheckLimits *limits);

#endif
