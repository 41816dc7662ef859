/*
 * fuzz.h - what both libFuzzer harnesses share: a sink for diagnostics and the input as a
 * Source in the arena (NUL-terminated, as the lexer wants it). Header-only: each harness is one
 * .c file that `make fuzz` links with the library.
 */
#ifndef CDSL_FUZZ_H
#define CDSL_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "diag.h"

static inline FILE *fuzz_sink(void)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    return sink;
}

static inline Source *fuzz_source(Arena *a, const uint8_t *data, size_t size)
{
    Source *src = ARENA_NEW(a, Source);
    char *text = arena_alloc(a, size + 1);
    memcpy(text, data, size);
    src->path = "fuzz.cdsl";
    src->text = text;
    src->len = size;
    src->arena = a;
    return src;
}

#endif
