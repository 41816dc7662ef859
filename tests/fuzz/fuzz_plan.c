/*
 * fuzz_plan.c - libFuzzer target over the MSCCL++ plan importer: any bytes as a plan's text,
 * through JSON parsing (jansson), positions, both format generations, the mapping to IR, the
 * checker and CUDA emission of what was accepted.
 *
 * Every input must end in a program or in diagnostics: no crash, no leak (jansson's tree
 * included, on every path), no undefined behaviour. Diagnostics go to /dev/null; the arena is
 * limited and destroyed after each input, and the checker runs within a small budget.
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "emit.h"
#include "fuzz.h"
#include "mscclpp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *sink = fuzz_sink();
    Arena *a = arena_create();
    if (!a)
        return 0;
    arena_set_limit(a, (size_t)256 << 20);
    ArenaTrap trap;
    arena_trap_push(a, &trap);
    if (setjmp(trap.env)) {
        arena_destroy(a);
        return 0;
    }
    Diag d;
    diag_init(&d, sink);
    Source *src = fuzz_source(a, data, size);
    src->path = "fuzz.json";
    bool usage;
    IrProgram *p = mscclpp_import_source(a, &d, src, 0, &usage);
    if (p) {
        CheckLimits limits = {(size_t)64 << 20, 1u << 24};
        check_program(p, &d, &limits);
        if (!d.nerrors)
            emit_cuda(p, CDSL_BACKEND_P2P, CDSL_F32, a, &d);
    }
    arena_trap_pop(a, &trap);
    arena_destroy(a);
    return 0;
}
