/*
 * ir.h - the per-rank operation sequences: what is checked, what is emitted, what is run.
 *
 * Evaluation (eval.c) resolves parameters, lets, loops, branches and def calls for every rank
 * and produces one IrProgram: for each rank the straight-line list of operations that rank
 * performs, in program order, each with the source location of the statement it came from.
 * Every later phase reads this and nothing else: the checker (happens_before.c, data_races.c, sync_schedule.c, postcondition.c)
 * proves it safe, the code generator (emit_cuda.c) prints exactly these operations per rank,
 * and the sim backend executes exactly these operations. That is how "what you check is what
 * you run" holds.
 *
 * Buffers are numbered: IR_INPUT (0), IR_OUTPUT (1), then the scratch buffers in declaration
 * order. Sizes and ranges are in chunks; a chunk's size in bytes is chosen at run time and is
 * the same for every buffer, so chunk ranges compare exactly.
 *
 * Units of program order. Each rank's list is made of units, a unit being one thread block
 * with its own program order: op.tb names it, and a rank's ops are grouped by tb (tb 0's ops,
 * then tb 1's, ...). A .cdsl program has one unit per rank (tb 0 everywhere, ntbs NULL),
 * meaning "all the rank's blocks, converged as order.c says". An imported MSCCL++ plan
 * (compiler/plan/mscclpp_import.c) has one unit per plan thread block, each run by one CUDA block:
 * ops of different units of a rank are unordered unless a barrier (IR_BARRIER) or a chain
 * through other ranks orders them, and IR_NOP is the block's __syncthreads().
 */
#ifndef CDSL_IR_H
#define CDSL_IR_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "diag.h"

enum { IR_INPUT = 0, IR_OUTPUT = 1, IR_MAX_BUFS = 8, IR_MAX_BARRIERS = 16 };

#include "chans.h"   /* IrChan: what an operation is a method of, from chans.def */
#include "colls.h"   /* Collective: what each one means, from colls.def */

/* The operation kinds, one per row of ops.def (what each does is said there). */
typedef enum IrKind {
#define IR_OP(kind, ...) IR_##kind,
#include "ops.def"
#undef IR_OP
} IrKind;

/* How many kinds (outside the enum, so that switches over IrKind stay exhaustive). */
enum {
    IR_NKINDS = 0
#define IR_OP(kind, ...) +1
#include "ops.def"
#undef IR_OP
};

/* Packet ops are numbered on a channel of their own: the k-th recv_packets from p matches
   p's k-th send_packets to this rank, apart from the signals and waits of channel 0. */
enum { IR_PKT_CHAN = 4095 };
/* A port channel's semaphore between two ranks is IR channel IR_PORT_CHAN + its pairing ordinal,
   apart from memory channels' (lower/port_proxy.h); a .cdsl program's port(p) is ordinal 0. */
enum { IR_PORT_CHAN = 2048 };
/* A block's requests to its k-th port proxy and the proxy's "flush done" are signals of the rank
   to itself on channels IR_PORT_REQ_CHAN + 2k and + 2k + 1, above a plan's semaphores (which are
   the channels 0 .. 1023 of the pair (r, r)), below IR_PORT_CHAN. */
enum { IR_PORT_REQ_CHAN = 1024, IR_PORT_MAX_PROXIES = (IR_PORT_CHAN - IR_PORT_REQ_CHAN) / 2 };
/* Why the GPU backends refuse a proxy's packet put whose source is not packets already: the
   host's proxy copies bytes. A plan's rppkt on a port channel is such a copy (its block polls
   the source packets until they are this launch's, execution_kernel.hpp:311-329), and runs. */
#define IR_PORT_PACKETS_GPU_REFUSAL "not supported on the GPU backends: packets made through a port channel from " \
                                    "data, whose proxy copies bytes and cannot write packets"
/* A plan's packets (MPKT_*) are matched by address, not by order: the importer gives each
   write the reader of each of its chunks, and the pair one id (IrOp.match) on this channel. */
enum { IR_MPKT_CHAN = 4094 };

/* Chunks [first, first+count) of buffer buf; buf < 0 means "no operand". */
typedef struct IrRange {
    int buf, first, count;
} IrRange;

