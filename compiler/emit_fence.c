/*
 * emit_fence.c - where the nvls flavour needs fence.proxy.alias.
 *
 * The rule (PTX memory model, proxy-preserved causality; CUDA guide, virtual aliasing): a
 * write through the multicast mapping of some bytes and a later access of the same bytes
 * through a unicast mapping (or the other way round) are ordered only if an alias proxy fence
 * lies on the causality path from one to the other. The path may run through other threads
 * and other ranks (release -> acquire), so one fence, executed by the accessing threads just
 * before their access, serves every writer before it. The checker has already proved that
 * every such pair is ordered by some path; this pass only decides where the path gets its
 * fence.
 *
 * Per rank, in program order, we track two "dirty" sets: bytes that may hold multicast writes
 * not yet fenced by this rank (dirty_mc), and bytes written through a unicast mapping that a
 * multicast access may read or overwrite (dirty_uc). Each holds the ranges this rank wrote
 * itself since its last fence and, after a wait (when other ranks' writes may have become
 * visible), everything the other ranks write that way anywhere in the program. Our own later
 * writes cannot be visible yet, and our own earlier ones are in the first part. An operation
 * that touches through the unicast mapping something in dirty_mc, or through the multicast
 * mapping something in dirty_uc, gets a fence before it, which empties both sets. If anything
 * is still dirty when the rank ends, a last fence goes before its end: the work after the
 * collective reads and writes every buffer through the unicast mapping.
 *
 * Sets are bitmaps over chunks, one per buffer; what a rank sets is also listed, so clearing
 * costs what setting did. The other ranks' writes are per-chunk counts over every rank minus
 * the walked rank's own.
 */
#include "emit.h"

#include <stdint.h>
#include <string.h>

typedef struct ChunkSet {
    uint64_t *bits[IR_MAX_BUFS];
    IrRange *set;          /* ranges set since the last clear */
    int nset, capset;
} ChunkSet;

/* How many writes of each chunk a set of ranks makes through one mapping. */
typedef struct ChunkCount {
    int *n[IR_MAX_BUFS];
    long total;
} ChunkCount;

struct EmitFence {
    const IrProgram *p;
    Arena *arena;
    int rank;              /* the rank being walked, -1 before the first */
    ChunkSet mc_touched;   /* read or written through the multicast mapping by any rank */
    ChunkCount mc_all, uc_all;   /* multicast / unicast (where mc_touched) writes, every rank */
    ChunkCount mc_own, uc_own;   /* the same, this rank only: the rest is the other ranks' */
    bool foreign_mc, foreign_uc; /* the dirty sets include the other ranks' writes */
    ChunkSet own_mc, own_uc;     /* this rank's writes since its last fence */
};

typedef struct Access {
    IrRange r;
    bool mc, write;
} Access;

/* The byte ranges an operation touches in the nvls flavour, and through which mapping. */
static int op_accesses(const IrOp *op, Access out[3])
{
    switch (op->kind) {
    case IR_COPY:
    case IR_PUT:
    case IR_GET:
        out[0] = (Access){op->src, false, false};
        out[1] = (Access){op->dst, false, true};
        return 2;
    case IR_REDUCE:
        out[0] = (Access){op->src, false, false};
        out[1] = (Access){op->src2, false, false};
        out[2] = (Access){op->dst, false, true};
        return 3;
    case IR_SW_STORE:
        out[0] = (Access){op->src, false, false};
        out[1] = (Access){op->dst, true, true};
        return 2;
    case IR_SW_REDUCE:
        out[0] = (Access){op->src, true, false};
        out[1] = (Access){op->dst, false, true};
        return 2;
    case IR_SW_REDUCE_STORE:
        out[0] = (Access){op->src, true, false};
        out[1] = (Access){op->dst, true, true};
        return 2;
    default:
        return 0;
    }
}

/* ---- Chunk sets ----------------------------------------------------------------------------- */

static void set_init(ChunkSet *s, const IrProgram *p, Arena *a)
{
    memset(s, 0, sizeof *s);
    for (int b = 0; b < p->nbufs; b++)
        s->bits[b] = ARENA_ARRAY(a, uint64_t, (size_t)p->bufs[b].nchunks / 64 + 1);
}

static bool valid(const ChunkSet *s, IrRange r)
{
    return r.buf >= 0 && r.buf < IR_MAX_BUFS && s->bits[r.buf] && r.count > 0;
}

static bool set_any(const ChunkSet *s, IrRange r)
{
    if (!valid(s, r))
        return false;
    const uint64_t *w = s->bits[r.buf];
    for (int i = r.first; i < r.first + r.count; i++) {
        if ((i & 63) == 0 && i + 64 <= r.first + r.count) {
            if (w[i / 64])
                return true;
            i += 63;
        } else if (w[i / 64] >> (i & 63) & 1) {
            return true;
        }
    }
    return false;
}

static void set_bits(ChunkSet *s, IrRange r, bool on)
{
    uint64_t *w = s->bits[r.buf];
    for (int i = r.first; i < r.first + r.count; i++) {
        uint64_t m = (uint64_t)1 << (i & 63);
        w[i / 64] = on ? w[i / 64] | m : w[i / 64] & ~m;
    }
}

static void set_add(ChunkSet *s, IrRange r, Arena *a)
{
    if (!valid(s, r))
        return;
    set_bits(s, r, true);
    if (s->nset == s->capset) {
        int cap = s->capset ? 2 * s->capset : 16;
        s->set = arena_grow(a, s->set, (size_t)s->nset, (size_t)cap, sizeof *s->set);
        s->capset = cap;
    }
    s->set[s->nset++] = r;
}

