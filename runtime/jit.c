/*
 * jit.c - from a checked program to device code: cdsl_emit_cuda() and cdsl_compile_device().
 *
 * emit (compiler/emit_cuda.c, once per flavour and element type, kept in the program) ->
 * cache lookup (runtime/cache.c) -> NVRTC (runtime/nvrtc.c, loaded on first use) -> cache
 * store. The cache key covers everything that decides the output: the emitted source, the
 * NVRTC version and library file, the options (architecture included) and the artifact kind,
 * so a new toolkit or a changed emitter never reuses an old entry. A hit does not load NVRTC
 * at all: which library it would be is remembered in the cache too, under a digest of what
 * decides it (rt_nvrtc_locator), and checked against the file by stat().
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "driver.h"
#include "emit.h"
#include "nvrtc.h"

static bool valid_choice(cdsl_backend flavour, cdsl_dtype dtype)
{
    return (int)flavour >= 0 && flavour <= CDSL_BACKEND_NVLS && (int)dtype >= 0 && dtype <= CDSL_S32;
}

/* The checked program's CUDA, every rank's (rank -1) or one rank's, kept in the program: a
 * process of one rank asks for its own rank's code only, again on every run. */
static const char *emit_checked(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank)
{
    if (!p)
        return NULL;
    if (!valid_choice(flavour, dtype)) {
        diag_fatal(&p->diag, "unknown backend or element type (%d, %d)", (int)flavour, (int)dtype);
        return NULL;
    }
    if (flavour == CDSL_BACKEND_SIM) {
        diag_fatal(&p->diag, "the sim backend runs programs on CPU threads and has no CUDA source; "
                   "emit for --backend p2p or --backend nvls");
        return NULL;
    }
    if (!p->ir || !p->check || !p->ok) {
        diag_fatal(&p->diag, "no CUDA for a program that has not passed every check");
        return NULL;
    }
    if (rank < -1 || rank >= p->ir->nranks) {
        diag_fatal(&p->diag, "there is no rank %d in %s at %d ranks (ranks are 0 to %d)", rank, p->ir->name,
                   p->ir->nranks, p->ir->nranks - 1);
        return NULL;
    }
    if (rank < 0) {
        if (!p->cuda[flavour][dtype])
            p->cuda[flavour][dtype] = emit_cuda(p->ir, flavour, dtype, p->arena, &p->diag);
        return p->cuda[flavour][dtype];
    }
    if (!p->cuda_rank[flavour][dtype] || p->cuda_rank_of[flavour][dtype] != rank) {
        p->cuda_rank[flavour][dtype] = emit_cuda_rank(p->ir, flavour, dtype, rank, p->arena, &p->diag);
        p->cuda_rank_of[flavour][dtype] = rank;
    }
    return p->cuda_rank[flavour][dtype];
}

const char *cdsl_emit_cuda(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype)
{
    return emit_checked(p, flavour, dtype, -1);
}

const char *cdsl_emit_cuda_rank(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank)
{
    if (p && rank < 0) {
        diag_fatal(&p->diag, "there is no rank %d (ranks are counted from 0)", rank);
        return NULL;
    }
    return emit_checked(p, flavour, dtype, rank);
}

/* ---- Architecture ---------------------------------------------------------------------------- */

typedef struct Arch {
    int sm;            /* 90 for sm_90, sm_90a, compute_90 */
    bool real;         /* sm_ (a cubin), not compute_ (PTX only) */
    char suffix[4];    /* "a", "f" or "" */
} Arch;

static bool parse_arch(const char *s, Arch *a)
{
    memset(a, 0, sizeof *a);
    const char *digits = !strncmp(s, "sm_", 3) ? s + 3 : !strncmp(s, "compute_", 8) ? s + 8 : NULL;
    if (!digits)
        return false;
    a->real = s[0] == 's';
    char *end;
    long n = strtol(digits, &end, 10);
    if (end == digits || n < 10 || n > 9999 || strlen(end) > 1 || (*end && *end != 'a' && *end != 'f'))
        return false;
    a->sm = (int)n;
    snprintf(a->suffix, sizeof a->suffix, "%s", end);
    return true;
}