/* The chunk notation of dumps, diagnostics and the emitted comments, after a buffer's name:
 * "[3]" for one chunk, "[3..5]" for chunks 3 and 4. Written into buf (IR_CHUNKS_TEXT bytes
 * hold any); returns buf. */
enum { IR_CHUNKS_TEXT = 32 };
const char *ir_chunks_text(char *buf, int first, int count);

typedef struct IrOp {
    IrKind kind;
    bool relaxed;       /* SIGNAL/SW_SIGNAL: relaxed instead of release;
                           WAIT/SW_WAIT: relaxed instead of acquire */
    /* Filled by the checker's intra-rank pass (order.c) for the code generator: */
    bool sync_before;   /* all of this rank's thread blocks must converge before this op */
    /* ... and by partition.c: */
    bool same_blocks;   /* data op: every access to its chunks that writes, or meets a write,
                           goes through the same thread blocks on every rank */
    int16_t chan;       /* SIGNAL/WAIT: which channel between the two ranks (0 in .cdsl; the
                           k-th wait on a channel matches the peer's k-th signal on it);
                           packet ops: IR_PKT_CHAN */
    int16_t barrier;    /* BARRIER: the barrier's id */
    int peer;           /* PUT/GET/SIGNAL/WAIT: the other rank; REDUCE: the rank whose src2 is
                           read (a plan's read-reduce), -1 when src2 is local; -1 otherwise */
    int tb;             /* the unit (thread block) of the rank that runs it; 0 in .cdsl */
    IrRange dst, src, src2;
    int slot;           /* PKT_SEND/PKT_RECV: where the packets go in the receiver's slots
                           (ir_packet_layout), in data chunks */
    int match;          /* MPKT_*: the id that pairs a packet write with the read of the same
                           packets (the importer's, by scratch address), unique per (writer,
                           reader) pair; -1: a write nobody reads */
    int16_t blocks;     /* BARRIER: how many of the rank's thread blocks meet there */
    int16_t thread;     /* SIGNAL/WAIT of a plan: the block's thread that does it (the
                           executor's thread j works on the op's j-th channel); -1: every op of
                           a port channel's proxy unit, one agent (port_proxy.h); 0 otherwise */
    int16_t port_peer;  /* ops port_lowered() holds for (port_proxy.h): the other rank of the
                           port channel they serve; unread elsewhere */
    Loc loc;            /* the statement (the operation's name in it) */
    const char *ctx;    /* loop iterations and def calls around it, e.g. "step=2" or
                           "p=3, in gather() called at 12:5"; NULL when there are none */
} IrOp;

/* What ops.def says of a kind (its header explains each column). The enumerators have no IR_
   prefix: a test of a property reads as one, not as a test of a kind. */
typedef enum IrOn { ON_NONE, ON_SELF, ON_PEER, ON_ALL, ON_SELF_OR_PEER } IrOn;
typedef enum IrSync { SYNC_DATA, SYNC_SIGNAL, SYNC_WAIT, SYNC_BARRIER, SYNC_NOP } IrSync;
typedef enum IrOrder { ORDER_NONE, ORDER_RELEASE, ORDER_ACQUIRE, ORDER_RELAXED } IrOrder;

typedef struct IrUse {   /* one operand column: whose memory, and whether it is written */
    IrOn on;
    bool write;
} IrUse;

typedef struct IrOpInfo {
    IrKind kind;
    const char *name;    /* "copy", "switch.store", "send_packets" */
    IrChan chan;
    const char *method;  /* .cdsl spelling, NULL: none */
    IrUse dst, src, src2;
    IrSync sync;
    IrOrder order;
    IrKind pair;         /* the kind it matches; itself when none */
    uint8_t packet;      /* 1: cdsl's packets; 2: a plan's (MSCCL++ LL) packets */
    const char *helper;  /* device library function */
    const char *msc, *msc_alt; /* MSCCL++ op names, NULL: none */
} IrOpInfo;

