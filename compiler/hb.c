/*
 * hb.c - happens-before: matching signals to waits, vector clocks along a schedule, and the
 * path search that explains a missing release -> acquire order.
 *
 * hb_match numbers every signal and wait on its channel and pairs them through a hash table
 * keyed (signaller, waiter, ordinal), so nothing is quadratic in the rank count. The replay
 * (hb_replay_*) follows sync.c's schedule and keeps, per rank, an EXEC and a SYNC vector
 * clock. Clocks change only at waits: a signal keeps a reference to its rank's current clock
 * and a wait joins the referenced clock into its own (copying first if someone else still
 * refers to it). Switch rounds keep one joined clock per round. Released clocks go to a free
 * list, so memory stays proportional to the clocks alive at once, not to the number of waits.
 */
#include "hb.h"

#include <limits.h>
#include <string.h>

/* ---- Matching -------------------------------------------------------------------------- */

typedef struct MatchTable {
    uint64_t *keys;
    int *vals;
    size_t mask;
} MatchTable;

static uint64_t match_key(int from, int to, int k)
{
    return ((uint64_t)(uint32_t)from << 48) | ((uint64_t)(uint32_t)to << 32) | (uint32_t)k;
}

static size_t match_slot(const MatchTable *t, uint64_t key)
{
    size_t i = (size_t)hb_mix64(key) & t->mask;
    while (t->vals[i] >= 0 && t->keys[i] != key)
        i = (i + 1) & t->mask;
    return i;
}

static void match_table_init(MatchTable *t, Arena *a, size_t count)
{
    size_t cap = 16;
    while (cap < 2 * count + 2)
        cap *= 2;
    t->keys = ARENA_ARRAY(a, uint64_t, cap);
    t->vals = ARENA_ARRAY(a, int, cap);
    memset(t->vals, 0xff, cap * sizeof(int));
    t->mask = cap - 1;
}

/* Ordinals on each channel; counters are one array of n reused by every rank. */
static void number_rank(HbFacts *f, int r, int *sigs, int *waits, size_t *nsignals)
{
    const IrSeq *s = &f->p->ranks[r];
    int nsw_sig = 0, nsw_wait = 0;
    for (int i = 0; i < s->nops; i++) {
        const IrOp *op = &s->ops[i];
        f->partner[r][i] = -1;
        if (op->kind == IR_SIGNAL && op->peer >= 0 && op->peer < f->n) {
            f->ordinal[r][i] = sigs[op->peer]++;
            ++*nsignals;
        } else if (op->kind == IR_WAIT && op->peer >= 0 && op->peer < f->n) {
            f->ordinal[r][i] = waits[op->peer]++;
        } else if (op->kind == IR_SW_SIGNAL) {
            f->ordinal[r][i] = nsw_sig++;
        } else if (op->kind == IR_SW_WAIT) {
            f->ordinal[r][i] = nsw_wait++;
        }
    }
    for (int i = 0; i < s->nops; i++)
        if (s->ops[i].peer >= 0 && s->ops[i].peer < f->n)
            sigs[s->ops[i].peer] = waits[s->ops[i].peer] = 0;
    f->nsw_sig[r] = nsw_sig;
    f->nsw_wait[r] = nsw_wait;
}

static void list_switch_ops(HbFacts *f, Arena *a, int r)
{
    const IrSeq *s = &f->p->ranks[r];
    f->sw_sig[r] = ARENA_ARRAY(a, int, (size_t)f->nsw_sig[r] + 1);
    f->sw_wait[r] = ARENA_ARRAY(a, int, (size_t)f->nsw_wait[r] + 1);
    for (int i = 0; i < s->nops; i++) {
        if (s->ops[i].kind == IR_SW_SIGNAL)
            f->sw_sig[r][f->ordinal[r][i]] = i;
        else if (s->ops[i].kind == IR_SW_WAIT)
            f->sw_wait[r][f->ordinal[r][i]] = i;
    }
    if (f->nsw_sig[r] > f->nrounds)
        f->nrounds = f->nsw_sig[r];
}

static void pair_waits(HbFacts *f, const MatchTable *t)
{
    for (int r = 0; r < f->n; r++) {
        const IrSeq *s = &f->p->ranks[r];
        for (int i = 0; i < s->nops; i++) {
            const IrOp *op = &s->ops[i];
            if (op->kind != IR_WAIT || op->peer < 0 || op->peer >= f->n)
                continue;
            size_t slot = match_slot(t, match_key(op->peer, r, f->ordinal[r][i]));
            int sig = t->vals[slot];
            if (sig >= 0) {
                f->partner[r][i] = sig;
                f->partner[op->peer][sig] = i;
            }
        }
    }
}

