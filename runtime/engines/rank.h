/*
 * rank.h - inside the per-rank API (cdsl.h, "One process per rank"): the communicator, the
 * unique id's bytes, and what an engine (sim, ipc, nccl) provides to rank_comm.c.
 *
 * rank_comm.c owns the public functions and everything that is the same for every engine:
 * argument checks, the handshake before the first run of a program (every rank's program
 * digest, type and chunk size compared), the layout of a program's buffers inside each rank's
 * symmetric region, and the sizes of the caller's buffers. An engine owns the bootstrap, the
 * symmetric memory and how this rank's part of a program runs:
 *   sim_mp.c    sim: shared memory (memfd) between the processes, runs on the CPU;
 *   rank_ipc.c  ipc: CUDA VMM memory exported as file descriptors, over gpu_rank.c;
 *   rank_nccl.c nccl: ncclCommInitRank and symmetric windows, over gpu_rank.c.
 * An engine reports with rt_error on r->log and returns a cdsl_status; it never exits and
 * never leaks on an error path. The registry (backends.h) names each engine and says what it
 * needs.
 */
#ifndef CDSL_RANK_H
#define CDSL_RANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cdsl.h"
#include "backend.h"
#include "backends.h"
#include "ctl.h"
#include "program.h"

enum { RT_NCCL_ID_BYTES = 128 };
/* A region's layout: the program's buffers, then the slot of its port words (a program with
   port channels on a GPU engine: its peers' proxies reach them there). */
enum { RT_PORT_SLOT = IR_MAX_BUFS, RT_LAYOUT_SLOTS = IR_MAX_BUFS + 1 };

/* The bytes of a cdsl_unique_id. */
typedef struct RtId {
    char magic[8];                  /* "cdsl-id" */
    uint32_t version;
    int32_t engine;                 /* a cdsl_engine, never AUTO */
    CtlAddress ctl;                 /* sim, ipc: rank 0's socket name, the nonce, the host */
    unsigned char nccl[RT_NCCL_ID_BYTES];   /* nccl: the ncclUniqueId */
} RtId;

typedef struct RtRankOps {
    /* Bootstrap with every other rank (collective), set up this rank's engine state. */
    int (*init)(cdsl_rank_comm *r, const RtId *id);
    void (*destroy)(cdsl_rank_comm *r);
    /* Collective: every rank's record of len bytes into all[rank * len]. */
    int (*exchange)(cdsl_rank_comm *r, const char *what, const void *mine, size_t len, void *all);
    /* Collective: each rank's symmetric region holds at least `bytes` (the same on every
     * rank); a new region starts zeroed, an old one big enough is kept. No run is in flight. */
    int (*reserve)(cdsl_rank_comm *r, size_t bytes);
    /* The current program's buffers: buffer b of every rank at offset off[b] of that rank's
     * region (bytes[b] long; the same offsets on every rank), and at off[RT_PORT_SLOT], when
     * bytes[RT_PORT_SLOT] is not 0, the program's port words (abi.h), which the peers' port
     * proxies signal into. */
    int (*layout)(cdsl_rank_comm *r, const size_t *off, const size_t *bytes, int nbufs);
    /* This rank's address of its own buffer b, or of its region's start with b = -1. */
    void *(*address)(cdsl_rank_comm *r, int b);
    /* Prepare this rank's part of p for dtype (sim: the IR; GPUs: this rank's cubin). */
    int (*load)(cdsl_rank_comm *r, cdsl_program *p, cdsl_dtype dtype);
    /* Enqueue one run on stream: the caller's input copied in first (when given and not the
     * symmetric input itself), the output copied out after; in/out bytes are the program's. */
    int (*run)(cdsl_rank_comm *r, size_t chunk_bytes, const void *in, size_t in_bytes, void *out, size_t out_bytes,
               void *stream);
    /* After the caller synchronised the stream: whether this rank's run completed. */
    int (*status)(cdsl_rank_comm *r);
    /* Zero `bytes` of this rank's own memory at `at` (its packet slots, docs/language.md §8),
     * after this rank's runs in flight have ended, and before returning. */
    int (*zero)(cdsl_rank_comm *r, void *at, size_t bytes);
    /* GPU engines, after load: the block size and the most blocks this rank's kernel can run
     * with; and what every rank agreed on (the least of each), which every launch then uses:
     * a block of one rank waits for the same block of another. NULL on sim. */
    void (*shape)(cdsl_rank_comm *r, int *threads, int *blocks);
    void (*agree)(cdsl_rank_comm *r, int threads, int blocks);
} RtRankOps;

extern const RtRankOps rt_engine_sim;
extern const RtRankOps rt_engine_ipc;
extern const RtRankOps rt_engine_nccl;

/* The agreed run: what the last handshake settled on every rank. */
typedef struct RtAgreed {
    const cdsl_program *p;          /* NULL before the first handshake */
    unsigned long long serial;      /* p's: an address may be a later program's */
    const IrProgram *ir;
    unsigned char digest[32];
    cdsl_dtype dtype;
    size_t chunk_bytes;
} RtAgreed;

struct cdsl_rank_comm {
    const RtRankOps *ops;
    void *engine;                   /* the engine's state */
    int rank, nranks;
    const RtBackend *kind;          /* the engine's row of the registry (backends.h) */
    cdsl_rank_config cfg;           /* defaults filled in */
    FILE *log;                      /* every message's: forwards to cfg's log, feeds errs */
    struct RtLastError *errs;       /* cdsl_rank_get_last_error */
    int device;                     /* GPU engines: the CUDA ordinal; -1 on sim */
    /* The symmetric region and the current program's buffers in it: */
    size_t reserved;                /* bytes of every rank's region */
    int nbufs;
    size_t off[RT_LAYOUT_SLOTS], bytes[RT_LAYOUT_SLOTS];
    RtAgreed agreed;
    /* The digest cache: the program digested last. */
    const cdsl_program *digested;
    unsigned long long digested_serial;
    const IrProgram *digested_ir;
    unsigned char digest[32];
    bool failed;                    /* a run failed: the communicator can only be destroyed */
};

/* Engines' shared helpers (rank_comm.c). rt_engine_new: zeroed state of `size` bytes, set
 * as r->engine (destroy frees it), or NULL after a message. */
void *rt_engine_new(cdsl_rank_comm *r, size_t size);
double rt_rank_timeout(const cdsl_rank_config *cfg);
/* The digest of a checked program: every rank's operations, the buffers, the collective. */
int rt_program_digest(const cdsl_program *p, unsigned char digest[32]);

#endif
