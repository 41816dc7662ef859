/*
 * emit_buf.c - the emitter's text: a growing string in the arena, #line directives, and the
 * chunk notation of the emitted comments (emit_buf.h).
 */
#include "emit_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void reserve(EmitBuf *b, size_t more)
{
    if (b->len + more + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 1 << 16;
    while (cap < b->len + more + 1)
        cap *= 2;
    b->s = arena_grow(b->arena, b->s, b->len, cap, 1);
    b->cap = cap;
}

static void count_lines(EmitBuf *b, size_t from)
{
    for (const char *c = b->s + from; (c = strchr(c, '\n')); c++)
        b->lines++;
}

void emit_puts(EmitBuf *b, const char *s)
{
    size_t n = strlen(s);
    reserve(b, n);
    memcpy(b->s + b->len, s, n + 1);
    count_lines(b, b->len);
    b->len += n;
}

void emit_printf(EmitBuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    count_lines(b, b->len);
    b->len += (size_t)n;
}

/* The file's base name inside a C string literal: quotes, backslashes and control bytes
   replaced, at most 240 bytes (user text never reaches the source unchecked). The base name
   only, so that the source, and so the JIT cache's key, do not depend on how the file was
   named (a relative path, the stdlib found by name); tools are told the folder instead
   (compute-sanitizer prints the name, Nsight asks for source folders). */
static void put_path(EmitBuf *b, const char *path)
{
    const char *slash = strrchr(path, '/');
    char s[241];
    size_t n = 0;
    for (const char *c = slash && slash[1] ? slash + 1 : path; *c && n < sizeof s - 1; c++) {
        unsigned char u = (unsigned char)*c;
        s[n++] = u < 0x20 || u == 0x7f || u == '"' || u == '\\' ? '_' : (char)u;
    }
    s[n] = 0;
    emit_puts(b, s);
}

void emit_line_at(EmitBuf *b, Loc loc)
{
    if (!b->cu_name || !loc.src || !loc.src->path || loc.line <= 0)
        return;
    emit_printf(b, "#line %d \"", loc.line);
    put_path(b, loc.src->path);
    emit_puts(b, "\"\n");
}

void emit_line_back(EmitBuf *b)
{
    if (b->cu_name)   /* the directive is on line lines + 1, so the next line is lines + 2 */
        emit_printf(b, "#line %d \"%s\"\n", b->lines + 2, b->cu_name);
}

void emit_range(EmitBuf *b, const char *name, IrRange r)
{
    char t[IR_CHUNKS_TEXT];
    emit_puts(b, name);
    emit_puts(b, ir_chunks_text(t, r.first, r.count));
}