void hb_match(const IrProgram *p, HbFacts *f)
{
    Arena *a = p->arena;
    memset(f, 0, sizeof *f);
    f->p = p;
    f->n = p->nranks;
    f->partner = ARENA_ARRAY(a, int *, (size_t)f->n);
    f->ordinal = ARENA_ARRAY(a, int *, (size_t)f->n);
    f->sw_sig = ARENA_ARRAY(a, int *, (size_t)f->n);
    f->sw_wait = ARENA_ARRAY(a, int *, (size_t)f->n);
    f->nsw_sig = ARENA_ARRAY(a, int, (size_t)f->n);
    f->nsw_wait = ARENA_ARRAY(a, int, (size_t)f->n);
    int *sigs = ARENA_ARRAY(a, int, (size_t)f->n);
    int *waits = ARENA_ARRAY(a, int, (size_t)f->n);
    size_t nsignals = 0;
    for (int r = 0; r < f->n; r++) {
        int nops = p->ranks[r].nops;
        f->nops_total += (size_t)nops;
        f->partner[r] = ARENA_ARRAY(a, int, (size_t)nops + 1);
        f->ordinal[r] = ARENA_ARRAY(a, int, (size_t)nops + 1);
        number_rank(f, r, sigs, waits, &nsignals);
        list_switch_ops(f, a, r);
    }
    MatchTable t;
    match_table_init(&t, a, nsignals);
    for (int r = 0; r < f->n; r++) {
        const IrSeq *s = &p->ranks[r];
        for (int i = 0; i < s->nops; i++)
            if (s->ops[i].kind == IR_SIGNAL && s->ops[i].peer >= 0 && s->ops[i].peer < f->n) {
                size_t slot = match_slot(&t, match_key(r, s->ops[i].peer, f->ordinal[r][i]));
                t.keys[slot] = match_key(r, s->ops[i].peer, f->ordinal[r][i]);
                t.vals[slot] = i;
            }
    }
    pair_waits(f, &t);
}

bool hb_strong(const IrOp *sig, const IrOp *wait)
{
    return !sig->relaxed && !wait->relaxed;
}

/* ---- Vector clocks --------------------------------------------------------------------- */

static size_t clock_bytes(const HbReplay *rp)
{
    return sizeof(HbClock) + (size_t)rp->n * sizeof(uint32_t);
}

/* A new clock is charged to the budget; when that runs out the replay still gets its clock
   (the passes stop at the next op and report the budget). */
static HbClock *clock_new(HbReplay *rp, const HbClock *copy)
{
    HbClock *c = rp->free_list;
    budget_take(rp->budget, clock_bytes(rp), "vector clocks", rp->at);
    budget_work(rp->budget, (uint64_t)rp->n / HB_JOIN_STEP + 1, "vector clocks", rp->at);
    if (c)
        rp->free_list = c->u.next;
    else
        c = arena_alloc(rp->arena, clock_bytes(rp));
    if (copy)
        memcpy(c->v, copy->v, (size_t)rp->n * sizeof(uint32_t));
    else
        memset(c->v, 0, (size_t)rp->n * sizeof(uint32_t));
    c->u.refs = 1;
    return c;
}

static void clock_unref(HbReplay *rp, HbClock *c)
{
    if (c && --c->u.refs == 0) {
        c->u.next = rp->free_list;
        rp->free_list = c;
        budget_give(rp->budget, clock_bytes(rp));
    }
}

void hb_clock_retain(HbClock *c)
{
    if (c)
        c->u.refs++;
}

void hb_clock_release(HbReplay *rp, HbClock *c)
{
    clock_unref(rp, c);
}

/* The rank's clock, ready to be changed: copied first while a signal still refers to it. */
static HbClock *clock_own(HbReplay *rp, HbClock **slot)
{
    if ((*slot)->u.refs > 1) {
        HbClock *c = clock_new(rp, *slot);
        (*slot)->u.refs--;
        *slot = c;
    }
    return *slot;
}

