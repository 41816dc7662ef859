/*
 * diag.c - printing diagnostics with the offending line and a caret under the column.
 *
 * Lines are found through a table of line starts built the first time a file is quoted, so
 * the lexer pays nothing per token. Long lines are cut around the column so that a 1 MB
 * single-line file still gives a readable message. Tabs in the quoted line are kept and
 * mirrored in the caret line so that the caret sits under the right byte. Everything printed
 * that could hold user text (the path, the message with its arguments, the quoted line) goes
 * through escape.c, so that no call site can let a terminal escape or a bidi override out.
 */
#include "diag.h"

#include "escape.h"

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
    while (from > 0 && from < col && ((unsigned char)line[from] & 0xC0) == 0x80)
        from++;   /* start at a whole character */
    int to = from + QUOTE_WIDTH < len ? from + QUOTE_WIDTH : len;
    /* Each character in its printable form (escape.c); the caret line gets as many columns
     * for it as that form takes. */
    char form[ESC_MAX + 1], caret[QUOTE_WIDTH * (ESC_MAX + 1) + 8];
    size_t ncaret = 0;
    int width;
    fputs(from ? "    ..." : "    ", d->out);
    for (int i = from; i < to;) {
        int n = (int)esc_char(line + i, (size_t)(len - i), true, form, &width);
        fputs(form, d->out);
        for (int w = 0; i < col && w < width; w++)
            caret[ncaret++] = form[0] == '\t' ? '\t' : ' ';
        i += n;
    }
    caret[ncaret] = 0;
    fputs(to < len ? "...\n" : "\n", d->out);
    fputs(from ? "       " : "    ", d->out);
    fputs(caret, d->out);
    fputs(d->color ? "\033[1;32m^\033[0m\n" : "^\n", d->out);
}

static void report(Diag *d, Loc at, const char *kind, const char *color, const char *fmt, va_list ap)
{
    if (d->color)
        fputs("\033[1m", d->out);
    if (at.src) {
        esc_write(d->out, at.src->path, strlen(at.src->path));
        fprintf(d->out, ":%d:%d: ", at.line, at.col);
    } else {
        fputs("cdsl: ", d->out);
    }
    if (d->color)
        fprintf(d->out, "\033[0m%s%s:\033[0m ", color, kind);
    else
        fprintf(d->out, "%s: ", kind);
    esc_vprint(d->out, fmt, ap);   /* every %s may be user text: escape.c */
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

void diag_usage(Diag *d, const char *fmt, ...)
{
    d->nerrors++;
    d->nusage++;
    va_list ap;
    va_start(ap, fmt);
    report(d, (Loc){0}, "error", "\033[1;31m", fmt, ap);
    va_end(ap);
}

void diag_text(Diag *d, const char *text)
{
    for (const char *line = text; *line;) {
        size_t n = strcspn(line, "\n");
        esc_write(d->out, line, n);
        fputc('\n', d->out);
        line += n + (line[n] == '\n');
    }
}
