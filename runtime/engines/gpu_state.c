/*
 * gpu_state.c - the helpers of gpu_state.h: a device made current, a failed driver call
 * reported with the GPU it failed on, a tuning value read from the environment.
 */
#include "gpu_state.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int gpu_fail(GpuComm *g, int d, CUresult r, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (d >= 0 && g->devs)
        rt_error(g->cfg.log, "GPU %d: %s failed: %s", g->devs[d].ordinal, what,
                 cu_error_string(g->cu, r));
    else
        rt_error(g->cfg.log, "%s failed: %s", what, cu_error_string(g->cu, r));
    return CDSL_ERR_SYSTEM;
}

size_t gpu_round_up(size_t n, size_t align)
{
    return (n + align - 1) & ~(align - 1);
}

int gpu_use(GpuComm *g, int d)
{
    GPU_TRY(g, d, g->cu->CtxSetCurrent(g->devs[d].ctx), "making its context current");
    return CDSL_OK;
}

/* A positive integer from the environment, or def when unset or not a number. */
long gpu_env_long(const char *name, long def)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long n = strtol(v, &end, 10);
    return (*end == '\0' && n > 0) ? n : def;
}
