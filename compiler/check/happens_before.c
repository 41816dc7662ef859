/*
 * happens_before.c - happens-before: matching signals to waits, vector clocks along a schedule, and the
 * path search that explains a missing release -> acquire order.
 *
 * hb_match numbers every signal and wait on its channel and pairs them through a hash table
 * keyed (signaller, waiter, ordinal), so nothing is quadratic in the rank count. The replay
 * (hb_replay_*) follows sync_schedule.c's schedule and keeps, per rank, an EXEC and a SYNC vector
 * clock. Clocks change only at waits: a signal keeps a reference to its rank's current clock
 * and a wait joins the referenced clock into its own (copying first if someone else still
 * refers to it). Switch rounds keep one joined clock per round. Released clocks go to a free
 * list, so memory stays proportional to the clocks alive at once, not to the number of waits.
 */
#include "happens_before.h"

#include <limits.h>
#include <string.h>

/* ---- Units ------------------------------------------------------------------------------ */

/* Each rank's units and the op range of each: ops are grouped by tb (ir.h). */
static void find_units(HbFacts *f, Arena *a)
{
    const IrProgram *p = f->p;
    f->rank_unit = ARENA_ARRAY(a, int, (size_t)f->n + 1);
    for (int r = 0; r < f->n; r++)
        f->rank_unit[r + 1] = f->rank_unit[r] + ir_ntbs(p, r);
    f->nunits = f->rank_unit[f->n];
    f->unit_rank = ARENA_ARRAY(a, int, (size_t)f->nunits);
    f->unit_first = ARENA_ARRAY(a, int, (size_t)f->nunits);
    f->unit_end = ARENA_ARRAY(a, int, (size_t)f->nunits);
    f->sw_unit = ARENA_ARRAY(a, int, (size_t)f->n);
    for (int r = 0; r < f->n; r++) {
        const IrSeq *s = &p->ranks[r];
        int u0 = f->rank_unit[r], i = 0;
        f->sw_unit[r] = u0;
        for (int t = 0; t < ir_ntbs(p, r); t++) {
            f->unit_rank[u0 + t] = r;
            f->unit_first[u0 + t] = i;
            while (i < s->nops && s->ops[i].tb == t) {
                if (ir_is_switch(s->ops[i].kind) && !ir_is_data(s->ops[i].kind))
                    f->sw_unit[r] = u0 + t;
                i++;
            }
            f->unit_end[u0 + t] = i;
        }
    }
}

bool hb_rank_ended(const HbFacts *f, const HbRun *run, int r)
{
    for (int u = f->rank_unit[r]; u < f->rank_unit[r + 1]; u++)
        if (run->pc[u] < f->unit_end[u])
            return false;
    return true;
}

/* ---- Matching -------------------------------------------------------------------------- */

typedef struct MatchTable {
    uint64_t *keys;
    int *vals;
    size_t mask;
} MatchTable;