static void clock_join(HbReplay *rp, HbClock *into, const HbClock *from, int rank, uint32_t t)
{
    int n = rp->n;
    budget_work(rp->budget, (uint64_t)n / HB_JOIN_STEP + 1, "vector clocks", rp->at);
    uint32_t *restrict to = into->v; /* two distinct clocks: lets the compiler vectorise */
    const uint32_t *restrict add = from->v;
    for (int q = 0; q < n; q++)
        to[q] = add[q] > to[q] ? add[q] : to[q];
    if (rank >= 0 && t > into->v[rank])
        into->v[rank] = t;
}

void hb_replay_init(HbReplay *rp, const HbFacts *f, Arena *a, CheckBudget *b)
{
    memset(rp, 0, sizeof *rp);
    rp->budget = b;
    rp->at = f->p->loc;
    rp->f = f;
    rp->arena = a;
    rp->n = f->n;
    size_t n = (size_t)f->n;
    rp->exec = ARENA_ARRAY(a, HbClock *, n);
    rp->sync = ARENA_ARRAY(a, HbClock *, n);
    rp->now = ARENA_ARRAY(a, uint32_t, n);
    rp->sig_exec = ARENA_ARRAY(a, HbClock **, n);
    rp->sig_sync = ARENA_ARRAY(a, HbClock **, n);
    for (int r = 0; r < f->n; r++) {
        rp->exec[r] = clock_new(rp, NULL);
        rp->sync[r] = clock_new(rp, NULL);
        rp->now[r] = HB_START_TIME;
        size_t nops = (size_t)f->p->ranks[r].nops + 1;
        rp->sig_exec[r] = ARENA_ARRAY(a, HbClock *, nops);
        rp->sig_sync[r] = ARENA_ARRAY(a, HbClock *, nops);
    }
    size_t k = (size_t)f->nrounds + 1;
    rp->rnd_exec = ARENA_ARRAY(a, HbClock *, k);
    rp->rnd_sync = ARENA_ARRAY(a, HbClock *, k);
    rp->rnd_waits = ARENA_ARRAY(a, int, k);
}

static void step_signal(HbReplay *rp, int r, int i)
{
    if (rp->f->partner[r][i] < 0)
        return; /* nobody will read what it carries */
    rp->sig_exec[r][i] = rp->exec[r];
    rp->sig_sync[r][i] = rp->sync[r];
    rp->exec[r]->u.refs++;
    rp->sync[r]->u.refs++;
}

static void step_switch_signal(HbReplay *rp, int r, int i, const IrOp *op)
{
    int k = rp->f->ordinal[r][i];
    uint32_t t = hb_time(i);
    if (!rp->rnd_exec[k])
        rp->rnd_exec[k] = clock_new(rp, NULL);
    clock_join(rp, rp->rnd_exec[k], rp->exec[r], r, t);
    if (op->relaxed)
        return;
    if (!rp->rnd_sync[k])
        rp->rnd_sync[k] = clock_new(rp, NULL);
    clock_join(rp, rp->rnd_sync[k], rp->sync[r], r, t);
}

static void step_wait(HbReplay *rp, int r, int i, const IrOp *op)
{
    int p = op->peer, s = rp->f->partner[r][i];
    if (s < 0 || !rp->sig_exec[p][s])
        return; /* cannot happen along a valid schedule */
    uint32_t t = hb_time(s);
    clock_join(rp, clock_own(rp, &rp->exec[r]), rp->sig_exec[p][s], p, t);
    if (hb_strong(&rp->f->p->ranks[p].ops[s], op))
        clock_join(rp, clock_own(rp, &rp->sync[r]), rp->sig_sync[p][s], p, t);
    clock_unref(rp, rp->sig_exec[p][s]);
    clock_unref(rp, rp->sig_sync[p][s]);
    rp->sig_exec[p][s] = rp->sig_sync[p][s] = NULL;
}

static void step_switch_wait(HbReplay *rp, int r, int i, const IrOp *op)
{
    int k = rp->f->ordinal[r][i];
    if (k >= rp->f->nrounds || !rp->rnd_exec[k])
        return;
    clock_join(rp, clock_own(rp, &rp->exec[r]), rp->rnd_exec[k], -1, 0);
    if (!op->relaxed && rp->rnd_sync[k])
        clock_join(rp, clock_own(rp, &rp->sync[r]), rp->rnd_sync[k], -1, 0);
    if (++rp->rnd_waits[k] == rp->n) {
        clock_unref(rp, rp->rnd_exec[k]);
        clock_unref(rp, rp->rnd_sync[k]);
        rp->rnd_exec[k] = rp->rnd_sync[k] = NULL;
    }
}

