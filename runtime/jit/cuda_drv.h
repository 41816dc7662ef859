/*
 * cuda_drv.h - the CUDA driver API, loaded at run time with dlopen("libcuda.so.1").
 *
 * libcdsl must start on machines without an NVIDIA driver (CI, laptops: the sim backend runs
 * there), so nothing links against libcuda and nothing includes cuda.h. This header declares
 * the few types, constants and entry points the GPU backends use, with the values and layouts
 * of the driver API (checked against cuda.h of CUDA 13.0 and the driver API reference); a
 * CuDrv holds one dlopen handle and the resolved function pointers. Where the driver exports
 * several versions of a symbol, the table names the one whose signature is declared here
 * (cuMemAlloc_v2, cuStreamDestroy_v2, ...), so an old or new driver cannot hand us a function
 * with another ABI. Nothing is global: each communicator opens its own CuDrv (dlopen keeps
 * one copy of the library and counts references).
 */
#ifndef CDSL_CUDA_DRV_H
#define CDSL_CUDA_DRV_H

#include <stddef.h>
#include <stdio.h>

/* ---- Types (cuda.h: CUresult is an enum; int has the same size and values) ---------------- */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;              /* CUdeviceptr_v2: 64-bit */
typedef unsigned long long CUmemGenericAllocationHandle;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUuuid {
    char bytes[16];
} CUuuid;

/* CUpointer_attribute, CUmemorytype */
enum { CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9 };
enum { CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2, CU_MEMORYTYPE_UNIFIED = 4 };

/* ---- CUresult values we explain or treat specially ----------------------------------------- */
enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_STUB_LIBRARY = 34,
    CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
    CUDA_ERROR_NO_DEVICE = 100,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
    CUDA_ERROR_NOT_READY = 600,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    CUDA_ERROR_NOT_PERMITTED = 800,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_SYSTEM_NOT_READY = 802,
};

/* CUdevice_attribute */
enum {
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
    CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
    CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103,
    CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED = 132,
};

/* CUfunction_attribute */
enum { CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0, CU_FUNC_ATTRIBUTE_NUM_REGS = 4 };

/* Stream memory operations (cuStreamWaitValue64's flags; the write's default includes a
 * memory barrier before the write) and the device attributes that say they are there. */
enum { CU_STREAM_WAIT_VALUE_GEQ = 0x0, CU_STREAM_WAIT_VALUE_FLUSH = 1 << 30 };
enum { CU_STREAM_WRITE_VALUE_DEFAULT = 0x0 };
enum { CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES = 98,
       CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS = 122 };
enum { CU_STREAM_CAPTURE_STATUS_NONE = 0 };

/* Stream, event and capture flags */
enum { CU_STREAM_NON_BLOCKING = 0x1 };
enum { CU_MEMHOSTALLOC_PORTABLE = 0x1, CU_MEMHOSTALLOC_DEVICEMAP = 0x2 };
enum { CU_EVENT_DEFAULT = 0x0, CU_EVENT_DISABLE_TIMING = 0x2 };
enum { CU_STREAM_CAPTURE_MODE_GLOBAL = 0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
       CU_STREAM_CAPTURE_MODE_RELAXED = 2 };

/* Virtual memory management (CUmemAllocationType, CUmemLocationType, ...) */
enum { CU_MEM_ALLOCATION_TYPE_PINNED = 0x1 };
enum { CU_MEM_LOCATION_TYPE_DEVICE = 0x1 };
enum { CU_MEM_HANDLE_TYPE_NONE = 0x0, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1 };
enum { CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3 };
enum { CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1 };
enum { CU_MULTICAST_GRANULARITY_MINIMUM = 0x0, CU_MULTICAST_GRANULARITY_RECOMMENDED = 0x1 };

/* CUmemLocation_v1: {CUmemLocationType type; int id;} - 8 bytes */
typedef struct CUmemLocation {
    int type;
    int id;
} CUmemLocation;

