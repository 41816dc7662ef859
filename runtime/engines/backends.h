/*
 * backends.h - the registry of backends and engines: one row per way to run a program, found by
 * name, in the manner of SQLite's VFS list.
 *
 * A program runs in one of two worlds. With every rank in this process (cdsl_comm, api.c) a
 * backend's RtBackendOps (backend.h) does the work: sim, p2p, nvls. With one rank per process
 * (cdsl_rank_comm, rank_comm.c) an engine's RtRankOps (rank.h) does: sim, ipc, nccl. Both are
 * rows of one table (backends.c) that says everything the rest of the library and the tools
 * would otherwise switch on: the name users type, the public enum value it stands for, its
 * ops, the device code it runs (the emitter's flavour, and the device header of that flavour),
 * what the machine must have, and the order in which "auto" tries it. The public enums of
 * cdsl.h stay as they are (they are ABI); each value maps to its row, and cdsl_backend_name,
 * cdsl_engine_name, their parse functions and cdsl_list_name read the table.
 *
 * Adding a backend is a row here plus the file with its ops (docs/internals.md, "Backends").
 */
#ifndef CDSL_BACKENDS_H
#define CDSL_BACKENDS_H

#include <stddef.h>

#include "cdsl.h"

typedef struct RtBackendOps RtBackendOps;   /* backend.h */
typedef struct RtRankOps RtRankOps;         /* rank.h */

typedef enum RtWorld {
    RT_ALL_RANKS,   /* every rank in this process: a cdsl_comm, ops is RtBackendOps */
    RT_PER_RANK,    /* one rank in this process: a cdsl_rank_comm, rank_ops is RtRankOps */
} RtWorld;

/* What a row needs from the machine, and how it is reached. */
enum {
    RT_GPU = 1 << 0,        /* runs on CUDA devices (without it: on CPU threads or processes) */
    RT_MULTICAST = 1 << 1,  /* NVLink multicast (NVLS): sm_90 and a switch that reduces */
    RT_NCCL = 1 << 2,       /* NCCL loaded at run time; the unique id carries NCCL's own */
    RT_ONE_HOST = 1 << 3,   /* every rank on the host that made the unique id */
};

/* RtBackend.flavour for a row without device code, and for one that runs the flavour the
 * caller asks for (cdsl_rank_config.flavour). */
enum { RT_FLAVOUR_NONE = -1, RT_FLAVOUR_ASKED = -2 };

typedef struct RtBackend {
    const char *name;               /* what users type: --backend, CDSL_ENGINE, the parse functions */
    RtWorld world;
    int id;                         /* its cdsl_backend (RT_ALL_RANKS) or cdsl_engine (RT_PER_RANK) */
    const RtBackendOps *ops;        /* RT_ALL_RANKS, else NULL */
    const RtRankOps *rank_ops;      /* RT_PER_RANK, else NULL */
    int flavour;                    /* the device code it runs, a cdsl_backend the emitter takes
                                       (p2p or nvls), or RT_FLAVOUR_NONE / RT_FLAVOUR_ASKED */
    const char *device_header;      /* that flavour's part of the device library (runtime/device/) */
    unsigned flags;                 /* RT_GPU, ... */
    int auto_order;                 /* "auto" tries 1 first, then 2, ...; 0: only when asked for */
} RtBackend;

/* The row of world called name, or NULL. */
const RtBackend *rt_backend_find(RtWorld world, const char *name);
/* The row of world for a public enum value (cdsl_backend or cdsl_engine), or NULL. */
const RtBackend *rt_backend_of(RtWorld world, int id);
/* The i-th row of world (from 0, in the table's order), or NULL past the last. */
const RtBackend *rt_backend_at(RtWorld world, int i);
/* The i-th row of world that "auto" tries, in its order, or NULL past the last. */
const RtBackend *rt_backend_auto(RtWorld world, int i);
/* The backend whose device code is the flavour f (a cdsl_backend with a device header), or NULL. */
const RtBackend *rt_flavour_of(int f);
/* The i-th flavour (the backends of RT_ALL_RANKS with device code), or NULL past the last. */
const RtBackend *rt_flavour_at(int i);
/* The names of a list of cdsl_list_name, joined for a sentence: "sim, p2p or nvls" with
 * last = " or ". buf holds size bytes; returns buf. */
const char *rt_backend_names(cdsl_list list, const char *last, char *buf, size_t size);

#endif
