/*
 * abi.h - the contract between the kernels emit_cuda.c writes and the runtime that launches them.
 *
 * The host compiles this header as C, and the device as C++: runtime/device/cdsl_device.cuh
 * includes it, and the build embeds it with the device headers (NVRTC receives it as the
 * named header "abi.h"), so the two sides cannot drift. Keep it plain C that is also C++.
 *
 * One kernel per (program, nranks, flavour, dtype): extern "C" __global__ void cdsl_main(CdslArgs).
 * The runtime launches it once per rank, on that rank's device and stream, with any grid size
 * that the device can hold co-resident with the other ranks placed on the same device; the
 * kernel spreads every data operation over gridDim.x * blockDim.x threads.
 *
 * Memory the runtime provides, all zeroed when the communicator is created and reset only after
 * a failure, so that barriers keep working across launches without host resets (counters only
 * grow; waits compare wrap-safe), and no launch ends with atomics to hand state over:
 *   sync words, on every rank, reachable by peers (peer_sync) and, for nvls, by multicast:
 *     an imported plan's (emit_plan.c):
 *     sync[CDSL_SYNC_SWITCH]        switch-barrier arrivals from all ranks
 *     sync[CDSL_SYNC_PEER + p]      arrivals that rank p made on this rank's semaphore
 *     sync[CDSL_SYNC_CHAN(n, c, p)] an imported plan's channel c >= 1 from rank p (c = 0 is
 *                                   CDSL_SYNC_PEER + p): after every other word, so that the
 *                                   capacity k (channels per pair) changes only the length,
 *                                   CDSL_SYNC_WORDS(n, k); the runtime sizes k from the plans
 *                                   it runs (ir_plan_channels)
 *     a .cdsl program's (emit_cuda.c), one word per block slot w < CDSL_SYNC_BLOCKS, since block
 *     b of a rank waits for block b of its partners (compiler/lower/partition.c says when that is
 *     enough; cdsl_device.cuh, "Block-by-block arrivals"):
 *     sync[CDSL_SYNC_BLOCK(n, 0, w)]      switch arrivals from all ranks, for block w
 *     sync[CDSL_SYNC_BLOCK(n, 1 + p, w)]  arrivals that rank p made for this rank's block w
 *   state words, private to the rank:
 *     two copies of the bases, CDSL_BASE_WORDS(n) words each: what the counters held when this
 *     launch began. Launch number L reads copy L % 2; block 0 writes copy (L + 1) % 2 (the
 *     bases plus what this launch consumed) as it leaves, so no block ever reads a copy while
 *     it is written. Word w of a copy:
 *       CDSL_STATE_SWITCH           switch arrivals this rank has waited for
 *       CDSL_STATE_PEER + p         arrivals from p this rank has consumed
 *       CDSL_STATE_GRID(n)          arrivals on the rank's grid counter
 *       CDSL_STATE_BARRIER(n) + id  arrivals on a plan's barrier id
 *       CDSL_STATE_PKT_EPOCH(n)     launches of programs with packets so far: the packets'
 *                                   epoch (runtime/device/cdsl_packets.cuh); such a launch
 *                                   consumes 1
 *       CDSL_STATE_SEM(n) + id      releases consumed on a plan's semaphore id
 *     state[CDSL_STATE_LIVE(n)]     the grid counter: block arrivals at the rank's convergences
 *     state[CDSL_STATE_LIVE(n) + 1 + id]  a plan's barrier id: its blocks' arrivals
 *     state[CDSL_STATE_SEM_LIVE(n, id)]   a plan's semaphore id: its releases (a semaphore is
 *                                   the rank's own, between its thread blocks)
 *     state[CDSL_STATE_LAUNCH(n) + b]  the launch number L, one copy per block slot b (a block
 *                                   cannot tell when the others have read a shared one): block
 *                                   b reads slot b and, as it leaves, writes L + 1 to every slot
 *                                   b + k * gridDim, so that a launch with another grid size
 *                                   finds them all equal. Hence at most CDSL_MAX_BLOCKS blocks.
 *     state[CDSL_STATE_BLOCK_BASE(n, src, w)]  the base of block word (src, w): the arrivals
 *                                   consumed on it. Only block w reads or writes it in a launch
 *                                   (it adds what the launch consumed as it leaves), so one copy
 *                                   will do; words and bases of slots the grid does not reach
 *                                   stay as they are, and agree for a later, larger grid.
 *                                   A .cdsl program's grid has at most CDSL_SYNC_BLOCKS blocks.
 *     state[CDSL_STATE_CHAN(n, c, p)]  the base of a plan's channel c >= 1 from p: the arrivals
 *                                   consumed on it. A plan waits on a channel from one thread
 *                                   block only (the importer refuses two), which adds what it
 *                                   consumed as it leaves: one copy, as for block words, and
 *                                   after every other word, CDSL_STATE_WORDS(n, k) long.
 *   port words (a program with port channels, compiler/lower/port_proxy.h; made and zeroed when
 *     it is loaded, runtime/engines/gpu_port.c), for P port channel ordinals per pair and K proxies
 *     per rank:
 *     port[CDSL_PORT_ARRIVED(n, pair, p)]      the signals rank p's proxy made on port channel
 *                                             `pair` to this rank (the proxy writes the count)
 *     port[CDSL_PORT_CONSUMED(n, P, pair, p)]  the waits this rank made on it (one waiting block)
 *     port[CDSL_PORT_REQ_MADE(n, P, k)]        requests the block of proxy k made
 *     port[CDSL_PORT_FLUSH_MADE(n, P, k)]      flushes it waited for
 *   port host words, in pinned host memory mapped into the device (MSCCL++'s FIFO lies there too):
 *     port_host[CDSL_PORT_HOST_REQ(k)]    the block's request count, a release store at system scope
 *     port_host[CDSL_PORT_HOST_FLUSHED(k)] flushes the proxy has finished, written by the host
 *     port_host[CDSL_PORT_HOST_FLAG(k)]    a plan with packets: the packet flag of the launch that
 *                                         made the latest request (stored before its count)
 *   error record: error[0] = 1 when a bounded spin ran out, error[1] rank, error[2] the .cdsl
 *     line of the wait, error[3] the counter (CDSL_SYNC_SWITCH or CDSL_SYNC_PEER + p), or
 *     CDSL_PKT_COUNTER(p) for a receive of rank p's packets.
 */