/* ops.def as a table, [IR_NKINDS] a "?" row for a kind out of range. */
extern const IrOpInfo ir_ops[IR_NKINDS + 1];
static inline const IrOpInfo *ir_op_info(IrKind k)
{
    return &ir_ops[(unsigned)k < IR_NKINDS ? k : IR_NKINDS];
}
/* The kind that is `method` of the channel (CH_LOCAL: a call), or NULL. */
const IrOpInfo *ir_op_by_method(IrChan chan, const char *method);
/* How many operands it takes (its .cdsl arguments but a memory order). */
static inline int ir_op_arity(const IrOpInfo *in)
{
    return (in->dst.on != ON_NONE) + (in->src.on != ON_NONE) + (in->src2.on != ON_NONE);
}
/* The MSCCL++ op `op` is written as: its kind's msc, or msc_alt for the variant (relaxed; a
   source on a peer where the kind's own is local), NULL when a plan has no such op. */
const char *ir_msc_name(const IrOp *op);
/* The kind whose MSCCL++ name is `name` (*alt: it is the kind's msc_alt), or NULL. */
const IrOpInfo *ir_op_by_msc(const char *name, bool *alt);
/* The method names of the channels chans[0..nchans), each once: the data methods, channel by
   channel in table order, then the synchronisation ones. Returns how many (<= IR_NKINDS). */
int ir_method_names(const IrChan *chans, int nchans, const char **out);

/* One operand of one op as it touches memory: its range, whose memory (ON_SELF, ON_PEER: rank
   op.peer, ON_ALL: every rank through the switch), and whether it is written. */
typedef struct IrAccess {
    IrRange range;
    IrOn on;
    bool write;
} IrAccess;

/* The memory an op touches: its operands in the order dst, src, src2 (only those it has). */
typedef struct IrEffects {
    IrAccess acc[3];
    int n;
} IrEffects;

IrEffects ir_effects(const IrOp *op);
/* The rank whose memory `on` is, for op run by `rank`; -1: every rank. */
static inline int ir_owner(IrOn on, const IrOp *op, int rank)
{
    if (on == ON_SELF_OR_PEER)
        on = op->peer >= 0 ? ON_PEER : ON_SELF;
    return on == ON_PEER ? op->peer : on == ON_ALL ? -1 : rank;
}
static inline int ir_access_rank(const IrAccess *a, const IrOp *op, int rank) { return ir_owner(a->on, op, rank); }

typedef struct IrSeq {
    IrOp *ops;
    int nops, cap;
} IrSeq;

typedef struct IrBuf {
    const char *name;   /* "input", "output" or the scratch buffer's name */
    int nchunks;
    Loc loc;            /* declaration (scratch, custom) or the program header */
    bool internal;      /* the runtime's, not the program's: the packet slots (ir_packet_layout);
                           allocated and mapped like scratch, zeroed once, never filled or
                           poisoned, named by no operation (the cdsl packet slots), or
                           named only by a plan's packet ops (IrProgram.msc_packets) */
} IrBuf;

typedef struct IrProgram {
    const char *name;   /* the program's name, as written */
    Loc loc;            /* its `program` keyword */
    Collective coll;
    const char *coll_name;
    int nranks;
    int chunks;         /* C: the `chunks` parameter, 1 when not declared */
    int root;           /* a broadcast's or reduce's root rank (-D root=R, default 0); -1 for a
                           collective without one */
    IrBuf bufs[IR_MAX_BUFS];
    int nbufs;
    IrSeq *ranks;       /* [nranks], each rank's ops grouped by unit (op.tb) */
    int *ntbs;          /* [nranks]: units (thread blocks) of each rank; NULL: one each. A
                           .cdsl program with port channels has one more per proxy */
    bool plan;          /* imported from an MSCCL++ plan: its units are the plan's thread blocks */
    int chunk_align;    /* a chunk is a multiple of this many bytes (0: 4) */
    Arena *arena;
    int msc_packets;    /* a plan's packet buffer (MSCCL++ LL, docs/mscclpp.md "Packets"), 0:
                           none. Operands address it in data chunks [0, nchunks / (2 *
                           msc_halves)); data chunk i's packets take memory chunks 2i and
                           2i + 1 (data and flag words), and with msc_halves 2 there are two
                           such halves, the launch's flag parity picking one (the executor's
                           double scratch buffer) */
    int msc_halves;
    bool in_place;      /* compiled in place (ir_in_place): no operation names the aliased
                           buffer; evaluation moved those operands into the holder (an
                           in-place MSCCL++ plan's `i` operands are moved the same way by
                           its importer: compiler/plan/mscclpp_map.c) */
    /* An MSCCL++ plan whose meaning depends on the size (pipelines, reuse_resources): the IR is
       that of one size class, exact for plan chunks of more than chunk_lo and at most chunk_hi
       bytes (a plan chunk is chunk_scale IR chunks); chunk_hi 0: every size. */
    unsigned long long chunk_lo, chunk_hi;
    int chunk_scale;
    int pipe_iters;     /* the class: how many times each pipeline runs (0: no pipelines) */
    unsigned long long pipe_unit; /* bytes of a chunk each pipeline iteration does */
    unsigned long long scratch_cap; /* reuse_resources: the largest chunk scratch keeps its layout for (0: none) */
} IrProgram;

