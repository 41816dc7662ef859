/*
 * rt_error.c - the runtime's one way to tell the user something went wrong.
 *
 * Messages read like the compiler's position-less ones: "cdsl: error: ...", one line, on the
 * communicator's log (stderr when there is none), with user text in it escaped (escape.c).
 * Flushed at once so that a message printed just before a run stops is never lost in a buffer.
 */
#include <stdarg.h>
#include <stdio.h>

#include "backend.h"
#include "escape.h"

void rt_error(FILE *log, const char *fmt, ...)
{
    FILE *out = log ? log : stderr;
    va_list ap;
    va_start(ap, fmt);
    fputs("cdsl: error: ", out);
    esc_vprint(out, fmt, ap);   /* file names, program names: user text (escape.c) */
    fputc('\n', out);
    va_end(ap);
    fflush(out);
}
