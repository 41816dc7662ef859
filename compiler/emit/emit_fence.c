/*
 * emit_fence.c - where the nvls flavour needs fence.proxy.alias.
 *
 * The rule (PTX ISA, memory consistency model, "proxy-preserved base causality order"; CUDA
 * programming guide, virtual aliasing). A buffer's multicast mapping and its unicast mapping
 * are virtual aliases of the same bytes. Two accesses to the same bytes through different
 * mappings, at least one of them a write, are ordered only if an alias proxy fence lies on the
 * causality path from the first to the second; reads count as much as writes (unfenced, a read
 * may see the write that follows it). So a fence is due between
 *     a multicast write (switch.store, switch.reduce_store) and a later unicast read or write,
 *     a multicast read (the ld_reduce of switch.reduce, switch.reduce_store) and a later
 *       unicast write,
 *     a unicast write and a later multicast read or write,
 *     a unicast read and a later multicast write;
 * two reads need none. The path may run through other threads and other ranks (signal -> wait,
 * relaxed ones too), so one fence, executed by the accessing threads just before their access,
 * serves every access before it on that thread's path. The checker has already proved that
 * every such pair is ordered by some path; this pass only decides where the path gets its
 * fence.
 *
 * Per rank, in program order, we track for each mapping two "dirty" sets: its writes, and its
 * accesses (reads and writes). Each holds the ranges this rank accessed that way itself since
 * its last fence and, after a wait (when other ranks' accesses may lie on the path), everything
 * the other ranks do that way anywhere in the program. Our own later accesses cannot be on the
 * path yet, and our own earlier ones are in the first part. An operation that reads through
 * one mapping something in the other mapping's writes, or writes through one mapping something
 * in the other's accesses, gets a fence before it, which empties every set.
 *
 * The boundary events (docs/language.md): the work before the collective (the rank's start) and the
 * work after it (its end) read and write every buffer through the unicast mapping.
 *   - Start, this rank's own earlier work: no fence. It is stream-ordered before this rank's
 *     launch; the guide keeps writes through one alias incoherent with another only until the
 *     writing device operation (grid, memcpy, ...) completes, and the PTX ISA (memory
 *     synchronisation) lets such launch ordering take part in proxy-preserved base causality
 *     order. What it read, it has read by then.
 *   - Start, the other ranks' earlier work: a fence. That work reaches this rank only through
 *     their starts and a wait (the entry barrier), and this grid may already be running when it
 *     completes (each rank is launched on its own stream, repeated runs back to back); the guide
 *     calls a grid that was present before a writing operation and reads after it incoherent,
 *     whatever orders them. So it counts as the other ranks' unicast reads and writes of every
 *     byte: after a wait, a multicast access gets a fence, until a fence has followed a wait for
 *     each other rank, directly or at the switch (a switch wait follows every rank's start);
 *     that fence then lies on the path from the rank's start to everything after it. Paths
 *     through a third rank are not worked out: at worst one fence more. In a checked program of
 *     several ranks no multicast access comes before a wait, so this fence comes before the
 *     rank's first multicast access and serves its own earlier work as well.
 *   - End: the work after the collective reads and writes through the unicast mapping, so a
 *     last fence goes before the rank's end if a multicast access may still be unfenced: our own
 *     since the last fence or, after a wait, any other rank's. (For our own, launch order would
 *     do, as at the start; the fence costs one instruction and no launch leaves its own
 *     multicast traffic unfenced.) Unicast accesses left at the end need none: the next launch's
 *     start covers them on every rank.
 *
 * Sets are bitmaps over chunks, one per buffer; what a rank sets is also listed, so clearing
 * costs what setting did. For the other ranks, each chunk records who accesses it one way over
 * the whole program: nobody, one rank, or several. Unicast accesses are tracked only in chunks
 * some multicast access touches: elsewhere they never meet the other mapping.
 */
#include "emit_fence.h"

#include <stdint.h>
#include <string.h>

enum { UC, MC, NMAP };             /* the mapping an access goes through */
enum { WRITES, ACCESSES, NKIND };  /* what a set holds: writes; reads and writes */

