/*
 * gpu_port.h - the host's proxy for a program's port channels on the GPU backends of one
 * process (p2p, nvls): what MSCCL++'s proxy thread does with its CUDA IPC transport.
 *
 * The lowering (compiler/lower/port_proxy.h) gave every (thread block, port channel) a proxy
 * unit: a wait for each of the block's requests, then the request's put, its signal to the peer,
 * its "flush done". The kernel never runs those units (emit_port.h): a block counts its requests
 * in pinned host memory (abi.h's port host words), and a thread of this process walks every
 * unit's ops once per launch (a "pass"), in order, through a transport:
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

#include <stddef.h>

#include "abi.h"
#include "gpu_state.h"

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

/* For the loaded program ir: its port words and proxy, or *out NULL when it has no port
   channels. The thread starts here and waits for passes. */
int gpu_ports_load(GpuComm *g, const IrProgram *ir, GpuPorts **out);
void gpu_ports_destroy(GpuPorts *ports);
/* Rank q's port words in its argument block. */
void gpu_ports_args(const GpuPorts *ports, int q, CdslArgs *a);
/* One launch of every rank is about to be queued: a pass with chunks of chunk_bytes. Waits
   (bounded) for the previous pass first, so that a launch never meets an earlier pass's copies. */
int gpu_ports_post(GpuPorts *ports, size_t chunk_bytes);
/* Wait until every posted pass has ended; its report, if one failed. */
int gpu_ports_drain(GpuPorts *ports);
/* After a failed run (nothing in flight on the GPUs): give up the passes, drain the lanes and
   zero every port word and count, as gpu_reset_words does for the rest. */
int gpu_ports_reset(GpuPorts *ports);

#endif
