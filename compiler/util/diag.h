/*
 * diag.h - source files, positions and compiler-style diagnostics.
 *
 * A Source is one loaded .cdsl file, kept in memory (NUL-terminated) for the whole
 * compilation so that any phase can quote a line. A Loc is a position in it: line and column,
 * both 1-based, the column counted in bytes. Diagnostics print as compilers do:
 *
 *     file.cdsl:7:9: error: message
 *         next.put(output[c], output[c]);
 *         ^
 *     file.cdsl:3:5: note: the other side
 *
 * Colour only when the stream is a terminal. Every phase reports through a Diag and checks
 * diag->nerrors; nothing prints to stderr on its own. With DIAG_JSON the same diagnostics are
 * kept as gcc's -fdiagnostics-format=json objects (kind, message, option, locations with file,
 * line and column, notes as children) and printed as one array by diag_flush.
 */
#ifndef CDSL_DIAG_H
#define CDSL_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "arena.h"

typedef struct Source {
    const char *path;   /* as the user named it (or as resolved from an import) */
    const char *text;   /* len bytes plus a terminating NUL */
    size_t len;
    int *line_start;    /* byte offsets of each line's first byte, built lazily */
    int nlines;
    Arena *arena;       /* where the line table goes */
} Source;

typedef struct Loc {
    const Source *src;  /* NULL: no position (command-line values, internal facts) */
    int line, col;
} Loc;

/* Warnings, by the flag that turns each off (-Wno-unused ...): the bits of cdsl.h's
 * cdsl_warning, named in messages as gcc does ("[-Wunused]"). */
enum {
    DIAG_W_UNUSED = 1,
    DIAG_W_REDUNDANT_BARRIER = 2,
    DIAG_W_STRONGER_ORDER = 4,
    DIAG_W_WRITES_INPUT = 8,
    DIAG_W_COUNT = 4
};
enum { DIAG_TEXT = 0, DIAG_JSON = 1 };

typedef struct Diag {
    FILE *out;          /* NULL: count, print nothing (the checker's trial runs for warnings) */
    bool color;
    int nerrors;
    int nusage;         /* of those, errors in the caller's arguments (diag_usage) */
    int nwarnings;
    int max_errors;     /* stop printing errors after this many (0: no limit) */
    int max_warnings;   /* text: stop printing warnings of one family after this many (0: no
                           limit); diag_warnings_done says how many more there were */
    int warnings_shown[DIAG_W_COUNT], warnings_hidden[DIAG_W_COUNT];   /* by family */
    bool suppressed;    /* the last error was not printed, so neither are its notes */
    int format;         /* DIAG_TEXT, or DIAG_JSON: gcc's -fdiagnostics-format=json */
    unsigned warn_off;  /* DIAG_W_* bits not reported */
    const char *rule;   /* the checker's rule the errors now reported rest on (check.c sets it
                           per rule): each error's message ends " [rule 1: data races]" */
    bool werror;        /* warnings are errors (-Werror) */
    struct json_t *json; /* DIAG_JSON: the diagnostics so far, a jansson array (NULL: none yet) */
    void (*before_print)(void *arg);   /* called before anything is printed (progress_line.c) */
    void *before_arg;
} Diag;

void diag_init(Diag *d, FILE *out);
/* Frees what DIAG_JSON keeps; diag_flush first to print it. */
void diag_free(Diag *d);
/* DIAG_JSON: print the diagnostics so far as one JSON array on a line (also "[]" when there are
 * none and always is set) and start a new one. DIAG_TEXT: nothing. */
void diag_flush(Diag *d, bool always);

/* file:line:col: error: ... with the source line and a caret; counts towards nerrors. */
void diag_error(Diag *d, Loc at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* A note attached to the previous error: file:line:col: note: ... with its line and caret. */
void diag_note(Diag *d, Loc at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* A warning in one of the DIAG_W_* families: "warning: ... [-Wunused]" (an error with
 * "[-Werror=unused]" under -Werror), nothing when its family is off. Notes that follow it
 * are printed only when it was. */
void diag_warning(Diag *d, unsigned family, Loc at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* After a pass that warns: "cdsl: note: 4980 more -Wunused warnings (...)" for each family
 * that went past max_warnings since the last call. */
void diag_warnings_done(Diag *d);
/* The flag's name of a DIAG_W_* family: "unused", "redundant-barrier", "stronger-order",
 * "writes-input". */
const char *diag_warning_name(unsigned family);

/* An error with no position, e.g. about the command line: "cdslc: error: ...". */
void diag_fatal(Diag *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The same for an error in the caller's arguments (a define, the program to choose): the
 * compilation then fails with CDSL_ERR_USAGE, not CDSL_ERR_PROGRAM. */
void diag_usage(Diag *d, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Lines of text from a tool (NVRTC's log) after an error, each line escaped as messages are. */
void diag_text(Diag *d, const char *text);

/* The text of line `line` of src (without its newline) and its length. */
const char *source_line(const Source *src, int line, int *len);

#endif