static void set_clear(ChunkSet *s)
{
    for (int i = 0; i < s->nset; i++)
        set_bits(s, s->set[i], false);
    s->nset = 0;
}

static bool set_empty(const ChunkSet *s)
{
    return s->nset == 0;
}

/* ---- Write counts ------------------------------------------------------------------------- */

static void count_init(ChunkCount *c, const IrProgram *p, Arena *a)
{
    c->total = 0;
    for (int b = 0; b < p->nbufs; b++)
        c->n[b] = ARENA_ARRAY(a, int, (size_t)p->bufs[b].nchunks);
}

static void count_add(ChunkCount *c, IrRange r, int delta)
{
    if (r.buf < 0 || r.buf >= IR_MAX_BUFS || !c->n[r.buf])
        return;
    for (int i = r.first; i < r.first + r.count; i++)
        c->n[r.buf][i] += delta;
    c->total += (long)delta * r.count;
}

/* Some chunk of r is written by a rank other than the walked one. */
static bool foreign_any(const ChunkCount *all, const ChunkCount *own, IrRange r)
{
    if (r.buf < 0 || r.buf >= IR_MAX_BUFS || !all->n[r.buf])
        return false;
    for (int i = r.first; i < r.first + r.count; i++)
        if (all->n[r.buf][i] > own->n[r.buf][i])
            return true;
    return false;
}

/* Add (delta 1) or remove (-1) one rank's writes to the counts. */
static void count_rank(EmitFence *f, int rank, ChunkCount *mc, ChunkCount *uc, int delta)
{
    const IrSeq *s = &f->p->ranks[rank];
    Access acc[3];
    for (int i = 0; i < s->nops; i++)
        for (int k = op_accesses(&s->ops[i], acc), j = 0; j < k; j++) {
            if (!acc[j].write)
                continue;
            if (acc[j].mc)
                count_add(mc, acc[j].r, delta);
            else if (set_any(&f->mc_touched, acc[j].r))
                count_add(uc, acc[j].r, delta);
        }
}

static void collect(EmitFence *f)
{
    const IrProgram *p = f->p;
    Access acc[3];
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++)
            for (int k = op_accesses(&p->ranks[r].ops[i], acc), j = 0; j < k; j++)
                if (acc[j].mc)
                    set_add(&f->mc_touched, acc[j].r, f->arena);
    /* Unicast writes matter only where a multicast access may meet them. */
    for (int r = 0; r < p->nranks; r++)
        count_rank(f, r, &f->mc_all, &f->uc_all, 1);
}

EmitFence *emit_fence_new(const IrProgram *p, Arena *a)
{
    EmitFence *f = ARENA_NEW(a, EmitFence);
    f->p = p;
    f->arena = a;
    f->rank = -1;
    set_init(&f->mc_touched, p, a);
    set_init(&f->own_mc, p, a);
    set_init(&f->own_uc, p, a);
    count_init(&f->mc_all, p, a);
    count_init(&f->uc_all, p, a);
    count_init(&f->mc_own, p, a);
    count_init(&f->uc_own, p, a);
    collect(f);
    return f;
}

static void fenced(EmitFence *f)
{
    f->foreign_mc = f->foreign_uc = false;
    set_clear(&f->own_mc);
    set_clear(&f->own_uc);
}

void emit_fence_begin_rank(EmitFence *f)
{
    if (f->rank >= 0)
        count_rank(f, f->rank, &f->mc_own, &f->uc_own, -1);
    f->rank++;
    count_rank(f, f->rank, &f->mc_own, &f->uc_own, 1);
    /* The work before the collective is complete and visible at the start (and the previous
       launch fenced whatever it left dirty before its end). */
    fenced(f);
}

static bool dirty_for(const EmitFence *f, const Access *x)
{
    if (x->mc)
        return (f->foreign_uc && foreign_any(&f->uc_all, &f->uc_own, x->r)) || set_any(&f->own_uc, x->r);
    return (f->foreign_mc && foreign_any(&f->mc_all, &f->mc_own, x->r)) || set_any(&f->own_mc, x->r);
}

bool emit_fence_before(EmitFence *f, const IrOp *op)
{
    Access acc[3];
    int n = op_accesses(op, acc);
    for (int j = 0; j < n; j++)
        if (dirty_for(f, &acc[j])) {
            fenced(f);
            return true;
        }
    return false;
}

void emit_fence_after(EmitFence *f, const IrOp *op)
{
    if (op->kind == IR_WAIT || op->kind == IR_SW_WAIT) {
        /* Whatever other ranks wrote before their signals may be visible from here on. */
        f->foreign_mc = f->foreign_uc = true;
        return;
    }
    Access acc[3];
    int n = op_accesses(op, acc);
    for (int j = 0; j < n; j++) {
        if (!acc[j].write)
            continue;
        if (acc[j].mc)
            set_add(&f->own_mc, acc[j].r, f->arena);
        else if (set_any(&f->mc_touched, acc[j].r))
            set_add(&f->own_uc, acc[j].r, f->arena);
    }
}

bool emit_fence_at_end(EmitFence *f)
{
    return (f->foreign_mc && f->mc_all.total > f->mc_own.total) || !set_empty(&f->own_mc) ||
           (f->foreign_uc && f->uc_all.total > f->uc_own.total) || !set_empty(&f->own_uc);
}
