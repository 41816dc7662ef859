/*
 * race.c - rule 1: data races, FastTrack-style, along the schedule sync.c produced.
 *
 * Every chunk of every rank's buffer keeps an access history: its last write (rank, op) and
 * the reads since that write that no later read already covers. Each data op's accesses are
 * checked against the history with the accessing rank's clocks at that moment: a write must
 * be SYNC-ordered before any later access (its data has to be visible), a read only
 * EXEC-ordered before a later write (it has to be done). Boundary events need no history: a
 * remote access must be EXEC-ordered after the owner's start (checked at the access), and at
 * the end each chunk's last remote write must reach the owner's end by SYNC, its remaining
 * remote reads by EXEC. Since the schedule is a linearisation of EXEC, two accesses that
 * are unordered, or ordered only by execution when visibility is needed, show up as one
 * history entry the later access is not ordered after; that is exactly what is reported.
 *
 * The same race repeats for every rank and iteration, so findings are kept once per
 * (location, location, kind), at most HB_MAX_REPORTS of them, and explained afterwards: the
 * messages name both sides and, when an execution path exists but visibility does not, the
 * relaxed signal or wait that breaks the release -> acquire chain.
 */
#include "hb.h"

typedef struct RaceRead {
    int rank, idx;
} RaceRead;

typedef struct RaceLoc {
    int w_rank, w_idx; /* the last write; w_rank -1: none since the start */
    RaceRead *reads;
    int nreads, cap;
} RaceLoc;

/* One operand of an op as an access: owner -1 means "on every rank" (switch operations). */
typedef struct Access {
    int owner, buf, first, count;
    bool write;
} Access;

typedef struct Race {
    CheckResult *r;
    const IrProgram *p;
    Arena *a;
    RaceLoc ***hist; /* [owner][buf]: one RaceLoc per chunk, made when first touched */
    bool full;       /* enough distinct races found: stop looking */
} Race;

/* Writes first, so that an op that reads and writes a peer is reported as writing it. */
static int op_accesses(const IrOp *op, int rank, Access out[3])
{
    int self = rank, peer = op->peer, all = -1, n = 0;
    int dst_owner = self, src_owner = self;
    switch (op->kind) {
    case IR_PUT: dst_owner = peer; break;
    case IR_GET: src_owner = peer; break;
    case IR_SW_STORE: dst_owner = all; break;
    case IR_SW_REDUCE: src_owner = all; break;
    case IR_SW_REDUCE_STORE: dst_owner = src_owner = all; break;
    case IR_COPY:
    case IR_REDUCE: break;
    default: return 0;
    }
    out[n++] = (Access){dst_owner, op->dst.buf, op->dst.first, op->dst.count, true};
    out[n++] = (Access){src_owner, op->src.buf, op->src.first, op->src.count, false};
    if (op->kind == IR_REDUCE && op->src2.buf >= 0)
        out[n++] = (Access){self, op->src2.buf, op->src2.first, op->src2.count, false};
    return n;
}

static RaceLoc *history(Race *x, int owner, int buf, int chunk)
{
    RaceLoc **slot = &x->hist[owner][buf];
    if (!*slot) {
        int n = x->p->bufs[buf].nchunks;
        *slot = ARENA_ARRAY(x->a, RaceLoc, (size_t)n);
        for (int c = 0; c < n; c++)
            (*slot)[c].w_rank = -1;
    }
    return &(*slot)[chunk];
}

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

/* Keeps a finding unless the same pair of places was already found for the same reason. */
static void found(Race *x, CheckRace f)
{
    CheckResult *r = x->r;
    for (int i = 0; i < r->nraces; i++)
        if (same_finding(x->p, &r->races[i], &f))
            return;
    r->races = arena_grow(x->a, r->races, (size_t)r->nraces, (size_t)r->nraces + 1, sizeof f);
    r->races[r->nraces++] = f;
    x->full = r->nraces >= HB_MAX_REPORTS;
}

/* A remote access must follow the owner's start. */
static void check_start(Race *x, HbEv b, const Access *ac, int owner, HbView e)
{
    if (owner == b.rank || hb_get(e, owner) >= HB_START_TIME)
        return;
    found(x, (CheckRace){RACE_START, {owner, -1}, b, true, ac->write, owner, ac->buf, ac->first, ac->count, false});
}

static void check_write_of(Race *x, const RaceLoc *h, HbEv b, const Access *ac, int owner, int c, HbView e,
                           HbView s)
{
    if (h->w_rank < 0 || h->w_rank == b.rank || hb_get(s, h->w_rank) >= hb_time(h->w_idx))
        return;
    bool exec = hb_get(e, h->w_rank) >= hb_time(h->w_idx);
    found(x, (CheckRace){ac->write ? RACE_WW : RACE_WR, {h->w_rank, h->w_idx}, b, true, ac->write, owner, ac->buf,
                         c, 1, exec});
}

