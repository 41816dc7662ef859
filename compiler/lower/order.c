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
 * Cost is per run of chunks, not per chunk or per pair of ops: each (owner, buffer) keeps, for
 * the current stretch between sync points, runs of chunks (chunk_runs.h) with a summary of the
 * readers' and the writers' partitions ("none", "all the same one", "several"), which answers
 * "does an earlier op touch this chunk differently" exactly. At a grid barrier the maps that
 * the stretch touched are emptied. Switch ops touch a chunk on every rank; they keep their own
 * map per buffer, and a map over all owners lets them be checked against peer and local
 * accesses without visiting each owner.
 */
#include "lower.h"

#include "happens_before.h"

enum { SIG_ANY = 1, SIG_MIXED = 2 };

typedef struct SigSet {
    Sig sig;          /* the one partition seen, when not mixed */
    int flags;        /* SIG_ANY: something seen; SIG_MIXED: several partitions */
} SigSet;

/* A run's summary; ints only, so runs compare bytewise. */
typedef struct ChunkState {
    SigSet reads, writes;
} ChunkState;

typedef struct Order {
    IrProgram *p;
    int n;
    RunMap *maps;     /* [slot * nbufs + buf]; slot: owner, n: through the switch, n + 1: any owner */
    int *touched, ntouched; /* maps holding runs since the last sync point */
    RunPool pool;
    CheckBudget *budget;
} Order;

/* The path is the address the op reaches the operand by: its own (PATH_LOCAL), the peer's
   (the peer's rank), the switch's multicast one, or a packet op's word-by-word one. */
int op_touches(const IrOp *op, int rank, Touch out[3])
{
    IrEffects fx = ir_effects(op);
    bool packet = ir_is_packet(op->kind);
    int n = 0;
    for (int k = 0; k < fx.n; k++) {
        const IrAccess *a = &fx.acc[k];
        int owner = ir_access_rank(a, op, rank);
        int path = packet ? PATH_PACKETS : a->on == ON_PEER ? owner : a->on == ON_ALL ? PATH_SWITCH : PATH_LOCAL;
        if (!ir_packet_words(op, k)) /* a plan's flagged packet words need no order (ir.h) */
            out[n++] = (Touch){owner, a->range.buf, {path, a->range.first, a->range.count}, a->write};
    }
    return n;
}

static bool same_sig(Sig a, Sig b)
{
    return a.path == b.path && a.first == b.first && a.count == b.count;
}

/* Some access in the set reaches the chunk otherwise than `sig`. */
static bool differs(const SigSet *s, Sig sig)
{
    return (s->flags & SIG_ANY) && ((s->flags & SIG_MIXED) || !same_sig(s->sig, sig));
}

static void add_sig(SigSet *s, Sig sig)
{
    if (!(s->flags & SIG_ANY)) {
        s->sig = sig;
        s->flags = SIG_ANY;
    } else if (!same_sig(s->sig, sig)) {
        s->flags |= SIG_MIXED;
    }
}

static RunMap *map_of(Order *o, int slot, int buf)
{
    return &o->maps[(size_t)slot * (size_t)o->p->nbufs + (size_t)buf];
}

/* The map, made (all one empty run) when the stretch first touches it. NULL: out of budget. */
static RunMap *touch_map(Order *o, int slot, int buf)
{
    RunMap *m = map_of(o, slot, buf);
    if (m->first)
        return m;
    ChunkState none = {{{0, 0, 0}, 0}, {{0, 0, 0}, 0}};
    if (!runs_init(m, &o->pool, o->p->bufs[buf].nchunks, &none) || !m->first)
        return NULL;
    o->touched[o->ntouched++] = (int)(m - o->maps);
    return m;
}

/* A grid barrier (or a new rank): nothing before it can clash with what follows. */
static void new_stretch(Order *o)
{
    for (int i = 0; i < o->ntouched; i++)
        runs_clear(&o->maps[o->touched[i]], &o->pool);
    o->ntouched = 0;
}

