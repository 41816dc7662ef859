/*
 * log.h - what the library did and how long it took, for people debugging a setup: NCCL's
 * NCCL_DEBUG convention. CDSL_DEBUG=WARN, INFO or TRACE (any case) turns it on; lines go to
 * stderr, or to the file CDSL_DEBUG_FILE names (%h: the host name, %p: the process id), as
 *
 *     host:1234:1234 cdsl INFO backend sim: 4 ranks as CPU threads
 *
 * INFO says which backend and engine ran and where (ranks per GPU, devices), which cache entry
 * was used (hit or miss, its path), which NVRTC compiled, and how long each step took (parse,
 * resolve, evaluate, check, warnings, emit, NVRTC, each run); TRACE adds the smaller steps.
 * The settings are read once per process. User text in a line is escaped as in diagnostics.
 */
#ifndef CDSL_LOG_H
#define CDSL_LOG_H

enum { LOG_OFF = 0, LOG_WARN = 1, LOG_INFO = 2, LOG_TRACE = 3 };

/* The level CDSL_DEBUG asks for (LOG_OFF when unset or unknown). */
int log_level(void);
/* One line at level, when the level is on. */
void log_msg(int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Monotonic seconds, for timing a step. */
double log_clock(void);
/* Milliseconds since t0 (a log_clock value). */
double log_ms_since(double t0);

#endif
