/*
 * nccl_dl.h - NCCL (>= 2.28), loaded at run time with dlopen("libnccl.so.2"), as cuda_drv.h
 * loads the driver: libcdsl builds and runs without NCCL, and the nccl engine says clearly
 * when it is missing or too old.
 *
 * Declares the few types and entry points the nccl engine (rank_nccl.c) and the unique id
 * (rank_id.c) use, with nccl.h's layouts of 2.28.9 (checked against that header):
 * ncclUniqueId (128 bytes, passed by value to ncclCommInitRankConfig), ncclConfig_t version
 * 2.28 (so that `blocking = 0` makes init and window registration non-blocking, which is
 * how a missing rank becomes an error after the communicator's timeout rather than a hang),
 * ncclResult_t values, ncclDataType_t's ncclUint8.
 */
#ifndef CDSL_NCCL_DL_H
#define CDSL_NCCL_DL_H

#include <stddef.h>
#include <stdio.h>

typedef int ncclResult_t;
enum { ncclSuccess = 0, ncclInvalidUsage = 5, ncclInProgress = 7 };
enum { ncclUint8 = 1 };
enum { NCCL_WIN_COLL_SYMMETRIC = 0x01, NCCL_WIN_REQUIRED_ALIGNMENT = 4096 };
#define RT_NCCL_MIN_VERSION 22800   /* NCCL_VERSION(2, 28, 0): symmetric windows, LSA */

typedef struct ncclComm *ncclComm_t;
typedef struct { int nRanks, rank, stride; } ncclTeam_t;      /* nccl_device/core.h */
typedef struct ncclWindow_vidmem *ncclWindow_t;
typedef struct { char internal[128]; } ncclUniqueId;

/* ncclConfig_v22800 */
typedef struct ncclConfig_t {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
    int trafficClass;
    const char *commName;
    int collnetEnable;
    int CTAPolicy;
    int shrinkShare;
    int nvlsCTAs;
    int nChannelsPerNetPeer;
    int nvlinkCentricSched;
} ncclConfig_t;

/* NCCL_CONFIG_INITIALIZER of 2.28.9, with blocking = 0. */
void rt_nccl_config_init(ncclConfig_t *c);

/* X(member, "symbol", (parameters)): every one is required. */
#define NCCL_FUNCS(X)                                                                          \
    X(GetVersion, "ncclGetVersion", (int *version))                                            \
    X(GetErrorString, "ncclGetErrorString", (ncclResult_t r))                                  \
    X(GetLastError, "ncclGetLastError", (ncclComm_t comm))                                     \
    X(GetUniqueId, "ncclGetUniqueId", (ncclUniqueId * id))                                     \
    X(CommInitRankConfig, "ncclCommInitRankConfig",                                            \
      (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *config))        \
    X(CommGetAsyncError, "ncclCommGetAsyncError", (ncclComm_t comm, ncclResult_t * r))         \
    X(CommFinalize, "ncclCommFinalize", (ncclComm_t comm))                                     \
    X(CommDestroy, "ncclCommDestroy", (ncclComm_t comm))                                       \
    X(CommAbort, "ncclCommAbort", (ncclComm_t comm))                                           \
    X(CommCuDevice, "ncclCommCuDevice", (ncclComm_t comm, int *device))                        \
    X(MemAlloc, "ncclMemAlloc", (void **ptr, size_t size))                                     \
    X(MemFree, "ncclMemFree", (void *ptr))                                                     \
    X(CommWindowRegister, "ncclCommWindowRegister",                                            \
      (ncclComm_t comm, void *buf, size_t size, ncclWindow_t *win, int flags))                 \
    X(CommWindowDeregister, "ncclCommWindowDeregister", (ncclComm_t comm, ncclWindow_t win))  \
    X(AllGather, "ncclAllGather",                                                              \
      (const void *send, void *recv, size_t count, int datatype, ncclComm_t comm, void *stream)) \
    X(TeamLsa, "ncclTeamLsa", (ncclComm_t comm))

typedef struct RtNccl {
    void *lib;
    int version;                            /* 22809 for 2.28.9 */
    ncclResult_t (*GetVersion)(int *version);
    const char *(*GetErrorString)(ncclResult_t r);
    const char *(*GetLastError)(ncclComm_t comm);
    ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
    ncclResult_t (*CommInitRankConfig)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                       ncclConfig_t *config);
    ncclResult_t (*CommGetAsyncError)(ncclComm_t comm, ncclResult_t *r);
    ncclResult_t (*CommFinalize)(ncclComm_t comm);
    ncclResult_t (*CommDestroy)(ncclComm_t comm);
    ncclResult_t (*CommAbort)(ncclComm_t comm);
    ncclResult_t (*CommCuDevice)(ncclComm_t comm, int *device);
    ncclResult_t (*MemAlloc)(void **ptr, size_t size);
    ncclResult_t (*MemFree)(void *ptr);
    ncclResult_t (*CommWindowRegister)(ncclComm_t comm, void *buf, size_t size, ncclWindow_t *win, int flags);
    ncclResult_t (*CommWindowDeregister)(ncclComm_t comm, ncclWindow_t win);
    ncclResult_t (*AllGather)(const void *send, void *recv, size_t count, int datatype, ncclComm_t comm,
                              void *stream);
    ncclTeam_t (*TeamLsa)(ncclComm_t comm);
} RtNccl;

/* The head of a window's device-side descriptor (struct ncclWindow_vidmem of
 * nccl_device/impl/core__types.h, 2.28; offsets checked against that header): what
 * ncclGetLsaPointer reads. NVRTC cannot compile NCCL 2.28's device headers (they need GNU
 * extensions: zero-length arrays in nccl::utility::loadConst, packed structs in the GIN
 * headers), so the nccl engine reads these fields from the GPU and computes the same
 * addresses on the host: base + (peer * stride4G) * 4 GiB + offset. It checks the result
 * against the address of its own buffer and refuses a layout it does not recognise. */
typedef struct RtNcclWindowHead {
    void *winHost;
    char *lsaFlatBase;
    int lsaRank;
    int worldRank;
    unsigned int stride4G;
    unsigned int mcOffset4K;
} RtNcclWindowHead;

/* Open libnccl.so.2 (CDSL_NCCL_LIB names another file), resolve every entry point, and
 * refuse a version older than 2.28. On failure *out is NULL and, with a log, a sentence
 * went there. Returns a cdsl_status. */
int rt_nccl_open(RtNccl **out, FILE *log);
void rt_nccl_close(RtNccl *n);
/* "2.28.9" */
void rt_nccl_version_text(int version, char *out, size_t len);

#endif