/* CUmemAllocationProp_v1: 32 bytes on LP64 (the void* aligns to 8 after the location). */
typedef struct CUmemAllocationProp {
    int type;                       /* CU_MEM_ALLOCATION_TYPE_PINNED */
    int requestedHandleTypes;       /* CUmemAllocationHandleType */
    CUmemLocation location;
    void *win32HandleMetaData;      /* must be NULL on Linux */
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp;

/* CUmemAccessDesc_v1: {CUmemLocation location; CUmemAccess_flags flags;} - 12 bytes */
typedef struct CUmemAccessDesc {
    CUmemLocation location;
    int flags;
} CUmemAccessDesc;

/* CUmulticastObjectProp_v1: 32 bytes on LP64 */
typedef struct CUmulticastObjectProp {
    unsigned int numDevices;
    size_t size;                    /* per device; a multiple of the minimum granularity */
    unsigned long long handleTypes;
    unsigned long long flags;       /* must be 0 */
} CUmulticastObjectProp;

/* ---- Entry points ----------------------------------------------------------------------------
 * X(required, member, "exported symbol", "older symbol or NULL", (parameters))
 * A missing required symbol makes cu_open fail; optional ones (virtual memory, multicast,
 * graphs) stay NULL and the code that needs them says so. */
#define CU_DRIVER_FUNCS(X)                                                                      \
    X(1, GetErrorName, "cuGetErrorName", NULL, (CUresult e, const char **s))                   \
    X(1, GetErrorString, "cuGetErrorString", NULL, (CUresult e, const char **s))               \
    X(1, Init, "cuInit", NULL, (unsigned int flags))                                           \
    X(1, DriverGetVersion, "cuDriverGetVersion", NULL, (int *version))                         \
    X(1, DeviceGetCount, "cuDeviceGetCount", NULL, (int *count))                               \
    X(1, DeviceGet, "cuDeviceGet", NULL, (CUdevice * dev, int ordinal))                        \
    X(1, DeviceGetName, "cuDeviceGetName", NULL, (char *name, int len, CUdevice dev))          \
    X(1, DeviceGetAttribute, "cuDeviceGetAttribute", NULL, (int *v, int attr, CUdevice dev))   \
    X(1, DeviceCanAccessPeer, "cuDeviceCanAccessPeer", NULL,                                   \
      (int *can, CUdevice dev, CUdevice peer))                                                 \
    X(1, DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL,                             \
      (CUcontext * ctx, CUdevice dev))                                                         \
    X(1, DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease", \
      (CUdevice dev))                                                                          \
    X(1, CtxSetCurrent, "cuCtxSetCurrent", NULL, (CUcontext ctx))                              \
    X(1, CtxSynchronize, "cuCtxSynchronize", NULL, (void))                                     \
    X(1, CtxEnablePeerAccess, "cuCtxEnablePeerAccess", NULL,                                   \
      (CUcontext peer, unsigned int flags))                                                    \
    X(1, MemAlloc, "cuMemAlloc_v2", NULL, (CUdeviceptr * p, size_t bytes))                     \
    X(1, MemFree, "cuMemFree_v2", NULL, (CUdeviceptr p))                                       \
    X(1, MemcpyHtoD, "cuMemcpyHtoD_v2", NULL, (CUdeviceptr dst, const void *src, size_t n))    \
    X(1, MemcpyDtoH, "cuMemcpyDtoH_v2", NULL, (void *dst, CUdeviceptr src, size_t n))          \
    X(1, MemsetD8, "cuMemsetD8_v2", NULL, (CUdeviceptr dst, unsigned char v, size_t n))        \
    X(1, StreamCreate, "cuStreamCreate", NULL, (CUstream * s, unsigned int flags))             \
    X(1, StreamDestroy, "cuStreamDestroy_v2", NULL, (CUstream s))                              \
    X(1, StreamSynchronize, "cuStreamSynchronize", NULL, (CUstream s))                         \
    X(1, StreamWaitEvent, "cuStreamWaitEvent", NULL,                                           \
      (CUstream s, CUevent e, unsigned int flags))                                             \
    X(1, EventCreate, "cuEventCreate", NULL, (CUevent * e, unsigned int flags))                \
    X(1, EventDestroy, "cuEventDestroy_v2", NULL, (CUevent e))                                 \
    X(1, EventRecord, "cuEventRecord", NULL, (CUevent e, CUstream s))                          \
    X(1, EventSynchronize, "cuEventSynchronize", NULL, (CUevent e))                            \
    X(1, EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime",                      \
      (float *ms, CUevent start, CUevent end))                                                 \
    X(1, ModuleLoadData, "cuModuleLoadData", NULL, (CUmodule * m, const void *image))          \
    X(1, ModuleUnload, "cuModuleUnload", NULL, (CUmodule m))                                   \
    X(1, ModuleGetFunction, "cuModuleGetFunction", NULL,                                       \
      (CUfunction * f, CUmodule m, const char *name))                                          \
    X(1, FuncGetAttribute, "cuFuncGetAttribute", NULL, (int *v, int attr, CUfunction f))       \
    X(1, OccupancyMaxActiveBlocksPerMultiprocessor,                                            \
      "cuOccupancyMaxActiveBlocksPerMultiprocessor", NULL,                                     \
      (int *blocks, CUfunction f, int threads, size_t dyn_smem))                               \
    X(1, LaunchKernel, "cuLaunchKernel", NULL,                                                 \
      (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,       \
       unsigned int by, unsigned int bz, unsigned int smem, CUstream s, void **params,         \
       void **extra))                                                                          \
    X(0, StreamBeginCapture, "cuStreamBeginCapture_v2", NULL, (CUstream s, int mode))          \
    X(0, StreamEndCapture, "cuStreamEndCapture", NULL, (CUstream s, CUgraph * g))              \
    X(0, GraphInstantiate, "cuGraphInstantiateWithFlags", NULL,                                \
      (CUgraphExec * e, CUgraph g, unsigned long long flags))                                  \
    X(0, GraphUpload, "cuGraphUpload", NULL, (CUgraphExec e, CUstream s))                      \
    X(0, GraphLaunch, "cuGraphLaunch", NULL, (CUgraphExec e, CUstream s))                      \
    X(0, GraphExecDestroy, "cuGraphExecDestroy", NULL, (CUgraphExec e))                        \
    X(0, GraphDestroy, "cuGraphDestroy", NULL, (CUgraph g))                                    \
    X(0, MemGetAllocationGranularity, "cuMemGetAllocationGranularity", NULL,                   \
      (size_t * g, const CUmemAllocationProp *prop, int option))                               \
    X(0, MemCreate, "cuMemCreate", NULL,                                                       \
      (CUmemGenericAllocationHandle * h, size_t size, const CUmemAllocationProp *prop,         \
       unsigned long long flags))                                                              \
    X(0, MemRelease, "cuMemRelease", NULL, (CUmemGenericAllocationHandle h))                   \
    X(0, MemAddressReserve, "cuMemAddressReserve", NULL,                                       \
      (CUdeviceptr * p, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags)) \
    X(0, MemAddressFree, "cuMemAddressFree", NULL, (CUdeviceptr p, size_t size))               \
    X(0, MemMap, "cuMemMap", NULL,                                                             \
      (CUdeviceptr p, size_t size, size_t offset, CUmemGenericAllocationHandle h,              \
       unsigned long long flags))                                                              \
    X(0, MemUnmap, "cuMemUnmap", NULL, (CUdeviceptr p, size_t size))                           \
    X(0, MemSetAccess, "cuMemSetAccess", NULL,                                                 \
      (CUdeviceptr p, size_t size, const CUmemAccessDesc *desc, size_t count))                 \
    X(0, MulticastGetGranularity, "cuMulticastGetGranularity", NULL,                           \
      (size_t * g, const CUmulticastObjectProp *prop, int option))                             \
    X(0, MulticastCreate, "cuMulticastCreate", NULL,                                           \
      (CUmemGenericAllocationHandle * mc, const CUmulticastObjectProp *prop))                  \
    X(0, MulticastAddDevice, "cuMulticastAddDevice", NULL,                                     \
      (CUmemGenericAllocationHandle mc, CUdevice dev))                                         \
    X(0, MulticastBindMem, "cuMulticastBindMem", NULL,                                         \
      (CUmemGenericAllocationHandle mc, size_t mc_offset, CUmemGenericAllocationHandle mem,    \
       size_t mem_offset, size_t size, unsigned long long flags))                              \
    X(0, MulticastUnbind, "cuMulticastUnbind", NULL,                                           \
      (CUmemGenericAllocationHandle mc, CUdevice dev, size_t mc_offset, size_t size))          \
    CU_RANK_FUNCS(X)                                                                           \
    CU_CE_FUNCS(X)                                                                             \
    CU_PORT_FUNCS(X)

/* One process per GPU (gpu_rank.c, rank_ipc.c): the caller's context and streams, memory
 * passed between processes as file descriptors, copies on a stream, pointer checks. */
#define CU_RANK_FUNCS(X)                                                                        \
    X(0, CtxGetCurrent, "cuCtxGetCurrent", NULL, (CUcontext * ctx))                            \
    X(0, CtxGetDevice, "cuCtxGetDevice", NULL, (CUdevice * dev))                               \
    X(0, StreamGetCtx, "cuStreamGetCtx", NULL, (CUstream s, CUcontext * ctx))                  \
    X(0, StreamQuery, "cuStreamQuery", NULL, (CUstream s))                                     \
    X(0, MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", NULL,                                        \
      (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s))                                \
    X(0, MemsetD8Async, "cuMemsetD8Async", NULL,                                               \
      (CUdeviceptr dst, unsigned char v, size_t n, CUstream s))                                \
    X(0, PointerGetAttribute, "cuPointerGetAttribute", NULL, (void *data, int attr, CUdeviceptr p)) \
    X(0, DeviceGetUuid, "cuDeviceGetUuid_v2", "cuDeviceGetUuid", (CUuuid * uuid, CUdevice dev)) \
    X(0, MemExportToShareableHandle, "cuMemExportToShareableHandle", NULL,                     \
      (void *shareable, CUmemGenericAllocationHandle h, int type, unsigned long long flags))   \
    X(0, MemImportFromShareableHandle, "cuMemImportFromShareableHandle", NULL,                 \
      (CUmemGenericAllocationHandle * h, void *shareable, int type))

/* The copy-engine path (ce.c): copies between any two device pointers (peers included, through
 * unified addressing), stream write/wait-value operations on 64-bit words, and what its
 * watchdog needs to look without blocking. */
#define CU_CE_FUNCS(X)                                                                          \
    X(0, MemcpyAsync, "cuMemcpyAsync", NULL, (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)) \
    X(0, MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", NULL, (void *dst, CUdeviceptr src, size_t n, CUstream s)) \
    X(0, StreamWriteValue64, "cuStreamWriteValue64_v2", "cuStreamWriteValue64",               \
      (CUstream s, CUdeviceptr addr, unsigned long long value, unsigned int flags))            \
    X(0, StreamWaitValue64, "cuStreamWaitValue64_v2", "cuStreamWaitValue64",                  \
      (CUstream s, CUdeviceptr addr, unsigned long long value, unsigned int flags))            \
    X(0, EventQuery, "cuEventQuery", NULL, (CUevent e))                                        \
    X(0, StreamIsCapturing, "cuStreamIsCapturing", NULL, (CUstream s, int *status))

/* The host's port-channel proxy (gpu_port.c): pinned host memory the kernel reaches, for the
 * blocks' requests (besides the copy-engine group's copies, write-values and event queries), and
 * a copy of a signal's count from host memory, where a write-value into a peer is refused. */
#define CU_PORT_FUNCS(X)                                                                        \
    X(0, MemHostAlloc, "cuMemHostAlloc", NULL, (void **p, size_t bytes, unsigned int flags))   \
    X(0, MemFreeHost, "cuMemFreeHost", NULL, (void *p))                                        \
    X(0, MemHostGetDevicePointer, "cuMemHostGetDevicePointer_v2", "cuMemHostGetDevicePointer", \
      (CUdeviceptr * dp, void *p, unsigned int flags))                                          \
    X(0, MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL, (CUdeviceptr dst, const void *src, size_t n, CUstream s))

#define CU_DECLARE_MEMBER(req, member, sym, alt, params) CUresult (*member) params;

typedef struct CuDrv {
    void *lib;              /* the dlopen handle */
    int version;            /* cuDriverGetVersion: 12040 = 12.4 */
    char msg[256];          /* cu_error_string's text */
    CU_DRIVER_FUNCS(CU_DECLARE_MEMBER)
} CuDrv;

#undef CU_DECLARE_MEMBER

/* Open libcuda.so.1, resolve the entry points and cuInit(0). On failure *out is NULL and a
 * message went to log: "no CUDA driver (libcuda.so.1) on this machine", "no CUDA device",
 * the toolkit's stub library, a driver too old. Returns a cdsl_status. */
int cu_open(CuDrv **out, FILE *log);
void cu_close(CuDrv *cu);

/* "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; valid until the next call on cu. */
const char *cu_error_string(CuDrv *cu, CUresult r);

/* True when every optional entry point of one group was found. */
int cu_has_graphs(const CuDrv *cu);
int cu_has_multicast(const CuDrv *cu);
int cu_has_ipc(const CuDrv *cu);    /* everything one process per GPU with VMM memory needs */
int cu_has_ce(const CuDrv *cu);     /* everything the copy-engine path needs */
int cu_has_port(const CuDrv *cu);   /* everything the port-channel proxy needs */

/* Call a driver function; when it fails, return on_fail, an expression that may name the
   result as cu_r_ (each layer's report: gpu_fail, gpu_rank_fail, the port proxy's site). */
#define CU_TRY_OR(call, ...)                                                                   \
    do {                                                                                       \
        CUresult cu_r_ = (call);                                                               \
        if (cu_r_ != CUDA_SUCCESS)                                                             \
            return __VA_ARGS__;                                                                \
    } while (0)

#endif
