/*
 * data_races.c - rule 1: data races, FastTrack-style, along the schedule sync_schedule.c produced.
 *
 * Every rank's buffer keeps an access history per run of chunks (chunk_runs.h: a run splits only
 * where an access starts or ends inside it, so the cost follows the accesses, not the chunks):
 * its last write (rank, op) and the reads since that write that no later read covers. Each
 * data op's accesses are checked against the history with the accessing rank's clocks at that
 * moment: a write must be SYNC-ordered before any later access (its data has to be visible),
 * a read only EXEC-ordered before a later write (it has to be done). Boundary events need no
 * history: a remote access must be EXEC-ordered after the owner's start (checked at the
 * access), and at the end each run's last remote write must reach the owner's end by SYNC, its
 * remaining remote reads by EXEC. Since the schedule is a linearisation of EXEC, two accesses
 * that are unordered, or ordered only by execution when visibility is needed, show up as one
 * history entry the later access is not ordered after; that is exactly what is reported.
 *
 * The reads, as in FastTrack, are an epoch while each read covers the one before it (one
 * rank, one op: O(1)), and become a read set, one entry per rank, once two reads are
 * concurrent. A read then just replaces its rank's entry (O(1)); the entries that a later read
 * covers are not pruned there but when a write or the end finds entries not ordered before
 * it: only then does it matter which of them are covered, and each entry keeps the reader's
 * EXEC clock (shared, reference counted) to tell. A read set is shared by the runs that split
 * from one run and copied when one of them changes it (once per access, however many runs
 * share it).
 *
 * The same race repeats for every rank and iteration, so findings are kept once per
 * (location, location, kind), at most HB_MAX_REPORTS of them, and explained afterwards: the
 * messages name both sides and, when an execution path exists but visibility does not, the
 * relaxed signal or wait that breaks the release -> acquire chain.
 */
#include "check_text.h"
#include "happens_before.h"

#include <stdlib.h>
#include <string.h>

typedef struct ReadEnt {
    int unit, idx;   /* the reader: its unit (ir.h), and its op in the rank's list */
    uint64_t seq;    /* when it was read: reports keep this order; 0 for the set's first */
    HbClock *clock;  /* the reader's EXEC clock then (NULL for the first: it covers nothing) */
} ReadEnt;

typedef struct ReadSet {
    int refs;        /* runs holding it */
    int n, cap;
    ReadEnt *e;
    int *slot;       /* [nunits]: 1 + the unit's entry in e, 0: none; made once n is large */
    uint64_t stamp;  /* the access that last copied (memo) or scanned it */
    struct ReadSet *memo; /* what that access made of it */
} ReadSet;

/* A run's history. Four ints and a pointer: no padding, so runs compare bytewise. */
typedef struct Hist {
    int w_unit, w_idx; /* the last write; w_unit -1: none since the start */
    int r_unit, r_idx; /* the read epoch while rs is NULL; r_unit -1: no read */
    ReadSet *rs;
} Hist;

/* The later side of a check: an access by a unit, or the end of a rank (unit -1). Accesses
   by the same unit, or by the ending rank's own units, are ordered by program order. */
typedef struct Side {
    HbEv ev;
    int unit, rank;
} Side;

/* One operand of an op as an access: owner -1 means "on every rank" (switch operations). */
typedef struct Access {
    int owner, buf, first, count;
    bool write;
} Access;

enum { SMALL_SET = 8 }; /* up to this many entries a set is scanned; beyond, indexed by rank */

typedef struct Race {
    CheckResult *r;
    const IrProgram *p;
    Arena *a;
    CheckBudget *budget;
    RunPool pool;
    RunMap *maps;       /* [owner * nbufs + buf]; nchunks 0 until first touched */
    void *free_blocks[32]; /* recycled arrays by power-of-two size */
    uint64_t seq, stamp;
    ReadEnt *scratch;   /* entries not ordered before a write, [nunits] */
    bool full;          /* enough distinct races found: stop looking */
} Race;