typedef struct ChunkSet {
    uint64_t *bits[IR_MAX_BUFS];
    IrRange *set;          /* ranges set since the last clear */
    int nset, capset;
} ChunkSet;

/* Who accesses each chunk one way, over the whole program: 0 nobody, r + 1 rank r alone, -1
   several ranks. */
typedef struct ChunkWho {
    int *who[IR_MAX_BUFS];
} ChunkWho;

struct EmitFence {
    const IrProgram *p;
    Arena *arena;
    int rank;                       /* the rank being walked, -1 before the first */
    ChunkSet mc_touched;            /* read or written through the multicast mapping by any rank */
    ChunkWho all[NMAP][NKIND];      /* [mapping][writes / accesses], every rank */
    int mc_ranks;                   /* ranks that access anything through the multicast mapping */
    bool *uses_mc;                  /* [nranks]: this one does */
    ChunkSet own[NMAP][NKIND];      /* the walked rank's since its last fence */
    bool foreign;                   /* a wait since the last fence: other ranks' accesses count */
    int *waited;                    /* [nranks]: rank + 1 once the walked rank waited for it */
    bool waited_all;                /* it did a switch wait: for every rank */
    int nwaited, ncovered;          /* other ranks waited for; of those, before the last fence */
};

typedef struct Access {
    IrRange r;
    bool mc, write;
} Access;

static int mapping(const Access *x)
{
    return x->mc ? MC : UC;
}

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
    case IR_PKT_SEND: /* packets: the local operand through the unicast mapping (the slots are
                         internal: never reached through the multicast one) */
        out[0] = (Access){op->src, false, false};
        return 1;
    case IR_PKT_RECV:
        out[0] = (Access){op->dst, false, true};
        return 1;
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

/* ---- Who accesses a chunk -------------------------------------------------------------------- */

static void who_init(ChunkWho *w, const IrProgram *p, Arena *a)
{
    for (int b = 0; b < p->nbufs; b++)
        w->who[b] = ARENA_ARRAY(a, int, (size_t)p->bufs[b].nchunks);
}

static bool who_valid(const ChunkWho *w, IrRange r)
{
    return r.buf >= 0 && r.buf < IR_MAX_BUFS && w->who[r.buf];
}

static void who_add(ChunkWho *w, IrRange r, int rank)
{
    if (!who_valid(w, r))
        return;
    for (int *c = w->who[r.buf] + r.first; c < w->who[r.buf] + r.first + r.count; c++)
        *c = *c == 0 || *c == rank + 1 ? rank + 1 : -1;
}

/* Some chunk of r is accessed by a rank other than `rank`. */
static bool who_other(const ChunkWho *w, IrRange r, int rank)
{
    if (!who_valid(w, r))
        return false;
    for (const int *c = w->who[r.buf] + r.first; c < w->who[r.buf] + r.first + r.count; c++)
        if (*c != 0 && *c != rank + 1)
            return true;
    return false;
}

/* ---- The walk ------------------------------------------------------------------------------- */

/* Unicast accesses matter only where a multicast access may meet them. */
static bool tracked(const EmitFence *f, const Access *x)
{
    return x->mc || set_any(&f->mc_touched, x->r);
}

/* Which chunks and ranks the multicast mapping touches at all. */
static void find_multicast(EmitFence *f)
{
    const IrProgram *p = f->p;
    Access acc[3];
    for (int r = 0; r < p->nranks; r++) {
        for (int i = 0; i < p->ranks[r].nops; i++)
            for (int k = op_accesses(&p->ranks[r].ops[i], acc), j = 0; j < k; j++)
                if (acc[j].mc) {
                    set_add(&f->mc_touched, acc[j].r, f->arena);
                    f->uses_mc[r] = true;
                }
        f->mc_ranks += f->uses_mc[r];
    }
}

/* Who accesses each tracked chunk, each way, over the whole program. */
static void find_accessors(EmitFence *f)
{
    const IrProgram *p = f->p;
    Access acc[3];
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++)
            for (int k = op_accesses(&p->ranks[r].ops[i], acc), j = 0; j < k; j++) {
                if (!tracked(f, &acc[j]))
                    continue;
                who_add(&f->all[mapping(&acc[j])][ACCESSES], acc[j].r, r);
                if (acc[j].write)
                    who_add(&f->all[mapping(&acc[j])][WRITES], acc[j].r, r);
            }
}

