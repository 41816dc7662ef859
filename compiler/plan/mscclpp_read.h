/*
 * mscclpp_read.h - the MSCCL++ importer's own types (a plan's gpus, channels, thread blocks and
 * decoded ops, and the importer's state) and the helpers every part of it reads a plan with
 * (mscclpp_read.c). mscclpp.h is the importer's and exporter's face to the rest of cdsl.
 */
#ifndef CDSL_MSCCLPP_READ_H
#define CDSL_MSCCLPP_READ_H

#include <stdbool.h>

#include "arena.h"
#include "diag.h"
#include "ir.h"
#include "port_proxy.h"
#include "json_pos.h"

enum {
    MSC_MAX_CHANNELS = 256,   /* channels of one type on one rank (and pairing ordinals) */
    MSC_MAX_BLOCKS = 1024,    /* thread blocks of one rank */
    MSC_MAX_OPS = 1 << 16,    /* ops of one thread block (the executor allows 64) */
    MSC_MAX_OPERANDS = 10,    /* per side, as the executor's DeviceExecutionPlan */
    MSC_MAX_OP_CHANNELS = 8,
    MSC_MAX_BARRIERS = 16,
    MSC_MAX_CHUNKS = 1 << 16, /* chunks of one buffer, before thread-block-group scaling */
    MSC_MAX_SCALE = 64,       /* lcm of the thread-block-group sizes */
    MSC_MAX_SEMAPHORES = 1024, /* semaphores of one rank (ids are IR channels of the pair (r, r)) */
    MSC_MAX_OP_SEMAPHORES = 16, /* per op, as the executor's MAX_DEVICE_SEMAPHORES */
};

typedef enum MscChan { MSC_MEMORY, MSC_PORT, MSC_SWITCH, MSC_NONE, MSC_NCHAN } MscChan;

/* A rank's channel, by type and rank-level id. */
typedef struct MscChannel {
    int peer;        /* memory/port: the other rank */
    int pair;        /* memory/port: its pairing ordinal, the k-th of this type to peer */
    char buf;        /* switch: the buffer type bound ('i', 'o', 's'); old memory/port: srcbuff */
    char peer_buf;   /* old memory/port: the peer's buffer (dstbuff) */
    int group;       /* switch: index of this channel among the rank's switch channels */
    const json_t *at;
    int sig_tb, wait_tb; /* the thread block that signals / waits on it, -1 none yet */
} MscChannel;

typedef struct MscRemote {  /* current format: gpus[r].remote_buffers[b] */
    int rank;
    char type;
    bool memory, port;
} MscRemote;

typedef struct MscGpu {
    int in, out, scratch;              /* chunk counts as written */
    MscChannel *ch[MSC_NCHAN];
    int nch[MSC_NCHAN];
    MscRemote *remote;
    int nremote;
    int nsem;                          /* gpus[r].semaphores */
    int *sem_release_tb, *sem_acquire_tb; /* [nsem]: the block that releases / acquires it, -1 none */
    const json_t *tbs;                 /* the threadblocks array */
} MscGpu;

/* A thread block's channel and remote-buffer lists, resolved to rank-level ids. */
typedef struct MscOldEntry { /* old format: one {src, dst, ctype, cids} entry */
    char src, dst;
    MscChan type;
    int *ids, nids;          /* rank-level channel ids */
} MscOldEntry;

typedef struct MscBlock {
    const json_t *at;
    int *ch[MSC_NCHAN], nch[MSC_NCHAN]; /* current: tb-local index -> rank-level id, per type */
    int *remote[2], nremote[2];         /* current: per access type (memory, port) */
    MscOldEntry *old;                   /* old format */
    int nold;
} MscBlock;

/* One operand, decoded from either generation. */
typedef enum MscWhere { MSC_LOCAL, MSC_REMOTE, MSC_MULTICAST } MscWhere;

typedef struct MscOperand {
    MscWhere where;
    int rank;          /* the buffer's owner (LOCAL: this rank) */
    char type;         /* 'i', 'o', 's' */
    long long index, size;
    const json_t *at;
} MscOperand;

