/*
 * diag.c - printing diagnostics with the offending line and a caret under the column.
 *
 * Lines are found through a table of line starts built the first time a file is quoted, so
 * the lexer pays nothing per token. Long lines are cut around the column so that a 1 MB
 * single-line file still gives a readable message. Tabs in the quoted line are kept and
 * mirrored in the caret line so that the caret sits under the right byte. Everything printed
 * that could hold user text (the path, the message with its arguments, the quoted line) goes
 * through escape.c, so that no call site can let a terminal escape or a bidi override out.
 *
 * Warnings are errors of a family that can be turned off (-Wno-...) or made errors (-Werror),
 * named after the message as gcc does. As text, each family stops after max_warnings (20, as
 * errors stop after 20), and the pass that warned ends with one note of how many more there
 * were: a program with a million unused names is not a million messages. For editors and CI
 * the same diagnostics can be kept as gcc's JSON instead (-fdiagnostics-format=json): each
 * one an object, its notes its children, kept as a jansson tree and written out by jansson as
 * one array when the library call that
 * made them returns (diag_flush).
 */
#include "diag.h"

#include "escape.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { QUOTE_WIDTH = 120 };

void diag_init(Diag *d, FILE *out)
{
    memset(d, 0, sizeof *d);
    d->out = out;
    d->color = out && isatty(fileno(out)) && !getenv("NO_COLOR");
    d->max_errors = 20;
    d->max_warnings = 20;
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

/* ---- JSON (DIAG_JSON) ------------------------------------------------------------------ */

/* The text of fmt's message (or of a path) in escape.c's printable form, as a JSON string:
 * every %s may be user text. The form is valid UTF-8 (escape.c shows any other byte as \xNN),
 * which jansson wants; jansson then escapes what JSON needs (quotes, backslashes). */
static json_t *json_text(const char *fmt, va_list ap)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        return NULL;
    esc_vprint(m, fmt, ap);
    fclose(m);
    json_t *s = text ? json_stringn(text, len) : NULL;
    free(text);
    return s;
}

static json_t *json_textf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *s = json_text(fmt, ap);
    va_end(ap);
    return s;
}

/* gcc's "locations": one caret, or none for a message without a place. */
static json_t *json_locations(Loc at)
{
    if (!at.src)
        return json_array();
    return json_pack("[{s:{s:o, s:i, s:i, s:i, s:i}}]", "caret", "file", json_textf("%s", at.src->path), "line",
                     at.line, "column", at.col, "display-column", at.col, "byte-column", at.col);
}

/* The rule an error rests on, shown after its message; NULL for anything else. */
static const char *rule_of(const Diag *d, const char *kind)
{
    return d->rule && !strcmp(kind, "error") ? d->rule : NULL;
}

/* One diagnostic as gcc's object, kept in d->json; a note goes among the children of the
 * diagnostic before it. Out of memory loses the diagnostic, not the program. */
static void json_report(Diag *d, Loc at, const char *kind, const char *option, const char *fmt, va_list ap)
{
    if (!d->json && !(d->json = json_array()))
        return;
    size_t n = json_array_size(d->json);
    json_t *parent = !strcmp(kind, "note") && n ? json_object_get(json_array_get(d->json, n - 1), "children") : NULL;
    json_t *msg = json_text(fmt, ap);
    const char *rule = rule_of(d, kind);
    if (msg && rule) {
        json_t *whole = json_sprintf("%s [%s]", json_string_value(msg), rule);
        json_decref(msg);
        msg = whole;
    }
    json_t *o = json_pack("{s:s, s:o, s:s*, s:o}", "kind", kind, "message", msg, "option", option, "locations",
                          json_locations(at));
    if (!o)
        return;
    if (parent) {
        json_array_append_new(parent, o);
        return;
    }
    json_object_set_new(o, "column-origin", json_integer(1));
    json_object_set_new(o, "escape-source", json_false());
    json_object_set_new(o, "children", json_array());
    json_array_append_new(d->json, o);
}

void diag_flush(Diag *d, bool always)
{
    if (d->format != DIAG_JSON || !d->out)
        return;
    int saved = errno;   /* callers read errno after the call that flushed (ENOMEM) */
    if (json_array_size(d->json) || always) {
        json_t *none = d->json ? NULL : json_array();
        /* One line, ", " and ": " between items, keys in the order gcc writes them. */
        if (json_dumpf(d->json ? d->json : none, d->out, JSON_PRESERVE_ORDER) == 0)
            fputc('\n', d->out);
        json_decref(none);
        fflush(d->out);
    }
    json_decref(d->json);
    d->json = NULL;
    errno = saved;
}

void diag_free(Diag *d)
{
    json_decref(d->json);
    d->json = NULL;
}

/* ---- Text ------------------------------------------------------------------------------- */

static void report(Diag *d, Loc at, const char *kind, const char *color, const char *option, const char *fmt,
                   va_list ap)
{
    if (!d->out)
        return;
    if (d->before_print)
        d->before_print(d->before_arg);
    if (d->format == DIAG_JSON) {
        json_report(d, at, kind, option, fmt, ap);
        return;
    }
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
    if (option || rule_of(d, kind))
        fprintf(d->out, " [%s]", option ? option : rule_of(d, kind));
    fputc('\n', d->out);
    if (at.src && at.line > 0)
        quote(d, at);
}