/* ir_effects' order, dst first: writes come first, so that an op that reads and writes a peer
   is reported as writing it. A packet op touches only its own rank's operand: the slot the
   packets cross is the runtime's, not a buffer of the program. */
static int op_accesses(const IrOp *op, int rank, Access out[3])
{
    IrEffects fx = ir_effects(op);
    int n = 0;
    for (int k = 0; k < fx.n; k++) {
        const IrAccess *a = &fx.acc[k];
        if (!ir_packet_words(op, k)) /* flagged words: see ir.h */
            out[n++] = (Access){ir_access_rank(a, op, rank), a->range.buf, a->range.first, a->range.count, a->write};
    }
    return n;
}

/* ---- Read sets -------------------------------------------------------------------------- */

static size_t block_class(size_t bytes, size_t *rounded)
{
    size_t k = 5;
    while (((size_t)1 << k) < bytes)
        k++;
    *rounded = (size_t)1 << k;
    return k;
}

/* Arrays of read sets, recycled by size so that sets made and dropped over and over (every
   write empties them) cost memory only for those alive at once. NULL: out of budget. */
static void *block_get(Race *x, size_t bytes)
{
    size_t size, k = block_class(bytes, &size);
    if (!budget_take(x->budget, size, "access histories", x->pool.at))
        return NULL;
    void *b = x->free_blocks[k];
    if (b) {
        x->free_blocks[k] = *(void **)b;
        memset(b, 0, size);
        return b;
    }
    return arena_alloc(x->a, size);
}

static void block_put(Race *x, void *b, size_t bytes)
{
    if (!b)
        return;
    size_t size, k = block_class(bytes, &size);
    *(void **)b = x->free_blocks[k];
    x->free_blocks[k] = b;
    budget_give(x->budget, size);
}

static ReadSet *set_new(Race *x, int cap)
{
    ReadSet *s = block_get(x, sizeof *s);
    ReadEnt *e = s ? block_get(x, (size_t)cap * sizeof *e) : NULL;
    if (!e) {
        block_put(x, s, sizeof *s);
        return NULL;
    }
    s->refs = 1;
    s->cap = cap;
    s->e = e;
    return s;
}

static void set_release(Race *x, ReadSet *s)
{
    if (!s || --s->refs > 0)
        return;
    for (int i = 0; i < s->n; i++)
        hb_clock_release(&x->r->replay, s->e[i].clock);
    block_put(x, s->e, (size_t)s->cap * sizeof *s->e);
    block_put(x, s->slot, (size_t)x->r->hb.nunits * sizeof *s->slot);
    block_put(x, s, sizeof *s);
}

static void hist_retain(void *ctx, void *val)
{
    (void)ctx;
    ReadSet *s = ((Hist *)val)->rs;
    if (s)
        s->refs++;
}

static void hist_release(void *ctx, void *val)
{
    set_release(ctx, ((Hist *)val)->rs);
}

static int set_find(const ReadSet *s, int unit)
{
    if (s->slot)
        return s->slot[unit] - 1;
    for (int i = 0; i < s->n; i++)
        if (s->e[i].unit == unit)
            return i;
    return -1;
}

static bool set_index(Race *x, ReadSet *s)
{
    s->slot = block_get(x, (size_t)x->r->hb.nunits * sizeof *s->slot);
    if (!s->slot)
        return false;
    for (int i = 0; i < s->n; i++)
        s->slot[s->e[i].unit] = i + 1;
    return true;
}

/* Puts the read in its unit's entry (an earlier read of that unit is covered by it). */
static bool set_put(Race *x, ReadSet *s, ReadEnt in)
{
    int i = set_find(s, in.unit);
    if (i >= 0) {
        hb_clock_release(&x->r->replay, s->e[i].clock);
        s->e[i] = in;
        return true;
    }
    if (s->n == s->cap) {
        ReadEnt *e = block_get(x, (size_t)s->cap * 2 * sizeof *e);
        if (!e)
            return false;
        memcpy(e, s->e, (size_t)s->n * sizeof *e);
        block_put(x, s->e, (size_t)s->cap * sizeof *s->e);
        s->e = e;
        s->cap *= 2;
    }
    s->e[s->n++] = in;
    if (s->slot)
        s->slot[in.unit] = s->n;
    else if (s->n > SMALL_SET)
        return set_index(x, s);
    return true;
}

