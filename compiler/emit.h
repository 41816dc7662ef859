/*
 * emit.h - the CUDA code generator: one self-contained CUDA source per (program, nranks,
 * flavour, element type), printed from the checked per-rank IR.
 *
 * The source is short: macros that choose the rank count, flavour and element type, then
 * #include "cdsl_device.cuh" (runtime/device/: the argument block from runtime/abi.h, waits,
 * signals, grid convergence, the data-movement engine, the switch operations of the chosen
 * flavour; NVRTC receives the headers by name), then one function per rank, rank_<r>(),
 * holding one call per IR operation in program order, each under a comment with its .cdsl
 * line:col and the operation in canonical form printed from the IR, and a #line directive
 * that attributes the call to that .cdsl line (NVRTC compiles with -lineinfo, so
 * compute-sanitizer and Nsight name .cdsl lines).
 * Nothing the user wrote reaches the source except as checked values: buffer names are
 * sanitised to [A-Za-z0-9_] and loop contexts to a safe character set.
 *
 * Files: emit_cuda.c (the walk over the IR, synchronisation placement: grid barriers where the
 * checker's ordering pass, order.c, set IrOp.sync_before), emit_fence.c (where the nvls flavour
 * needs fence.proxy.alias), emit_headers.c (the #include, the embedded headers, the
 * standalone form), emit_packets.c (packets).
 */
#ifndef CDSL_EMIT_H
#define CDSL_EMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "arena.h"
#include "cdsl.h"
#include "diag.h"
#include "ir.h"

/* The CUDA source for p at its rank count, in arena a; NULL after a diag_error when the
 * combination cannot be emitted (the sim backend, an element type multimem cannot add). */
const char *emit_cuda(const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, Arena *a, Diag *d);
/* The same with rank `rank`'s code alone (rank_<rank>() and the kernel's one case for it), for
 * one process per GPU: the size and compile time of one rank, not of all of them. rank -1: all. */
const char *emit_cuda_rank(const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, int rank, Arena *a,
                           Diag *d);

/* emit_blocks.c: the same for an imported MSCCL++ plan (IrProgram.ntbs set): one code path
 * per thread block. emit_cuda and emit_cuda_rank call it for such programs. */
const char *emit_cuda_blocks(const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, int rank, Arena *a,
                             Diag *d);

/* What the switch can do for one element type (PTX ISA, multimem.ld_reduce). */
typedef struct EmitDtype {
    const char *name;          /* "f32" */
    const char *mc_sum_pack;   /* ld_reduce form for a 16-byte pack; NULL: four scalar loads */
    const char *mc_sum_word;   /* ld_reduce form for a 4-byte word; NULL: no .add at all */
    int min_nvrtc;             /* NVRTC (CUDA) version its nvls reductions need, e.g. 1202 */
} EmitDtype;

const EmitDtype *emit_dtype(cdsl_dtype t);
/* The oldest NVRTC whose PTX has every instruction emit_cuda() uses for this combination
 * (major * 100 + minor), and the oldest architecture (sm number, e.g. 90). */
int emit_min_nvrtc(const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype);
int emit_min_sm(cdsl_backend flavour);

/* ---- Inside the emitter ------------------------------------------------------------------ */

/* A growing string in the arena (old copies are left behind: at most twice the final size). */
typedef struct EmitBuf {
    Arena *arena;
    char *s;
    size_t len, cap;
    int lines;          /* newlines so far: the next text starts on line lines + 1 */
    const char *cu_name; /* the file NVRTC is told (emit_cu_name), for #line; NULL: none */
} EmitBuf;

void emit_puts(EmitBuf *b, const char *s);
/* #line for the code that follows: loc's .cdsl (or plan) line; emit_line_back() returns to
 * the emitted file's own numbering. Nothing when loc has no source or the buffer no name. */
void emit_line_at(EmitBuf *b, Loc loc);
void emit_line_back(EmitBuf *b);
void emit_printf(EmitBuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* emit_packets.c: packets (docs/language.md, section 8), device code in
 * runtime/device/cdsl_packets.cuh. */
bool emit_packets_used(const IrProgram *p);
void emit_packets_prelude(EmitBuf *b, const IrProgram *p);
void emit_packets_op(EmitBuf *b, const IrProgram *p, const IrOp *op, const char *const *bufname, bool after_data);
void emit_packets_leave(EmitBuf *b, const IrProgram *p);

/* emit_headers.c and the build's device_headers.c: the device library (runtime/device/ .cuh files
 * and runtime/abi.h) embedded in libcdsl, each under the name the programs #include. */
typedef struct EmitHeader {
    const char *name;   /* "cdsl_device.cuh" */
    const char *text;
} EmitHeader;

extern const EmitHeader emit_device_headers[];   /* ends with {NULL, NULL} */
const EmitHeader *emit_header(const char *name, size_t len);
/* The macros choosing rank count, flavour, element type (and the plan helpers; inlined helpers
 * when the code of rank, -1 for every rank, makes few calls), then #include "cdsl_device.cuh". */
void emit_include(EmitBuf *b, const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, bool plan, int rank);
/* src with each #include of one of the headers replaced by its text (recursively): one file
 * that nvcc compiles alone. malloc'd; NULL when out of memory. */
char *emit_paste_headers(const char *src);
/* The file name NVRTC is told for this source, "allgather_mesh_p2p_f32.cu" (rank >= 0 adds
 * "_rank"), [A-Za-z0-9_.] and at most EMIT_CU_NAME_MAX characters (buf holds at least one
 * more); the emitted #line directives name it when they go back to the source's own lines. */
enum { EMIT_CU_NAME_MAX = 64 };
void emit_cu_name(char *buf, size_t size, const IrProgram *p, cdsl_backend flavour, cdsl_dtype dtype, int rank);

/* emit_fence.c: for the nvls flavour, where an access through one mapping (multicast or
 * unicast) may meet an earlier access of the same bytes through the other, one of the two a
 * write, so that fence.proxy.alias goes there. Walk one rank's operations in order: ask
 * fence_before() for each operation (not NULL: emit the fence before it, with that text as its
 * comment), then tell fence_after(); at the end ask fence_at_end() (the same). */
typedef struct EmitFence EmitFence;

EmitFence *emit_fence_new(const IrProgram *p, Arena *a);
void emit_fence_begin_rank(EmitFence *f);
const char *emit_fence_before(EmitFence *f, const IrOp *op);
void emit_fence_after(EmitFence *f, const IrOp *op);
const char *emit_fence_at_end(EmitFence *f);

#endif
