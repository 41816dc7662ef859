/*
 * backend.h - what a backend (sim, p2p, nvls) provides to the runtime API (api.c).
 *
 * api.c owns the communicator and the public functions; a backend owns its ranks' memory and
 * how a program runs on them. One table of function pointers per backend, like a driver; the
 * registry (backends.h) names it and says what it needs.
 * A backend reports problems with rt_error() into the communicator's message stream and
 * returns a cdsl_status; it never exits and never leaks on an error path.
 */
#ifndef CDSL_BACKEND_H
#define CDSL_BACKEND_H

#include <stddef.h>
#include <stdio.h>

#include "cdsl.h"

typedef struct RtConfig {
    int nranks;
    int ranks_per_gpu;          /* p2p/nvls: ranks placed on one device (1 = one per GPU) */
    int first_device;           /* p2p/nvls: ordinal of the first device used */
    unsigned seed;              /* sim: schedule jitter seed (0 = no jitter) */
    int jitter_us;              /* sim: most microseconds of random delay between ops */
    unsigned long long spin_limit; /* polls before a wait gives up (0 = the backend's default) */
    FILE *log;                  /* messages for the user */
} RtConfig;

typedef struct RtBackendOps {
    /* Check the machine and set up the ranks (devices, peer access, sync words). Refuse
     * clearly (CDSL_ERR_SYSTEM) when the machine cannot run this backend. */
    int (*create)(const RtConfig *cfg, void **state);
    /* Symmetric buffers: nbufs buffers, bytes[b] bytes each, on every rank. Replaces any
     * earlier allocation. */
    int (*alloc)(void *state, const size_t *bytes, int nbufs);
    /* Host <-> rank r's buffer b (whole-buffer prefix of `bytes`). */
    int (*write)(void *state, int rank, int buf, const void *src, size_t bytes);
    int (*read)(void *state, int rank, int buf, void *dst, size_t bytes);
    /* Prepare a checked program for dtype (sim: keep the IR; GPUs: JIT the cubin, load it). */
    int (*load)(void *state, cdsl_program *p, cdsl_dtype dtype);
    /* Run the loaded program `iters` times back to back with chunk_bytes per chunk; when
     * us_per_iter is not NULL, store the mean time of one run in microseconds. */
    int (*run)(void *state, size_t chunk_bytes, int iters, double *us_per_iter);
    void (*destroy)(void *state);
    /* The caller's memory instead of an allocation: rank r's buffer b at ptrs[r * nbufs + b]
     * (NULL only where bytes[b] is 0), bytes[b] bytes, 16-byte aligned (api.c checked both).
     * Replaces any earlier allocation; never freed by the backend. NULL: refused by api.c. */
    int (*attach)(void *state, const size_t *bytes, int nbufs, void *const *ptrs);
    /* The address of rank r's buffer b, allocated or attached (device or host pointer). */
    int (*buffer)(void *state, int rank, int buf, void **ptr);
    /* Enqueue one run of the loaded program on streams[r] (NULL array or entry: the backend's
     * own), without waiting. On an error, nothing it started is left in flight. */
    int (*launch)(void *state, size_t chunk_bytes, void *const *streams);
    /* After the caller synchronised those streams: the ranks' error records, as run reports
     * them; counters are reset after a failure. */
    int (*status)(void *state);
} RtBackendOps;

extern const RtBackendOps rt_backend_sim;
extern const RtBackendOps rt_backend_p2p;
extern const RtBackendOps rt_backend_nvls;

/* Device `ordinal`'s name, PCI location and driver version (devinfo.c), for reports. */
int rt_device_describe(int ordinal, cdsl_device_info *out, FILE *log);

/* "cdsl: error: ..." on cfg->log (or stderr). */
void rt_error(FILE *log, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
