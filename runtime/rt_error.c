/*
 * rt_error.c - the runtime's one way to tell the user something went wrong.
 *
 * Messages read like the compiler's position-less ones: "cdsl: error: ...", one line, on the
 * communicator's log (stderr when there is none). Flushed at once so that a message printed
 * just before a run stops is never lost in a buffer.
 */
#include <stdarg.h>
#include <stdio.h>

#include "backend.h"

void rt_error(FILE *log, const char *fmt, ...)
{
    FILE *out = log ? log : stderr;
    va_list ap;
    va_start(ap, fmt);
    fputs("cdsl: error: ", out);
    vfprintf(out, fmt, ap);
    fputc('\n', out);
    va_end(ap);
    fflush(out);
}
