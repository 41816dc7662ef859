/*
 * log.c - CDSL_DEBUG's lines (log.h): the level and the destination are read once, under
 * pthread_once, and each line is written whole under the stream's lock, so that lines of
 * several threads (a sim communicator's ranks, the engines' helpers) never interleave.
 */
#include "log.h"

#include <ctype.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static int level;
static FILE *out;
static char host[64];

static bool word_is(const char *v, const char *word)
{
    for (; *v && *word; v++, word++)
        if (toupper((unsigned char)*v) != *word)
            return false;
    return !*v && !*word;
}

/* CDSL_DEBUG_FILE with %h (host) and %p (pid) filled in, opened for writing; NULL: stderr. */
static FILE *open_file(const char *pattern)
{
    char path[4096];
    size_t n = 0;
    for (const char *c = pattern; *c && n + 64 < sizeof path; c++) {
        if (c[0] == '%' && c[1] == 'h') {
            n += (size_t)snprintf(path + n, sizeof path - n, "%s", host);
            c++;
        } else if (c[0] == '%' && c[1] == 'p') {
            n += (size_t)snprintf(path + n, sizeof path - n, "%d", (int)getpid());
            c++;
        } else {
            path[n++] = *c;
        }
    }
    path[n] = 0;
    FILE *f = fopen(path, "w");
    if (f)
        setvbuf(f, NULL, _IOLBF, BUFSIZ);
    return f;
}

static void log_init(void)
{
    const char *v = getenv("CDSL_DEBUG");
    level = !v ? LOG_OFF : word_is(v, "WARN") ? LOG_WARN : word_is(v, "INFO") ? LOG_INFO
          : word_is(v, "TRACE") ? LOG_TRACE : LOG_OFF;
    if (gethostname(host, sizeof host) != 0)
        strcpy(host, "?");
    host[sizeof host - 1] = 0;
    char *dot = strchr(host, '.');
    if (dot)
        *dot = 0;
    const char *file = getenv("CDSL_DEBUG_FILE");
    out = level && file && *file ? open_file(file) : NULL;
    if (!out)
        out = stderr;
}

int log_level(void)
{
    pthread_once(&log_once, log_init);
    return level;
}

void log_msg(int lv, const char *fmt, ...)
{
    if (log_level() < lv)
        return;
    static const char *const names[] = {"", "WARN", "INFO", "TRACE"};
    va_list ap;
    va_start(ap, fmt);
    flockfile(out);
    fprintf(out, "%s:%d:%ld cdsl %s ", host, (int)getpid(), (long)syscall(SYS_gettid), names[lv]);
    esc_vprint(out, fmt, ap);   /* paths and names in it are user text */
    fputc('\n', out);
    fflush(out);
    funlockfile(out);
    va_end(ap);
}

double log_clock(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double log_ms_since(double t0)
{
    return (log_clock() - t0) * 1e3;
}
