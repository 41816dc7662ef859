/*
 * layout.h - what every user of a program's buffer layout must agree on: the communicator
 * (api.c) that allocates and transfers, the per-rank communicator (rank_comm.c) that lays the
 * buffers out in its region, and through the communicator the verifier (verify.c) that fills
 * and checks them. One definition here, so that none of them recomputes it differently.
 */
#ifndef CDSL_LAYOUT_H
#define CDSL_LAYOUT_H

#include <stdbool.h>
#include <stdio.h>

#include "program.h"

/* In place (ir_in_place), whether the aliased buffer lies inside its holder on every rank;
 * false after a message on log naming the first rank where it would reach past the end. */
bool rt_in_place_fits(const IrProgram *ir, FILE *log);

#endif
