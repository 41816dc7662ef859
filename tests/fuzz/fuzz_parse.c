/*
 * fuzz_parse.c - libFuzzer target over the front end: lex, parse and resolve any bytes.
 *
 * Every input must end in a clean AST or in diagnostics: no crash, no leak, no undefined
 * behaviour (built with -fsanitize=fuzzer,address,undefined by `make fuzz`). Diagnostics go to
 * /dev/null; the arena is destroyed after each input. As in cdsl_compile, running out of memory
 * unwinds to a trap (arena.h).
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ast.h"
#include "fuzz.h"
#include "parse.h"
#include "resolve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *sink = fuzz_sink();
    Arena *a = arena_create();
    if (!a)
        return 0;
    ArenaTrap trap;
    arena_trap_push(a, &trap);
    if (setjmp(trap.env)) {
        arena_destroy(a);
        return 0;
    }
    Diag d;
    diag_init(&d, sink);
    Source *src = fuzz_source(a, data, size);
    AstFile *file = parse_file(a, &d, src);
    if (file) {
        AstUnit unit = {&file, 1};
        resolve_unit(a, &d, &unit, NULL);
        if (d.nerrors)   /* exercise the quoting of lines and carets too */
            diag_error(&d, (Loc){src, 1, 1}, "probe");
    }
    arena_trap_pop(a, &trap);
    arena_destroy(a);
    return 0;
}
