/*
 * nvrtc.c - finding libnvrtc at run time and compiling one source with it.
 *
 * We declare the NVRTC entry points we use ourselves (their C signatures have been stable
 * since CUDA 11.1, which added nvrtcGetCUBIN) instead of including nvrtc.h, so that libcdsl
 * builds without the toolkit's headers. A missing symbol means a library too old to use, and
 * is reported as such. The JIT cache's key names the library loaded here (rt_nvrtc_identity),
 * not the one some search would find: whatever dlopen returned (a preloaded library, one the
 * host application loaded, one found through RPATH) is what compiles, so it is what the key
 * describes. Loading costs about 6 ms of CPU, once per process, on a hit too.
 */
#include "nvrtc.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef int nvrtcResult; /* NVRTC_SUCCESS == 0 */
typedef struct _nvrtcProgram *nvrtcProgram;

struct RtNvrtc {
    void *lib;
    char path[512];
    char identity[900];   /* rt_nvrtc_identity */
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
static void describe(const Dl_info *info);
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

static int bind_all(Dl_info *info)
{
    void *version = bind(g_nvrtc.lib, "nvrtcVersion", &g_nvrtc.Version, sizeof g_nvrtc.Version);
    if (version && dladdr(version, info) && info->dli_fname)
        snprintf(g_nvrtc.path, sizeof g_nvrtc.path, "%s", info->dli_fname);
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
    Dl_info info = {0};
    if (!bind_all(&info) || g_nvrtc.Version(&g_nvrtc.major, &g_nvrtc.minor) != 0) {
        snprintf(g_why_buf, sizeof g_why_buf,
                 "the NVRTC library found (%s) lacks nvrtcGetCUBIN or another entry point; "
                 "NVRTC from CUDA 11.1 or newer is needed",
                 g_nvrtc.path[0] ? g_nvrtc.path : "libnvrtc.so");
        g_why = g_why_buf;
        dlclose(g_nvrtc.lib);
        memset(&g_nvrtc, 0, sizeof g_nvrtc);
        return;
    }
    describe(&info);
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

/* ---- Identifying the library that compiles ------------------------------------------------- */

typedef struct BuildIdSearch {
    uintptr_t base;       /* the object's load address (dladdr's dli_fbase) */
    char hex[2 * 64 + 1];
} BuildIdSearch;

/* Whether the loaded object maps its ELF header (file offset 0) at base. */
static bool object_at(const struct dl_phdr_info *info, uintptr_t base)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && ph->p_offset == 0)
            return info->dlpi_addr + ph->p_vaddr == base;
    }
    return false;
}

/* The GNU build id in one PT_NOTE segment (notes padded to its alignment), as hex; false if
   it holds none. Offsets, not pointers, so that a damaged note cannot walk past the segment. */
static bool note_build_id(const unsigned char *seg, size_t size, size_t align, char *hex)
{
    size_t off = 0;
    while (size - off >= sizeof(ElfW(Nhdr))) {
        ElfW(Nhdr) n;
        memcpy(&n, seg + off, sizeof n);
        size_t name = off + sizeof n, namesz = (n.n_namesz + align - 1) & ~(align - 1);
        size_t descsz = (n.n_descsz + align - 1) & ~(align - 1);
        if (namesz > size - name || descsz > size - name - namesz)
            return false;
        size_t desc = name + namesz;
        if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && !memcmp(seg + name, "GNU", 4) &&
            n.n_descsz <= 64) {
            for (unsigned b = 0; b < n.n_descsz; b++)
                snprintf(hex + 2 * b, 3, "%02x", seg[desc + b]);
            return true;
        }
        off = desc + descsz;
    }
    return false;
}

/* dl_iterate_phdr callback: the build id of the loaded object at s->base, from memory. */
static int find_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
    BuildIdSearch *s = arg;
    (void)size;
    if (!object_at(info, s->base))
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        size_t align = ph->p_align == 8 ? 8 : 4;
        if (ph->p_type == PT_NOTE &&
            note_build_id((const unsigned char *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz, align, s->hex))
            break;
    }
    return 1;
}

/* What the cache key says about the compiler: NVRTC's own version; the build id of the code
   mapped in this process (which is what runs, even if the file at the path was replaced since
   it was loaded); the file dladdr reports; and that file's identity now (device, inode, size,
   modification time), for libraries built without a build id. Computed once, at load: stat()
   and walking the loaded objects' headers cost microseconds, while hashing the 100 MB library
   would cost more than the compile a hit saves. */
static void describe(const Dl_info *info)
{
    BuildIdSearch s = {(uintptr_t)info->dli_fbase, "none"};
    dl_iterate_phdr(find_build_id, &s);
    struct stat st;
    char id[160] = "unknown";
    if (stat(g_nvrtc.path, &st) == 0)
        snprintf(id, sizeof id, "dev %llu ino %llu size %lld mtime %lld.%09ld",
                 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, (long long)st.st_size,
                 (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
    snprintf(g_nvrtc.identity, sizeof g_nvrtc.identity, "nvrtc %d.%d build-id %s file %s %s",
             g_nvrtc.major, g_nvrtc.minor, s.hex, id, g_nvrtc.path);
}

const char *rt_nvrtc_identity(const RtNvrtc *n)
{
    return n->identity;
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
    nvrtcResult r = n->CreateProgram(&prog, job->source, job->name, job->nheaders, job->headers,
                                      job->include_names);
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
