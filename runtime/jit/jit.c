/*
 * jit.c - from a checked program to device code: cdsl_emit_cuda() and cdsl_compile_device().
 *
 * emit (the program's code generator, program.h: once per flavour and element type, kept in the program) ->
 * NVRTC (runtime/jit/nvrtc.c, loaded on first use, its version checked) -> cache lookup
 * (runtime/jit/cache.c) -> compile on a miss -> cache store. The cache key covers everything that
 * decides the output: the emitted source, the device headers it includes (runtime/device/,
 * embedded in libcdsl and handed to NVRTC by name), the NVRTC library that is loaded and would
 * compile (rt_nvrtc_identity: its version, build id and file), the options (architecture and
 * -lineinfo included) and the artifact kind, so a new toolkit, a preloaded stand-in or a changed emitter never reuses
 * another's entry. A hit therefore loads NVRTC too (about 6 ms of CPU, once per process): only
 * the loaded library can say which library it is. The cache itself decides what it trusts
 * (docs/security.md); an untrusted folder is reported here, once. cdsl_cache_clean() empties it.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends.h"
#include "cache.h"
#include "log.h"
#include "nvrtc.h"
#include "program.h"

/* A backend of the registry and an element type (the program's code generator keeps one source
 * per flavour and type, and refuses what it has no place for). */
static bool valid_choice(cdsl_backend flavour, cdsl_dtype dtype)
{
    return rt_backend_of(RT_ALL_RANKS, (int)flavour) && (int)dtype >= 0 && dtype <= CDSL_S32;
}

/* The checked program's CUDA, every rank's (rank -1) or one rank's, kept in the program: a
 * process of one rank asks for its own rank's code only, again on every run. */
static const char *emit_checked(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank)
{
    if (!p)
        return NULL;
    if (!valid_choice(flavour, dtype)) {
        diag_fatal(program_diag(p), "unknown backend or element type (%d, %d)", (int)flavour, (int)dtype);
        return NULL;
    }
    if (!rt_flavour_of(flavour)) {
        char names[128];
        diag_fatal(program_diag(p), "the %s backend runs programs on CPU threads and has no CUDA source; "
                   "emit for the %s backend", cdsl_backend_name(flavour),
                   rt_backend_names(CDSL_LIST_FLAVOURS, " or ", names, sizeof names));
        return NULL;
    }
    if (!program_checked(p)) {
        diag_fatal(program_diag(p), "no CUDA for a program that has not passed every check");
        return NULL;
    }
    const IrProgram *ir = program_ir(p);
    if (rank < -1 || rank >= ir->nranks) {
        diag_fatal(program_diag(p), "there is no rank %d in %s at %d ranks (ranks are 0 to %d)", rank, ir->name,
                   ir->nranks, ir->nranks - 1);
        return NULL;
    }
    return program_codegen(p)->cuda(p, flavour, dtype, rank);
}

/* What a public call said, printed when it returns (DIAG_JSON keeps it until then). */
static const char *flushed(cdsl_program *p, const char *src)
{
    if (p)
        diag_flush(program_diag(p), false);
    return src;
}

/* emit_checked and its messages under the program's lock: ranks that are threads of one
 * process emit into the one program they share at once. */
static const char *emit_locked(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank)
{
    if (!p)
        return emit_checked(p, flavour, dtype, rank);
    program_lock(p);
    const char *src = flushed(p, emit_checked(p, flavour, dtype, rank));
    program_unlock(p);
    return src;
}

const char *cdsl_emit_cuda(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype)
{
    return emit_locked(p, flavour, dtype, -1);
}

