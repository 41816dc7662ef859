/*
 * program.c - the compiler's side of the seam (program.h): what a compiled program shows the
 * runtime, and its code generator.
 *
 * The CUDA of a program is emitted lazily, when a backend or a caller first asks for a flavour
 * and element type, and kept in the program: every rank's source once per (flavour, type), and
 * one rank's source for the rank asked last (a process of one rank asks for its own again on
 * every run). Emission allocates in the program's arena, under a trap, so that running out of
 * memory returns NULL with errno ENOMEM and leaves the program usable. The cache and the arena
 * are shared by every thread using the program: the caller holds program_lock (jit.c does).
 */
#include "program.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"
#include "emit.h"
#include "log.h"

const IrProgram *program_ir(const cdsl_program *p)
{
    return p ? p->ir : NULL;
}

unsigned long long program_serial(const cdsl_program *p)
{
    return p ? p->serial : 0;
}

bool program_ok(const cdsl_program *p)
{
    return p && p->ok;
}

bool program_checked(const cdsl_program *p)
{
    return p && p->ir && p->check && p->ok;
}

Diag *program_diag(cdsl_program *p)
{
    return &p->diag;
}

void program_progress_begin(cdsl_program *p, const char *fmt, ...)
{
    char what[sizeof p->progress.what];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    progress_begin(&p->progress, &p->diag, progress_wanted(p->progress_mode, p->diag.out), "%s", what);
}

void program_progress_end(cdsl_program *p)
{
    progress_end(&p->progress);
}

void program_lock(cdsl_program *p)
{
    pthread_mutex_lock(&p->lazy);
}

void program_unlock(cdsl_program *p)
{
    pthread_mutex_unlock(&p->lazy);
}

/* ---- The code generator ------------------------------------------------------------------- */

static void emitted(const cdsl_program *p, const char *src, cdsl_backend flavour, cdsl_dtype dtype, int rank,
                    double t0)
{
    char which[32] = "";
    if (rank >= 0)
        snprintf(which, sizeof which, ", rank %d", rank);
    if (src)
        log_msg(LOG_INFO, "timing: emit %.3f ms (%s CUDA for %s, %s%s, %zu bytes)", log_ms_since(t0),
                cdsl_backend_name(flavour), p->ir->name, cdsl_dtype_name(dtype), which, strlen(src));
}

/* emit_cuda (every rank: rank -1) or emit_cuda_rank under a trap: NULL, with errno ENOMEM,
 * when memory ran out. */
static const char *emit_trapped(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank)
{
    ArenaTrap trap;
    arena_trap_push(p->arena, &trap);
    if (setjmp(trap.env)) {
        driver_out_of_memory(p, &trap);
        return NULL;
    }
    const char *src = rank < 0 ? emit_cuda(p->ir, flavour, dtype, p->arena, &p->diag)
                               : emit_cuda_rank(p->ir, flavour, dtype, rank, p->arena, &p->diag);
    arena_trap_pop(p->arena, &trap);
    return src;
}

/* The caller (jit.c) holds the program's lock and checked the program, flavour, type and rank; a flavour the program keeps
 * no source for (a backend added to the registry without device code) is refused here. */
static const char *cuda_of(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank)
{
    if ((size_t)flavour >= sizeof p->cuda / sizeof p->cuda[0] || (size_t)dtype >= sizeof p->cuda[0] / sizeof p->cuda[0][0]) {
        diag_fatal(&p->diag, "no device code for backend %d, element type %d", (int)flavour, (int)dtype);
        return NULL;
    }
    double t = log_clock();
    if (rank < 0) {
        if (!p->cuda[flavour][dtype]) {
            p->cuda[flavour][dtype] = emit_trapped(p, flavour, dtype, -1);
            emitted(p, p->cuda[flavour][dtype], flavour, dtype, rank, t);
        }
        return p->cuda[flavour][dtype];
    }
    if (!p->cuda_rank[flavour][dtype] || p->cuda_rank_of[flavour][dtype] != rank) {
        p->cuda_rank[flavour][dtype] = emit_trapped(p, flavour, dtype, rank);
        p->cuda_rank_of[flavour][dtype] = p->cuda_rank[flavour][dtype] ? rank : -1;
        emitted(p, p->cuda_rank[flavour][dtype], flavour, dtype, rank, t);
    }
    return p->cuda_rank[flavour][dtype];
}

static int device_headers(const char **names, const char **texts, int max)
{
    int n = 0;
    for (const EmitHeader *h = emit_device_headers; h->name && n < max; h++, n++) {
        names[n] = h->name;
        texts[n] = h->text;
    }
    return n;
}

static const ProgramCodegen cuda_codegen = {
    .cuda = cuda_of,
    .min_nvrtc = emit_min_nvrtc,
    .min_sm = emit_min_sm,
    .cu_name = emit_cu_name,
    .headers = device_headers,
    .ce_plan = ce_plan_build,
    .ce_plan_free = ce_plan_free,
};

const ProgramCodegen *program_codegen(const cdsl_program *p)
{
    (void)p;
    return &cuda_codegen;
}
