/*
 * partition.c - which data operations every other rank reaches through the same thread blocks
 * (IrOp.same_blocks), so that a signal after them may arrive block by block.
 *
 * The emitted kernel spreads a data op over the rank's grid: element i of the op's range goes
 * to the thread (i mod threads) of the grid, in 16-byte packs or 4-byte words for the whole
 * launch (cdsl_device.cuh, cdsl_apply). So the block that touches a chunk's bytes depends only
 * on where the op's range starts on that (owner, buffer), never on the op's kind, its other
 * operands, its count or the rank that runs it, provided every rank runs the same grid of the
 * same block size (the runtime sees to that). Signals and waits use one word per block
 * (runtime/abi.h): block b of the waiting rank waits for block b of the signalling rank. A
 * signal that arrives block by block, without the rank's blocks converging first, therefore
 * orders only block b's share of what came before it before block b's share of what comes
 * after the wait.
 *
 * That is enough for a pair of conflicting accesses on two ranks (a write and another access
 * to the same bytes) exactly when both reach the bytes through the same block: when their
 * ranges on that (owner, buffer) start at the same chunk. A data op is same_blocks when every
 * access to any of its chunks in the whole program (by any rank, the switch included) starts
 * where the op's own range does, or no access to that chunk writes. Packets (send_packets,
 * recv_packets) spread word by word and are ordered by their own flags: they and whatever
 * shares a written chunk with them are never same_blocks. The argument that a signal may then
 * arrive block by block when every data op since the rank's last grid barrier is same_blocks,
 * and must converge otherwise, is in docs/internals.md ("Block-by-block arrivals").
 *
 * The test is coarser than it could be (two accesses by one rank with different starts also
 * clear the flag, though order.c already orders those) and never wrong in the unsafe
 * direction: a cleared flag only costs a convergence. Cost: one pass recording every access in
 * run maps (chunk_runs.h) of summaries per (owner, buffer), one pass asking each op's ranges; a
 * private budget bounds both, and running out clears every flag instead of failing the check.
 */
#include "lower.h"

#include "happens_before.h"

/* How an access reaches a chunk, for the blocks: where its range starts, and whether it is a
   packet op's (word by word). The path does not matter: every path maps an element to the same
   thread. */
typedef struct Start {
    int first, packets;
} Start;

enum { SEEN = 1, MIXED = 2 };

typedef struct Starts {    /* the starts seen: none, one (start), several */
    Start start;
    int flags;
} Starts;

typedef struct ChunkUse {  /* a run's summary; ints only, so runs compare bytewise */
    Starts all;            /* every access */
    int written;
} ChunkUse;

typedef struct Parts {
    IrProgram *p;
    int n;
    RunMap *maps;          /* [owner * nbufs + buf] */
    RunPool pool;
    CheckBudget budget;
} Parts;

/* Budget of the pass: well within what checking itself was allowed; running out is no error. */
enum { PART_MAX_BYTES = 64 << 20 };
#define PART_MAX_STEPS 50000000ull

static Start start_of(const Touch *t)
{
    return (Start){t->sig.first, t->sig.path == PATH_PACKETS};
}

static bool same_start(Start a, Start b)
{
    return a.first == b.first && a.packets == b.packets;
}

static void add_start(Starts *s, Start st)
{
    if (!(s->flags & SEEN))
        s->start = st, s->flags = SEEN;
    else if (!same_start(s->start, st))
        s->flags |= MIXED;
}

static RunMap *map_at(Parts *t, int owner, int buf)
{
    return &t->maps[(size_t)owner * (size_t)t->p->nbufs + (size_t)buf];
}