EmitFence *emit_fence_new(const IrProgram *p, Arena *a)
{
    EmitFence *f = ARENA_NEW(a, EmitFence);
    f->p = p;
    f->arena = a;
    f->rank = -1;
    f->uses_mc = ARENA_ARRAY(a, bool, (size_t)p->nranks);
    f->waited = ARENA_ARRAY(a, int, (size_t)p->nranks);
    set_init(&f->mc_touched, p, a);
    for (int m = 0; m < NMAP; m++)
        for (int k = 0; k < NKIND; k++) {
            set_init(&f->own[m][k], p, a);
            who_init(&f->all[m][k], p, a);
        }
    find_multicast(f);
    find_accessors(f);
    return f;
}

static void fenced(EmitFence *f)
{
    f->foreign = false;
    f->ncovered = f->nwaited;
    for (int m = 0; m < NMAP; m++)
        for (int k = 0; k < NKIND; k++)
            set_clear(&f->own[m][k]);
}

void emit_fence_begin_rank(EmitFence *f)
{
    f->rank++;
    f->waited_all = false;
    f->nwaited = 0;
    fenced(f);   /* this rank's own earlier work needs no fence: see the start, above */
}

/* Why a fence must come before access x, or NULL. */
static const char *dirty_for(const EmitFence *f, const Access *x)
{
    static const char *const why[NMAP][2] = {
        [UC] = {"bytes read below may hold writes through the multicast mapping",
                "bytes written below may have been accessed through the multicast mapping"},
        [MC] = {"bytes read below may hold writes through the unicast mapping",
                "bytes written below may have been accessed through the unicast mapping"},
    };
    int other = x->mc ? UC : MC, kind = x->write ? ACCESSES : WRITES;
    if (set_any(&f->own[other][kind], x->r) ||
        (f->foreign && who_other(&f->all[other][kind], x->r, f->rank)))
        return why[mapping(x)][x->write];
    if (x->mc && f->foreign && f->ncovered < f->p->nranks - 1)
        return "the other ranks' work before the collective touched these bytes through unicast";
    return NULL;
}

const char *emit_fence_before(EmitFence *f, const IrOp *op)
{
    Access acc[3];
    int n = op_accesses(op, acc);
    for (int j = 0; j < n; j++) {
        const char *why = dirty_for(f, &acc[j]);
        if (why) {
            fenced(f);
            return why;
        }
    }
    return NULL;
}

/* A wait: whatever the other ranks did before their signals may lie on the path from here on,
   and the ranks it waited for directly had started before it. */
static void waited(EmitFence *f, const IrOp *op)
{
    f->foreign = true;
    if (op->kind == IR_SW_WAIT) {
        f->waited_all = true;
        f->nwaited = f->p->nranks - 1;
    } else if (!f->waited_all && op->peer >= 0 && op->peer < f->p->nranks && op->peer != f->rank &&
               f->waited[op->peer] != f->rank + 1) {
        f->waited[op->peer] = f->rank + 1;
        f->nwaited++;
    }
}

void emit_fence_after(EmitFence *f, const IrOp *op)
{
    if (op->kind == IR_WAIT || op->kind == IR_SW_WAIT) {
        waited(f, op);
        return;
    }
    if (op->kind == IR_PKT_RECV) /* a wait for the sender too, then a write of dst */
        waited(f, op);
    Access acc[3];
    int n = op_accesses(op, acc);
    for (int j = 0; j < n; j++) {
        if (!tracked(f, &acc[j]))
            continue;
        set_add(&f->own[mapping(&acc[j])][ACCESSES], acc[j].r, f->arena);
        if (acc[j].write)
            set_add(&f->own[mapping(&acc[j])][WRITES], acc[j].r, f->arena);
    }
}

const char *emit_fence_at_end(EmitFence *f)
{
    bool others = f->mc_ranks > (int)f->uses_mc[f->rank];
    if (f->own[MC][ACCESSES].nset || (f->foreign && others))
        return "the work after the collective reads and writes through the unicast mapping";
    return NULL;
}
