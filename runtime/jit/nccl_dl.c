/*
 * nccl_dl.c - opening NCCL at run time (nccl_dl.h): dlopen, dlsym every entry point, check
 * the version. Like cuda_drv.c, the library stays mapped after close (NCCL starts threads and
 * registers handlers that must not outlive their code).
 */
#include "nccl_dl.h"

#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

_Static_assert(sizeof(ncclUniqueId) == 128, "NCCL_UNIQUE_ID_BYTES");
_Static_assert(sizeof(ncclConfig_t) == 80, "ncclConfig_v22800 is 80 bytes on LP64");
_Static_assert(offsetof(ncclConfig_t, commName) == 48, "nccl.h 2.28.9");
_Static_assert(offsetof(ncclConfig_t, nvlinkCentricSched) == 76, "nccl.h 2.28.9");
_Static_assert(offsetof(RtNcclWindowHead, lsaFlatBase) == 8 && offsetof(RtNcclWindowHead, lsaRank) == 16 &&
                   offsetof(RtNcclWindowHead, stride4G) == 24 && sizeof(RtNcclWindowHead) == 32,
               "struct ncclWindow_vidmem's head, 2.28.9");
_Static_assert(sizeof(ncclTeam_t) == 12, "struct ncclTeam");

void rt_nccl_config_init(ncclConfig_t *c)
{
    memset(c, 0, sizeof *c);
    c->size = sizeof *c;
    c->magic = 0xcafebeef;
    c->version = 22809;                 /* NCCL_VERSION(2, 28, 9): the layout above */
    c->blocking = 0;
    c->cgaClusterSize = c->minCTAs = c->maxCTAs = INT_MIN;
    c->netName = NULL;
    c->splitShare = c->trafficClass = INT_MIN;
    c->commName = NULL;
    c->collnetEnable = c->CTAPolicy = c->shrinkShare = c->nvlsCTAs = INT_MIN;
    c->nChannelsPerNetPeer = c->nvlinkCentricSched = INT_MIN;
}

void rt_nccl_version_text(int v, char *out, size_t len)
{
    if (v >= 10000)
        snprintf(out, len, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    else
        snprintf(out, len, "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
}

static int nccl_resolve(void *lib, void *member, size_t size, const char *sym)
{
    void *p = dlsym(lib, sym);
    if (!p)
        return 0;
    memcpy(member, &p, size < sizeof p ? size : sizeof p);  /* POSIX: a function's address */
    return 1;
}

int rt_nccl_open(RtNccl **out, FILE *log)
{
    *out = NULL;
    const char *name = getenv("CDSL_NCCL_LIB");
    if (!name || !*name)
        name = "libnccl.so.2";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        if (log)
            rt_error(log, "the nccl engine needs NCCL 2.28 or newer, and %s cannot be loaded here (%s); use "
                     "the ipc engine on one host (CDSL_ENGINE=ipc)", name, dlerror());
        return CDSL_ERR_SYSTEM;
    }
    RtNccl *n = calloc(1, sizeof *n);
    if (!n) {
        if (log)
            rt_error(log, "out of memory");
        return CDSL_ERR_SYSTEM;
    }
    n->lib = lib;
#define NCCL_RESOLVE(member, sym, params)                                                          \
    if (!nccl_resolve(lib, &n->member, sizeof n->member, sym)) {                                    \
        if (log)                                                                                    \
            rt_error(log, "%s has no %s: the nccl engine needs NCCL 2.28 or newer", name, sym);     \
        free(n);                                                                                    \
        return CDSL_ERR_SYSTEM;                                                                     \
    }
    NCCL_FUNCS(NCCL_RESOLVE)
#undef NCCL_RESOLVE
    if (n->GetVersion(&n->version) != ncclSuccess || n->version < RT_NCCL_MIN_VERSION) {
        char v[32];
        rt_nccl_version_text(n->version, v, sizeof v);
        if (log)
            rt_error(log, "%s is NCCL %s: the nccl engine needs 2.28 or newer (symmetric windows)", name, v);
        free(n);
        return CDSL_ERR_SYSTEM;
    }
    *out = n;
    return CDSL_OK;
}

void rt_nccl_close(RtNccl *n)
{
    free(n);
}
