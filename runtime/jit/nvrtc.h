/*
 * nvrtc.h - NVRTC, loaded with dlopen when first needed.
 *
 * libcdsl links against no CUDA library: checking a program or emitting its CUDA source must
 * work on a machine without the toolkit. Only compiling to PTX or a cubin needs NVRTC, and
 * then rt_nvrtc_get() finds it: libnvrtc.so.13, .so.12, .so through the loader's search path,
 * then $CUDA_HOME/lib64 and /usr/local/cuda/lib64. The library is opened once per process
 * (thread-safe) and never closed; its handle is the only process-wide state, like the loader's.
 */
#ifndef CDSL_NVRTC_H
#define CDSL_NVRTC_H

#include <stdbool.h>
#include <stddef.h>

typedef struct RtNvrtc RtNvrtc;

/* The loaded library, or NULL with *why set to a sentence saying what was tried. */
const RtNvrtc *rt_nvrtc_get(const char **why);
/* NVRTC's own version (e.g. 13.0) and the file it came from. */
void rt_nvrtc_version(const RtNvrtc *n, int *major, int *minor);
const char *rt_nvrtc_path(const RtNvrtc *n);

/* For the JIT cache's key: one line that names this loaded library precisely, "nvrtc 13.0
 * build-id HEX file dev D ino I size S mtime T PATH" (the build id of the code in memory, the
 * file dladdr reports for nvrtcVersion and that file's identity). */
const char *rt_nvrtc_identity(const RtNvrtc *n);

typedef struct RtNvrtcJob {
    const char *source;          /* CUDA C++; it may #include the named headers below */
    const char *name;            /* the file name NVRTC uses in its messages */
    const char *const *options;  /* passed as given */
    int noptions;
    int want_cubin;              /* 1: the cubin (needs a real sm_XX arch), 0: the PTX */
    int nheaders;                /* headers NVRTC resolves #include "<include_names[i]>" to */
    const char *const *headers;
    const char *const *include_names;
} RtNvrtcJob;

/* Compile. On success returns 0 and sets *data (malloc'd; PTX is NUL-terminated and *len
 * counts the NUL) and *len. On failure returns non-zero and sets *log to NVRTC's log or to
 * a sentence about what went wrong (malloc'd, never NULL). */
int rt_nvrtc_compile(const RtNvrtc *n, const RtNvrtcJob *job, void **data, size_t *len, char **log);

#endif