const char *cdsl_emit_cuda_rank(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank)
{
    if (p && rank < 0) {
        program_lock(p);
        diag_fatal(program_diag(p), "there is no rank %d (ranks are counted from 0)", rank);
        flushed(p, NULL);
        program_unlock(p);
        return NULL;
    }
    return emit_locked(p, flavour, dtype, rank);
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
        diag_fatal(program_diag(p), "'%s' is not a GPU architecture NVRTC knows; write it as sm_90 "
                   "(or compute_90 for PTX)", arch);
        return CDSL_ERR_USAGE;
    }
    if (what == CDSL_CUBIN && !a->real) {
        diag_fatal(program_diag(p), "a cubin needs a real architecture such as sm_%d, not %s", a->sm, arch);
        return CDSL_ERR_USAGE;
    }
    int need = program_codegen(p)->min_sm(flavour);
    if (a->sm < need) {
        if (rt_flavour_of(flavour)->flags & RT_MULTICAST)
            diag_fatal(program_diag(p), "the %s backend uses multimem instructions, which need sm_90 "
                       "(Hopper) or newer; the target architecture %s is older", cdsl_backend_name(flavour), arch);
        else
            diag_fatal(program_diag(p), "the %s backend needs sm_%d or newer (acquire/release atomics); "
                       "the target architecture %s is older", cdsl_backend_name(flavour), need, arch);
        return CDSL_ERR_USAGE;
    }
    return CDSL_OK;
}

/* ---- NVRTC through the cache ------------------------------------------------------------------ */

enum { JOB_OPTIONS = 3, MAX_HEADERS = 16 };

typedef struct Job {
    cdsl_program *p;
    const char *src;
    char arch_opt[64];
    const char *options[JOB_OPTIONS];
    char name[160];
    cdsl_backend flavour;
    cdsl_dtype dtype;
    cdsl_artifact what;
    char key[65];
} Job;

static const RtNvrtc *load_nvrtc(Job *j)
{
    const char *why = NULL;
    const RtNvrtc *n = rt_nvrtc_get(&why);
    if (!n)
        diag_fatal(program_diag(j->p), "%s", why);
    return n;
}

/* The device library as NVRTC takes it: names and texts, in two arrays. */
static int device_headers(const Job *j, const char **names, const char **texts)
{
    return program_codegen(j->p)->headers(names, texts, MAX_HEADERS);
}

/* The key names the library that compiles (n), not one a search would find, and holds every
   header the source may include (name and text), since they are compile input too. */
static void job_key(Job *j, const RtNvrtc *n)
{
    const char *kind = j->what == CDSL_CUBIN ? "cubin" : "ptx", *nvrtc = rt_nvrtc_identity(n);
    const char *names[MAX_HEADERS], *texts[MAX_HEADERS];
    int nh = device_headers(j, names, texts), k = 0;
    const void *parts[3 + JOB_OPTIONS + 2 * MAX_HEADERS];
    size_t lens[3 + JOB_OPTIONS + 2 * MAX_HEADERS];
    const char *fixed[3 + JOB_OPTIONS] = {j->src, nvrtc, kind};
    for (int i = 0; i < JOB_OPTIONS; i++)
        fixed[3 + i] = j->options[i];
    for (int i = 0; i < 3 + JOB_OPTIONS; i++, k++)
        parts[k] = fixed[i], lens[k] = strlen(fixed[i]);
    for (int i = 0; i < nh; i++) {
        parts[k] = names[i], lens[k++] = strlen(names[i]);
        parts[k] = texts[i], lens[k++] = strlen(texts[i]);
    }
    rt_cache_key(parts, lens, k, j->key);
}

static bool nvrtc_new_enough(Job *j, const RtNvrtc *n)
{
    int major, minor, need = program_codegen(j->p)->min_nvrtc(program_ir(j->p), j->flavour, j->dtype);
    rt_nvrtc_version(n, &major, &minor);
    if (major * 100 + minor >= need)
        return true;
    diag_fatal(program_diag(j->p), "NVRTC %d.%d (%s) is too old for the %s code of %s with %s elements; "
               "CUDA %d.%d or newer is needed", major, minor, rt_nvrtc_path(n),
               cdsl_backend_name(j->flavour), program_ir(j->p)->name, cdsl_dtype_name(j->dtype), need / 100,
               need % 100);
    return false;
}