static ReadSet *set_copy(Race *x, const ReadSet *from)
{
    ReadSet *s = set_new(x, from->cap);
    if (!s || !budget_work(x->budget, (uint64_t)from->n, "access histories", x->pool.at))
        return NULL;
    memcpy(s->e, from->e, (size_t)from->n * sizeof *s->e);
    s->n = from->n;
    for (int i = 0; i < s->n; i++)
        hb_clock_retain(s->e[i].clock);
    if (from->slot && !set_index(x, s))
        return NULL;
    return s;
}

/* ---- Findings --------------------------------------------------------------------------- */

static Loc event_loc(const IrProgram *p, HbEv e)
{
    if (e.idx < 0 || e.idx >= p->ranks[e.rank].nops)
        return p->loc;
    return p->ranks[e.rank].ops[e.idx].loc;
}

static bool same_loc(Loc x, Loc y)
{
    return x.src == y.src && x.line == y.line && x.col == y.col;
}

static bool is_pair(RaceKind k)
{
    return k == RACE_WW || k == RACE_WR || k == RACE_RW;
}

/* The same two places for the same reason; two ops racing either way round count once. */
static bool same_finding(const IrProgram *p, const CheckRace *f, const CheckRace *g)
{
    Loc fa = event_loc(p, f->a), fb = event_loc(p, f->b), ga = event_loc(p, g->a), gb = event_loc(p, g->b);
    if (is_pair(f->kind) && is_pair(g->kind))
        return (same_loc(fa, ga) && same_loc(fb, gb)) || (same_loc(fa, gb) && same_loc(fb, ga));
    return f->kind == g->kind && same_loc(fa, ga) && same_loc(fb, gb);
}

static bool known(const Race *x, const CheckRace *f)
{
    for (int i = 0; i < x->r->nraces; i++)
        if (same_finding(x->p, &x->r->races[i], f))
            return true;
    return false;
}

/* Keeps a finding unless the same pair of places was already found for the same reason. */
static void found(Race *x, CheckRace f)
{
    CheckResult *r = x->r;
    if (known(x, &f))
        return;
    r->races = arena_grow(x->a, r->races, (size_t)r->nraces, (size_t)r->nraces + 1, sizeof f);
    r->races[r->nraces++] = f;
    x->full = r->nraces >= HB_MAX_REPORTS;
}

static bool stop(const Race *x)
{
    return x->full || x->budget->over;
}

/* A remote access must follow the owner's start. */
static void check_start(Race *x, HbEv b, const Access *ac, int owner, HbView e)
{
    if (owner == b.rank || hb_knows_start(&x->r->hb, e, owner))
        return;
    found(x, (CheckRace){RACE_START, {owner, -1}, b, true, ac->write, owner, ac->buf, ac->first, ac->count, false});
}

static bool same_side(const Race *x, int unit, const Side *b)
{
    return unit == b->unit || (b->unit < 0 && x->r->hb.unit_rank[unit] == b->rank);
}

static HbEv event_of_unit(const Race *x, int unit, int idx)
{
    return (HbEv){x->r->hb.unit_rank[unit], idx};
}

/* The run's last write against a later access b (or the owner's end, when end). */
static void check_write_of(Race *x, const Hist *h, const Side *b, bool b_write, RaceKind kind, int owner, int buf,
                           int c, HbView e, HbView s)
{
    if (h->w_unit < 0 || same_side(x, h->w_unit, b) || hb_get(s, h->w_unit) >= hb_time(h->w_idx))
        return;
    bool exec = hb_get(e, h->w_unit) >= hb_time(h->w_idx);
    found(x, (CheckRace){kind, event_of_unit(x, h->w_unit, h->w_idx), b->ev, true, b_write, owner, buf, c, 1, exec});
}

