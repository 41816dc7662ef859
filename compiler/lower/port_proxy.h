/*
 * port_proxy.h - a port channel's operations lowered to what runs them: the issuing thread block
 * and a proxy that works through its requests in order.
 *
 * On a port channel (MSCCL++'s PortChannel) a thread block does not move data itself: put,
 * signal and flush push a request into a FIFO, and a proxy (MSCCL++'s, a CPU thread) takes the
 * requests in order, copies, signals the peer after the copies before it, and reports flushes
 * done. So a put's source is read, and its destination written, at some time after the put was
 * issued and before the next flush of its channel completes. The lowering makes that explicit in
 * the IR, so that the checker, the sim and the dumps need nothing new: every (thread block,
 * channel) pair gets a proxy unit of its own, after the rank's thread blocks, and
 *   put(dst, src)  the block: a release signal to the proxy (the FIFO push is a release store,
 *                  include/mscclpp/fifo_device.hpp:133); the proxy: the acquire wait for it,
 *                  then the put
 *   signal()       the block: the same request; the proxy: its wait, then a release signal to
 *                  the peer on the port channel's semaphore (the proxy signals after the puts it
 *                  took before)
 *   wait()         the block: an acquire wait on the port channel's semaphore
 *                  (include/mscclpp/semaphore_device.hpp:48)
 *   flush()        the block: the request, then an acquire wait for the proxy's release signal
 *                  that it got there (port_channel_device.hpp:28, waitFlush)
 * A proxy per (block, channel) orders only what MSCCL++ promises: the requests of one channel
 * from one thread block. The signals between a block and its proxy are signals of the rank to
 * itself (IrOp.peer is the rank), on channels of their own: IR_PORT_REQ_CHAN + 2k (requests)
 * and + 2k + 1 (flushes done) for the rank's k-th proxy (ir.h), apart from a plan's semaphores. A port channel's semaphore is IR channel
 * IR_PORT_CHAN (ir.h) + its pairing ordinal, apart from memory channels' ordinals.
 */
#ifndef CDSL_PORT_PROXY_H
#define CDSL_PORT_PROXY_H

#include <stdbool.h>

#include "ir.h"


typedef struct PortProxy {
    int issuer, peer, pair;     /* the thread block it serves, and the channel (peer, ordinal) */
    IrSeq ops;                  /* its ops, appended as a unit after the rank's blocks */
} PortProxy;

/* One rank's proxies while its blocks are read. */
typedef struct PortProxies {
    int rank;
    PortProxy *v;
    int n, cap;
} PortProxies;

/* What a port operation does besides its request; issue is the block's op as a template (tb,
   thread, loc, ctx); pair is the channel's ordinal among the rank's port channels to peer. */
typedef enum PortWork { PORT_PUT = 1, PORT_SIGNAL = 2, PORT_FLUSH = 4 } PortWork;

/* put (work PORT_PUT: the proxy does `put`, an IR_PUT, or an IR_MPKT_PUT of packets, with its
   kind, ranges, peer and match), signal, flush, or their fusions (MSCCL++'s pws = PORT_PUT |
   PORT_SIGNAL, pwsf = all three). False, with nothing added, when the rank already has
   IR_PORT_MAX_PROXIES proxies and this would be another. */
bool port_request(IrProgram *p, PortProxies *pp, IrOp issue, int peer, int pair, unsigned work, const IrOp *put);
/* wait(): the block's wait on the channel's semaphore. */
void port_wait(IrProgram *p, int rank, IrOp issue, int peer, int pair);
/* After the rank's blocks: its proxies as units, and p->ntbs[rank] counting them. */
void port_finish(IrProgram *p, PortProxies *pp);
/* Made by this lowering, not written with a memory order: the proxy's ops, a block's requests
   and flush waits (signals of the rank to itself), a block's wait on a port semaphore. */
static inline bool port_lowered(const IrOp *op, int rank)
{
    bool sync = ir_is_chan_sync(op->kind);
    return op->thread < 0 || (sync && op->peer == rank) || (sync && op->chan >= IR_PORT_CHAN);
}

#endif