static int run_nvrtc(Job *j, const RtNvrtc *n, const char *arch, void **data, size_t *len)
{
    const char *names[MAX_HEADERS], *texts[MAX_HEADERS];
    int nh = device_headers(j, names, texts);
    RtNvrtcJob nj = {j->src, j->name, j->options, JOB_OPTIONS, j->what == CDSL_CUBIN, nh, texts, names};
    char *log = NULL;
    cdsl_program *p = j->p;
    program_progress_begin(p, "compiling %s with NVRTC for %s", j->name, arch);
    double t = log_clock();
    int rc = rt_nvrtc_compile(n, &nj, data, len, &log);
    program_progress_end(p);
    log_msg(LOG_INFO, "timing: NVRTC %.3f ms (%s, %s, %s)", log_ms_since(t), j->name, j->options[0],
            rc == 0 ? "compiled" : "failed");
    if (rc == 0) {
        free(log);
        return CDSL_OK;
    }
    diag_fatal(program_diag(j->p), "NVRTC failed to compile the generated CUDA for %s (%s, %s, %s):", j->name,
               cdsl_backend_name(j->flavour), cdsl_dtype_name(j->dtype), arch);
    diag_text(program_diag(j->p), log ? log : "(no log)");
    free(log);
    return CDSL_ERR_SYSTEM;
}

/* An untrusted folder is said once per process, as a warning on the program's log (where the
   library's diagnostics go); other reasons to go uncached only with CDSL_CACHE_VERBOSE. */
static void report_cache_off(FILE *log, RtCacheState state, const RtCache *c, bool verbose)
{
    static atomic_flag warned = ATOMIC_FLAG_INIT;
    if (state == RT_CACHE_UNTRUSTED) {
        if (!atomic_flag_test_and_set(&warned)) {
            fprintf(log, "cdsl: warning: JIT cache off: %s; use a folder of your own with mode 700 "
                    "(CDSL_CACHE_DIR)\n", c->why);
            fflush(log);
        }
    } else if (verbose) {
        fprintf(log, "cdsl: cache off: %s\n", c->why);
    }
}

static const char *result_word(RtCacheResult r, const RtCache *c, char *buf, size_t size)
{
    if (r == RT_CACHE_REFUSED) {
        snprintf(buf, size, "refused entry (%s), recompiling", c->refused);
        return buf;
    }
    return r == RT_CACHE_HIT ? "hit" : r == RT_CACHE_MISS ? "miss" : "corrupt entry, recompiling";
}

/* Store, saying what happened on log when verbose (log not NULL). */
static void store(RtCache *c, const Job *j, const char *ext, const void *data, size_t len, FILE *log,
                  const char *path)
{
    RtCacheEvicted ev;
    int rc = rt_cache_store(c, j->key, ext, data, len, &ev);
    if (!log)
        return;
    if (rc < 0)
        fprintf(log, "cdsl: cache: could not store %s\n", path);
    else if (rc > 0)
        fprintf(log, "cdsl: cache: not stored: %zu bytes do not fit under the cap of %llu bytes\n", len,
                (unsigned long long)c->max_size);
    else if (ev.files)
        fprintf(log, "cdsl: cache: evicted %u least recently used entr%s (%llu bytes) to stay under "
                "%llu bytes\n", ev.files, ev.files == 1 ? "y" : "ies", (unsigned long long)ev.bytes,
                (unsigned long long)c->max_size);
}

