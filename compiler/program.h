/*
 * program.h - the seam between the compiler and the runtime: everything the runtime knows of a
 * compiled program (cdsl.h's opaque cdsl_program), and the one header of compiler/ it includes
 * besides the utilities every part shares (diagnostics, the debug log, escaping).
 * tests/api/layering.sh holds the runtime to that.
 *
 * What crosses is what the engines execute, and nothing of how it was found:
 *   - the per-rank operation lists with the buffers' shapes and the collective (ir.h): the sim
 *     executes exactly these operations, the GPU engines size their grids by them and name the
 *     .cdsl line of a wait that gave up, verify.c reads the collective and the buffers. The IR
 *     is itself the contract between phases ("what you check is what you run"), so the runtime
 *     reads the same types rather than a copy that could drift from them;
 *   - the copy-engine plan's types (ce_plan.h), which ce.c runs;
 *   - whether the program passed, and where messages about it go;
 *   - the code generator, as a table of functions (ProgramCodegen): the CUDA source of a
 *     flavour and rank, made on first request and kept in the program, what that code needs of
 *     NVRTC and the GPU, the device headers NVRTC is handed, and the copy-engine lowering.
 *     The runtime calls through the table and names no emitter or lowering function.
 * The syntax tree, the checker's facts and the program's arena stay behind it (driver.h).
 * compiler/program.c is the compiler's side.
 */
#ifndef CDSL_PROGRAM_H
#define CDSL_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>

#include "cdsl.h"
#include "ce_plan.h"
#include "diag.h"
#include "ir.h"

/* The per-rank operations; NULL when p is NULL or was not evaluated. */
const IrProgram *program_ir(const cdsl_program *p);
/* Unique in the process, never reused: tells a program apart from a destroyed one that had
 * the same address. 0 when p is NULL. */
unsigned long long program_serial(const cdsl_program *p);
/* Every stage the caller asked for passed (a program compiled to CDSL_STAGE_EVAL passes
 * without the checker). */
bool program_ok(const cdsl_program *p);
/* Evaluated and checked, without errors: what may be emitted. */
bool program_checked(const cdsl_program *p);
/* Where messages about p go: the JIT's reasons to refuse, NVRTC's log. p not NULL. */
Diag *program_diag(cdsl_program *p);
/* The progress line of long work on p (compiling with NVRTC), as the compiler's own phases
 * show theirs, and its end. */
void program_progress_begin(cdsl_program *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void program_progress_end(cdsl_program *p);
/* Held around every call that makes something on first request into p (ProgramCodegen.cuda and
 * the messages it writes): ranks that are threads of one process share one program and ask for
 * their code at once. Not recursive. */
void program_lock(cdsl_program *p);
void program_unlock(cdsl_program *p);

/* How device code is made from a program. */
typedef struct ProgramCodegen {
    /* The checked program's CUDA for flavour and dtype: every rank's (rank -1) or rank's
     * alone, made on first request and kept in p; the caller holds program_lock(p). NULL after an error on program_diag(p) (a
     * combination that cannot be emitted; out of memory, with errno ENOMEM). */
    const char *(*cuda)(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank);
    /* The oldest NVRTC (major * 100 + minor) whose PTX has every instruction of that code, and
     * the oldest GPU architecture (sm number) a flavour's code runs on. */
    int (*min_nvrtc)(const IrProgram *ir, cdsl_backend flavour, cdsl_dtype dtype);
    int (*min_sm)(cdsl_backend flavour);
    /* The file name NVRTC is told for that code (its #line directives name it). */
    void (*cu_name)(char *buf, size_t size, const IrProgram *ir, cdsl_backend flavour, cdsl_dtype dtype,
                    int rank);
    /* The device library the code #includes: up to max headers' names and texts; the count. */
    int (*headers)(const char **names, const char **texts, int max);
    /* The copy-engine lowering of a checked program and its release (ce_plan.h's
     * ce_plan_build and ce_plan_free). */
    int (*ce_plan)(const IrProgram *ir, int max_lanes, CePlan **out, char *why, size_t whylen);
    void (*ce_plan_free)(CePlan *plan);
} ProgramCodegen;

/* p's code generator (the same for every program today); p may be NULL. */
const ProgramCodegen *program_codegen(const cdsl_program *p);

#endif