static int check_arch(cdsl_program *p, cdsl_backend flavour, const char *arch, cdsl_artifact what, Arch *a)
{
    if (!parse_arch(arch, a)) {
        diag_fatal(&p->diag, "'%s' is not a GPU architecture NVRTC knows; write it as sm_90 "
                   "(or compute_90 for PTX)", arch);
        return CDSL_ERR_USAGE;
    }
    if (what == CDSL_CUBIN && !a->real) {
        diag_fatal(&p->diag, "a cubin needs a real architecture such as sm_%d, not %s", a->sm, arch);
        return CDSL_ERR_USAGE;
    }
    int need = emit_min_sm(flavour);
    if (a->sm < need) {
        if (flavour == CDSL_BACKEND_NVLS)
            diag_fatal(&p->diag, "the nvls backend uses multimem instructions, which need sm_90 "
                       "(Hopper) or newer; --arch %s is older", arch);
        else
            diag_fatal(&p->diag, "the %s backend needs sm_%d or newer (acquire/release atomics); "
                       "--arch %s is older", cdsl_backend_name(flavour), need, arch);
        return CDSL_ERR_USAGE;
    }
    return CDSL_OK;
}

/* ---- NVRTC through the cache ------------------------------------------------------------------ */

typedef struct Job {
    cdsl_program *p;
    const char *src;
    char arch_opt[64];
    const char *options[2];
    char name[160];
    cdsl_backend flavour;
    cdsl_dtype dtype;
    cdsl_artifact what;
    char nvrtc_desc[1200];   /* which NVRTC, precisely (rt_nvrtc_describe) */
    char key[65];
} Job;

static const RtNvrtc *load_nvrtc(Job *j)
{
    const char *why = NULL;
    const RtNvrtc *n = rt_nvrtc_get(&why);
    if (!n)
        diag_fatal(&j->p->diag, "%s", why);
    return n;
}

/* The NVRTC description for the key, remembered in the cache under the locator so that a hit
   does not load the library; NULL (after a diagnostic) when NVRTC is missing. */
static const char *nvrtc_description(Job *j, const char *dir)
{
    char locator[65], memo_key[65];
    rt_nvrtc_locator(locator);
    const void *parts[] = {"nvrtc-memo", locator};
    size_t lens[] = {10, 64};
    rt_cache_key(parts, lens, 2, memo_key);
    void *memo = NULL;
    size_t len = 0;
    if (rt_cache_load(dir, memo_key, "nvrtc", &memo, &len) == RT_CACHE_HIT && len < sizeof j->nvrtc_desc) {
        memcpy(j->nvrtc_desc, memo, len);
        j->nvrtc_desc[len] = 0;
        free(memo);
        if (rt_nvrtc_description_current(j->nvrtc_desc))
            return j->nvrtc_desc;
    } else {
        free(memo);
    }
    const RtNvrtc *n = load_nvrtc(j);
    if (!n)
        return NULL;
    rt_nvrtc_describe(n, j->nvrtc_desc, sizeof j->nvrtc_desc);
    rt_cache_store(dir, memo_key, "nvrtc", j->nvrtc_desc, strlen(j->nvrtc_desc));
    return j->nvrtc_desc;
}

static void job_key(Job *j)
{
    const char *kind = j->what == CDSL_CUBIN ? "cubin" : "ptx";
    const void *parts[] = {j->src, j->nvrtc_desc, j->options[0], j->options[1], kind};
    size_t lens[] = {strlen(j->src), strlen(j->nvrtc_desc), strlen(j->options[0]), strlen(j->options[1]),
                     strlen(kind)};
    rt_cache_key(parts, lens, 5, j->key);
}

static bool nvrtc_new_enough(Job *j, const RtNvrtc *n)
{
    int major, minor, need = emit_min_nvrtc(j->p->ir, j->flavour, j->dtype);
    rt_nvrtc_version(n, &major, &minor);
    if (major * 100 + minor >= need)
        return true;
    diag_fatal(&j->p->diag, "NVRTC %d.%d (%s) is too old for the %s code of %s with %s elements; "
               "CUDA %d.%d or newer is needed", major, minor, rt_nvrtc_path(n),
               cdsl_backend_name(j->flavour), j->p->ir->name, cdsl_dtype_name(j->dtype), need / 100,
               need % 100);
    return false;
}

