/*
 * fuzz_plan.c - libFuzzer target over the MSCCL++ plan importer: any bytes as a plan's text,
 * through JSON parsing (jansson), positions, both format generations, the mapping to IR, the
 * checker and CUDA emission of what was accepted.
 *
 * Every input must end in a program or in diagnostics: no crash, no leak (jansson's tree
 * included, on every path), no undefined behaviour, and no runaway: an input is at most a few
 * KB (fuzz.sh.run's -max_len), so one that fills the arena's limit or spends the checker's
 * budget is growing without bound, and aborts so that libFuzzer keeps it as a finding; a quiet
 * return there would hide exactly the loops this harness is for. Diagnostics go to
 * /dev/null; the arena is destroyed after each input.
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "emit.h"
#include "fuzz.h"
#include "happens_before.h"
#include "lower.h"
#include "mscclpp.h"

#define ARENA_CAP ((size_t)256 << 20)

static _Noreturn void runaway(const char *what)
{
    fprintf(stderr, "fuzz_plan: the input %s: a runaway, not a diagnostic\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *sink = fuzz_sink();
    Arena *a = arena_create();
    if (!a)
        return 0;
    arena_set_limit(a, ARENA_CAP);
    ArenaTrap trap;
    arena_trap_push(a, &trap);
    if (setjmp(trap.env))
        runaway("filled the arena's limit");
    Diag d;
    diag_init(&d, sink);
    Source *src = fuzz_source(a, data, size);
    src->path = "fuzz.json";
    bool usage;
    IrProgram *p = mscclpp_import_source(a, &d, src, 0, 2, &usage);
    if (p) {
        CheckLimits limits = {(size_t)64 << 20, 1u << 24};
        const struct CheckResult *r = check_program(p, &d, &limits);
        if (r->budget.over)
            runaway("spent the checker's budget");
        if (!d.nerrors) {
            partition_program(p);   /* the driver's lowering after the check */
            emit_cuda(p, CDSL_BACKEND_P2P, CDSL_F32, a, &d);
        }
    }
    arena_trap_pop(a, &trap);
    arena_destroy(a);
    return 0;
}