static int by_seq(const void *l, const void *r)
{
    uint64_t a = ((const ReadEnt *)l)->seq, b = ((const ReadEnt *)r)->seq;
    return (a > b) - (a < b);
}

/* A read in u[0..n) that a later one of them covers (EXEC-before it) would have been pruned
   when that one was made: it is not reported. Only entries not ordered before the write can
   cover one that is not (anything ordered before it would order the covered read too). */
static bool covered(const ReadEnt *u, int n, int i)
{
    for (int j = i + 1; j < n; j++)
        if (u[j].clock && u[j].clock->v[u[i].unit] >= hb_time(u[i].idx))
            return true;
    return false;
}

/* Reports the reads of a run that an access b (a write, or the owner's end when kind is
   RACE_END_R) is not EXEC-ordered after, as the reads not covered by later ones. */
static void check_reads(Race *x, const Hist *h, const Side *b, RaceKind kind, int owner, int buf, int c, HbView e)
{
    bool end = kind == RACE_END_R;
    CheckRace f = {kind, {0, 0}, b->ev, false, !end, owner, buf, c, 1, false};
    if (!h->rs) {
        if (h->r_unit >= 0 && !same_side(x, h->r_unit, b) && hb_get(e, h->r_unit) < hb_time(h->r_idx)) {
            f.a = event_of_unit(x, h->r_unit, h->r_idx);
            found(x, f);
        }
        return;
    }
    ReadSet *s = h->rs;
    if (s->stamp == x->stamp) /* scanned already for this access: the same findings */
        return;
    s->stamp = x->stamp;
    s->memo = NULL;
    if (!budget_work(x->budget, (uint64_t)s->n, "access histories", x->pool.at))
        return;
    int n = 0;
    for (int i = 0; i < s->n; i++)
        if (!same_side(x, s->e[i].unit, b) && hb_get(e, s->e[i].unit) < hb_time(s->e[i].idx))
            x->scratch[n++] = s->e[i];
    if (n > 1)
        qsort(x->scratch, (size_t)n, sizeof *x->scratch, by_seq);
    for (int i = 0; i < n && !x->full; i++) {
        f.a = event_of_unit(x, x->scratch[i].unit, x->scratch[i].idx);
        if (!known(x, &f) && (n == 1 || !covered(x->scratch, n, i)))
            found(x, f);
    }
}

/* ---- Accesses --------------------------------------------------------------------------- */

static RunMap *history(Race *x, int owner, int buf)
{
    RunMap *m = &x->maps[(size_t)owner * (size_t)x->p->nbufs + (size_t)buf];
    if (!m->nchunks && x->p->bufs[buf].nchunks > 0) {
        Hist none = {-1, -1, -1, -1, NULL};
        if (!runs_init(m, &x->pool, x->p->bufs[buf].nchunks, &none))
            m->nchunks = 0;
    }
    return m;
}

/* The run's reads after reader b. The set is copied first while other runs share it (once per
   access: the runs that shared it share the copy). */
static void add_read(Race *x, Hist *h, const Side *b, HbView e, HbClock *clock)
{
    if (!h->rs) {
        if (h->r_unit < 0 || h->r_unit == b->unit || hb_get(e, h->r_unit) >= hb_time(h->r_idx)) {
            h->r_unit = b->unit; /* the epoch is covered by this read */
            h->r_idx = b->ev.idx;
            return;
        }
        ReadSet *s = set_new(x, 4);
        if (!s)
            return;
        s->e[s->n++] = (ReadEnt){h->r_unit, h->r_idx, 0, NULL};
        h->rs = s;
        h->r_unit = h->r_idx = -1;
    } else if (h->rs->refs > 1) {
        ReadSet *old = h->rs;
        if (old->stamp == x->stamp && old->memo) {
            h->rs = old->memo;
            h->rs->refs++;
            set_release(x, old);
            return;
        }
        ReadSet *s = set_copy(x, old);
        if (!s)
            return;
        old->refs--;
        old->stamp = x->stamp;
        old->memo = s;
        h->rs = s;
    }
    hb_clock_retain(clock);
    if (!set_put(x, h->rs, (ReadEnt){b->unit, b->ev.idx, x->seq, clock}))
        hb_clock_release(&x->r->replay, clock);
}

