/*
 * emit.h - the CUDA code generator: one self-contained CUDA source per (program, nranks,
 * flavour, element type), printed from the checked per-rank IR.
 *
 * The source is short: macros that choose the rank count, flavour and element type, then
 * #include "cdsl_device.cuh" (runtime/device/: the argument block from runtime/abi.h, waits,
 * signals, grid convergence, the data-movement engine, the switch operations of the chosen
 * flavour; NVRTC receives the headers by name), then one function per unit holding one call
 * per IR operation in order, each under a comment with its source line:col and the operation
 * printed from the IR, and a #line directive that attributes the call to that line (NVRTC
 * compiles with -lineinfo, so compute-sanitizer and Nsight name .cdsl lines). A unit is a
 * .cdsl program's rank, rank_<r>(), run by the rank's whole grid, or a thread block of an
 * imported MSCCL++ plan, plan_<r>_<t>(); each call names the device library's instance of the
 * operation for the unit's group (cdsl_device.cuh, "Who cooperates").
 * Nothing the user wrote reaches the source except as checked values: buffer names are
 * sanitised to [A-Za-z0-9_] and loop contexts to a safe character set.
 *
 * Files, each helper with its own header, none calling back into the walk: emit_cuda.c (the
 * walk over the IR for both kinds of program, and a .cdsl rank's synchronisation placement:
 * grid barriers where the checker's ordering pass, order.c, set IrOp.sync_before), emit_plan.c
 * (a plan's signals, waits, barriers and comments), emit_fence.c (where the nvls flavour needs
 * fence.proxy.alias), emit_packets.c (packets), emit_headers.c (the #include, the embedded
 * headers, the standalone form), emit_target.c (what each element type and flavour needs),
 * emit_buf.c (the text, #line directives, chunk ranges).
 */
#ifndef CDSL_EMIT_H
#define CDSL_EMIT_H

#include "arena.h"
#include "cdsl.h"
#include "diag.h"
#include "emit_headers.h"
#include "emit_target.h"
#include "ir.h"

/* The CUDA source for p at its rank count, in arena a; NULL after a diag_error when the
 * combination cannot be emitted (the sim backend, an element type multimem cannot add, a plan
 * with more channels or thread blocks than the device code has room for). */
const char *emit_cuda(const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, Arena *a, Diag *d);
/* The same with rank `rank`'s code alone (its functions and the kernel's one case for it), for
 * one process per GPU: the size and compile time of one rank, not of all of them. rank -1: all. */
const char *emit_cuda_rank(const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, int rank, Arena *a,
                           Diag *d);

#endif
