/*
 * cuda_drv.c - opening the CUDA driver at run time and explaining its errors.
 *
 * cu_open dlopens libcuda.so.1 (the soname the driver installs; the unversioned libcuda.so
 * often exists only as the toolkit's stub), resolves every entry point of CU_DRIVER_FUNCS
 * with dlsym, and initialises the driver. Each failure becomes a sentence a user can act on:
 * no driver, the toolkit's stub library, no device, a driver older than we need. The GPU
 * backends open it only after their own refusal checks (nvls.c checks the environment before
 * calling cu_open, so a refused run never loads the driver).
 */
#include "cuda_drv.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

/* Layouts the driver reads through our pointers (cuda.h, CUDA 13.0, LP64). */
_Static_assert(sizeof(CUmemLocation) == 8, "CUmemLocation_v1 is 8 bytes");
_Static_assert(sizeof(CUmemAccessDesc) == 12, "CUmemAccessDesc_v1 is 12 bytes");
_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp_v1 is 32 bytes");
_Static_assert(offsetof(CUmemAllocationProp, location) == 8, "location follows two enums");
_Static_assert(offsetof(CUmemAllocationProp, win32HandleMetaData) == 16, "then the pointer");
_Static_assert(offsetof(CUmemAllocationProp, allocFlags) == 24, "then allocFlags");
_Static_assert(sizeof(CUmulticastObjectProp) == 32, "CUmulticastObjectProp_v1 is 32 bytes");
_Static_assert(offsetof(CUmulticastObjectProp, size) == 8, "size after the padded count");
_Static_assert(sizeof(CUdeviceptr) == 8, "64-bit device pointers");

/* The driver's sonames, newest convention first. */
static const char *const cu_lib_names[] = {"libcuda.so.1", "libcuda.so"};

/* dlsym into a function-pointer member without an object-to-function pointer cast, which
 * ISO C does not define (memcpy of the representation is what POSIX relies on). */
static int cu_resolve(void *lib, void *member, size_t size, const char *sym, const char *alt)
{
    void *p = dlsym(lib, sym);
    if (!p && alt)
        p = dlsym(lib, alt);
    if (!p)
        return 0;
    memcpy(member, &p, size < sizeof p ? size : sizeof p);
    return 1;
}

static int cu_resolve_all(CuDrv *cu, FILE *log)
{
#define CU_RESOLVE(req, member, sym, alt, params)                                      \
    if (!cu_resolve(cu->lib, &cu->member, sizeof cu->member, sym, alt) && (req)) {     \
        rt_error(log, "the CUDA driver on this machine is too old: libcuda.so.1 has no %s " \
                      "(a driver for CUDA 12.1 or newer is needed)", sym);              \
        return CDSL_ERR_SYSTEM;                                                        \
    }
    CU_DRIVER_FUNCS(CU_RESOLVE)
#undef CU_RESOLVE
    return CDSL_OK;
}

static void *cu_dlopen(void)
{
    for (size_t i = 0; i < sizeof cu_lib_names / sizeof cu_lib_names[0]; i++) {
        void *lib = dlopen(cu_lib_names[i], RTLD_NOW | RTLD_LOCAL);
        if (lib)
            return lib;
    }
    return NULL;
}

/* cuInit's failures, in the words a user needs. */
static int cu_init(CuDrv *cu, FILE *log)
{
    CUresult r = cu->Init(0);
    if (r == CUDA_SUCCESS) {
        if (cu->DriverGetVersion(&cu->version) != CUDA_SUCCESS)
            cu->version = 0;
        return CDSL_OK;
    }
    if (r == CUDA_ERROR_NO_DEVICE)
        rt_error(log, "no CUDA device on this machine (the driver is installed but sees no "
                      "GPU; the sim backend runs without one)");
    else if (r == CUDA_ERROR_STUB_LIBRARY)
        rt_error(log, "libcuda.so.1 here is the CUDA toolkit's stub library, not a driver: "
                      "no CUDA driver on this machine (the sim backend runs without one)");
    else if (r == CUDA_ERROR_DEVICE_UNAVAILABLE)
        rt_error(log, "the GPUs on this machine are unavailable (busy, or in exclusive-process "
                      "mode and used by another process)");
    else
        rt_error(log, "the CUDA driver failed to initialise: %s", cu_error_string(cu, r));
    return CDSL_ERR_SYSTEM;
}