/* Upper bounds that keep evaluation and checking bounded on absurd inputs. */
enum {
    IR_MAX_RANKS = 1024,                  /* CDSL_MAX_RANKS */
    IR_MAX_CHUNKS = 1 << 20,              /* per buffer */
    IR_MAX_OPS_TOTAL = 16 * 1024 * 1024,  /* over all ranks */
};

/* In place, as NCCL and torch define it (colls.def's aliased, holder and first): allgather's
 * input is this rank's part of its output (output[rank*C .. (rank+1)*C]), reducescatter's
 * output this rank's part of its input (input[rank*C .. (rank+1)*C]), allreduce's input its
 * output. *aliased is the buffer that lies inside *holder (either pointer may be NULL); false
 * when p was not compiled in place or its collective aliases nothing. */
bool ir_in_place(const IrProgram *p, int *aliased, int *holder);
/* The chunk of the holder where the aliased buffer starts on `rank` (rank * C, or 0). */
int ir_in_place_first(const IrProgram *p, int rank);

static inline const char *ir_kind_name(IrKind k) { return ir_op_info(k)->name; } /* "copy", "put", ... */
static inline int ir_ntbs(const IrProgram *p, int rank) { return p->ntbs ? p->ntbs[rank] : 1; }
/* The channels per pair of ranks that the program's peer signals and waits use (the largest
 * IrOp.chan + 1; 1 for a .cdsl program): what an imported plan's counters are sized from
 * (runtime/abi.h: CDSL_SYNC_WORDS, CDSL_STATE_WORDS). */
int ir_plan_channels(const IrProgram *p);
/* The first op of a port channel's proxy unit (IrOp.thread < 0), or NULL: none. */
const IrOp *ir_port_proxy_op(const IrProgram *p);
/* Port channel ordinals per pair (semaphores IR_PORT_CHAN + pair) and proxies per rank
   (requests IR_PORT_REQ_CHAN + 2k), the most any rank uses; both 0 without port channels. */
void ir_port_shape(const IrProgram *p, int *npairs, int *nproxies);
/* The rank's units that a thread block (or a .cdsl rank's grid) runs: ir_ntbs less the port
   proxies, which come after them (port_proxy.h). */
int ir_block_units(const IrProgram *p, int rank);
const char *ir_coll_name(Collective c);
/* Moves data: has operands (packet ops too). */
static inline bool ir_is_data(IrKind k)
{
    return ir_op_info(k)->dst.on != ON_NONE || ir_op_info(k)->src.on != ON_NONE;
}
static inline bool ir_is_switch(IrKind k) { return ir_op_info(k)->chan == CH_SWITCH; }
/* Packets (compiler/lower/packet_layout.c): every packet op's place in its receiver's packet slots
 * (IrOp.slot, in data chunks), and the internal buffer that holds the slots, appended to the
 * program's buffers. False (with an error) when there is no room for one more buffer. */
bool ir_packet_layout(IrProgram *p, Diag *d);
int ir_packet_buf(const IrProgram *p);     /* the packet slots' buffer, or -1 */
/* What matches like a signal / a wait (happens_before.c, sync_schedule.c): peer signals and waits,
   packets, and a plan's semaphore releases and acquires (peer: the rank itself). */