/* One op, decoded: the current generation's name and everything the mapper needs. */
typedef struct MscOp {
    const char *name;  /* as written */
    const char *kind;  /* the current generation's name ("res" for old "rs") */
    const IrOpInfo *ir; /* the IR kind it reads as (ops.def's MSCCL++ column) */
    bool alt;          /* as that kind's msc_alt: relaxed, or (rre, rres) sources on peers */
    bool send;         /* res, rres: the sum then put to each remote destination */
    bool packet;       /* a packet (LL) op: mscclpp_map.c's map_packets reads it by `kind` */
    MscChan chan;      /* channel_type / ctype */
    MscOperand src[MSC_MAX_OPERANDS], dst[MSC_MAX_OPERANDS];
    int nsrc, ndst;
    int chans[MSC_MAX_OP_CHANNELS];   /* rank-level channel ids of type `chan` */
    int nchans;
    int tbg_id, tbg_size;             /* slice tbg_id of tbg_size; 1 slice when none */
    int barrier_id, nblocks;
    int sems[MSC_MAX_OP_SEMAPHORES];  /* sem_acquire, sem_release: semaphore_ids */
    const json_t *sem_at[MSC_MAX_OP_SEMAPHORES];
    int nsems;
    const json_t *at, *name_at;
} MscOp;

/* The importer's state. */
typedef struct Msc {
    Arena *a;
    Diag *d;
    JsonPos *jp;
    bool old;          /* the older generation (inputChunks, ctype, o_buff) */
    int n;
    MscGpu *gpu;
    IrProgram *p;
    bool inplace;
    int scale;         /* IR chunks per plan chunk: the lcm of thread-block-group sizes */
    bool double_scratch; /* use_double_scratch_buffer: packets alternate two scratch halves */
    bool ll;           /* protocol "LL": the executor sizes the scratch for packets (2 bytes a byte) */
    int pkt_buf;       /* the IR buffer of the plan's packets (IrBuf.packets), -1 none yet */
    int sw_barrier;    /* the switch channel (group index) gsignal/gwait use; -1 none yet */
    int pipe_iters;    /* the size class asked for: how many times each pipeline runs */
    long long pipe_unit, pipe_chunks; /* every pipeline's iter_context (unit_size 0: no pipeline) */
    const json_t *pipe_at;            /* the first pipeline's iter_context */
    int pipe_op, pipe_iter;           /* the inner op and iteration being read; -1 outside one */
    bool reuse;                       /* reuse_resources */
    int *sw_unit;      /* [n]: the thread block of each rank that uses it, -1 none */
    PortProxies proxies; /* the port channels' proxies of the rank being read (port_proxy.h) */
    /* where the op being read is, for messages */
    int rank, tb, k;
    int errors_before;
} Msc;

/* Errors at a JSON value */
void msc_error(Msc *m, const json_t *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* "not supported: OP at gpu G, threadblock T, op K: why" at the op's name. */
void msc_unsupported(Msc *m, const MscOp *op, const char *why, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Field access: NULL after an error when `required` and missing or of the wrong type. */
const json_t *msc_field(Msc *m, const json_t *obj, const char *key, json_type type, bool required,
                        const char *what);
bool msc_int(Msc *m, const json_t *obj, const char *key, long long lo, long long hi, bool required,
             long long dflt, long long *out, const char *what);
/* An optional array field: false after an error (it is there and not an array). */
bool msc_optional_list(Msc *m, const json_t *obj, const char *key, const char *what, const json_t **out);
int msc_buf_chunks(const Msc *m, char type);   /* the plan's chunk count of a buffer type */

/* jansson's type as a message says it: "an object", "a string", ... */
const char *msc_type_name(json_type t);
/* The channel type's name as the format writes it ("memory") and back; MSC_NCHAN: unknown. */
const char *msc_chan_name(MscChan c);
MscChan msc_chan_parse(const char *s, bool old);

#endif