static void access_range(Race *x, const Side *b, const Access *ac, int owner, HbView e, HbView s, HbClock *clock)
{
    RunMap *m = history(x, owner, ac->buf);
    int lo = ac->first, hi = ac->first + ac->count;
    Run *first = m->nchunks ? runs_range(m, &x->pool, lo, hi) : NULL;
    if (!first)
        return;
    x->stamp++;
    x->seq++;
    for (Run *r = first; r && r->lo < hi && !stop(x); r = r->next) {
        if (!budget_work(x->budget, 1, "access histories", x->pool.at))
            return;
        Hist *h = (Hist *)r->val;
        check_write_of(x, h, b, ac->write, ac->write ? RACE_WW : RACE_WR, owner, ac->buf, r->lo, e, s);
        if (ac->write)
            check_reads(x, h, b, RACE_RW, owner, ac->buf, r->lo, e);
        else
            add_read(x, h, b, e, clock);
    }
    if (stop(x))
        return;
    if (ac->write)
        runs_assign(m, &x->pool, lo, hi, &(Hist){b->unit, b->ev.idx, -1, -1, NULL});
    else
        runs_coalesce(m, &x->pool, first, hi);
}

static void race_op(Race *x, HbEv b)
{
    const IrOp *op = &x->p->ranks[b.rank].ops[b.idx];
    Access acc[3];
    int nacc = op_accesses(op, b.rank, acc);
    const HbReplay *rp = &x->r->replay;
    Side side = {b, hb_unit(&x->r->hb, b.rank, b.idx), b.rank};
    HbView e = hb_exec_view(rp, side.unit), s = hb_sync_view(rp, side.unit);
    x->pool.at = op->loc;
    for (int k = 0; k < nacc && !stop(x); k++) {
        const Access *ac = &acc[k];
        int from = ac->owner < 0 ? 0 : ac->owner, to = ac->owner < 0 ? x->p->nranks : ac->owner + 1;
        for (int q = from; q < to && !stop(x); q++) {
            check_start(x, b, ac, q, e);
            if (!stop(x))
                access_range(x, &side, ac, q, e, s, rp->exec[side.unit]);
        }
    }
}

/* The owner's end reads and writes every chunk: what others did must be done (and visible). */
static void check_ends(Race *x, int q)
{
    HbClock *ce, *cs;
    HbView e = hb_end_view(&x->r->replay, q, false, &ce), s = hb_end_view(&x->r->replay, q, true, &cs);
    Side end = {{q, x->p->ranks[q].nops}, -1, q};
    x->pool.at = x->p->loc;
    for (int b = 0; b < x->p->nbufs; b++) {
        const RunMap *m = &x->maps[(size_t)q * (size_t)x->p->nbufs + (size_t)b];
        x->stamp++;
        for (const Run *r = m->first; r && !stop(x); r = r->next) {
            if (!budget_work(x->budget, 1, "access histories", x->pool.at))
                return;
            const Hist *h = (const Hist *)r->val;
            check_write_of(x, h, &end, false, RACE_END_W, q, b, r->lo, e, s);
            check_reads(x, h, &end, RACE_END_R, q, b, r->lo, e);
        }
    }
    hb_end_view_done(&x->r->replay, ce);
    hb_end_view_done(&x->r->replay, cs);
}

/* ---- Reporting ------------------------------------------------------------------------- */