/* Ranks below 2^10, channels below 2^12 (ir.h's limits, the importer's). */
static uint64_t match_key(int from, int to, int chan, int k)
{
    return ((uint64_t)(uint32_t)from << 54) | ((uint64_t)(uint32_t)to << 44) | ((uint64_t)(uint32_t)chan << 32) |
           (uint32_t)k;
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

static bool peer_op(const HbFacts *f, const IrOp *op)
{
    return (ir_is_signal(op->kind) || ir_is_wait(op->kind)) && op->peer >= 0 && op->peer < f->n && op->chan >= 0 &&
           !ir_unread_packets(op);
}

/* The counter column of a peer op's channel: packets (IR_PKT_CHAN) count in the last one. */
static int chan_col(const IrOp *op, int nchan)
{
    return ir_is_packet(op->kind) ? nchan - 1 : op->chan;
}

/* The barrier (rank, id), made when first seen. */
static int barrier_of(HbFacts *f, Arena *a, int r, const IrOp *op)
{
    for (int b = f->nbars - 1; b >= 0 && f->bars[b].rank == r; b--)
        if (f->bars[b].id == op->barrier)
            return b;
    f->bars = arena_grow(a, f->bars, (size_t)f->nbars, (size_t)f->nbars + 1, sizeof *f->bars);
    f->bars[f->nbars] = (HbBarrier){r, op->barrier, op->blocks, NULL, 0, NULL, NULL};
    return f->nbars++;
}

/* Op i, a use of barrier b by `unit` (a rank's units come in order, each's uses in order). */
static void barrier_use(HbFacts *f, Arena *a, int b, int unit, int i)
{
    HbBarrier *bar = &f->bars[b];
    if (!bar->nunits || bar->units[bar->nunits - 1] != unit) {
        size_t m = (size_t)bar->nunits;
        bar->units = arena_grow(a, bar->units, m, m + 1, sizeof(int));
        bar->uses = arena_grow(a, bar->uses, m, m + 1, sizeof(int *));
        bar->nuses = arena_grow(a, bar->nuses, m, m + 1, sizeof(int));
        bar->units[m] = unit;
        bar->uses[m] = NULL;
        bar->nuses[m] = 0;
        bar->nunits++;
    }
    int m = bar->nunits - 1, k = bar->nuses[m];
    bar->uses[m] = arena_grow(a, bar->uses[m], (size_t)k, (size_t)k + 1, sizeof(int));
    bar->uses[m][bar->nuses[m]++] = i;
}

/* Ordinals on each channel; counters are one array of n * nchan reused by every rank. Units of
   a rank count in unit order: a channel's signals (or waits) come from one unit. A barrier's
   uses are counted per unit. */
static void number_rank(HbFacts *f, Arena *a, int r, int *sigs, int *waits, int nchan, size_t *nsignals)
{
    const IrSeq *s = &f->p->ranks[r];
    int nsw_sig = 0, nsw_wait = 0, nbar_ops = 0, first_bar = f->nbars, tb = -1;
    for (int i = 0; i < s->nops; i++)
        nbar_ops += ir_is_barrier(s->ops[i].kind);
    int *bar_uses = nbar_ops ? ARENA_ARRAY(a, int, (size_t)nbar_ops) : NULL; /* [b - first_bar] */
    for (int i = 0; i < s->nops; i++) {
        const IrOp *op = &s->ops[i];
        int slot = op->peer * nchan + chan_col(op, nchan);
        f->partner[r][i] = -1;
        if (ir_is_msc_packet(op->kind)) { /* paired by address: the importer's id (ir.h) */
            f->ordinal[r][i] = op->match;
            *nsignals += ir_is_signal(op->kind) && peer_op(f, op);
        } else if (ir_is_signal(op->kind) && peer_op(f, op)) {
            f->ordinal[r][i] = sigs[slot]++;
            ++*nsignals;
        } else if (ir_is_wait(op->kind) && peer_op(f, op)) {
            f->ordinal[r][i] = waits[slot]++;
        } else if (ir_is_switch_signal(op->kind)) {
            f->ordinal[r][i] = nsw_sig++;
        } else if (ir_is_switch_wait(op->kind)) {
            f->ordinal[r][i] = nsw_wait++;
        } else if (ir_is_barrier(op->kind)) {
            if (op->tb != tb) {
                tb = op->tb;
                memset(bar_uses, 0, (size_t)nbar_ops * sizeof *bar_uses);
            }
            int b = barrier_of(f, a, r, op);
            f->partner[r][i] = b;
            f->ordinal[r][i] = bar_uses[b - first_bar]++;
            barrier_use(f, a, b, f->rank_unit[r] + op->tb, i);
        }
    }
    for (int i = 0; i < s->nops; i++)
        if (peer_op(f, &s->ops[i]) && !ir_is_msc_packet(s->ops[i].kind))
            sigs[s->ops[i].peer * nchan + chan_col(&s->ops[i], nchan)] =
                waits[s->ops[i].peer * nchan + chan_col(&s->ops[i], nchan)] = 0;
    f->nsw_sig[r] = nsw_sig;
    f->nsw_wait[r] = nsw_wait;
}
static void list_switch_ops(HbFacts *f, Arena *a, int r)
{
    const IrSeq *s = &f->p->ranks[r];
    f->sw_sig[r] = ARENA_ARRAY(a, int, (size_t)f->nsw_sig[r] + 1);
    f->sw_wait[r] = ARENA_ARRAY(a, int, (size_t)f->nsw_wait[r] + 1);
    for (int i = 0; i < s->nops; i++) {
        if (ir_is_switch_signal(s->ops[i].kind))
            f->sw_sig[r][f->ordinal[r][i]] = i;
        else if (ir_is_switch_wait(s->ops[i].kind))
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
            if (!ir_is_wait(op->kind) || !peer_op(f, op))
                continue;
            size_t slot = match_slot(t, match_key(op->peer, r, op->chan, f->ordinal[r][i]));
            int sig = t->vals[slot];
            if (sig >= 0) {
                f->partner[r][i] = sig;
                f->partner[op->peer][sig] = i;
            }
        }
    }
}

