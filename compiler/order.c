/*
 * order.c - intra-rank ordering for the code generator: which data ops need all of the rank's
 * thread blocks to converge first (IrOp.sync_before).
 *
 * The emitted kernel spreads every data op over all thread blocks, element i of an operand's
 * range going to the same thread in every op. So two ops touching the same element are
 * ordered by program order alone when the element sits at the same place in both ranges and
 * is reached the same way; otherwise a later op may run in one block while an earlier one is
 * still running in another. The rule: an op needs sync_before when it touches (read or write,
 * local, on a peer or through the switch, at least one side writing) chunks that a data op
 * since the last sync point touched, unless both ranges start at the same chunk of the same
 * (owner, buffer), have the same count and use the same path (local pointer, the same peer's
 * pointer, or the multicast address: aliases of one location are not ordered by a thread's
 * program order). Signals and waits are not sync points for the blocks: before a signal only
 * block 0 waits for the others, and at a wait each block goes on as soon as its own thread 0
 * has seen the arrival. So tracking runs on across them and restarts only after an op marked
 * sync_before, where the emitter puts a grid barrier.
 *
 * Cost is per chunk touched, not per pair of ops: each chunk keeps, for the current stretch
 * between sync points, a summary of the readers' and the writers' partitions ("none", "all
 * the same one", "several"), which answers "does an earlier op touch this chunk differently"
 * exactly. A generation counter empties every summary at once at a grid barrier. Switch ops
 * touch a chunk on every rank; they keep their own summary per chunk, and a summary over all
 * owners lets them be checked against peer and local accesses without visiting each owner.
 */
#include "hb.h"

enum { PATH_LOCAL = -2, PATH_SWITCH = -1 }; /* else: the peer whose pointer is used */

typedef struct Sig { /* how a chunk is reached: the path and the operand's range */
    int path, first, count;
} Sig;

typedef struct SigSet {
    Sig sig;          /* the one partition seen, when !mixed */
    bool any, mixed;
} SigSet;

typedef struct ChunkState {
    unsigned gen;     /* the summaries are empty unless gen is the current stretch's */
    SigSet reads, writes;
} ChunkState;

typedef struct Touch {
    int owner; /* -1: every rank */
    int buf;
    Sig sig;
    bool write;
} Touch;

typedef struct Order {
    IrProgram *p;
    int n;
    ChunkState **st; /* [slot * nbufs + buf]; slot: owner, n: through the switch, n + 1: any owner */
    unsigned gen;
} Order;

static int op_touches(const IrOp *op, int rank, Touch out[3])
{
    Touch dst = {rank, op->dst.buf, {PATH_LOCAL, op->dst.first, op->dst.count}, true};
    Touch src = {rank, op->src.buf, {PATH_LOCAL, op->src.first, op->src.count}, false};
    switch (op->kind) {
    case IR_COPY: break;
    case IR_REDUCE:
        out[2] = (Touch){rank, op->src2.buf, {PATH_LOCAL, op->src2.first, op->src2.count}, false};
        break;
    case IR_PUT: dst.owner = dst.sig.path = op->peer; break;
    case IR_GET: src.owner = src.sig.path = op->peer; break;
    case IR_SW_STORE: dst.owner = -1, dst.sig.path = PATH_SWITCH; break;
    case IR_SW_REDUCE: src.owner = -1, src.sig.path = PATH_SWITCH; break;
    case IR_SW_REDUCE_STORE:
        dst.owner = src.owner = -1;
        dst.sig.path = src.sig.path = PATH_SWITCH;
        break;
    default: return 0;
    }
    out[0] = dst;
    out[1] = src;
    return op->kind == IR_REDUCE && op->src2.buf >= 0 ? 3 : 2;
}

static bool same_sig(Sig a, Sig b)
{
    return a.path == b.path && a.first == b.first && a.count == b.count;
}

/* Some access in the set reaches the chunk otherwise than `sig`. */
static bool differs(const SigSet *s, Sig sig)
{
    return s->any && (s->mixed || !same_sig(s->sig, sig));
}

static void add_sig(SigSet *s, Sig sig)
{
    if (!s->any) {
        s->sig = sig;
        s->any = true;
    } else if (!same_sig(s->sig, sig)) {
        s->mixed = true;
    }
}

static ChunkState *state(Order *o, int slot, int buf, int chunk)
{
    ChunkState **arr = &o->st[(size_t)slot * (size_t)o->p->nbufs + (size_t)buf];
    if (!*arr)
        *arr = ARENA_ARRAY(o->p->arena, ChunkState, (size_t)o->p->bufs[buf].nchunks);
    ChunkState *c = &(*arr)[chunk];
    if (c->gen != o->gen)
        *c = (ChunkState){o->gen, {{0, 0, 0}, false, false}, {{0, 0, 0}, false, false}};
    return c;
}

static bool clashes(const ChunkState *c, const Touch *t)
{
    if (t->write)
        return differs(&c->reads, t->sig) || differs(&c->writes, t->sig);
    return differs(&c->writes, t->sig);
}

static void note_touch(ChunkState *c, const Touch *t)
{
    add_sig(t->write ? &c->writes : &c->reads, t->sig);
}

/* A switch touch is checked against other switch touches and every owner's accesses at once. */
static bool touch_clashes(Order *o, const Touch *t)
{
    int own = t->owner < 0 ? o->n : t->owner, other = t->owner < 0 ? o->n + 1 : o->n;
    for (int c = t->sig.first; c < t->sig.first + t->sig.count; c++)
        if (clashes(state(o, own, t->buf, c), t) || clashes(state(o, other, t->buf, c), t))
            return true;
    return false;
}

static void remember(Order *o, const Touch *t)
{
    for (int c = t->sig.first; c < t->sig.first + t->sig.count; c++) {
        if (t->owner < 0) {
            note_touch(state(o, o->n, t->buf, c), t);
        } else {
            note_touch(state(o, t->owner, t->buf, c), t);
            note_touch(state(o, o->n + 1, t->buf, c), t);
        }
    }
}

static void order_rank(Order *o, int rank)
{
    IrSeq *s = &o->p->ranks[rank];
    o->gen++;
    for (int i = 0; i < s->nops; i++) {
        IrOp *op = &s->ops[i];
        op->sync_before = false;
        if (!ir_is_data(op->kind))   /* a signal or wait: the blocks do not all meet there */
            continue;
        Touch t[3];
        int nt = op_touches(op, rank, t);
        for (int k = 0; k < nt && !op->sync_before; k++)
            op->sync_before = touch_clashes(o, &t[k]);
        if (op->sync_before)
            o->gen++;
        for (int k = 0; k < nt; k++)
            remember(o, &t[k]);
    }
}

void order_program(IrProgram *p)
{
    Order o = {p, p->nranks, ARENA_ARRAY(p->arena, ChunkState *, ((size_t)p->nranks + 2) * (size_t)p->nbufs), 0};
    for (int r = 0; r < p->nranks; r++)
        order_rank(&o, r);
}