static bool clashes(const ChunkState *c, const Touch *t)
{
    if (t->write)
        return differs(&c->reads, t->sig) || differs(&c->writes, t->sig);
    return differs(&c->writes, t->sig);
}

/* Does the touch clash with anything the stretch put in this map's runs? */
static bool map_clashes(Order *o, int slot, const Touch *t)
{
    RunMap *m = map_of(o, slot, t->buf);
    if (!m->first)
        return false;
    int hi = t->sig.first + t->sig.count;
    for (const Run *r = runs_find(m, t->sig.first); r && r->lo < hi; r = r->next) {
        if (!budget_work(o->budget, 1, o->pool.what, o->pool.at))
            return false;
        if (clashes((const ChunkState *)r->val, t))
            return true;
    }
    return false;
}

/* A switch touch is checked against other switch touches and every owner's accesses at once. */
static bool touch_clashes(Order *o, const Touch *t)
{
    int own = t->owner < 0 ? o->n : t->owner, other = t->owner < 0 ? o->n + 1 : o->n;
    return map_clashes(o, own, t) || map_clashes(o, other, t);
}

static void note_touch(Order *o, int slot, const Touch *t)
{
    RunMap *m = touch_map(o, slot, t->buf);
    int lo = t->sig.first, hi = lo + t->sig.count;
    Run *first = m ? runs_range(m, &o->pool, lo, hi) : NULL;
    if (!first)
        return;
    for (Run *r = first; r && r->lo < hi; r = r->next) {
        if (!budget_work(o->budget, 1, o->pool.what, o->pool.at))
            return;
        ChunkState *c = (ChunkState *)r->val;
        add_sig(t->write ? &c->writes : &c->reads, t->sig);
    }
    runs_coalesce(m, &o->pool, first, hi);
}

static void remember(Order *o, const Touch *t)
{
    if (t->owner < 0) {
        note_touch(o, o->n, t);
    } else {
        note_touch(o, t->owner, t);
        note_touch(o, o->n + 1, t);
    }
}

/* Each unit (ir.h) is ordered on its own: a new unit starts a new stretch, and so do a plan's
   nop and barrier, where the thread block's threads all meet. */
static void order_rank(Order *o, int rank)
{
    IrSeq *s = &o->p->ranks[rank];
    new_stretch(o);
    for (int i = 0; i < s->nops && !o->budget->over; i++) {
        IrOp *op = &s->ops[i];
        op->sync_before = false;
        if ((i > 0 && op->tb != s->ops[i - 1].tb) || ir_threads_meet(op->kind))
            new_stretch(o);
        if (!ir_is_data(op->kind))   /* a signal or wait: the blocks do not all meet there */
            continue;
        o->pool.at = op->loc;
        Touch t[3];
        int nt = op_touches(op, rank, t);
        for (int k = 0; k < nt && !op->sync_before; k++)
            op->sync_before = touch_clashes(o, &t[k]);
        if (op->sync_before)
            new_stretch(o);
        for (int k = 0; k < nt; k++)
            remember(o, &t[k]);
    }
}

void order_program(IrProgram *p, CheckBudget *b)
{
    CheckBudget unlimited = {.max_bytes = SIZE_MAX, .max_steps = UINT64_MAX};
    if (!b)
        b = &unlimited;
    size_t nmaps = ((size_t)p->nranks + 2) * (size_t)p->nbufs;
    Order o = {p, p->nranks, ARENA_ARRAY(p->arena, RunMap, nmaps), ARENA_ARRAY(p->arena, int, nmaps), 0, {0}, b};
    runs_pool_init(&o.pool, p->arena, sizeof(ChunkState), b, "ordering summaries");
    for (int r = 0; r < p->nranks && !b->over; r++)
        order_rank(&o, r);
    new_stretch(&o);
}