/* Counter columns: channels 0 .. the highest used, and one more for packets if any. */
static int channels_used(const IrProgram *p)
{
    int nchan = 1;
    bool packets = false;
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const IrOp *op = &p->ranks[r].ops[i];
            packets |= ir_is_packet(op->kind);
            if (op->chan >= nchan && !ir_is_packet(op->kind) && !ir_is_msc_packet(op->kind))
                nchan = op->chan + 1;
        }
    return nchan + packets;
}

void hb_match(const IrProgram *p, HbFacts *f)
{
    Arena *a = p->arena;
    memset(f, 0, sizeof *f);
    f->p = p;
    f->n = p->nranks;
    find_units(f, a);
    f->partner = ARENA_ARRAY(a, int *, (size_t)f->n);
    f->ordinal = ARENA_ARRAY(a, int *, (size_t)f->n);
    f->sw_sig = ARENA_ARRAY(a, int *, (size_t)f->n);
    f->sw_wait = ARENA_ARRAY(a, int *, (size_t)f->n);
    f->nsw_sig = ARENA_ARRAY(a, int, (size_t)f->n);
    f->nsw_wait = ARENA_ARRAY(a, int, (size_t)f->n);
    int nchan = channels_used(p);
    int *sigs = ARENA_ARRAY(a, int, (size_t)f->n * (size_t)nchan);
    int *waits = ARENA_ARRAY(a, int, (size_t)f->n * (size_t)nchan);
    size_t nsignals = 0;
    for (int r = 0; r < f->n; r++) {
        int nops = p->ranks[r].nops;
        f->nops_total += (size_t)nops;
        f->partner[r] = ARENA_ARRAY(a, int, (size_t)nops + 1);
        f->ordinal[r] = ARENA_ARRAY(a, int, (size_t)nops + 1);
        number_rank(f, a, r, sigs, waits, nchan, &nsignals);
        list_switch_ops(f, a, r);
    }
    MatchTable t;
    match_table_init(&t, a, nsignals);
    for (int r = 0; r < f->n; r++) {
        const IrSeq *s = &p->ranks[r];
        for (int i = 0; i < s->nops; i++)
            if (ir_is_signal(s->ops[i].kind) && peer_op(f, &s->ops[i])) {
                uint64_t key = match_key(r, s->ops[i].peer, s->ops[i].chan, f->ordinal[r][i]);
                size_t slot = match_slot(&t, key);
                t.keys[slot] = key;
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
    rp->n = f->nunits;
    size_t n = (size_t)f->n, nu = (size_t)f->nunits;
    rp->exec = ARENA_ARRAY(a, HbClock *, nu);
    rp->sync = ARENA_ARRAY(a, HbClock *, nu);
    rp->now = ARENA_ARRAY(a, uint32_t, nu);
    for (int u = 0; u < f->nunits; u++) {
        rp->exec[u] = clock_new(rp, NULL);
        rp->sync[u] = clock_new(rp, NULL);
        rp->now[u] = HB_START_TIME;
    }
    rp->sig_exec = ARENA_ARRAY(a, HbClock **, n);
    rp->sig_sync = ARENA_ARRAY(a, HbClock **, n);
    for (int r = 0; r < f->n; r++) {
        size_t nops = (size_t)f->p->ranks[r].nops + 1;
        rp->sig_exec[r] = ARENA_ARRAY(a, HbClock *, nops);
        rp->sig_sync[r] = ARENA_ARRAY(a, HbClock *, nops);
    }
    size_t k = (size_t)f->nrounds + 1;
    rp->rnd_exec = ARENA_ARRAY(a, HbClock *, k);
    rp->rnd_sync = ARENA_ARRAY(a, HbClock *, k);
    rp->rnd_waits = ARENA_ARRAY(a, int, k);
    rp->bar_clock = ARENA_ARRAY(a, HbClock *, 2 * (size_t)f->nbars + 1);
    rp->bar_left = ARENA_ARRAY(a, int, (size_t)f->nbars + 1);
}

static void step_signal(HbReplay *rp, int r, int i, int u)
{
    if (rp->f->partner[r][i] < 0)
        return; /* nobody will read what it carries */
    rp->sig_exec[r][i] = rp->exec[u];
    rp->sig_sync[r][i] = rp->sync[u];
    rp->exec[u]->u.refs++;
    rp->sync[u]->u.refs++;
}

static void step_switch_signal(HbReplay *rp, int r, int i, int u, const IrOp *op)
{
    int k = rp->f->ordinal[r][i];
    uint32_t t = hb_time(i);
    if (!rp->rnd_exec[k])
        rp->rnd_exec[k] = clock_new(rp, NULL);
    clock_join(rp, rp->rnd_exec[k], rp->exec[u], u, t);
    if (op->relaxed)
        return;
    if (!rp->rnd_sync[k])
        rp->rnd_sync[k] = clock_new(rp, NULL);
    clock_join(rp, rp->rnd_sync[k], rp->sync[u], u, t);
}

static void step_wait(HbReplay *rp, int r, int i, int u, const IrOp *op)
{
    int p = op->peer, s = rp->f->partner[r][i];
    if (s < 0 || !rp->sig_exec[p][s])
        return; /* cannot happen along a valid schedule */
    uint32_t t = hb_time(s);
    int from = hb_unit(rp->f, p, s);
    clock_join(rp, clock_own(rp, &rp->exec[u]), rp->sig_exec[p][s], from, t);
    if (hb_strong(&rp->f->p->ranks[p].ops[s], op))
        clock_join(rp, clock_own(rp, &rp->sync[u]), rp->sig_sync[p][s], from, t);
    clock_unref(rp, rp->sig_exec[p][s]);
    clock_unref(rp, rp->sig_sync[p][s]);
    rp->sig_exec[p][s] = rp->sig_sync[p][s] = NULL;
}

static void step_switch_wait(HbReplay *rp, int r, int i, int u, const IrOp *op)
{
    int k = rp->f->ordinal[r][i];
    if (k >= rp->f->nrounds || !rp->rnd_exec[k])
        return;
    clock_join(rp, clock_own(rp, &rp->exec[u]), rp->rnd_exec[k], -1, 0);
    if (!op->relaxed && rp->rnd_sync[k])
        clock_join(rp, clock_own(rp, &rp->sync[u]), rp->rnd_sync[k], -1, 0);
    if (++rp->rnd_waits[k] == rp->f->n) {
        clock_unref(rp, rp->rnd_exec[k]);
        clock_unref(rp, rp->rnd_sync[k]);
        rp->rnd_exec[k] = rp->rnd_sync[k] = NULL;
    }
}

/* A barrier's meeting: its members' uses are consecutive in sync_schedule.c's schedule, so the first
   of them joins every member's clocks as they stand at the barrier (each with the time of its
   own use), and each member then takes the join: everything before the barrier in any member
   is before everything after it in every member, for execution and for visibility. */
static void step_barrier(HbReplay *rp, int r, int i, int u)
{
    const HbFacts *f = rp->f;
    int b = f->partner[r][i], k = f->ordinal[r][i];
    const HbBarrier *bar = &f->bars[b];
    HbClock **mc = &rp->bar_clock[2 * b];
    if (!mc[0]) {
        mc[0] = clock_new(rp, NULL);
        mc[1] = clock_new(rp, NULL);
        for (int m = 0; m < bar->nunits; m++) {
            int v = bar->units[m];
            uint32_t t = k < bar->nuses[m] ? hb_time(bar->uses[m][k]) : rp->now[v];
            clock_join(rp, mc[0], rp->exec[v], v, t);
            clock_join(rp, mc[1], rp->sync[v], v, t);
        }
        rp->bar_left[b] = bar->nunits;
    }
    clock_join(rp, clock_own(rp, &rp->exec[u]), mc[0], -1, 0);
    clock_join(rp, clock_own(rp, &rp->sync[u]), mc[1], -1, 0);
    if (--rp->bar_left[b] == 0) {
        clock_unref(rp, mc[0]);
        clock_unref(rp, mc[1]);
        mc[0] = mc[1] = NULL;
    }
}

void hb_replay_step(HbReplay *rp, int r, int i)
{
    const IrOp *op = &rp->f->p->ranks[r].ops[i];
    int u = hb_unit(rp->f, r, i);
    rp->at = op->loc;
    if (ir_is_signal(op->kind))
        step_signal(rp, r, i, u);
    else if (ir_is_switch_signal(op->kind))
        step_switch_signal(rp, r, i, u, op);
    else if (ir_is_wait(op->kind))
        step_wait(rp, r, i, u, op);
    else if (ir_is_switch_wait(op->kind))
        step_switch_wait(rp, r, i, u, op);
    else if (ir_is_barrier(op->kind))
        step_barrier(rp, r, i, u);
    rp->now[u] = hb_time(i);
}

HbView hb_exec_view(const HbReplay *rp, int unit)
{
    return (HbView){rp->exec[unit]->v, unit, rp->now[unit]};
}

HbView hb_sync_view(const HbReplay *rp, int unit)
{
    return (HbView){rp->sync[unit]->v, unit, rp->now[unit]};
}

HbView hb_end_view(HbReplay *rp, int q, bool sync, HbClock **made)
{
    const HbFacts *f = rp->f;
    int u0 = f->rank_unit[q], u1 = f->rank_unit[q + 1];
    *made = NULL;
    if (u1 - u0 == 1)
        return sync ? hb_sync_view(rp, u0) : hb_exec_view(rp, u0);
    HbClock *c = clock_new(rp, NULL);
    for (int u = u0; u < u1; u++)
        clock_join(rp, c, sync ? rp->sync[u] : rp->exec[u], u, rp->now[u]);
    *made = c;
    return (HbView){c->v, -1, 0};
}

void hb_end_view_done(HbReplay *rp, HbClock *made)
{
    clock_unref(rp, made);
}

bool hb_knows_start(const HbFacts *f, HbView v, int q)
{
    for (int u = f->rank_unit[q]; u < f->rank_unit[q + 1]; u++)
        if (hb_get(v, u) >= HB_START_TIME)
            return true;
    return false;
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

/* Program order: the start leads to each unit's first op, an op to the next of its unit or,
   the last, to the rank's end. */
static void relax_program_order(Search *sr, size_t node, HbEv e)
{
    CheckResult *r = sr->r;
    const HbFacts *f = &r->hb;
    int nops = r->p->ranks[e.rank].nops;
    if (e.idx < 0) {
        for (int u = f->rank_unit[e.rank]; u < f->rank_unit[e.rank + 1]; u++)
            relax(sr, node, (HbEv){e.rank, f->unit_first[u] < f->unit_end[u] ? f->unit_first[u] : nops}, 0);
        return;
    }
    int u = hb_unit(f, e.rank, e.idx);
    relax(sr, node, (HbEv){e.rank, e.idx + 1 < f->unit_end[u] ? e.idx + 1 : nops}, 0);
}

/* A barrier's meeting: every member's use follows every member's arrival. */
static void relax_meeting(Search *sr, size_t node, HbEv e)
{
    const HbFacts *f = &sr->r->hb;
    const HbBarrier *bar = &f->bars[f->partner[e.rank][e.idx]];
    int k = f->ordinal[e.rank][e.idx];
    for (int m = 0; m < bar->nunits; m++)
        if (k < bar->nuses[m])
            relax(sr, node, (HbEv){e.rank, bar->uses[m][k]}, 0);
}

static void expand(Search *sr, size_t node)
{
    CheckResult *r = sr->r;
    HbEv e = event_of(r, node);
    const IrSeq *s = &r->p->ranks[e.rank];
    if (e.idx < s->nops)
        relax_program_order(sr, node, e);
    if (e.idx < 0 || e.idx >= s->nops)
        return;
    const IrOp *op = &s->ops[e.idx];
    if (ir_is_signal(op->kind) && r->hb.partner[e.rank][e.idx] >= 0) {
        HbEv w = {op->peer, r->hb.partner[e.rank][e.idx]};
        relax(sr, node, w, !hb_strong(op, &r->p->ranks[w.rank].ops[w.idx]));
    } else if (ir_is_switch_signal(op->kind)) {
        relax_round(sr, node, op, r->hb.ordinal[e.rank][e.idx]);
    } else if (ir_is_barrier(op->kind)) {
        relax_meeting(sr, node, e);
    }
}

/* Walks back from `to`; the last relaxed edge met is the first along the path. Program order
   and barriers are never relaxed. */
static void first_relaxed(CheckResult *r, HbEv from, HbEv to, HbEv *sig, HbEv *wait)
{
    size_t v = node_of(r, to), start = node_of(r, from);
    while (v != start) {
        size_t u = (size_t)r->bfs_parent[v];
        HbEv a = event_of(r, u), b = event_of(r, v);
        bool program_order = a.rank == b.rank && (b.idx == a.idx + 1 || a.idx < 0 || b.idx >= r->p->ranks[b.rank].nops);
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