/* Counts the error; false when it is past the limit and is not printed (nor its notes). */
static bool count_error(Diag *d)
{
    d->nerrors++;
    d->suppressed = d->max_errors && d->nerrors > d->max_errors;
    if (d->suppressed && d->nerrors == d->max_errors + 1 && d->out && d->format == DIAG_TEXT)
        fprintf(d->out, "cdsl: too many errors; stopping after %d\n", d->max_errors);
    return !d->suppressed;
}

void diag_error(Diag *d, Loc at, const char *fmt, ...)
{
    if (!count_error(d))
        return;
    va_list ap;
    va_start(ap, fmt);
    report(d, at, "error", "\033[1;31m", NULL, fmt, ap);
    va_end(ap);
}

const char *diag_warning_name(unsigned family)
{
    switch (family) {
    case DIAG_W_UNUSED: return "unused";
    case DIAG_W_REDUNDANT_BARRIER: return "redundant-barrier";
    case DIAG_W_STRONGER_ORDER: return "stronger-order";
    case DIAG_W_WRITES_INPUT: return "writes-input";
    }
    return "?";
}

static int family_index(unsigned family)
{
    int i = 0;
    while (i < DIAG_W_COUNT - 1 && !(family & (1u << i)))
        i++;
    return i;
}

/* Counts a warning shown as text; false when its family is past the limit and it is not
 * printed (nor its notes). JSON is for tools, which are given every one. */
static bool count_warning(Diag *d, unsigned family)
{
    if (d->format != DIAG_TEXT || !d->max_warnings)
        return true;
    int i = family_index(family);
    if (d->warnings_shown[i] < d->max_warnings) {
        d->warnings_shown[i]++;
        return true;
    }
    d->warnings_hidden[i]++;
    return false;
}

/* A note of its own, with no position: "cdsl: note: ...". */
static void note_alone(Diag *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(d, (Loc){0}, "note", "\033[1;36m", NULL, fmt, ap);
    va_end(ap);
}

void diag_warnings_done(Diag *d)
{
    for (int i = 0; i < DIAG_W_COUNT; i++) {
        if (d->warnings_hidden[i])
            note_alone(d, "%d more -W%s warnings (only the first %d of each kind are shown)", d->warnings_hidden[i],
                       diag_warning_name(1u << i), d->max_warnings);
        d->warnings_hidden[i] = 0;
    }
}

void diag_warning(Diag *d, unsigned family, Loc at, const char *fmt, ...)
{
    if (d->warn_off & family) {
        d->suppressed = true;
        return;
    }
    if (!d->werror && !count_warning(d, family)) {
        d->nwarnings++;
        d->suppressed = true;
        return;
    }
    char option[64];
    snprintf(option, sizeof option, d->werror ? "-Werror=%s" : "-W%s", diag_warning_name(family));
    if (d->werror && !count_error(d))
        return;
    if (!d->werror) {
        d->nwarnings++;
        d->suppressed = false;
    }
    va_list ap;
    va_start(ap, fmt);
    report(d, at, d->werror ? "error" : "warning", d->werror ? "\033[1;31m" : "\033[1;35m", option, fmt, ap);
    va_end(ap);
}

void diag_note(Diag *d, Loc at, const char *fmt, ...)
{
    if (d->suppressed)
        return;
    va_list ap;
    va_start(ap, fmt);
    report(d, at, "note", "\033[1;36m", NULL, fmt, ap);
    va_end(ap);
}

void diag_fatal(Diag *d, const char *fmt, ...)
{
    d->nerrors++;
    d->suppressed = false;
    va_list ap;
    va_start(ap, fmt);
    report(d, (Loc){0}, "error", "\033[1;31m", NULL, fmt, ap);
    va_end(ap);
}

void diag_usage(Diag *d, const char *fmt, ...)
{
    d->nerrors++;
    d->nusage++;
    d->suppressed = false;
    va_list ap;
    va_start(ap, fmt);
    report(d, (Loc){0}, "error", "\033[1;31m", NULL, fmt, ap);
    va_end(ap);
}

/* Each line a note of its own in JSON, so that a tool's log (NVRTC's) stays readable. */
static void json_text_line(Diag *d, const char *line, size_t n)
{
    char *copy = malloc(n + 1);
    if (!copy)
        return;
    memcpy(copy, line, n);
    copy[n] = 0;
    diag_note(d, (Loc){0}, "%s", copy);
    free(copy);
}

void diag_text(Diag *d, const char *text)
{
    if (!d->out || d->suppressed)
        return;
    for (const char *line = text; *line;) {
        size_t n = strcspn(line, "\n");
        if (d->format == DIAG_JSON) {
            json_text_line(d, line, n);
        } else {
            esc_write(d->out, line, n);
            fputc('\n', d->out);
        }
        line += n + (line[n] == '\n');
    }
}
