/*
 * standin_nvrtc.c - a stand-in libnvrtc.so for tests/emit/cache_nvrtc.sh.
 *
 * It implements the NVRTC entry points runtime/jit/nvrtc.c binds, and "compiles" every source to
 * the same 81 bytes of text (80 characters and a NUL), for PTX and cubin alike. Built with
 * -Wl,-soname,libnvrtc.so.13 and preloaded, it is what dlopen("libnvrtc.so.13") returns, as an
 * NVRTC already loaded by a host application would be. STANDIN_MAJOR/MINOR set the version it
 * reports; STANDIN_TAG makes two builds' outputs differ.
 */
#include <stddef.h>
#include <string.h>

#ifndef STANDIN_MAJOR
#define STANDIN_MAJOR 13
#endif
#ifndef STANDIN_MINOR
#define STANDIN_MINOR 0
#endif
#ifndef STANDIN_TAG
#define STANDIN_TAG 'A'
#endif

typedef int nvrtcResult;
typedef struct StandinProgram *nvrtcProgram;

static char output[81];

static void fill_output(void)
{
    static const char text[] = "// stand-in NVRTC output X: not from the real NVRTC, never serve it to it";
    memset(output, '.', sizeof output - 2);
    memcpy(output, text, sizeof text - 1);
    output[sizeof "// stand-in NVRTC output " - 1] = STANDIN_TAG;
    output[sizeof output - 2] = '\n';
    output[sizeof output - 1] = 0;
}

nvrtcResult nvrtcVersion(int *major, int *minor)
{
    *major = STANDIN_MAJOR;
    *minor = STANDIN_MINOR;
    return 0;
}

const char *nvrtcGetErrorString(nvrtcResult r)
{
    return r ? "stand-in error" : "NVRTC_SUCCESS";
}

nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name, int nheaders,
                               const char *const *headers, const char *const *include_names)
{
    static int program;
    (void)src, (void)name, (void)nheaders, (void)headers, (void)include_names;
    *prog = (nvrtcProgram)(void *)&program;
    fill_output();
    return 0;
}

nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog)
{
    *prog = NULL;
    return 0;
}

nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int noptions, const char *const *options)
{
    (void)prog, (void)noptions, (void)options;
    return 0;
}

nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t *size)
{
    (void)prog;
    *size = 1;
    return 0;
}

nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char *log)
{
    (void)prog;
    log[0] = 0;
    return 0;
}

static nvrtcResult size_of_output(nvrtcProgram prog, size_t *size)
{
    (void)prog;
    *size = sizeof output;
    return 0;
}

static nvrtcResult copy_output(nvrtcProgram prog, char *out)
{
    (void)prog;
    memcpy(out, output, sizeof output);
    return 0;
}

nvrtcResult nvrtcGetPTXSize(nvrtcProgram prog, size_t *size) { return size_of_output(prog, size); }
nvrtcResult nvrtcGetPTX(nvrtcProgram prog, char *out) { return copy_output(prog, out); }
nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t *size) { return size_of_output(prog, size); }
nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char *out) { return copy_output(prog, out); }