static int run_nvrtc(Job *j, const char *arch, void **data, size_t *len)
{
    const RtNvrtc *n = load_nvrtc(j);
    if (!n)
        return CDSL_ERR_SYSTEM;
    if (!nvrtc_new_enough(j, n))
        return CDSL_ERR_SYSTEM;
    RtNvrtcJob nj = {j->src, j->name, j->options, 2, j->what == CDSL_CUBIN};
    char *log = NULL;
    if (rt_nvrtc_compile(n, &nj, data, len, &log) == 0) {
        free(log);
        return CDSL_OK;
    }
    diag_fatal(&j->p->diag, "NVRTC failed to compile the generated CUDA for %s (%s, %s, %s):\n%s",
               j->name, cdsl_backend_name(j->flavour), cdsl_dtype_name(j->dtype), arch,
               log ? log : "(no log)");
    free(log);
    return CDSL_ERR_SYSTEM;
}

static int cached_compile(Job *j, const char *arch, void **data, size_t *len)
{
    const char *ext = j->what == CDSL_CUBIN ? "cubin" : "ptx";
    FILE *log = j->p->diag.out;
    bool verbose = rt_cache_verbose();
    char dirbuf[4096], path[4300];
    const char *why = NULL;
    const char *dir = rt_cache_dir(dirbuf, sizeof dirbuf, &why);
    if (!dir) {
        if (verbose)
            fprintf(log, "cdsl: cache off: %s\n", why ? why : "CDSL_NO_CACHE is set");
        return run_nvrtc(j, arch, data, len);
    }
    if (!nvrtc_description(j, dir))
        return CDSL_ERR_SYSTEM;
    job_key(j);
    rt_cache_path(dir, j->key, ext, path, sizeof path);
    RtCacheResult r = rt_cache_load(dir, j->key, ext, data, len);
    if (verbose)
        fprintf(log, "cdsl: cache %s: %s\n",
                r == RT_CACHE_HIT ? "hit" : r == RT_CACHE_MISS ? "miss" : "corrupt entry, recompiling", path);
    if (r == RT_CACHE_HIT)
        return CDSL_OK;
    int st = run_nvrtc(j, arch, data, len);
    if (st == CDSL_OK && rt_cache_store(dir, j->key, ext, *data, *len) != 0 && verbose)
        fprintf(log, "cdsl: cache: could not store %s\n", path);
    return st;
}

/* rank -1: every rank's code in one source; else rank's alone. */
static int compile_device(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank, const char *arch,
                          cdsl_artifact what, void **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    if (!p)
        return CDSL_ERR_USAGE;
    Arch a;
    arch = arch && *arch ? arch : "sm_90";
    bool device = valid_choice(flavour, dtype) && flavour != CDSL_BACKEND_SIM;
    int st = device ? check_arch(p, flavour, arch, what, &a) : CDSL_OK;
    if (st)
        return st;
    Job j = {.p = p, .flavour = flavour, .dtype = dtype, .what = what};
    j.src = emit_checked(p, flavour, dtype, rank);
    if (!j.src)
        return device ? CDSL_ERR_PROGRAM : CDSL_ERR_USAGE;
    /* PTX comes from the virtual architecture of the same number. */
    snprintf(j.arch_opt, sizeof j.arch_opt, "--gpu-architecture=%s_%d%s",
             what == CDSL_CUBIN ? "sm" : "compute", a.sm, a.suffix);
    j.options[0] = j.arch_opt;
    j.options[1] = "-std=c++17";
    snprintf(j.name, sizeof j.name, "%s_%s_%s%s.cu", p->ir->name, cdsl_backend_name(flavour),
             cdsl_dtype_name(dtype), rank >= 0 ? "_rank" : "");
    for (char *c = j.name; *c; c++)   /* a file name for NVRTC's messages: keep it plain */
        if (!isalnum((unsigned char)*c) && *c != '.')
            *c = '_';
    return cached_compile(&j, arch, data, len);
}

int cdsl_compile_device(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, const char *arch,
                        cdsl_artifact what, void **data, size_t *len)
{
    return compile_device(p, flavour, dtype, -1, arch, what, data, len);
}

int cdsl_compile_device_rank(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank, const char *arch,
                             cdsl_artifact what, void **data, size_t *len)
{
    if (p && rank < 0) {
        *data = NULL;
        *len = 0;
        diag_fatal(&p->diag, "there is no rank %d (ranks are counted from 0)", rank);
        return CDSL_ERR_USAGE;
    }
    return compile_device(p, flavour, dtype, rank, arch, what, data, len);
}
