/*
 * ce.h - the copy-engine path of the p2p backend: a checked program's plan (compiler/lower/ce_plan.h) run as
 * stream operations instead of a kernel, for bulk sizes.
 *
 * gpu_common.c asks, per run, whether the copy engine takes it (ce_chosen), and then enqueues
 * the plan where it would have launched kernels: ce_enqueue between the origin's fork and join
 * (also under graph capture), ce_wait instead of waiting for the stop event, ce_launch for
 * cdsl_run_async and ce_status after it. Everything the path owns (its words, lanes, events,
 * the watchdog) is here; nothing of the kernel's words is touched, so kernel and copy-engine
 * runs of one communicator follow each other freely.
 *
 * The choice (read at every run, so a benchmark can switch between runs):
 *   CDSL_CE=auto (default)  copy engine when the program has a plan and a chunk is at least
 *                           CDSL_CE_MIN_BYTES (default 8 MiB, NCCL's threshold for its own
 *                           copy-engine collectives)
 *   CDSL_CE=on / off        always (a program without a plan says why, once) / never
 * and, read when a program is loaded:
 *   CDSL_CE_LANES=K         copies fan out to at most K streams per rank (1 .. 8, default 8)
 *   CDSL_CE_SYNC=memops     signals and waits as stream write/wait-value operations on the
 *                           words (the default), or
 *   CDSL_CE_SYNC=events     as CUDA events between the ranks' streams (one process drives every
 *                           rank here, so each wait can name the signal it waits for); also
 *                           where the driver refuses write-values into another GPU's memory
 */
#ifndef CDSL_CE_H
#define CDSL_CE_H

#include <stdbool.h>
#include <stddef.h>

#include "gpu_state.h"

/* The loaded program's plan (or why it has none). */
int ce_load(GpuComm *g, const cdsl_program *p);
/* Whether this run of chunk_bytes goes to the copy engine (making its resources on first use). */
bool ce_chosen(GpuComm *g, size_t chunk_bytes);
/* Every rank's part of `iters` runs, rank q's lane 0 being streams[q] (NULL: the ranks' own):
 * the words zeroed and every rank told so (memops), then the runs in the plan's order. */
int ce_enqueue(GpuComm *g, size_t chunk_bytes, int iters, const CUstream *streams);
/* Instead of cuEventSynchronize(stop) for a synchronous run: the watchdog. A wait that sees no
 * arrival within the bound is reported ("rank 1 gave up waiting at f.cdsl:5:12 ..."), every
 * stuck wait is released so that the streams drain, and the result is CDSL_ERR_RUNTIME. */
int ce_wait(GpuComm *g, CUevent stop);
/* cdsl_run_async: one run on the caller's streams and a watchdog thread; ce_status joins it. */
int ce_launch(GpuComm *g, size_t chunk_bytes, const CUstream *streams);
int ce_status(GpuComm *g);
void ce_destroy(GpuComm *g);

#endif
