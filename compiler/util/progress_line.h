/*
 * progress_line.h - a line that says what long work is doing, on a terminal only: "cdsl: checking
 * allgather_mesh for 1024 ranks ... 3 s". Shown once the work has taken CDSL_PROGRESS_AFTER
 * seconds (default 1; 0: from the start), updated every half second by a helper thread, and
 * erased when the work ends, so that the terminal is left as it was. A diagnostic printed
 * meanwhile erases it first and stops it (Diag.before_print), so that lines never mix.
 */
#ifndef CDSL_PROGRESS_LINE_H
#define CDSL_PROGRESS_LINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "diag.h"

typedef struct Progress {
    bool running;           /* the helper thread exists */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    FILE *out;
    Diag *diag;
    char what[200];
    double t0, after;
    bool stop, shown, silenced;
} Progress;

/* Whether progress lines go to out: mode 1 yes, 0 no, -1 when out is a terminal. */
bool progress_wanted(int mode, FILE *out);
/* Start showing "cdsl: <what> ..." on d's stream when enabled; progress_end stops it. */
void progress_begin(Progress *p, Diag *d, bool enabled, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* What the work does now (the next line shows it). */
void progress_say(Progress *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void progress_end(Progress *p);

#endif
