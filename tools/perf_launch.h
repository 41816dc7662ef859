/*
 * perf_launch.h - cdsl-perf started by a launcher, one process per rank (mpirun, srun, torchrun),
 * as nccl-tests is: which rank this process is, of how many, and how rank 0's unique id reaches
 * the others without MPI (a file in a shared temporary folder named after the launcher's job).
 */
#ifndef CDSL_PERF_LAUNCH_H
#define CDSL_PERF_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>

#include "cdsl.h"

typedef struct PerfLaunch {
    const char *launcher;       /* "mpirun", "PMI", "srun", "torchrun"; NULL: none */
    int size, rank, local_rank;
    char id_file[512];          /* where rank 0 puts the unique id */
} PerfLaunch;

/* Reads the launcher's environment. false, with L->launcher NULL, when there is none (or one
 * that started a single process: then cdsl-perf runs every rank itself); an environment that
 * names a launcher but whose rank or size does not parse: false, with a message in why. */
bool perf_launch_detect(PerfLaunch *L, char *why, size_t why_len);

/* Rank 0: writes id to L->id_file (whole, mode 0600: the id holds the control plane's nonce).
 * The others: wait up to timeout_s seconds for it. 0, or -1 after a message in why. */
int perf_launch_share_id(const PerfLaunch *L, cdsl_unique_id *id, double timeout_s, char *why, size_t why_len);

/* Rank 0, once every rank has joined: removes the file (the id is for one communicator). */
void perf_launch_done(const PerfLaunch *L);

#endif