#ifndef CDSL_ABI_H
#define CDSL_ABI_H

#define CDSL_ABI_VERSION 6
#define CDSL_ABI_MAX_BUFS 8

enum {
    CDSL_SYNC_SWITCH = 0,
    CDSL_SYNC_PEER = 1,          /* + p */
    CDSL_STATE_SWITCH = 0,
    CDSL_STATE_PEER = 1,         /* + p */
};
#define CDSL_STATE_GRID(nranks) (1 + (nranks))
#define CDSL_PLAN_BARRIERS 16      /* barrier ids of a rank (MSCCL++'s MAX_DEVICE_SYNCERS) */
#define CDSL_PLAN_SEMAPHORES 128   /* semaphores of a rank an imported plan may use */
#define CDSL_MAX_BLOCKS 1024       /* blocks per rank the runtime may launch */
#define CDSL_ARGS_RANKS 16         /* ranks whose addresses the argument block carries */
#define CDSL_STATE_BARRIER(nranks) (3 + (nranks))
#define CDSL_SYNC_BLOCKS 256        /* blocks of a .cdsl program's grid, each with its own words */
#define CDSL_SYNC_PLAN_WORDS(nranks) (1 + (nranks))
#define CDSL_SYNC_BLOCK(nranks, src, w) (CDSL_SYNC_PLAN_WORDS(nranks) + (src) * CDSL_SYNC_BLOCKS + (w))
/* The sync words every program may use; a plan's channels c >= 1 follow them. */
#define CDSL_SYNC_FIXED_WORDS(nranks) (CDSL_SYNC_PLAN_WORDS(nranks) + (1 + (nranks)) * CDSL_SYNC_BLOCKS)
#define CDSL_SYNC_CHAN(nranks, c, p) \
    ((c) ? CDSL_SYNC_FIXED_WORDS(nranks) + (nranks) * ((c) - 1) + (p) : CDSL_SYNC_PEER + (p))
/* Sync words for k channels per pair (k >= 1; a .cdsl program needs 1). */
#define CDSL_SYNC_WORDS(nranks, k) (CDSL_SYNC_FIXED_WORDS(nranks) + (nranks) * ((k) - 1))
#define CDSL_STATE_PKT_EPOCH(nranks) (3 + (nranks) + CDSL_PLAN_BARRIERS)
#define CDSL_STATE_SEM(nranks) (CDSL_STATE_PKT_EPOCH(nranks) + 1)
#define CDSL_BASE_WORDS(nranks) (CDSL_STATE_SEM(nranks) + CDSL_PLAN_SEMAPHORES)
#define CDSL_STATE_LIVE(nranks) (2 * CDSL_BASE_WORDS(nranks))
#define CDSL_STATE_SEM_LIVE(nranks, id) (CDSL_STATE_LIVE(nranks) + 1 + CDSL_PLAN_BARRIERS + (id))
#define CDSL_STATE_LAUNCH(nranks) (CDSL_STATE_LIVE(nranks) + 1 + CDSL_PLAN_BARRIERS + CDSL_PLAN_SEMAPHORES)
#define CDSL_STATE_BLOCK_BASE(nranks, src, w) \
    (CDSL_STATE_LAUNCH(nranks) + CDSL_MAX_BLOCKS + (src) * CDSL_SYNC_BLOCKS + (w))