void hb_replay_step(HbReplay *rp, int r, int i)
{
    const IrOp *op = &rp->f->p->ranks[r].ops[i];
    rp->at = op->loc;
    switch (op->kind) {
    case IR_SIGNAL: step_signal(rp, r, i); break;
    case IR_SW_SIGNAL: step_switch_signal(rp, r, i, op); break;
    case IR_WAIT: step_wait(rp, r, i, op); break;
    case IR_SW_WAIT: step_switch_wait(rp, r, i, op); break;
    default: break;
    }
    rp->now[r] = hb_time(i);
}

HbView hb_exec_view(const HbReplay *rp, int rank)
{
    return (HbView){rp->exec[rank]->v, rank, rp->now[rank]};
}

HbView hb_sync_view(const HbReplay *rp, int rank)
{
    return (HbView){rp->sync[rank]->v, rank, rp->now[rank]};
}

/* ---- Explaining a missing order: 0-1 BFS over the event graph ---------------------------- */

/*
 * The search finds, among the paths from one event to another, one with the fewest relaxed
 * edges (program order and strong signal -> wait edges weigh 0, relaxed ones 1), and the same
 * path whatever the program's size: it is the plain 0-1 BFS, with two cuts that leave its
 * result unchanged and bound its cost by the checking's own:
 *   - Events after the target in the schedule are never pushed. The schedule is a
 *     linearisation of EXEC, so no path from them leads back to the target, and they cannot
 *     change what any earlier event is reached from. (Ends come after everything; ops that
 *     never ran come after every op that did.)
 *   - A switch signal offers the same distance to every acquire wait of its round (d, or d+1
 *     when it is relaxed) and d+1 to every relaxed one. An offer no better than one the class
 *     already had improves none of its waits, so it is skipped without visiting them. Since
 *     the BFS takes events in order of distance, a class is visited at most twice per search,
 *     instead of once per signal of the round: O(n) per round, not O(n^2).
 */

static size_t node_of(const CheckResult *r, HbEv e)
{
    return r->bfs_base[e.rank] + (size_t)(e.idx + 1);
}

static HbEv event_of(const CheckResult *r, size_t node)
{
    int lo = 0, hi = r->hb.n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (r->bfs_base[mid] <= node)
            lo = mid;
        else
            hi = mid - 1;
    }
    return (HbEv){lo, (int)(node - r->bfs_base[lo]) - 1};
}

static void bfs_alloc(CheckResult *r, size_t total)
{
    size_t n = (size_t)r->hb.n, k = (size_t)r->hb.nrounds + 1;
    Arena *a = r->p->arena;
    r->bfs_base = ARENA_ARRAY(a, size_t, n + 1);
    for (size_t q = 0; q < n; q++)
        r->bfs_base[q + 1] = r->bfs_base[q] + (size_t)r->p->ranks[q].nops + 2;
    r->bfs_dist = ARENA_ARRAY(a, int, total);
    r->bfs_parent = ARENA_ARRAY(a, int, total);
    r->bfs_queue = ARENA_ARRAY(a, int, 2 * total + 2);
    r->bfs_pos = ARENA_ARRAY(a, size_t, total);
    r->bfs_best = ARENA_ARRAY(a, int, 2 * k);
    r->bfs_seen = ARENA_ARRAY(a, unsigned, k);
    for (size_t i = 0; i < total; i++) /* ends, and ops that never ran: after everything */
        r->bfs_pos[i] = SIZE_MAX - 1;
    for (size_t q = 0; q < n; q++) {
        r->bfs_pos[r->bfs_base[q]] = 0;
        r->bfs_pos[r->bfs_base[q + 1] - 1] = SIZE_MAX;
    }
    for (size_t i = 0; i < r->run.nsched; i++)
        r->bfs_pos[node_of(r, r->run.sched[i])] = i + 1;
}

static size_t bfs_prepare(CheckResult *r)
{
    size_t n = (size_t)r->hb.n, total = r->hb.nops_total + 2 * n;
    if (!r->bfs_base)
        bfs_alloc(r, total);
    for (size_t i = 0; i < total; i++)
        r->bfs_dist[i] = INT_MAX;
    r->bfs_search++;
    return total;
}

typedef struct Deque {
    int *buf;
    size_t cap, head, len;
} Deque;

static void deque_push(Deque *q, int v, bool front)
{
    if (front) {
        q->head = (q->head + q->cap - 1) % q->cap;
        q->buf[q->head] = v;
    } else {
        q->buf[(q->head + q->len) % q->cap] = v;
    }
    q->len++;
}

