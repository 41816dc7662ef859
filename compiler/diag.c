/*
 * diag.c - printing diagnostics with the offending line and a caret under the column.
 *
 * Lines are found through a table of line starts built the first time a file is quoted, so
 * the lexer pays nothing per token. Long lines are cut around the column so that a 1 MB
 * single-line file still gives a readable message. Tabs in the quoted line are kept and
 * mirrored in the caret line so that the caret sits under the right byte.
 */
#include "diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { QUOTE_WIDTH = 120 };

void diag_init(Diag *d, FILE *out)
{
    memset(d, 0, sizeof *d);
    d->out = out;
    d->color = isatty(fileno(out)) && !getenv("NO_COLOR");
    d->max_errors = 20;
}

static void build_lines(Source *src)
{
    int n = 1;
    for (size_t i = 0; i < src->len; i++)
        n += src->text[i] == '\n';
    int *starts = ARENA_ARRAY(src->arena, int, (size_t)n + 1);
    int k = 0;
    starts[k++] = 0;
    for (size_t i = 0; i < src->len; i++)
        if (src->text[i] == '\n')
            starts[k++] = (int)i + 1;
    starts[k] = (int)src->len + 1;
    src->line_start = starts;
    src->nlines = n;
}

const char *source_line(const Source *csrc, int line, int *len)
{
    /* The table is a cache: building it does not change what the Source means. */
    Source *src = (Source *)csrc;
    if (!src->line_start)
        build_lines(src);
    if (!src->line_start || line < 1 || line > src->nlines) {
        *len = 0;
        return "";
    }
    int start = src->line_start[line - 1];
    int end = line < src->nlines ? src->line_start[line] - 1 : (int)src->len;
    if (end > start && src->text[end - 1] == '\r')
        end--;
    *len = end - start;
    return src->text + start;
}

static void quote(Diag *d, Loc at)
{
    int len;
    const char *line = source_line(at.src, at.line, &len);
    int col = at.col - 1;
    if (col > len)
        col = len;
    int from = 0;
    if (len > QUOTE_WIDTH && col > QUOTE_WIDTH / 2)
        from = col - QUOTE_WIDTH / 2;
    int to = from + QUOTE_WIDTH < len ? from + QUOTE_WIDTH : len;
    fputs(from ? "    ..." : "    ", d->out);
    for (int i = from; i < to; i++) {
        unsigned char c = (unsigned char)line[i];
        fputc(c == '\t' || c >= 0x20 ? c : '?', d->out);
    }
    fputs(to < len ? "...\n" : "\n", d->out);
    fputs(from ? "       " : "    ", d->out);
    for (int i = from; i < col; i++)   /* one column per character: skip UTF-8 continuations */
        if (((unsigned char)line[i] & 0xC0) != 0x80)
            fputc(line[i] == '\t' ? '\t' : ' ', d->out);
    fputs(d->color ? "\033[1;32m^\033[0m\n" : "^\n", d->out);
}

static void report(Diag *d, Loc at, const char *kind, const char *color, const char *fmt, va_list ap)
{
    if (at.src)
        fprintf(d->out, d->color ? "\033[1m%s:%d:%d: \033[0m" : "%s:%d:%d: ", at.src->path, at.line, at.col);
    else
        fputs(d->color ? "\033[1mcdsl: \033[0m" : "cdsl: ", d->out);
    if (d->color)
        fprintf(d->out, "%s%s:\033[0m ", color, kind);
    else
        fprintf(d->out, "%s: ", kind);
    vfprintf(d->out, fmt, ap);
    fputc('\n', d->out);
    if (at.src && at.line > 0)
        quote(d, at);
}

void diag_error(Diag *d, Loc at, const char *fmt, ...)
{
    d->nerrors++;
    d->suppressed = d->max_errors && d->nerrors > d->max_errors;
    if (d->suppressed) {
        if (d->nerrors == d->max_errors + 1)
            fprintf(d->out, "cdsl: too many errors; stopping after %d\n", d->max_errors);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    report(d, at, "error", "\033[1;31m", fmt, ap);
    va_end(ap);
}

void diag_note(Diag *d, Loc at, const char *fmt, ...)
{
    if (d->suppressed)
        return;
    va_list ap;
    va_start(ap, fmt);
    report(d, at, "note", "\033[1;36m", fmt, ap);
    va_end(ap);
}

void diag_fatal(Diag *d, const char *fmt, ...)
{
    d->nerrors++;
    va_list ap;
    va_start(ap, fmt);
    report(d, (Loc){0}, "error", "\033[1;31m", fmt, ap);
    va_end(ap);
}
