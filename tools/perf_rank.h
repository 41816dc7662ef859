/*
 * perf_rank.h - cdsl-perf's cells run by one process per rank (perf_rank.c): this process's rank
 * through the per-rank engines (cdsl_comm_init_rank), and every rank's results gathered, so
 * that rank 0 prints rows for all of them as nccl-tests does.
 */
#ifndef CDSL_PERF_RANK_H
#define CDSL_PERF_RANK_H

#include <stdio.h>

#include "cdsl.h"
#include "perf.h"
#include "perf_launch.h"

typedef struct PerfRank PerfRank;

/* What one cell runs: -w rounded to whole calls, calls of call_runs runs, -n, -G, -z, -c. */
typedef struct PerfRunPlan {
    int warmup_runs, call_runs, iters, graph, blocking, check;
} PerfRunPlan;

/* Rank 0 makes the unique id for backend (a cdsl_backend: sim the sim engine; p2p or nvls a
 * GPU engine, CDSL_ENGINE's or the best here; CDSL_BACKEND_AUTO the best here), the launcher's
 * file carries it, every process joins; on a GPU, this rank's device is (first_device +
 * local rank) modulo the GPUs it sees. timeout_s > 0 bounds every wait (else the default).
 * Returns a cdsl_status after a message on stderr. */
int perf_rank_open(PerfRank **out, const PerfLaunch *L, int backend, double timeout_s, const cdsl_comm_opts *comm);
void perf_rank_close(PerfRank *R);

const char *perf_rank_engine(const PerfRank *R);       /* "sim", "ipc", "nccl" */
bool perf_rank_measured(const PerfRank *R);             /* on a GPU: times are measurements */
/* Rank r's device and process as it reported them when every rank joined. */
const cdsl_device_info *perf_rank_device(const PerfRank *R, int r, int *pid, const char **host);

/* One placement at one size on every rank: warm up, time, check plan->check runs on fresh
 * inputs; the cell (on every rank) has the ranks' mean time, the sum of their wrong elements
 * and the first failure's status. Returns the cell's status. */
int perf_rank_cell(PerfRank *R, cdsl_program *p, size_t size, cdsl_dtype t, const PerfRunPlan *plan, PerfCell *cell);

#endif