typedef struct Search {
    CheckResult *r;
    Deque q;
    size_t limit; /* schedule position of the target: nothing after it is pushed */
} Search;

static void relax(Search *sr, size_t from, HbEv to, int w)
{
    CheckResult *r = sr->r;
    size_t v = node_of(r, to);
    int d = r->bfs_dist[from] + w;
    if (r->bfs_pos[v] > sr->limit)
        return;
    if (d < r->bfs_dist[v]) {
        r->bfs_dist[v] = d;
        r->bfs_parent[v] = (int)from;
        deque_push(&sr->q, (int)v, w == 0);
    }
}

/* Switch round k from signal `op` (at node `from`): each class of waits, visited only when the
   offer improves on what the class was offered before in this search. */
static void relax_round(Search *sr, size_t from, const IrOp *op, int k)
{
    CheckResult *r = sr->r;
    int d = r->bfs_dist[from], *best = &r->bfs_best[2 * k];
    if (r->bfs_seen[k] != r->bfs_search) {
        r->bfs_seen[k] = r->bfs_search;
        best[0] = best[1] = INT_MAX;
    }
    int offer[2] = {d + (op->relaxed ? 1 : 0), d + 1}; /* to acquire waits, to relaxed ones */
    bool visit[2] = {offer[0] < best[0], offer[1] < best[1]};
    if (!visit[0] && !visit[1])
        return;
    for (int c = 0; c < 2; c++)
        if (visit[c])
            best[c] = offer[c];
    for (int t = 0; t < r->hb.n; t++)
        if (r->hb.nsw_wait[t] > k) {
            HbEv w = {t, r->hb.sw_wait[t][k]};
            const IrOp *wait = &r->p->ranks[t].ops[w.idx];
            if (visit[wait->relaxed])
                relax(sr, from, w, !hb_strong(op, wait));
        }
}

static void expand(Search *sr, size_t node)
{
    CheckResult *r = sr->r;
    HbEv e = event_of(r, node);
    const IrSeq *s = &r->p->ranks[e.rank];
    if (e.idx < s->nops)
        relax(sr, node, (HbEv){e.rank, e.idx + 1}, 0);
    if (e.idx < 0 || e.idx >= s->nops)
        return;
    const IrOp *op = &s->ops[e.idx];
    if (op->kind == IR_SIGNAL && r->hb.partner[e.rank][e.idx] >= 0) {
        HbEv w = {op->peer, r->hb.partner[e.rank][e.idx]};
        relax(sr, node, w, !hb_strong(op, &r->p->ranks[w.rank].ops[w.idx]));
    } else if (op->kind == IR_SW_SIGNAL) {
        relax_round(sr, node, op, r->hb.ordinal[e.rank][e.idx]);
    }
}

/* Walks back from `to`; the last relaxed edge met is the first along the path. */
static void first_relaxed(CheckResult *r, HbEv from, HbEv to, HbEv *sig, HbEv *wait)
{
    size_t v = node_of(r, to), start = node_of(r, from);
    while (v != start) {
        size_t u = (size_t)r->bfs_parent[v];
        HbEv a = event_of(r, u), b = event_of(r, v);
        bool program_order = a.rank == b.rank && b.idx == a.idx + 1;
        if (!program_order && !hb_strong(&r->p->ranks[a.rank].ops[a.idx], &r->p->ranks[b.rank].ops[b.idx])) {
            *sig = a;
            *wait = b;
        }
        v = u;
    }
}

int hb_relaxed_edge(CheckResult *r, HbEv from, HbEv to, HbEv *sig, HbEv *wait)
{
    size_t total = bfs_prepare(r);
    size_t start = node_of(r, from), goal = node_of(r, to);
    Search sr = {r, {r->bfs_queue, 2 * total + 2, 0, 0}, r->bfs_pos[goal]};
    r->bfs_dist[start] = 0;
    deque_push(&sr.q, (int)start, true);
    while (sr.q.len) {
        size_t u = (size_t)sr.q.buf[sr.q.head];
        sr.q.head = (sr.q.head + 1) % sr.q.cap;
        sr.q.len--;
        if (u == goal)
            break;
        expand(&sr, u);
    }
    if (r->bfs_dist[goal] == INT_MAX)
        return -1;
    *sig = *wait = (HbEv){-1, -1};
    first_relaxed(r, from, to, sig, wait);
    return r->bfs_dist[goal];
}
