/*
 * lower.h - the lowering phase: facts about how a program runs on the device, computed from
 * its IR and written into it, which the code generators, the sim and the dumps read. driver.c
 * walks them in order with the other phases; each says below why it runs where it does.
 *
 *     packet layout     IrOp.slot of every packet op, and the runtime's buffer of packet slots
 *                       (packet_layout.c; ir_packet_layout in ir.h, beside ir_packet_buf, which
 *                       the runtime reads through program.h). Right after evaluation: the slots
 *                       take a buffer, which the checker's maps, its budget and --dump-ir count.
 *     order             IrOp.sync_before: the data ops before which the rank's thread blocks
 *                       converge (order.c). check_program runs it before its rules, because the
 *                       check of a plan's thread blocks (plan_blocks.c) reads sync_before, and
 *                       order's work counts against the checker's budget.
 *     partition         IrOp.same_blocks: the data ops every rank reaches through the same
 *                       thread blocks (partition.c). After the check, for a program that passed.
 *     copy-engine plan  the program as stream operations per rank (ce_plan.h), on request: by
 *                       the p2p backend through program.h, and by cdslc --dump-ce.
 */
#ifndef CDSL_LOWER_H
#define CDSL_LOWER_H

#include "chunk_runs.h"
#include "ir.h"

/* order.c: IrOp.sync_before of every data op; b NULL: no limits */
void order_program(IrProgram *p, CheckBudget *b);

/* partition.c: IrOp.same_blocks, for block-by-block signals (never fails) */
void partition_program(IrProgram *p);

#endif