#define CDSL_STATE_FIXED_WORDS(nranks) (CDSL_STATE_BLOCK_BASE(nranks, 1 + (nranks), 0))
#define CDSL_STATE_CHAN(nranks, c, p) \
    ((c) ? CDSL_STATE_FIXED_WORDS(nranks) + (nranks) * ((c) - 1) + (p) : CDSL_STATE_PEER + (p))
#define CDSL_STATE_WORDS(nranks, k) (CDSL_STATE_FIXED_WORDS(nranks) + (nranks) * ((k) - 1))
#define CDSL_PKT_COUNTER(p) (0x80000000u + (unsigned)(p))
/* A packet's 32-bit flag in epoch e: 1 .. 2^32 - 1, never the 0 of zeroed slots, and different
 * for epochs e and e + 2, which share a parity slot (sim and the device code alike). */
#define CDSL_PKT_FLAG(e) ((unsigned)((unsigned long long)(e) % 0xffffffffull) + 1u)
#define CDSL_ERROR_WORDS 4
/* Port words (see above). Each proxy's host words have a 64-byte line of their own. */
#define CDSL_PORT_ARRIVED(nranks, pair, p) ((pair) * (nranks) + (p))
#define CDSL_PORT_CONSUMED(nranks, npairs, pair, p) (((npairs) + (pair)) * (nranks) + (p))
#define CDSL_PORT_REQ_MADE(nranks, npairs, k) (2 * (npairs) * (nranks) + 2 * (k))
#define CDSL_PORT_FLUSH_MADE(nranks, npairs, k) (2 * (npairs) * (nranks) + 2 * (k) + 1)
#define CDSL_PORT_WORDS(nranks, npairs, nprox) (2 * (npairs) * (nranks) + 2 * (nprox))
#define CDSL_PORT_HOST_REQ(k) (8 * (k))
#define CDSL_PORT_HOST_FLUSHED(k) (8 * (k) + 1)
#define CDSL_PORT_HOST_FLAG(k) (8 * (k) + 2)     /* a plan with packets: the launch's packet flag */
#define CDSL_PORT_HOST_WORDS(nprox) (8 * (nprox))
/* error[3] for a wait on proxy k's flush, and on a port channel's semaphore from rank p */
#define CDSL_PORT_FLUSH_COUNTER(k) (0xA0000000u + (unsigned)(k))
#define CDSL_PORT_SEM_COUNTER(p) (0xB0000000u + (unsigned)(p))

/* The argument block, by value (a kernel's parameters are at most 4 KiB: 1.4 KiB here). Pointers
 * are device addresses valid on the rank's device. Up to CDSL_ARGS_RANKS ranks, every rank's
 * buffer and sync addresses are in the block itself (peer_bufs, peer_syncs), so that a remote
 * store or signal does not first wait for a load from a table; the tables peer_buf and
 * peer_sync hold the same for any rank count, and the kernels of larger programs use them. */
typedef struct CdslArgs {
    unsigned long long chunk_bytes;   /* bytes per chunk, a multiple of 4 */
    unsigned long long spin_limit;    /* polls before a wait gives up */
    int rank, nranks;
    char *buf[8];                     /* this rank's buffers (input, output, scratch) */
    char *const *peer_buf;            /* [nranks*8]: rank q's buffer b at q*8+b */
    char *mc_buf[8];                  /* nvls: multicast address of each buffer */
    unsigned long long *sync;         /* this rank's sync words */
    unsigned long long *const *peer_sync; /* [nranks]: every rank's sync words */
    unsigned long long *mc_sync;      /* nvls: multicast address of the sync words */
    unsigned long long *state;        /* this rank's private state words */
    unsigned int *error;              /* the error record */
    unsigned long long *port;         /* this rank's port words; NULL without port channels */
    unsigned long long *port_host;    /* its port host words (a device address of host memory) */
    char *peer_bufs[CDSL_ARGS_RANKS][CDSL_ABI_MAX_BUFS]; /* rank q's buffer b, q < CDSL_ARGS_RANKS */
    unsigned long long *peer_syncs[CDSL_ARGS_RANKS];     /* rank q's sync words */
} CdslArgs;

#endif