static int cached_compile(Job *j, const char *arch, void **data, size_t *len)
{
    /* NVRTC first, hit or miss: the key describes it, and its version must do for this code. */
    const RtNvrtc *n = load_nvrtc(j);
    if (!n || !nvrtc_new_enough(j, n))
        return CDSL_ERR_SYSTEM;
    const char *ext = j->what == CDSL_CUBIN ? "cubin" : "ptx";
    FILE *log = program_diag(j->p)->out;
    bool verbose = rt_cache_verbose();
    RtCache c;
    int major, minor;
    rt_nvrtc_version(n, &major, &minor);
    log_msg(LOG_INFO, "NVRTC %d.%d: %s", major, minor, rt_nvrtc_path(n));
    log_msg(LOG_TRACE, "NVRTC identity (part of the cache key): %s", rt_nvrtc_identity(n));
    RtCacheState state = rt_cache_open(&c, RT_CACHE_CREATE);
    if (state != RT_CACHE_OPEN) {
        log_msg(LOG_INFO, "cache off: %s", c.why);
        report_cache_off(log, state, &c, verbose);
        return run_nvrtc(j, n, arch, data, len);
    }
    char path[4400];
    job_key(j, n);
    rt_cache_path(&c, j->key, ext, path, sizeof path);
    RtCacheResult r = rt_cache_load(&c, j->key, ext, data, len);
    char buf[256];
    const char *said = result_word(r, &c, buf, sizeof buf);
    log_msg(LOG_INFO, "cache %s: %s", said, path);
    if (verbose)
        fprintf(log, "cdsl: cache: the compiler is %s\ncdsl: cache %s: %s\n", rt_nvrtc_identity(n), said, path);
    int st = r == RT_CACHE_HIT ? CDSL_OK : run_nvrtc(j, n, arch, data, len);
    if (r != RT_CACHE_HIT && st == CDSL_OK)
        store(&c, j, ext, *data, *len, verbose ? log : NULL, path);
    rt_cache_close(&c);
    return st;
}

/* rank -1: every rank's code in one source; else rank's alone. */
static int compile_device(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank, const char *arch,
                          cdsl_artifact what, void **data, size_t *len)
{
    if (data)
        *data = NULL;
    if (len)
        *len = 0;
    if (!p || !data || !len)
        return CDSL_ERR_USAGE;
    if (what != CDSL_PTX && what != CDSL_CUBIN) {
        diag_fatal(program_diag(p), "unknown device artifact kind %d (CDSL_PTX or CDSL_CUBIN)", (int)what);
        return CDSL_ERR_USAGE;
    }
    Arch a;
    arch = arch && *arch ? arch : "sm_90";
    bool device = valid_choice(flavour, dtype) && rt_flavour_of(flavour);
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
    j.options[2] = "-lineinfo";   /* compute-sanitizer and Nsight name .cdsl lines (#line) */
    /* The name #line directives give too. */
    program_codegen(p)->cu_name(j.name, sizeof j.name, program_ir(p), flavour, dtype, rank);
    return cached_compile(&j, arch, data, len);
}

int cdsl_cache_clean(FILE *report, FILE *log)
{
    FILE *err = log ? log : stderr;
    RtCache c;
    RtCacheState state = rt_cache_open(&c, RT_CACHE_IGNORE_OFF);
    if (state == RT_CACHE_ABSENT) {
        if (report)
            fprintf(report, "0 files, 0 bytes removed: %s does not exist\n", c.path);
        return CDSL_OK;
    }
    if (state != RT_CACHE_OPEN) {
        fprintf(err, "cdsl: error: %s; not cleaning it\n", c.why);
        return CDSL_ERR_SYSTEM;
    }
    RtCacheEvicted removed;
    int rc = rt_cache_clean(&c, report, &removed);
    if (report)
        fprintf(report, "%u file%s, %llu bytes removed from %s\n", removed.files,
                removed.files == 1 ? "" : "s", (unsigned long long)removed.bytes, c.path);
    if (rc)
        fprintf(err, "cdsl: error: the cache folder %s could not be read to the end\n", c.path);
    rt_cache_close(&c);
    return rc ? CDSL_ERR_SYSTEM : CDSL_OK;
}

int cdsl_compile_device(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, const char *arch,
                        cdsl_artifact what, void **data, size_t *len)
{
    int rc = compile_device(p, flavour, dtype, -1, arch, what, data, len);
    if (p)
        diag_flush(program_diag(p), false);
    return rc;
}

int cdsl_compile_device_rank(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank, const char *arch,
                             cdsl_artifact what, void **data, size_t *len)
{
    if (p && data && len && rank < 0) {
        *data = NULL;
        *len = 0;
        diag_fatal(program_diag(p), "there is no rank %d (ranks are counted from 0)", rank);
        diag_flush(program_diag(p), false);
        return CDSL_ERR_USAGE;
    }
    int rc = compile_device(p, flavour, dtype, rank, arch, what, data, len);
    if (p)
        diag_flush(program_diag(p), false);
    return rc;
}
