/*
 * rank_id.c - the unique id of a per-rank communicator, and which engine it names.
 *
 * One process makes the id (cdsl_get_unique_id) and the caller passes it to every rank, as
 * with ncclGetUniqueId. The id fixes the engine, so that every rank agrees without talking:
 * CDSL_ENGINE from the environment of the process that makes it, else the first engine in the
 * registry's "auto" order whose needs this machine meets (backends.c: nccl with NCCL >= 2.28
 * and a GPU, ipc with a GPU, sim without). It always
 * carries a control-plane address (a random abstract socket name and nonce, ctl.h; used by
 * sim and ipc), and for nccl, NCCL's own unique id (ncclGetUniqueId starts NCCL's bootstrap
 * listener in the process that makes it, as NCCL documents).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "cuda_drv.h"
#include "nccl_dl.h"
#include "rank.h"

_Static_assert(sizeof(RtId) <= CDSL_UNIQUE_ID_BYTES, "the id fits in cdsl_unique_id");

static const char rt_id_magic[8] = "cdsl-id";
enum { RT_ID_VERSION = 1 };

/* A CUDA device is here (the driver's answer, quietly). */
static int rt_have_gpu(void)
{
    FILE *quiet = fopen("/dev/null", "w");
    CuDrv *cu = NULL;
    int count = 0;
    if (quiet && cu_open(&cu, quiet) == CDSL_OK && cu->DeviceGetCount(&count) != CUDA_SUCCESS)
        count = 0;
    cu_close(cu);
    if (quiet)
        fclose(quiet);
    return count > 0;
}

static int rt_have_nccl(void)
{
    RtNccl *n = NULL;
    int ok = rt_nccl_open(&n, NULL) == CDSL_OK;
    rt_nccl_close(n);
    return ok;
}

/* What the machine has, each asked at most once per choice (-1: not asked yet). */
typedef struct RtProbe {
    int gpu, nccl;
} RtProbe;

/* Whether the machine meets a row's needs. Multicast is not probed here: no engine that
 * needs it is chosen without being asked for. */
static bool rt_machine_has(unsigned flags, RtProbe *p)
{
    if (flags & RT_MULTICAST)
        return false;
    if ((flags & RT_GPU) && p->gpu < 0)
        p->gpu = rt_have_gpu();
    if ((flags & RT_GPU) && !p->gpu)
        return false;
    if ((flags & RT_NCCL) && p->nccl < 0)
        p->nccl = rt_have_nccl();
    return !(flags & RT_NCCL) || p->nccl;
}

/* The first engine in "auto" order whose needs the machine meets. */
static cdsl_engine rt_engine_detect(void)
{
    RtProbe probe = {-1, -1};
    const RtBackend *b;
    for (int i = 0; (b = rt_backend_auto(RT_PER_RANK, i)); i++)
        if (rt_machine_has(b->flags, &probe))
            return (cdsl_engine)b->id;
    return CDSL_ENGINE_AUTO;
}

/* NCCL's own unique id, from this process. */
static int rt_id_nccl(RtId *id)
{
    RtNccl *n;
    int st = rt_nccl_open(&n, stderr);
    if (st)
        return st;
    ncclUniqueId u;
    ncclResult_t r = n->GetUniqueId(&u);
    if (r != ncclSuccess) {
        rt_error(stderr, "ncclGetUniqueId failed: %s", n->GetErrorString(r));
        st = CDSL_ERR_SYSTEM;
    } else {
        memcpy(id->nccl, &u, sizeof u);
    }
    rt_nccl_close(n);
    return st;
}

int cdsl_get_unique_id_engine(cdsl_engine engine, cdsl_unique_id *out)
{
    if (!out) {
        rt_error(stderr, "cdsl_get_unique_id needs a place for the id");
        return CDSL_ERR_USAGE;
    }
    memset(out, 0, sizeof *out);
    char names[128];
    if (engine == CDSL_ENGINE_AUTO) {
        const char *env = getenv("CDSL_ENGINE");
        if (env && *env && cdsl_engine_parse(env, &engine)) {
            rt_error(stderr, "CDSL_ENGINE=%s: the engines are %s and auto", env,
                     rt_backend_names(CDSL_LIST_ENGINES, ", ", names, sizeof names));
            return CDSL_ERR_USAGE;
        }
        if (engine == CDSL_ENGINE_AUTO)
            engine = rt_engine_detect();
    }
    const RtBackend *row = rt_backend_of(RT_PER_RANK, engine);
    if (!row) {
        rt_error(stderr, "unknown engine %d (%s)", (int)engine,
                 rt_backend_names(CDSL_LIST_ENGINES, " or ", names, sizeof names));
        return CDSL_ERR_USAGE;
    }
    RtId id;
    memset(&id, 0, sizeof id);
    memcpy(id.magic, rt_id_magic, sizeof id.magic);
    id.version = RT_ID_VERSION;
    id.engine = engine;
    if (rt_ctl_address_new(&id.ctl) != 0) {
        rt_error(stderr, "no random bytes for a unique id (getrandom failed)");
        return CDSL_ERR_SYSTEM;
    }
    int st = row->flags & RT_NCCL ? rt_id_nccl(&id) : CDSL_OK;
    if (!st)
        memcpy(out->internal, &id, sizeof id);
    return st;
}

int cdsl_get_unique_id(cdsl_unique_id *id)
{
    return cdsl_get_unique_id_engine(CDSL_ENGINE_AUTO, id);
}

cdsl_engine cdsl_unique_id_engine(const cdsl_unique_id *u)
{
    RtId id;
    if (!u)
        return CDSL_ENGINE_AUTO;
    memcpy(&id, u->internal, sizeof id);
    if (memcmp(id.magic, rt_id_magic, sizeof id.magic) || id.version != RT_ID_VERSION ||
        !rt_backend_of(RT_PER_RANK, id.engine))
        return CDSL_ENGINE_AUTO;
    return (cdsl_engine)id.engine;
}
