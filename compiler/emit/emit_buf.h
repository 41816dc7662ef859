/*
 * emit_buf.h - the text the CUDA emitter builds: a growing string in the arena, the #line
 * directives that attribute the code that follows to a .cdsl (or plan) line, and a chunk range
 * as the emitted comments print it. The bottom layer of the emitter: every emit_*.c writes
 * through it, and it calls none of them.
 */
#ifndef CDSL_EMIT_BUF_H
#define CDSL_EMIT_BUF_H

#include <stddef.h>

#include "arena.h"
#include "diag.h"
#include "ir.h"

/* A growing string in the arena (old copies are left behind: at most twice the final size). */
typedef struct EmitBuf {
    Arena *arena;
    char *s;
    size_t len, cap;
    int lines;          /* newlines so far: the next text starts on line lines + 1 */
    const char *cu_name; /* the file NVRTC is told (emit_cu_name), for #line; NULL: none */
} EmitBuf;

void emit_puts(EmitBuf *b, const char *s);
void emit_printf(EmitBuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* #line for the code that follows: loc's .cdsl (or plan) line; emit_line_back() returns to
 * the emitted file's own numbering. Nothing when loc has no source or the buffer no name. */
void emit_line_at(EmitBuf *b, Loc loc);
void emit_line_back(EmitBuf *b);
/* "output[3..5]": r's chunks after the buffer's name (already safe for the source). */
void emit_range(EmitBuf *b, const char *name, IrRange r);

#endif
