/*
 * rt_error.c - the runtime's one way to tell the user something went wrong, and the record of
 * the last such message that cdsl_get_last_error() returns (last_error.h).
 *
 * Messages read like the compiler's position-less ones: "cdsl: error: ...", one line, on the
 * communicator's log (stderr when there is none), with user text in it escaped (escape.c).
 * Flushed at once so that a message printed just before a run stops is never lost in a buffer.
 * Each one is also kept, escaped the same way, as the calling thread's last error: the answer
 * for errors that have no communicator to keep them (a create that failed, a NULL one).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "escape.h"
#include "last_error.h"

enum { RT_LAST_ERROR_BYTES = 2048 };

static const char error_prefix[] = "cdsl: error: ", note_prefix[] = "cdsl: note: ";

static _Thread_local char thread_last[RT_LAST_ERROR_BYTES];  /* this thread's last rt_error */
static _Thread_local char thread_copy[RT_LAST_ERROR_BYTES];  /* what rt_last_error_text returned */
static _Thread_local bool thread_quiet;                      /* rt_last_error_quiet */

struct RtLastError {
    pthread_mutex_t mu;
    char text[RT_LAST_ERROR_BYTES];     /* the error and its notes, without "cdsl: " prefixes */
    char line[RT_LAST_ERROR_BYTES];     /* the line being written, cut at the size */
    size_t line_len;
    bool noting;                        /* notes that follow belong to the error in text */
    bool calls;                         /* rt_last_error_begin marks calls: errors of one join */
    bool fresh;                         /* no error yet in the call begun last */
    FILE *to;                           /* rt_last_error_stream: where the bytes go on */
};

static void thread_record(const char *fmt, va_list ap)
{
    char raw[RT_LAST_ERROR_BYTES];
    vsnprintf(raw, sizeof raw, fmt, ap);
    cdsl_escape(raw, thread_last, sizeof thread_last);
}

void rt_error(FILE *log, const char *fmt, ...)
{
    FILE *out = log ? log : stderr;
    va_list ap, copy;
    va_start(ap, fmt);
    va_copy(copy, ap);
    flockfile(out);             /* one line, whole, when sim rank threads report at once */
    fputs(error_prefix, out);
    esc_vprint(out, fmt, ap);   /* file names, program names: user text (escape.c) */
    fputc('\n', out);
    fflush(out);
    funlockfile(out);
    va_end(ap);
    if (!thread_quiet)
        thread_record(fmt, copy);
    va_end(copy);
}

int rt_comm_null(const char *function)
{
    rt_error(NULL, "%s: the communicator is NULL", function);
    return CDSL_ERR_USAGE;
}

void rt_last_error_quiet(bool on)
{
    thread_quiet = on;
}

RtLastError *rt_last_error_new(void)
{
    RtLastError *e = calloc(1, sizeof *e);
    if (e && pthread_mutex_init(&e->mu, NULL)) {
        free(e);
        return NULL;
    }
    return e;
}

void rt_last_error_free(RtLastError *e)
{
    if (!e)
        return;
    pthread_mutex_destroy(&e->mu);
    free(e);
}

void rt_last_error_begin(RtLastError *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->mu);
    e->calls = e->fresh = true;
    pthread_mutex_unlock(&e->mu);
}

/* A whole line: an error replaces the text (or, after another error of the same call, is
 * added on a line of its own); a note that follows it is added too (as "note: ..."); anything
 * else ends the notes. */
static void last_error_line(RtLastError *e)
{
    size_t ep = strlen(error_prefix), have = strlen(e->text);
    e->line[e->line_len] = 0;
    if (!strncmp(e->line, error_prefix, ep)) {
        if (e->calls && !e->fresh && have + 1 < sizeof e->text)
            snprintf(e->text + have, sizeof e->text - have, "\n%s", e->line + ep);
        else
            snprintf(e->text, sizeof e->text, "%s", e->line + ep);
        e->noting = true;
        e->fresh = false;
    } else if (e->noting && !strncmp(e->line, note_prefix, strlen(note_prefix)) && have + 1 < sizeof e->text) {
        snprintf(e->text + have, sizeof e->text - have, "\n%s", e->line + strlen("cdsl: "));
    } else {
        e->noting = false;
    }
    e->line_len = 0;
}

void rt_last_error_feed(RtLastError *e, const char *buf, size_t len)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->mu);
    for (size_t i = 0; i < len; i++) {
        if (buf[i] == '\n')
            last_error_line(e);
        else if (e->line_len + 1 < sizeof e->line)
            e->line[e->line_len++] = buf[i];
    }
    pthread_mutex_unlock(&e->mu);
}

const char *rt_last_error_text(RtLastError *e)
{
    if (!e) {
        memcpy(thread_copy, thread_last, sizeof thread_copy);
        return thread_copy;
    }
    pthread_mutex_lock(&e->mu);
    memcpy(thread_copy, e->text, sizeof thread_copy);
    pthread_mutex_unlock(&e->mu);
    return thread_copy;
}

static ssize_t last_error_write(void *cookie, const char *buf, size_t len)
{
    RtLastError *e = cookie;
    rt_last_error_feed(e, buf, len);
    fwrite(buf, 1, len, e->to);
    fflush(e->to);
    return (ssize_t)len;
}

FILE *rt_last_error_stream(RtLastError *e, FILE *to)
{
    if (!e)
        return NULL;
    e->to = to;
    cookie_io_functions_t fns = {.write = last_error_write};
    FILE *f = fopencookie(e, "w", fns);
    if (f)
        setvbuf(f, NULL, _IOLBF, BUFSIZ);
    return f;
}
