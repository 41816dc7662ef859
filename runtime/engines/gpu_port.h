/*
 * gpu_port.h - the host's proxy for a program's port channels on the GPU: what MSCCL++'s proxy
 * thread does with its CUDA IPC transport. The backends of one process (p2p, nvls) run one proxy
 * for every rank; the per-rank engines (ipc, nccl) one in each rank's process (PortSite).
 *
 * The lowering (compiler/lower/port_proxy.h) gave every (thread block, port channel) a proxy
 * unit: a wait for each of the block's requests, then the request's put, its signal to the peer,
 * its "flush done". The kernel never runs those units (emit_port.h): a block counts its requests
 * in pinned host memory (abi.h's port host words), and a thread of this process walks every
 * unit of the ranks it serves once per launch (a "pass"), in order, through a transport:
 *   put     a copy on the unit's lane, a stream the copy engine serves
 *   signal  the peer's port word for this channel set to the count of signals so far, on the
 *           same lane after the copies before it (a stream write-value, with its memory barrier)
 *   flush   a mark on the lane; once everything before it has completed, the unit's "flushes
 *           done" host word, which the block waits for
 * which keeps the four promises of docs/multinode.md, so the program runs as it was checked.
 * The transport is a table (PortTransport), so that another one (across hosts: NCCL's proxy or
 * GIN, docs/multinode.md) replaces only it.
 *
 * A pass ends when every unit has walked its ops and its lane has drained; a run of the program
 * ends when its kernels and its pass have. Every wait of the thread is bounded: no progress on
 * any unit for the bound (2 x spin_limit microseconds, as the copy engine's watchdog counts)
 * ends the pass with a report naming the unit's op and what it waited for.
 */
#ifndef CDSL_GPU_PORT_H
#define CDSL_GPU_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "abi.h"
#include "cuda_drv.h"
#include "program.h"

typedef struct GpuPorts GpuPorts;

/* How a proxy moves data and signals. A lane is one unit's ordered queue. Each returns 0, or a
   reported cdsl status. */
typedef struct PortTransport {
    const char *name;
    /* bytes from rank from's buffer sbuf at soff to rank to's buffer dbuf at doff, after what
       the lane holds */
    int (*put)(void *self, int lane, int from, int to, int dbuf, size_t doff, int sbuf, size_t soff, size_t bytes);
    /* rank to's port word `word` := value, after what the lane holds has landed */
    int (*signal)(void *self, int lane, int to, int word, unsigned long long value);
    /* remember what the lane holds now */
    int (*mark)(void *self, int lane);
    /* 1 once all of it up to the lane's last mark has completed, 0 not yet, else a status */
    int (*reached)(void *self, int lane);
} PortTransport;

/* Where a proxy runs: the ranks whose blocks it serves (first to last), and how this process
   reaches every rank's memory. The single-process backends serve every rank, with every
   device's context in the process (gpu_common.c); a per-rank engine (ipc, nccl) serves its own
   rank, and reaches its peers' buffers and port words through the mappings of their symmetric
   regions (gpu_rank.c), so nothing here assumes that the ranks share a process. */
typedef struct PortSite {
    CuDrv *cu;
    FILE *log;
    int first, last;
    unsigned long long spin_limit;
    void *self;
    /* make rank q's context current on the calling thread (q is served, or the first) */
    int (*use)(void *self, int q);
    /* report a failed driver call made for rank q; returns the status */
    int (*fail)(void *self, int q, CUresult r, const char *what);
    /* rank q's buffer b, as this process reaches it */
    CUdeviceptr (*buf)(void *self, int q, int b);
    /* rank q's port words as this process reaches them (in its symmetric region), or 0 for
       every q when the proxy makes them itself (it then serves every rank) */
    CUdeviceptr (*words)(void *self, int q);
    /* whether ranks p and q are on one device (a write-value between them cannot be refused) */
    bool (*same_device)(void *self, int p, int q);
} PortSite;

/* For the loaded program ir: the proxy of the site's ranks, its port words and lanes, or *out
   NULL when those ranks have no port channels. The thread starts here and waits for passes. */
int gpu_ports_load(const PortSite *site, const IrProgram *ir, GpuPorts **out);
void gpu_ports_destroy(GpuPorts *ports);
/* Rank q's port words in its argument block (q served). */
void gpu_ports_args(const GpuPorts *ports, int q, CdslArgs *a);
/* One launch of every rank served is about to be queued: a pass with chunks of chunk_bytes.
   Waits (bounded) for the previous pass first, so that a launch never meets an earlier pass's
   copies. `started`, if not 0, is recorded on the launch's stream just before its kernel: the
   pass does not count its wait for the first request until the stream has reached it. */
int gpu_ports_post(GpuPorts *ports, size_t chunk_bytes, CUevent started);
/* Wait until every posted pass has ended; its report, if one failed. */
int gpu_ports_drain(GpuPorts *ports);
/* After a failed run (nothing in flight on the GPUs), or when the port words moved: give up the
   passes, drain the lanes, read the site's word addresses again and zero the words and counts of
   the ranks served, as gpu_reset_words does for the rest. */
int gpu_ports_reset(GpuPorts *ports);

#endif