/* The operand of op e that touches chunk c of (owner, buf), as [first, first+count). */
static void operand_range(const IrProgram *p, HbEv e, bool write, int owner, int buf, int c, int *first,
                          int *count)
{
    Access acc[3];
    int n = op_accesses(&p->ranks[e.rank].ops[e.idx], e.rank, acc);
    for (int k = 0; k < n; k++) {
        const Access *ac = &acc[k];
        if (ac->write == write && ac->buf == buf && (ac->owner < 0 || ac->owner == owner) && c >= ac->first &&
            c < ac->first + ac->count) {
            *first = ac->first;
            *count = ac->count;
            return;
        }
    }
}

/* Widens a finding from the chunk where it was seen to all the chunks both sides touch. */
static void widen(const IrProgram *p, CheckRace *f)
{
    int lo = f->first, hi = f->first + f->count;
    HbEv sides[2] = {f->a, f->b};
    bool writes[2] = {f->a_write, f->b_write};
    for (int k = 0; k < 2; k++) {
        if (sides[k].idx < 0 || sides[k].idx >= p->ranks[sides[k].rank].nops)
            continue;
        int first = f->first, count = f->count;
        operand_range(p, sides[k], writes[k], f->owner, f->buf, f->first, &first, &count);
        if (k == 0 || f->kind == RACE_START || f->kind == RACE_END_W || f->kind == RACE_END_R) {
            lo = first;
            hi = first + count;
        } else {
            lo = first > lo ? first : lo;
            hi = first + count < hi ? first + count : hi;
        }
    }
    f->first = lo;
    f->count = hi - lo;
}

static const IrOp *op_of(const CheckResult *r, HbEv e)
{
    return &r->p->ranks[e.rank].ops[e.idx];
}

/* When execution is ordered but visibility is not: point at the relaxed step. */
static void note_relaxed(CheckResult *r, Diag *d, HbEv from, HbEv to)
{
    HbEv sig, wait;
    int n = hb_relaxed_edge(r, from, to, &sig, &wait);
    if (n < 1 || sig.rank < 0)
        return;
    Arena *a = r->p->arena;
    const IrOp *s = op_of(r, sig), *w = op_of(r, wait);
    const char *more = n > 1 ? arena_printf(a, " (the first of %d relaxed steps on the way)", n) : "";
    if (s->relaxed)
        diag_note(d, s->loc, "the path goes through rank %d's relaxed %s here%s: it orders execution but publishes "
                  "nothing written before it%s", sig.rank, ir_kind_name(s->kind), check_ctx(a, s), more);
    else
        diag_note(d, w->loc, "the path goes through rank %d's relaxed %s here%s: it orders execution but makes "
                  "nothing visible%s", wait.rank, ir_kind_name(w->kind), check_ctx(a, w), more);
}

static void report_pair(CheckResult *r, Diag *d, const CheckRace *f)
{
    const IrProgram *p = r->p;
    Arena *a = p->arena;
    const IrOp *ob = op_of(r, f->b), *oa = op_of(r, f->a);
    const char *what = check_access(p, f->b.rank, f->b_write, f->owner, f->buf, f->first, f->count);
    const char *tb = check_op_tag(a, ob);
    int ra = f->a.rank;
    if (f->kind == RACE_RW)
        diag_error(d, ob->loc, "data race: %s %s while rank %d may still be reading it: nothing orders that "
                   "read before this write", what, tb, ra);
    else if (!f->exec_ordered)
        diag_error(d, ob->loc, "data race: %s %s while rank %d may be writing it%s: nothing orders the two %s",
                   what, tb, ra, f->b_write ? " too" : "", f->b_write ? "writes" : "accesses");
    else if (f->b_write)
        diag_error(d, ob->loc, "data race: %s %s, but rank %d's earlier write of it may land later: there is no "
                   "release->acquire path from that write to this one", what, tb, ra);
    else
        diag_error(d, ob->loc, "data race: %s %s, but rank %d's write of it may not be visible yet: there is no "
                   "release->acquire path from that write to this read", what, tb, ra);
    diag_note(d, oa->loc, "%s here %s", check_access(p, ra, f->a_write, f->owner, f->buf, f->first, f->count),
              check_op_tag(a, oa));
    if (f->exec_ordered)
        note_relaxed(r, d, f->a, f->b);
}