int cu_open(CuDrv **out, FILE *log)
{
    *out = NULL;
    CuDrv *cu = calloc(1, sizeof *cu);
    if (!cu) {
        rt_error(log, "out of memory");
        return CDSL_ERR_SYSTEM;
    }
    cu->lib = cu_dlopen();
    if (!cu->lib) {
        rt_error(log, "no CUDA driver (libcuda.so.1) on this machine; the GPU backends need "
                      "an NVIDIA driver (the sim backend runs without one)");
        free(cu);
        return CDSL_ERR_SYSTEM;
    }
    int st = cu_resolve_all(cu, log);
    if (st == CDSL_OK)
        st = cu_init(cu, log);
    if (st != CDSL_OK) {
        cu_close(cu);
        return st;
    }
    *out = cu;
    return CDSL_OK;
}

void cu_close(CuDrv *cu)
{
    if (!cu)
        return;
    /* Keep the library mapped: the driver starts threads and registers atexit handlers that
     * must not outlive their code, and dlopen counts references anyway. */
    free(cu);
}

const char *cu_error_string(CuDrv *cu, CUresult r)
{
    const char *name = NULL, *text = NULL;
    if (cu->GetErrorName)
        cu->GetErrorName(r, &name);
    if (cu->GetErrorString)
        cu->GetErrorString(r, &text);
    if (name && text)
        snprintf(cu->msg, sizeof cu->msg, "%s (%s)", name, text);
    else
        snprintf(cu->msg, sizeof cu->msg, "CUDA error %d", r);
    return cu->msg;
}

int cu_has_graphs(const CuDrv *cu)
{
    return cu->StreamBeginCapture && cu->StreamEndCapture && cu->GraphInstantiate &&
           cu->GraphUpload && cu->GraphLaunch && cu->GraphExecDestroy && cu->GraphDestroy;
}

int cu_has_multicast(const CuDrv *cu)
{
    return cu->MemGetAllocationGranularity && cu->MemCreate && cu->MemRelease &&
           cu->MemAddressReserve && cu->MemAddressFree && cu->MemMap && cu->MemUnmap &&
           cu->MemSetAccess && cu->MulticastGetGranularity && cu->MulticastCreate &&
           cu->MulticastAddDevice && cu->MulticastBindMem && cu->MulticastUnbind;
}

int cu_has_ipc(const CuDrv *cu)
{
    return cu->CtxGetCurrent && cu->CtxGetDevice && cu->StreamGetCtx && cu->MemcpyDtoDAsync &&
           cu->PointerGetAttribute && cu->DeviceGetUuid && cu->MemExportToShareableHandle &&
           cu->MemImportFromShareableHandle && cu->MemGetAllocationGranularity && cu->MemCreate && cu->MemRelease &&
           cu->MemAddressReserve && cu->MemAddressFree && cu->MemMap && cu->MemUnmap && cu->MemSetAccess;
}

int cu_has_port(const CuDrv *cu)
{
    return cu->MemHostAlloc && cu->MemFreeHost && cu->MemHostGetDevicePointer && cu->MemcpyAsync &&
           cu->StreamWriteValue64 && cu->EventQuery;
}

int cu_has_ce(const CuDrv *cu)
{
    return cu->MemcpyAsync && cu->MemcpyDtoHAsync && cu->StreamWriteValue64 && cu->StreamWaitValue64 &&
           cu->EventQuery && cu->MemsetD8Async;
}
