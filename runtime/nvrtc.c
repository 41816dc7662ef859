/*
 * nvrtc.c - finding libnvrtc at run time and compiling one source with it.
 *
 * We declare the NVRTC entry points we use ourselves (their C signatures have been stable
 * since CUDA 11.1, which added nvrtcGetCUBIN) instead of including nvrtc.h, so that libcdsl
 * builds without the toolkit's headers. A missing symbol means a library too old to use, and
 * is reported as such. Loading the library takes several milliseconds, more than a cache
 * hit should cost, so the cache identifies it by stat() instead (rt_nvrtc_locator).
 */
#include "nvrtc.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sha256.h"

typedef int nvrtcResult; /* NVRTC_SUCCESS == 0 */
typedef struct _nvrtcProgram *nvrtcProgram;

struct RtNvrtc {
    void *lib;
    char path[512];
    int major, minor;
    nvrtcResult (*Version)(int *, int *);
    const char *(*GetErrorString)(nvrtcResult);
    nvrtcResult (*CreateProgram)(nvrtcProgram *, const char *, const char *, int,
                                 const char *const *, const char *const *);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *);
    nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char *const *);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetProgramLog)(nvrtcProgram, char *);
    nvrtcResult (*GetPTXSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetPTX)(nvrtcProgram, char *);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t *);
    nvrtcResult (*GetCUBIN)(nvrtcProgram, char *);
};

/* What rt_nvrtc_get() tries, in order: through the loader's search path, then in
   $CUDA_HOME/lib64 and /usr/local/cuda/lib64. */
static const char *const LIB_NAMES[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};

static RtNvrtc g_nvrtc;
static const char *g_why;
static char g_why_buf[768];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* dlsym returns void *; the conversion to a function pointer goes through memcpy to stay
   within ISO C (-Wpedantic). Returns the raw symbol, or NULL. */
static void *bind(void *lib, const char *name, void *fnptr, size_t size)
{
    void *sym = dlsym(lib, name);
    if (sym)
        memcpy(fnptr, &sym, size);
    return sym;
}

#define BIND(field, sym) (bind(g_nvrtc.lib, sym, &g_nvrtc.field, sizeof g_nvrtc.field) != NULL)

static void *open_candidates(void)
{
    const char *const *names = LIB_NAMES;
    const size_t nnames = sizeof LIB_NAMES / sizeof *LIB_NAMES;
    for (size_t i = 0; i < nnames; i++) {
        void *lib = dlopen(names[i], RTLD_LAZY | RTLD_LOCAL);
        if (lib)
            return lib;
    }
    const char *home = getenv("CUDA_HOME");
    const char *dirs[2] = {home && *home ? home : NULL, "/usr/local/cuda"};
    for (size_t d = 0; d < 2; d++) {
        for (size_t i = 0; dirs[d] && i < nnames; i++) {
            char path[600];
            snprintf(path, sizeof path, "%s/lib64/%s", dirs[d], names[i]);
            void *lib = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
            if (lib)
                return lib;
        }
    }
    return NULL;
}

static int bind_all(void)
{
    void *version = bind(g_nvrtc.lib, "nvrtcVersion", &g_nvrtc.Version, sizeof g_nvrtc.Version);
    Dl_info info;
    if (version && dladdr(version, &info) && info.dli_fname)
        snprintf(g_nvrtc.path, sizeof g_nvrtc.path, "%s", info.dli_fname);
    return version && BIND(GetErrorString, "nvrtcGetErrorString") &&
           BIND(CreateProgram, "nvrtcCreateProgram") &&
           BIND(DestroyProgram, "nvrtcDestroyProgram") &&
           BIND(CompileProgram, "nvrtcCompileProgram") &&
           BIND(GetProgramLogSize, "nvrtcGetProgramLogSize") &&
           BIND(GetProgramLog, "nvrtcGetProgramLog") && BIND(GetPTXSize, "nvrtcGetPTXSize") &&
           BIND(GetPTX, "nvrtcGetPTX") && BIND(GetCUBINSize, "nvrtcGetCUBINSize") &&
           BIND(GetCUBIN, "nvrtcGetCUBIN");
}

static void load_once(void)
{
    g_nvrtc.lib = open_candidates();
    if (!g_nvrtc.lib) {
        g_why = "NVRTC (libnvrtc.so) was not found; install the CUDA Toolkit's NVRTC, or point "
                "CUDA_HOME (or LD_LIBRARY_PATH) at the toolkit that has it";
        return;
    }
    if (!bind_all() || g_nvrtc.Version(&g_nvrtc.major, &g_nvrtc.minor) != 0) {
        snprintf(g_why_buf, sizeof g_why_buf,
                 "the NVRTC library found (%s) lacks nvrtcGetCUBIN or another entry point; "
                 "NVRTC from CUDA 11.1 or newer is needed",
                 g_nvrtc.path[0] ? g_nvrtc.path : "libnvrtc.so");
        g_why = g_why_buf;
        dlclose(g_nvrtc.lib);
        memset(&g_nvrtc, 0, sizeof g_nvrtc);
    }
}

const RtNvrtc *rt_nvrtc_get(const char **why)
{
    pthread_once(&g_once, load_once);
    if (!g_nvrtc.lib) {
        if (why)
            *why = g_why;
        return NULL;
    }
    return &g_nvrtc;
}

void rt_nvrtc_version(const RtNvrtc *n, int *major, int *minor)
{
    *major = n->major;
    *minor = n->minor;
}