static void report_start(CheckResult *r, Diag *d, const CheckRace *f)
{
    const IrOp *ob = op_of(r, f->b);
    diag_error(d, ob->loc, "data race: %s %s before rank %d may have entered the collective: there is no "
               "signal->wait path from rank %d's start to this %s",
               check_access(r->p, f->b.rank, f->b_write, f->owner, f->buf, f->first, f->count),
               check_op_tag(r->p->arena, ob), f->owner, f->owner, ir_kind_name(ob->kind));
    diag_note(d, r->p->loc, "rank %d enters here; its buffers may still be in use before that", f->owner);
}

static void report_end(CheckResult *r, Diag *d, const CheckRace *f)
{
    const IrOp *oa = op_of(r, f->a);
    const char *what = check_access(r->p, f->a.rank, f->a_write, f->owner, f->buf, f->first, f->count);
    const char *ta = check_op_tag(r->p->arena, oa);
    int q = f->owner;
    /* what would fix it: the edge that is missing, made at the end */
    const char *fix = f->kind == RACE_END_R
                          ? arena_printf(r->p->arena, "a signal after this read, with rank %d's wait for it before "
                                         "it leaves, would order it (relaxed is enough for a read)", q)
                          : arena_printf(r->p->arena, "a release signal after this write, with rank %d's acquire "
                                         "wait for it before it leaves, would fix it", q);
    if (f->kind == RACE_END_R)
        diag_error(d, oa->loc, "data race: %s %s, but rank %d may leave, and its buffers be reused, before the "
                   "read is done: there is no path from this read to rank %d's end; %s", what, ta, q, q, fix);
    else if (!f->exec_ordered)
        diag_error(d, oa->loc, "data race: %s %s, but rank %d may leave before the write lands: nothing orders "
                   "it before rank %d's end; %s", what, ta, q, q, fix);
    else
        diag_error(d, oa->loc, "data race: %s %s, but rank %d may leave before the write is visible: there is "
                   "no release->acquire path from this write to rank %d's end; %s", what, ta, q, q, fix);
    diag_note(d, r->p->loc, "rank %d leaves here; its buffers are read and reused after that", q);
    if (f->exec_ordered)
        note_relaxed(r, d, f->a, f->b);
}

static void report(CheckResult *r, Diag *d)
{
    for (int i = 0; i < r->nraces; i++) {
        CheckRace *f = &r->races[i];
        widen(r->p, f);
        if (f->kind == RACE_START)
            report_start(r, d, f);
        else if (f->kind == RACE_END_W || f->kind == RACE_END_R)
            report_end(r, d, f);
        else
            report_pair(r, d, f);
    }
}

void race_check(CheckResult *r, Diag *d)
{
    const IrProgram *p = r->p;
    Race x = {0};
    x.r = r;
    x.p = p;
    x.a = p->arena;
    x.budget = &r->budget;
    runs_pool_init(&x.pool, p->arena, sizeof(Hist), x.budget, "access histories");
    x.pool.retain = hist_retain;
    x.pool.release = hist_release;
    x.pool.ctx = &x;
    x.maps = ARENA_ARRAY(p->arena, RunMap, (size_t)p->nranks * (size_t)p->nbufs);
    x.scratch = ARENA_ARRAY(p->arena, ReadEnt, (size_t)r->hb.nunits);
    hb_replay_init(&r->replay, &r->hb, p->arena, x.budget);
    for (size_t i = 0; i < r->run.nsched && !x.budget->over; i++) {
        HbEv e = r->run.sched[i];
        hb_replay_step(&r->replay, e.rank, e.idx);
        if (!x.full && ir_is_data(p->ranks[e.rank].ops[e.idx].kind))
            race_op(&x, e);
    }
    r->replayed = !x.budget->over;
    for (int q = 0; q < p->nranks && !stop(&x); q++)
        if (hb_rank_ended(&r->hb, &r->run, q))
            check_ends(&x, q);
    report(r, d);
}