static void add_read(Race *x, RaceLoc *h, HbEv b, HbView e)
{
    int keep = 0;
    for (int j = 0; j < h->nreads; j++) { /* a read EXEC-before this one is covered by it */
        RaceRead rd = h->reads[j];
        if (rd.rank != b.rank && hb_get(e, rd.rank) < hb_time(rd.idx))
            h->reads[keep++] = rd;
    }
    h->nreads = keep;
    if (h->nreads == h->cap) {
        int cap = h->cap ? 2 * h->cap : 2;
        h->reads = arena_grow(x->a, h->reads, (size_t)h->nreads, (size_t)cap, sizeof *h->reads);
        h->cap = cap;
    }
    h->reads[h->nreads++] = (RaceRead){b.rank, b.idx};
}

static void access_chunk(Race *x, HbEv b, const Access *ac, int owner, int c, HbView e, HbView s)
{
    RaceLoc *h = history(x, owner, ac->buf, c);
    check_write_of(x, h, b, ac, owner, c, e, s);
    if (!ac->write) {
        add_read(x, h, b, e);
        return;
    }
    for (int j = 0; j < h->nreads; j++) {
        RaceRead rd = h->reads[j];
        if (rd.rank != b.rank && hb_get(e, rd.rank) < hb_time(rd.idx))
            found(x, (CheckRace){RACE_RW, {rd.rank, rd.idx}, b, false, true, owner, ac->buf, c, 1, false});
    }
    h->w_rank = b.rank;
    h->w_idx = b.idx;
    h->nreads = 0;
}

static void race_op(Race *x, HbEv b)
{
    const IrOp *op = &x->p->ranks[b.rank].ops[b.idx];
    Access acc[3];
    int nacc = op_accesses(op, b.rank, acc);
    HbView e = hb_exec_view(&x->r->replay, b.rank), s = hb_sync_view(&x->r->replay, b.rank);
    for (int k = 0; k < nacc && !x->full; k++) {
        const Access *ac = &acc[k];
        int from = ac->owner < 0 ? 0 : ac->owner, to = ac->owner < 0 ? x->p->nranks : ac->owner + 1;
        for (int q = from; q < to && !x->full; q++) {
            check_start(x, b, ac, q, e);
            for (int c = ac->first; c < ac->first + ac->count && !x->full; c++)
                access_chunk(x, b, ac, q, c, e, s);
        }
    }
}

/* The owner's end reads and writes every chunk: what others did must be done (and visible). */
static void check_ends(Race *x, int q)
{
    HbView e = hb_exec_view(&x->r->replay, q), s = hb_sync_view(&x->r->replay, q);
    HbEv end = {q, x->p->ranks[q].nops};
    for (int b = 0; b < x->p->nbufs; b++) {
        const RaceLoc *hs = x->hist[q][b];
        for (int c = 0; hs && c < x->p->bufs[b].nchunks && !x->full; c++) {
            const RaceLoc *h = &hs[c];
            if (h->w_rank >= 0 && h->w_rank != q && hb_get(s, h->w_rank) < hb_time(h->w_idx))
                found(x, (CheckRace){RACE_END_W, {h->w_rank, h->w_idx}, end, true, false, q, b, c, 1,
                                     hb_get(e, h->w_rank) >= hb_time(h->w_idx)});
            for (int j = 0; j < h->nreads; j++)
                if (h->reads[j].rank != q && hb_get(e, h->reads[j].rank) < hb_time(h->reads[j].idx))
                    found(x, (CheckRace){RACE_END_R, {h->reads[j].rank, h->reads[j].idx}, end, false, false, q, b,
                                         c, 1, false});
        }
    }
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
    if (f->kind == RACE_END_R)
        diag_error(d, oa->loc, "data race: %s %s, but rank %d may leave, and its buffers be reused, before the "
                   "read is done: there is no path from this read to rank %d's end", what, ta, q, q);
    else if (!f->exec_ordered)
        diag_error(d, oa->loc, "data race: %s %s, but rank %d may leave before the write lands: nothing orders "
                   "it before rank %d's end", what, ta, q, q);
    else
        diag_error(d, oa->loc, "data race: %s %s, but rank %d may leave before the write is visible: there is "
                   "no release->acquire path from this write to rank %d's end", what, ta, q, q);
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
    Race x = {r, p, p->arena, ARENA_ARRAY(p->arena, RaceLoc **, (size_t)p->nranks), false};
    for (int q = 0; q < p->nranks; q++)
        x.hist[q] = ARENA_ARRAY(p->arena, RaceLoc *, (size_t)p->nbufs + 1);
    hb_replay_init(&r->replay, &r->hb, p->arena);
    for (size_t i = 0; i < r->run.nsched; i++) {
        HbEv e = r->run.sched[i];
        hb_replay_step(&r->replay, e.rank, e.idx);
        if (!x.full && ir_is_data(p->ranks[e.rank].ops[e.idx].kind))
            race_op(&x, e);
    }
    r->replayed = true;
    for (int q = 0; q < p->nranks && !x.full; q++)
        if (r->run.pc[q] == p->ranks[q].nops)
            check_ends(&x, q);
    report(r, d);
}