const char *rt_nvrtc_path(const RtNvrtc *n)
{
    return n->path[0] ? n->path : "libnvrtc.so";
}

/* ---- Identifying the library without loading it ------------------------------------------ */

static int file_id(const char *path, char *buf, size_t size)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
    snprintf(buf, size, "%lu %lld %lld.%09ld", (unsigned long)st.st_ino, (long long)st.st_size,
             (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
    return 0;
}

void rt_nvrtc_describe(const RtNvrtc *n, char *buf, size_t size)
{
    char id[128] = "? ? ?";
    file_id(rt_nvrtc_path(n), id, sizeof id);
    snprintf(buf, size, "nvrtc %d.%d %s %s", n->major, n->minor, id, rt_nvrtc_path(n));
}

bool rt_nvrtc_description_current(const char *desc)
{
    int major, minor, used = 0;
    char ino[32], len[32], mtime[48], id[128], now[128];
    if (sscanf(desc, "nvrtc %d.%d %31s %31s %47s %n", &major, &minor, ino, len, mtime, &used) != 5 || !used)
        return false;
    snprintf(id, sizeof id, "%s %s %s", ino, len, mtime);
    return file_id(desc + used, now, sizeof now) == 0 && strcmp(id, now) == 0;
}

static void hash_dir(RtSha256 *s, const char *dir, size_t dirlen)
{
    for (size_t i = 0; i < sizeof LIB_NAMES / sizeof *LIB_NAMES; i++) {
        char path[1024], id[128] = "-";
        snprintf(path, sizeof path, "%.*s/%s", (int)dirlen, dir, LIB_NAMES[i]);
        file_id(path, id, sizeof id);
        rt_sha256_update(s, path, strlen(path) + 1);
        rt_sha256_update(s, id, strlen(id) + 1);
    }
}

void rt_nvrtc_locator(char hex[65])
{
    static const char *const fixed[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                        "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                        "/lib64", "/usr/lib64", "/lib", "/usr/lib",
                                        "/usr/local/cuda/lib64"};
    RtSha256 s;
    rt_sha256_init(&s);
    const char *ld = getenv("LD_LIBRARY_PATH"), *home = getenv("CUDA_HOME");
    char id[128] = "-", cuda[1024];
    rt_sha256_update(&s, ld ? ld : "", ld ? strlen(ld) + 1 : 1);
    rt_sha256_update(&s, home ? home : "", home ? strlen(home) + 1 : 1);
    file_id("/etc/ld.so.cache", id, sizeof id);
    rt_sha256_update(&s, id, strlen(id) + 1);
    for (const char *d = ld; d && *d;) {
        size_t n = strcspn(d, ":");
        hash_dir(&s, d, n);
        d += n + (d[n] == ':');
    }
    if (home && *home) {
        snprintf(cuda, sizeof cuda, "%s/lib64", home);
        hash_dir(&s, cuda, strlen(cuda));
    }
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        hash_dir(&s, fixed[i], strlen(fixed[i]));
    uint8_t digest[32];
    rt_sha256_final(&s, digest);
    rt_sha256_hex(digest, hex);
}

/* ---- Compiling ------------------------------------------------------------------------------ */

static char *strdup_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = malloc((size_t)(n < 0 ? 0 : n) + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static char *program_log(const RtNvrtc *n, nvrtcProgram prog)
{
    size_t size = 0;
    if (n->GetProgramLogSize(prog, &size) != 0 || size == 0)
        return NULL;
    char *log = malloc(size + 1);
    if (log && n->GetProgramLog(prog, log) != 0) {
        free(log);
        return NULL;
    }
    if (log)
        log[size] = 0;
    return log;
}

/* The compiled artifact into a malloc'd buffer. */
static int take_output(const RtNvrtc *n, nvrtcProgram prog, int cubin, void **data, size_t *len)
{
    size_t size = 0;
    nvrtcResult r = cubin ? n->GetCUBINSize(prog, &size) : n->GetPTXSize(prog, &size);
    if (r != 0 || size == 0)
        return r ? r : -1;
    char *buf = malloc(size);
    if (!buf)
        return -1;
    r = cubin ? n->GetCUBIN(prog, buf) : n->GetPTX(prog, buf);
    if (r != 0) {
        free(buf);
        return r;
    }
    *data = buf;
    *len = size;
    return 0;
}

int rt_nvrtc_compile(const RtNvrtc *n, const RtNvrtcJob *job, void **data, size_t *len, char **log)
{
    *data = NULL;
    *len = 0;
    *log = NULL;
    nvrtcProgram prog = NULL;
    nvrtcResult r = n->CreateProgram(&prog, job->source, job->name, 0, NULL, NULL);
    if (r != 0) {
        *log = strdup_printf("nvrtcCreateProgram failed: %s", n->GetErrorString(r));
        return 1;
    }
    r = n->CompileProgram(prog, job->noptions, job->options);
    if (r != 0) {
        char *text = program_log(n, prog);
        *log = strdup_printf("%s%s(%s)", text ? text : "", text && *text ? "\n" : "",
                             n->GetErrorString(r));
        free(text);
        n->DestroyProgram(&prog);
        return 1;
    }
    r = take_output(n, prog, job->want_cubin, data, len);
    if (r != 0)
        *log = strdup_printf("NVRTC compiled the source but gave no %s (%s)",
                             job->want_cubin ? "cubin (is the architecture a real sm_XX?)" : "PTX",
                             r > 0 ? n->GetErrorString(r) : "out of memory");
    n->DestroyProgram(&prog);
    return r != 0;
}
