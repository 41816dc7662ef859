/*
 * perf.h - what cdsl-perf measured, as its results files (perf_files.c) and its nccl-tests rows
 * (cdsl-perf.c) both read it: one row per size and element type, two cells per row (out of
 * place, in place), and the run's description (program, backend, devices, settings); and
 * perf_files.c's functions, which cdsl-perf.c calls.
 */
#ifndef CDSL_PERF_H
#define CDSL_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cdsl.h"

enum { PERF_OUT_OF_PLACE = 0, PERF_IN_PLACE = 1 };

/* One placement at one size. */
typedef struct PerfCell {
    bool ran;                   /* false: unsupported (in place), or not reached after a failure */
    int status;                 /* the run's cdsl_status */
    double us;                  /* mean time of one run */
    double algbw, busbw;        /* GB/s */
    bool checked;               /* verified against the postcondition (-c > 0, and it has one) */
    cdsl_check_result check;    /* the wrong elements and the first of them */
} PerfCell;

typedef struct PerfRow {
    size_t size, count;         /* nccl-tests' size (bytes) and count (elements) */
    cdsl_dtype dtype;
    PerfCell cell[2];           /* PERF_OUT_OF_PLACE, PERF_IN_PLACE */
} PerfRow;

typedef struct PerfReport {
    int argc;
    char **argv;
    char timestamp[32];         /* UTC, ISO 8601 */
    char host[256];
    const char *file, *program, *collective, *backend, *redop;
    int nranks, ranks_per_gpu, chunks;
    int root;                   /* a broadcast's or reduce's root; -1 for a collective without one */
    bool measured;              /* times are measurements (not the sim) */
    const cdsl_device_info *devices;        /* [nranks] */
    const char *in_place_unsupported;       /* why, or NULL when the in-place form ran */
    /* Settings, nccl-tests' names: */
    size_t min_bytes, max_bytes, step_bytes, step_factor;
    int iters, warmup, check, graph, blocking;
    int warmup_runs;            /* -w rounded up to whole calls: the untimed runs made */
    const PerfRow *rows;
    int nrows;
    int errors;                 /* cells with a wrong element (nccl-tests' out-of-bounds count) */
    double avg_busbw;           /* over the cells measured; meaningless unless measured */
    double min_busbw;           /* NCCL_TESTS_MIN_BW, or -1 */
    int exit_status;
} PerfReport;

/* Writes the report to path as JSON (".json") or CSV (".csv"); any other extension is refused.
 * Returns 0, or 2 after a "cdsl-perf: error: ..." line on err. */
int perf_write_file(const PerfReport *r, const char *path, FILE *err);
/* Whether path names a format perf_write_file writes. */
bool perf_file_kind_ok(const char *path);

#endif
