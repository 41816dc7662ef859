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
 * diag->nerrors; nothing prints to stderr on its own.
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

typedef struct Diag {
    FILE *out;
    bool color;
    int nerrors;
    int nusage;         /* of those, errors in the caller's arguments (diag_usage) */
    int max_errors;     /* stop printing errors after this many (0: no limit) */
    bool suppressed;    /* the last error was not printed, so neither are its notes */
} Diag;

void diag_init(Diag *d, FILE *out);

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
