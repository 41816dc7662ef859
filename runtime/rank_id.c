/*
 * rank_id.c - the unique id of a per-rank communicator, and which engine it names.
 *
 * One process makes the id (cdsl_get_unique_id) and the caller passes it to every rank, as
 * with ncclGetUniqueId. The id fixes the engine, so that every rank agrees without talking:
 * CDSL_ENGINE from the environment of the process that makes it, else the best one this
 * machine has (nccl with NCCL >= 2.28 and a GPU, ipc with a GPU, sim without). It always
 * carries a control-plane address (a random abstract socket name and nonce, ctl.h; used by
 * sim and ipc), and for nccl, NCCL's own unique id (ncclGetUniqueId starts NCCL's bootstrap
 * listener in the process that makes it, as NCCL documents).
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_drv.h"
#include "nccl_dl.h"
#include "rank.h"

_Static_assert(sizeof(RtId) <= CDSL_UNIQUE_ID_BYTES, "the id fits in cdsl_unique_id");

static const char rt_id_magic[8] = "cdsl-id";
enum { RT_ID_VERSION = 1 };

const char *cdsl_engine_name(cdsl_engine e)
{
    switch (e) {
    case CDSL_ENGINE_AUTO: return "auto";
    case CDSL_ENGINE_SIM: return "sim";
    case CDSL_ENGINE_IPC: return "ipc";
    case CDSL_ENGINE_NCCL: return "nccl";
    }
    return "?";
}

int cdsl_engine_parse(const char *s, cdsl_engine *out)
{
    static const cdsl_engine all[] = {CDSL_ENGINE_AUTO, CDSL_ENGINE_SIM, CDSL_ENGINE_IPC, CDSL_ENGINE_NCCL};
    for (size_t i = 0; s && out && i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(s, cdsl_engine_name(all[i]))) {
            *out = all[i];
            return CDSL_OK;
        }
    return CDSL_ERR_USAGE;
}

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

static cdsl_engine rt_engine_detect(void)
{
    if (!rt_have_gpu())
        return CDSL_ENGINE_SIM;
    return rt_have_nccl() ? CDSL_ENGINE_NCCL : CDSL_ENGINE_IPC;
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
    if (engine == CDSL_ENGINE_AUTO) {
        const char *env = getenv("CDSL_ENGINE");
        if (env && *env && cdsl_engine_parse(env, &engine)) {
            rt_error(stderr, "CDSL_ENGINE=%s: the engines are sim, ipc, nccl and auto", env);
            return CDSL_ERR_USAGE;
        }
        if (engine == CDSL_ENGINE_AUTO)
            engine = rt_engine_detect();
    }
    if (engine != CDSL_ENGINE_SIM && engine != CDSL_ENGINE_IPC && engine != CDSL_ENGINE_NCCL) {
        rt_error(stderr, "unknown engine %d (sim, ipc or nccl)", (int)engine);
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
    int st = engine == CDSL_ENGINE_NCCL ? rt_id_nccl(&id) : CDSL_OK;
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
        id.engine < CDSL_ENGINE_SIM || id.engine > CDSL_ENGINE_NCCL)
        return CDSL_ENGINE_AUTO;
    return (cdsl_engine)id.engine;
}
