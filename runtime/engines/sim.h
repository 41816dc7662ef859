/*
 * sim.h - the sim backend's entry points for sim_mp.c, where each process runs one rank.
 *
 * A view is a Sim of nranks ranks that owns none of their memory: every rank's words (its
 * arrival counters, SIM_RANK_WORDS(n) 64-bit atomics: arrivals[n], the switch counter, the
 * switch arrivals made, port arrivals[n] (a .cdsl program's port(p) semaphores), the runs the
 * rank completed) and buffers, and the run's control words (stop, progress), are
 * pointed at memory that the processes share. sim_run_rank then executes exactly one rank's
 * operations on the calling thread, with the same code and the same meaning as the threaded
 * sim (sim.c): the switch counts arrivals in aggregate, one counter per rank that every
 * rank's arrival increments, and the k-th wait passes at k * nranks. A wait also asks
 * `watch`, while it sleeps, whether a peer's process has died, and stops the run if so
 * (the control words keep the first rank found dead, which every rank then names).
 * Load with rt_backend_sim.load, destroy with rt_backend_sim.destroy.
 */
#ifndef CDSL_SIM_H
#define CDSL_SIM_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

#define SIM_RANK_WORDS(n) (2 * (size_t)(n) + 3)
enum { SIM_CONTROL_WORDS = 3 };     /* stop, progress, 1 + the first rank found dead */

typedef struct Sim Sim;

int sim_view_create(const RtConfig *cfg, Sim **out);
void sim_view_words(Sim *s, int rank, _Atomic uint64_t *words);   /* SIM_RANK_WORDS(n), zeroed */
void sim_view_control(Sim *s, _Atomic uint64_t *control);         /* SIM_CONTROL_WORDS, zeroed */
void sim_view_buffers(Sim *s, int rank, char *const *bufs, const size_t *bytes, int nbufs);
void sim_view_watch(Sim *s, int (*watch)(void *ctx), void *ctx);
/* The runs rank q completed (its shared word: a peer process reads it). A peer that exited after
 * completing the run a rank is in has done its part of it, and its exit fails no one. */
uint64_t sim_view_runs_done(const Sim *s, int q);
/* One run of the loaded program's rank `rank`, here; CDSL_ERR_RUNTIME (reported) when a wait
 * gave up, a peer gave up, or a peer died. The control words' stop stays set after that. */
int sim_run_rank(Sim *s, int rank, size_t chunk_bytes, double *us);

#endif
