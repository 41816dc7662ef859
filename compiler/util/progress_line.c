/*
 * progress_line.c - the progress line of long work (progress_line.h). The work itself runs on the
 * caller's thread, unaware; a helper thread sleeps until the line is due and then rewrites it
 * twice a second ("\r", the line, erase to its end) until progress_end wakes it to finish.
 * Everything the helper prints is under the Progress's mutex, as is the erasing done for a
 * diagnostic, so the two never interleave.
 */
#include "progress_line.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "log.h"

bool progress_wanted(int mode, FILE *out)
{
    return mode > 0 || (mode < 0 && out && isatty(fileno(out)));
}

static double delay_from_env(void)
{
    const char *v = getenv("CDSL_PROGRESS_AFTER");
    char *end;
    double s = v && *v ? strtod(v, &end) : 1.0;
    return v && *v && (*end || s < 0) ? 1.0 : s;
}

/* Under p->mu. */
static void show(Progress *p)
{
    double s = log_clock() - p->t0;
    fputs("\r\033[Kcdsl: ", p->out);
    esc_write(p->out, p->what, strlen(p->what));
    fprintf(p->out, " ... %.0f s\r", s);
    fflush(p->out);
    p->shown = true;
}

/* Under p->mu. */
static void erase(Progress *p)
{
    if (p->shown) {
        fputs("\r\033[K", p->out);
        fflush(p->out);
        p->shown = false;
    }
}

static struct timespec deadline(double seconds_from_now)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    double ns = (double)t.tv_nsec + seconds_from_now * 1e9;
    t.tv_sec += (time_t)(ns / 1e9);
    t.tv_nsec = (long)(ns - (double)(time_t)(ns / 1e9) * 1e9);
    return t;
}

static void *helper(void *arg)
{
    Progress *p = arg;
    pthread_mutex_lock(&p->mu);
    double wait = p->after;
    while (!p->stop) {
        struct timespec until = deadline(wait);
        if (pthread_cond_timedwait(&p->cv, &p->mu, &until) == ETIMEDOUT && !p->stop && !p->silenced)
            show(p);
        wait = 0.5;
    }
    erase(p);
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Diag.before_print: a diagnostic is coming; the line goes, and stays gone. */
static void silence(void *arg)
{
    Progress *p = arg;
    pthread_mutex_lock(&p->mu);
    erase(p);
    p->silenced = true;
    pthread_mutex_unlock(&p->mu);
}

void progress_begin(Progress *p, Diag *d, bool enabled, const char *fmt, ...)
{
    memset(p, 0, sizeof *p);
    if (!enabled || !d->out)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->what, sizeof p->what, fmt, ap);
    va_end(ap);
    p->out = d->out;
    p->diag = d;
    p->t0 = log_clock();
    p->after = delay_from_env();
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&p->mu, NULL);
    if (p->after <= 0) {   /* due at once: shown before the work starts, on this thread */
        show(p);
        p->after = 0.5;
    }
    if (pthread_create(&p->thread, NULL, helper, p) != 0) {
        erase(p);
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        return;
    }
    p->running = true;
    d->before_print = silence;
    d->before_arg = p;
}

void progress_say(Progress *p, const char *fmt, ...)
{
    if (!p->running)
        return;
    pthread_mutex_lock(&p->mu);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->what, sizeof p->what, fmt, ap);
    va_end(ap);
    if (p->shown && !p->silenced)   /* the line on screen says what was; say what is */
        show(p);
    pthread_mutex_unlock(&p->mu);
}

void progress_end(Progress *p)
{
    if (!p->running)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    p->diag->before_print = NULL;
    p->diag->before_arg = NULL;
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    p->running = false;
}
