/*
 * ctl.h - the control plane of one host's ranks: a rendezvous and small collectives over a
 * Unix-domain socket, with file descriptors passed between the processes (SCM_RIGHTS).
 *
 * What the sim and ipc engines of the per-rank API (rank.h) stand on; the nccl engine uses
 * NCCL's bootstrap instead. The caller's rank 0 made the unique id (rank_id.c): it carries an
 * abstract socket name and a random nonce. At rt_ctl_open, rank 0 listens on that name and
 * every other rank connects and says hello (nonce, rank, nranks). A connection from another
 * user or with another nonce is not a rank: rank 0 closes it quietly (any local user can see
 * the name), and a few slots with a short deadline keep such connections from crowding the
 * ranks out. Rank 0 checks the ranks' hellos (duplicate or out-of-range ranks, the same nranks
 * everywhere) and answers every rank with the table of process ids, or with one error message
 * that every rank prints. Nothing has a name in the filesystem, so nothing can leak: the socket goes away
 * with the processes.
 *
 * Collectives are a star through rank 0, inside calls every rank makes in the same order
 * (there is no thread in the background): each rank sends its record (and descriptors) to
 * rank 0, which checks that everyone is at the same step and sends every record to every
 * rank. Every wait has the communicator's deadline; a rank that does not come, or whose
 * process is gone, is named in the error, which rank 0 also sends to every rank still there.
 *
 * Liveness: the process ids of the table are watched with pidfds (kill(pid, 0) where pidfd
 * is missing), so a run spinning on shared memory can ask, cheaply, whether a peer died;
 * rank 0 also gives every rank a page of shared memory (a memfd) where the first death found
 * is kept.
 */
#ifndef CDSL_CTL_H
#define CDSL_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
    CTL_NAME_BYTES = 40,        /* the abstract socket name, without its leading NUL */
    CTL_NONCE_BYTES = 16,
    CTL_MAX_RECORD = 60000,     /* one rank's record in a collective */
};

/* What the id carries for the control plane. */
typedef struct CtlAddress {
    char name[CTL_NAME_BYTES];
    unsigned char nonce[CTL_NONCE_BYTES];
    uint64_t host;              /* rt_ctl_host_id() of the machine that made the id */
} CtlAddress;

typedef struct RtCtl RtCtl;

/* A fresh address: a random name and nonce, this host's id. 0, or -1 (errno) when the
 * system has no randomness to give. */
int rt_ctl_address_new(CtlAddress *a);
/* This machine, as seen by every process on it (the kernel's boot id). */
uint64_t rt_ctl_host_id(void);

/* The rendezvous, within timeout_s. Errors (returned as a cdsl_status, printed on log as
 * "cdsl: error: ...") name the ranks: one that never came, one with another nranks, two
 * processes with one rank, rank 0 never listening. */
int rt_ctl_open(RtCtl **out, const CtlAddress *a, int rank, int nranks, double timeout_s, FILE *log);
void rt_ctl_close(RtCtl *c);

int rt_ctl_rank(const RtCtl *c);
int rt_ctl_nranks(const RtCtl *c);
long rt_ctl_pid(const RtCtl *c, int rank);

/* Every rank's record of `len` bytes (the same len everywhere) into all[rank * len]; with fds
 * not NULL, also every rank's descriptor fd (-1: none) into fds[rank] (fds[own rank] = -1:
 * keep your own; the caller closes the others). `what` names the step in messages
 * ("cdsl_rank_alloc"); every rank must be at the same step. */
int rt_ctl_allgather(RtCtl *c, const char *what, const void *mine, size_t len, void *all, int fd, int *fds);
int rt_ctl_barrier(RtCtl *c, const char *what);

/* A rank whose process has exited, or -1 when all are alive: the first one any rank found
 * (kept in a page the ranks share), so that every rank names the same one. Cheap: poll(). */
int rt_ctl_dead(RtCtl *c);
/* The same, counting only the dead ranks q for which counts(ctx, q) holds (a run's waits: a peer
 * that exited after its part of the run is no failure); one that does not count is no news. */
int rt_ctl_dead_among(RtCtl *c, bool (*counts)(void *ctx, int q), void *ctx);

#endif