static void record(Parts *t, int owner, const Touch *u, Loc at)
{
    RunMap *m = map_at(t, owner, u->buf);
    ChunkUse none = {{{0, 0}, 0}, 0};
    if (!m->first && !runs_init(m, &t->pool, t->p->bufs[u->buf].nchunks, &none))
        return;
    int lo = u->sig.first, hi = lo + u->sig.count;
    Run *first = runs_range(m, &t->pool, lo, hi);
    for (Run *r = first; r && r->lo < hi; r = r->next) {
        if (!budget_work(&t->budget, 1, t->pool.what, at))
            return;
        ChunkUse *c = (ChunkUse *)r->val;
        add_start(&c->all, start_of(u));
        c->written |= u->write;
    }
    if (first)
        runs_coalesce(m, &t->pool, first, hi);
}

/* Some access to a written chunk of [lo, hi) in this map starts elsewhere than `st`, or is a
   packet op's. */
static bool map_differs(Parts *t, int owner, int buf, Start st, int lo, int hi, Loc at)
{
    RunMap *m = map_at(t, owner, buf);
    if (!m->first)
        return false;
    for (const Run *r = runs_find(m, lo); r && r->lo < hi; r = r->next) {
        if (!budget_work(&t->budget, 1, t->pool.what, at))
            return true;
        const ChunkUse *c = (const ChunkUse *)r->val;
        if (c->written && (c->all.flags & MIXED || !same_start(c->all.start, st) || st.packets))
            return true;
    }
    return false;
}

/* A switch use asks every owner's map. */
static bool use_differs(Parts *t, const Touch *u, Loc at)
{
    int lo = u->sig.first, hi = lo + u->sig.count;
    if (u->owner >= 0)
        return map_differs(t, u->owner, u->buf, start_of(u), lo, hi, at);
    for (int q = 0; q < t->n; q++)
        if (map_differs(t, q, u->buf, start_of(u), lo, hi, at))
            return true;
    return false;
}

/* A switch use is recorded in every owner's map: it reaches the chunk there. */
static void record_all(Parts *t)
{
    for (int r = 0; r < t->n && !t->budget.over; r++)
        for (int i = 0; i < t->p->ranks[r].nops && !t->budget.over; i++) {
            IrOp *op = &t->p->ranks[r].ops[i];
            Touch u[3];
            int nu = op_touches(op, r, u);
            for (int k = 0; k < nu; k++)
                for (int q = u[k].owner < 0 ? 0 : u[k].owner; q < (u[k].owner < 0 ? t->n : u[k].owner + 1); q++)
                    record(t, q, &u[k], op->loc);
        }
}

static void mark_all(Parts *t)
{
    for (int r = 0; r < t->n && !t->budget.over; r++)
        for (int i = 0; i < t->p->ranks[r].nops && !t->budget.over; i++) {
            IrOp *op = &t->p->ranks[r].ops[i];
            Touch u[3];
            int nu = op_touches(op, r, u);
            bool same = nu > 0;
            for (int k = 0; k < nu && same; k++)
                same = u[k].sig.path != PATH_PACKETS && !use_differs(t, &u[k], op->loc);
            op->same_blocks = same;
        }
}

static void clear_flags(IrProgram *p)
{
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++)
            p->ranks[r].ops[i].same_blocks = false;
}

void partition_program(IrProgram *p)
{
    clear_flags(p);
    if (p->ntbs || p->nbufs == 0) /* an imported plan's blocks are its own units (emit_cuda.c) */
        return;
    size_t nmaps = (size_t)p->nranks * (size_t)p->nbufs;
    Parts t = {p, p->nranks, ARENA_ARRAY(p->arena, RunMap, nmaps), {0},
               {.max_bytes = PART_MAX_BYTES, .max_steps = PART_MAX_STEPS, .at = p->loc}};
    runs_pool_init(&t.pool, p->arena, sizeof(ChunkUse), &t.budget, "block partitions");
    record_all(&t);
    mark_all(&t);
    if (t.budget.over) /* out of budget: no op is known to be reached through the same blocks */
        clear_flags(p);
    for (size_t m = 0; m < nmaps; m++)
        runs_clear(&t.maps[m], &t.pool);
}
