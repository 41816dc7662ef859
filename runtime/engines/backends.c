/*
 * backends.c - the table of backends and engines (backends.h), and the names cdsl.h gives for it.
 *
 * The rows of each world are in the order of their public enum (cdsl_backend, cdsl_engine),
 * which is also the order the tools and the Python package list them in. "auto" reads the
 * auto_order column: every rank in one process tries p2p, then sim (nvls only when asked for,
 * since multicast binds memory the caller may want for other work); one rank per process
 * takes nccl, then ipc, then sim, the first whose needs the machine meets (rank_id.c).
 */
#include "backends.h"

#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "rank.h"

static const RtBackend rt_backends[] = {
    {"sim", RT_ALL_RANKS, CDSL_BACKEND_SIM, &rt_backend_sim, NULL, RT_FLAVOUR_NONE, NULL, 0, 2},
    {"p2p", RT_ALL_RANKS, CDSL_BACKEND_P2P, &rt_backend_p2p, NULL, CDSL_BACKEND_P2P, "cdsl_p2p.cuh", RT_GPU, 1},
    {"nvls", RT_ALL_RANKS, CDSL_BACKEND_NVLS, &rt_backend_nvls, NULL, CDSL_BACKEND_NVLS, "cdsl_nvls.cuh",
     RT_GPU | RT_MULTICAST, 0},
    {"sim", RT_PER_RANK, CDSL_ENGINE_SIM, NULL, &rt_engine_sim, RT_FLAVOUR_NONE, NULL, RT_ONE_HOST, 3},
    {"ipc", RT_PER_RANK, CDSL_ENGINE_IPC, NULL, &rt_engine_ipc, RT_FLAVOUR_ASKED, NULL, RT_GPU | RT_ONE_HOST, 2},
    {"nccl", RT_PER_RANK, CDSL_ENGINE_NCCL, NULL, &rt_engine_nccl, RT_FLAVOUR_ASKED, NULL, RT_GPU | RT_NCCL, 1},
};

enum { RT_NBACKENDS = sizeof rt_backends / sizeof rt_backends[0] };

const RtBackend *rt_backend_at(RtWorld world, int i)
{
    for (int k = 0; k < RT_NBACKENDS; k++)
        if (rt_backends[k].world == world && i-- == 0)
            return &rt_backends[k];
    return NULL;
}

const RtBackend *rt_backend_find(RtWorld world, const char *name)
{
    const RtBackend *b;
    for (int i = 0; name && (b = rt_backend_at(world, i)); i++)
        if (!strcmp(b->name, name))
            return b;
    return NULL;
}

const RtBackend *rt_backend_of(RtWorld world, int id)
{
    const RtBackend *b;
    for (int i = 0; (b = rt_backend_at(world, i)); i++)
        if (b->id == id)
            return b;
    return NULL;
}

const RtBackend *rt_backend_auto(RtWorld world, int i)
{
    const RtBackend *b;
    for (int order = 1, k; order <= RT_NBACKENDS; order++)
        for (k = 0; (b = rt_backend_at(world, k)); k++)
            if (b->auto_order == order && i-- == 0)
                return b;
    return NULL;
}

const RtBackend *rt_flavour_at(int i)
{
    const RtBackend *b;
    for (int k = 0; (b = rt_backend_at(RT_ALL_RANKS, k)); k++)
        if (b->device_header && i-- == 0)
            return b;
    return NULL;
}

const RtBackend *rt_flavour_of(int f)
{
    const RtBackend *b = rt_backend_of(RT_ALL_RANKS, f);
    return b && b->device_header ? b : NULL;
}

const char *cdsl_list_name(cdsl_list list, int i)
{
    const RtBackend *b = list == CDSL_LIST_BACKENDS  ? rt_backend_at(RT_ALL_RANKS, i)
                         : list == CDSL_LIST_ENGINES ? rt_backend_at(RT_PER_RANK, i)
                         : list == CDSL_LIST_FLAVOURS ? rt_flavour_at(i)
                                                      : NULL;
    return b ? b->name : NULL;
}

const char *rt_backend_names(cdsl_list list, const char *last, char *buf, size_t size)
{
    size_t len = 0;
    const char *name;
    if (size)
        buf[0] = 0;
    for (int i = 0; (name = cdsl_list_name(list, i)) && len < size; i++) {
        const char *sep = i == 0 ? "" : cdsl_list_name(list, i + 1) ? ", " : last;
        int n = snprintf(buf + len, size - len, "%s%s", sep, name);
        len += n > 0 ? (size_t)n : 0;
    }
    return buf;
}

const char *cdsl_backend_name(cdsl_backend id)
{
    const RtBackend *b = rt_backend_of(RT_ALL_RANKS, (int)id);
    return b ? b->name : "?";
}

int cdsl_backend_parse(const char *s, cdsl_backend *out)
{
    const RtBackend *b = rt_backend_find(RT_ALL_RANKS, s);
    if (!b || !out)
        return CDSL_ERR_USAGE;
    *out = (cdsl_backend)b->id;
    return CDSL_OK;
}

/* "auto" is no engine but a choice among them, so it has no row; its name is the enum's. */
const char *cdsl_engine_name(cdsl_engine id)
{
    const RtBackend *b = rt_backend_of(RT_PER_RANK, (int)id);
    return id == CDSL_ENGINE_AUTO ? "auto" : b ? b->name : "?";
}

int cdsl_engine_parse(const char *s, cdsl_engine *out)
{
    const RtBackend *b = rt_backend_find(RT_PER_RANK, s);
    if (!s || !out || (!b && strcmp(s, "auto")))
        return CDSL_ERR_USAGE;
    *out = b ? (cdsl_engine)b->id : CDSL_ENGINE_AUTO;
    return CDSL_OK;
}
