/*
 * ir.h - the per-rank operation sequences: what is checked, what is emitted, what is run.
 *
 * Evaluation (eval.c) resolves parameters, lets, loops, branches and def calls for every rank
 * and produces one IrProgram: for each rank the straight-line list of operations that rank
 * performs, in program order, each with the source location of the statement it came from.
 * Every later phase reads this and nothing else: the checker (hb.c, race.c, sync.c, post.c)
 * proves it safe, the code generator (emit_cuda.c) prints exactly these operations per rank,
 * and the sim backend executes exactly these operations. That is how "what you check is what
 * you run" holds.
 *
 * Buffers are numbered: IR_INPUT (0), IR_OUTPUT (1), then the scratch buffers in declaration
 * order. Sizes and ranges are in chunks; a chunk's size in bytes is chosen at run time and is
 * the same for every buffer, so chunk ranges compare exactly.
 */
#ifndef CDSL_IR_H
#define CDSL_IR_H

#include <stdbool.h>

#include "arena.h"
#include "diag.h"

enum { IR_INPUT = 0, IR_OUTPUT = 1, IR_MAX_BUFS = 8 };

typedef enum Collective {
    COLL_ALLGATHER,
    COLL_REDUCESCATTER,
    COLL_ALLREDUCE,
    COLL_BARRIER,
    COLL_CUSTOM,
} Collective;

typedef enum IrKind {
    IR_COPY,            /* dst = src, both local */
    IR_REDUCE,          /* dst = src + src2, all local, element-wise */
    IR_PUT,             /* dst on rank `peer` = local src */
    IR_GET,             /* local dst = src on rank `peer` */
    IR_SIGNAL,          /* one arrival on `peer`'s semaphore for this rank */
    IR_WAIT,            /* consume one arrival that `peer` made for this rank */
    IR_SW_STORE,        /* dst on every rank = local src (multimem.st) */
    IR_SW_REDUCE,       /* local dst = sum over every rank of src (multimem.ld_reduce) */
    IR_SW_REDUCE_STORE, /* dst on every rank = sum over every rank of src */
    IR_SW_SIGNAL,       /* one arrival of this rank on the switch barrier */
    IR_SW_WAIT,         /* wait for every rank's arrival with the same ordinal */
} IrKind;

/* Chunks [first, first+count) of buffer buf; buf < 0 means "no operand". */
typedef struct IrRange {
    int buf, first, count;
} IrRange;

typedef struct IrOp {
    IrKind kind;
    bool relaxed;       /* SIGNAL/SW_SIGNAL: relaxed instead of release;
                           WAIT/SW_WAIT: relaxed instead of acquire */
    int peer;           /* PUT/GET/SIGNAL/WAIT: the other rank; -1 otherwise */
    IrRange dst, src, src2;
    Loc loc;            /* the statement (the operation's name in it) */
    const char *ctx;    /* loop iterations and def calls around it, e.g. "step=2" or
                           "p=3, in gather() called at 12:5"; NULL when there are none */
    /* Filled by the checker's intra-rank pass (order.c) for the code generator: */
    bool sync_before;   /* all of this rank's thread blocks must converge before this op */
} IrOp;

typedef struct IrSeq {
    IrOp *ops;
    int nops, cap;
} IrSeq;

typedef struct IrBuf {
    const char *name;   /* "input", "output" or the scratch buffer's name */
    int nchunks;
    Loc loc;            /* declaration (scratch, custom) or the program header */
} IrBuf;

typedef struct IrProgram {
    const char *name;   /* the program's name, as written */
    Loc loc;            /* its `program` keyword */
    Collective coll;
    const char *coll_name;
    int nranks;
    int chunks;         /* C: the `chunks` parameter, 1 when not declared */
    IrBuf bufs[IR_MAX_BUFS];
    int nbufs;
    IrSeq *ranks;       /* [nranks] */
    Arena *arena;
    bool in_place;      /* compiled in place (ir_in_place): no operation names the aliased
                           buffer; evaluation moved those operands into the holder */
} IrProgram;

/* Upper bounds that keep evaluation and checking bounded on absurd inputs. */
enum {
    IR_MAX_RANKS = 1024,                  /* CDSL_MAX_RANKS */
    IR_MAX_CHUNKS = 1 << 20,              /* per buffer */
    IR_MAX_OPS_TOTAL = 16 * 1024 * 1024,  /* over all ranks */
};

/* In place, as NCCL and torch define it: allgather's input is this rank's part of its output
 * (output[rank*C .. (rank+1)*C]), reducescatter's output this rank's part of its input
 * (input[rank*C .. (rank+1)*C]), allreduce's input its output. *aliased is the buffer that lies
 * inside *holder (either pointer may be NULL); false when p was not compiled in place. */
bool ir_in_place(const IrProgram *p, int *aliased, int *holder);
/* The chunk of the holder where the aliased buffer starts on `rank` (rank * C, or 0). */
int ir_in_place_first(const IrProgram *p, int rank);

const char *ir_kind_name(IrKind k);        /* "copy", "put", "switch.store", ... */
const char *ir_coll_name(Collective c);
bool ir_is_data(IrKind k);                 /* moves data: COPY..GET, SW_STORE..SW_REDUCE_STORE */
bool ir_is_switch(IrKind k);
void ir_append(IrProgram *p, int rank, IrOp op);
/* One line per op, for --dump-ir and tests: "r0 12:5 put peer=1 output[3..4] <- output[3..4]" */
void ir_dump(const IrProgram *p, FILE *out);

#endif