static inline bool ir_is_signal(IrKind k)
{
    return ir_op_info(k)->sync == SYNC_SIGNAL && (ir_op_info(k)->chan == CH_PEER || ir_op_info(k)->chan == CH_BLOCK);
}
static inline bool ir_is_wait(IrKind k)
{
    return ir_op_info(k)->sync == SYNC_WAIT && (ir_op_info(k)->chan == CH_PEER || ir_op_info(k)->chan == CH_BLOCK);
}
/* A plan's semaphore op: a signal or wait between thread blocks of one rank. */
static inline bool ir_is_semaphore(IrKind k) { return ir_op_info(k)->chan == CH_BLOCK && (ir_is_signal(k) || ir_is_wait(k)); }
static inline bool ir_is_packet(IrKind k) { return ir_op_info(k)->packet == 1; }
/* A plan's packets: flagged data at an address of the plan's packet buffer (IrBuf.packets). */
static inline bool ir_is_msc_packet(IrKind k) { return ir_op_info(k)->packet == 2; }
/* A plan's packet write (a relaxed signal carried with its data) / read (a relaxed wait for it). */
static inline bool ir_is_msc_packet_write(IrKind k) { return ir_is_msc_packet(k) && ir_op_info(k)->sync == SYNC_SIGNAL; }
static inline bool ir_is_msc_packet_read(IrKind k) { return ir_is_msc_packet(k) && ir_op_info(k)->sync == SYNC_WAIT; }
/* A channel's own signal or wait (peer and port channels): no data, no packets, no semaphore. */
static inline bool ir_is_chan_sync(IrKind k)
{
    return (ir_is_signal(k) || ir_is_wait(k)) && ir_op_info(k)->chan == CH_PEER && !ir_op_info(k)->packet;
}
static inline bool ir_is_chan_wait(IrKind k) { return ir_is_chan_sync(k) && ir_op_info(k)->sync == SYNC_WAIT; }
static inline bool ir_is_packet_send(IrKind k) { return ir_is_packet(k) && ir_op_info(k)->sync == SYNC_SIGNAL; }
static inline bool ir_is_packet_recv(IrKind k) { return ir_is_packet(k) && ir_op_info(k)->sync == SYNC_WAIT; }
/* A plan's packet write that no read takes (IrOp.match -1): data only, nothing to match. */
static inline bool ir_unread_packets(const IrOp *op) { return ir_is_msc_packet(op->kind) && op->match < 0; }
/* Operand k (ir_effects' order) of a plan's packet op is packets: each word carries its own
   flag, so a read that waits for a write sees that word whatever else is ordered, and no
   thread order or release is needed for it (reuse across launches is packet_rules.c's). */
static inline bool ir_packet_words(const IrOp *op, int k)
{
    switch (op->kind) {
    case IR_MPKT_PUT: return k == 0;
    case IR_MPKT_READ: return k == 1 || op->dst.buf == op->src.buf; /* or a poll in place */
    case IR_MPKT_REDUCE: return k == 2;
    default: return false;
    }
}
/* The switch's arrivals and the waits for a round of them. */
static inline bool ir_is_switch_signal(IrKind k) { return ir_op_info(k)->sync == SYNC_SIGNAL && ir_is_switch(k); }
static inline bool ir_is_switch_wait(IrKind k) { return ir_op_info(k)->sync == SYNC_WAIT && ir_is_switch(k); }
/* Carries release or acquire unless written `relaxed` (IrOp.relaxed): the peer's and the
   switch's signals and waits; packet ops are always relaxed. */
static inline bool ir_takes_order(IrKind k)
{
    return ir_op_info(k)->order == ORDER_RELEASE || ir_op_info(k)->order == ORDER_ACQUIRE;
}
/* Its one source into its destination, both the rank's own: copy. */
static inline bool ir_is_local_copy(IrKind k)
{
    const IrOpInfo *in = ir_op_info(k);
    return in->dst.on == ON_SELF && in->src.on == ON_SELF && in->src2.on == ON_NONE;
}
/* A plan's barrier: thread blocks of the rank meet there. */
static inline bool ir_is_barrier(IrKind k) { return ir_op_info(k)->sync == SYNC_BARRIER; }
/* A plan's nop or barrier: every thread of the op's thread block meets there. */
static inline bool ir_threads_meet(IrKind k) { return ir_is_barrier(k) || ir_op_info(k)->sync == SYNC_NOP; }
void ir_append(IrProgram *p, int rank, IrOp op);
/* One line per op, for --dump-ir and tests: "r0 12:5 put peer=1 output[3..4] <- output[3..4]" */
void ir_dump(const IrProgram *p, FILE *out);

#endif
