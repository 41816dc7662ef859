/*
 * sync_schedule.c - rule 2: unmatched synchronisation and deadlocks, by simulating every rank.
 *
 * The simulation runs ranks from a ready queue; a rank runs until it reaches a wait whose
 * signal has not been made (a peer wait) or whose round not every rank has reached (a switch
 * wait), and is woken by exactly the signal it needs. Every op that runs is appended to the
 * schedule, which is therefore consistent with program order and every matched edge: the
 * race pass replays it with vector clocks and postcondition.c follows values along it.
 *
 * Afterwards: if a rank is stuck, either its wait can never be satisfied (the signal does not
 * exist) or it waits for a rank that is itself stuck; following "waits for" edges from stuck
 * ranks ends in such a root cause or in a cycle, which is reported step by step. If every
 * rank ended, leftover signals and uneven switch arrivals are reported: the runtime's
 * counters persist across launches, so either would put the next launch out of step.
 */
#include "check_text.h"
#include "happens_before.h"

#include <string.h>

typedef struct Sim {
    const HbFacts *f;
    HbRun *run;
    int *queue, qhead, qlen; /* ready units, a ring of nunits */
    bool *queued;
    int *sw_made;            /* [r] switch signals made so far */
    int *round_count;        /* [k] ranks that made their k-th switch signal */
    int *bar_arrived;        /* [b] members at the barrier's current meeting */
    bool *at_barrier;        /* [u] u is counted among them: it waits at its pc's barrier */
} Sim;

static void sim_ready(Sim *s, int u)
{
    if (s->queued[u])
        return;
    s->queued[u] = true;
    s->queue[(s->qhead + s->qlen++) % s->f->nunits] = u;
}

static bool wait_ready(const Sim *s, int r, const IrOp *op, int i)
{
    if (ir_is_wait(op->kind)) {
        int sig = s->f->partner[r][i];
        return sig >= 0 && s->run->pc[hb_unit(s->f, op->peer, sig)] > sig;
    }
    int k = s->f->ordinal[r][i];
    return k < s->f->nrounds && s->round_count[k] == s->f->n;
}

/* Wakes whoever waits for the signal that rank r just made at op i. */
static void wake(Sim *s, int r, const IrOp *op, int i)
{
    const HbFacts *f = s->f;
    if (ir_is_signal(op->kind)) {
        int w = f->partner[r][i];
        if (w >= 0) {
            int u = hb_unit(f, op->peer, w);
            if (s->run->pc[u] == w)
                sim_ready(s, u);
        }
        return;
    }
    int k = f->ordinal[r][i];
    s->sw_made[r]++;
    if (++s->round_count[k] < f->n)
        return;
    for (int q = 0; q < f->n; q++) {
        int u = f->sw_unit[q], pc = s->run->pc[u];
        if (pc < f->unit_end[u] && ir_is_switch_wait(f->p->ranks[q].ops[pc].kind) && f->ordinal[q][pc] == k)
            sim_ready(s, u);
    }
}

/* Unit u arrives at a barrier; the last member to arrive lets every member through, their
   uses one after the other in the schedule (happens_before.c's replay relies on that). False: u waits.
   A unit may run again while it waits (it can be queued twice: by the meeting that let it
   through and went on, by a switch round), so it is counted once per meeting: counted twice,
   it would stand for a member that has not come yet, and that member's pc, moved past the
   barrier, would skip its ops unchecked. */
static bool barrier_arrive(Sim *s, int u, int r, int i)
{
    const HbFacts *f = s->f;
    int b = f->partner[r][i], k = f->ordinal[r][i];
    const HbBarrier *bar = &f->bars[b];
    if (s->at_barrier[u])
        return false;
    s->at_barrier[u] = true;
    if (++s->bar_arrived[b] < bar->nunits)
        return false;
    s->bar_arrived[b] = 0;
    for (int m = 0; m < bar->nunits; m++) {
        int v = bar->units[m];
        s->run->sched[s->run->nsched++] = (HbEv){r, bar->uses[m][k]};
        s->run->pc[v] = bar->uses[m][k] + 1;
        s->at_barrier[v] = false;
        sim_ready(s, v);
    }
    return true;
}

static void sim_unit(Sim *s, int u)
{
    const HbFacts *f = s->f;
    int r = f->unit_rank[u];
    const IrSeq *seq = &f->p->ranks[r];
    int *pc = &s->run->pc[u];
    while (*pc < f->unit_end[u]) {
        const IrOp *op = &seq->ops[*pc];
        if (ir_op_info(op->kind)->sync == SYNC_WAIT && !wait_ready(s, r, op, *pc))
            return;
        if (ir_is_barrier(op->kind)) {
            if (!barrier_arrive(s, u, r, *pc))
                return; /* blocked until the last member comes (it moved our pc on) */
            continue;
        }
        s->run->sched[s->run->nsched++] = (HbEv){r, *pc};
        ++*pc;
        if (ir_op_info(op->kind)->sync == SYNC_SIGNAL)
            wake(s, r, op, *pc - 1);
    }
}

void sync_simulate(const HbFacts *f, Arena *a, HbRun *run)
{
    size_t n = (size_t)f->n, nu = (size_t)f->nunits;
    memset(run, 0, sizeof *run);
    run->sched = ARENA_ARRAY(a, HbEv, f->nops_total + 1);
    run->pc = ARENA_ARRAY(a, int, nu);
    Sim s = {f, run, ARENA_ARRAY(a, int, nu), 0, 0, ARENA_ARRAY(a, bool, nu), ARENA_ARRAY(a, int, n),
             ARENA_ARRAY(a, int, (size_t)f->nrounds + 1), ARENA_ARRAY(a, int, (size_t)f->nbars + 1), ARENA_ARRAY(a, bool, nu)};
    for (int u = 0; u < f->nunits; u++) {
        run->pc[u] = f->unit_first[u];
        sim_ready(&s, u);
    }
    while (s.qlen) {
        int u = s.queue[s.qhead];
        s.qhead = (s.qhead + 1) % f->nunits;
        s.qlen--;
        s.queued[u] = false;
        sim_unit(&s, u);
    }
    run->all_ended = true;
    for (int u = 0; u < f->nunits; u++)
        if (run->pc[u] < f->unit_end[u])
            run->all_ended = false;
}

/* ---- Reporting ------------------------------------------------------------------------- */

typedef struct Reporter {
    CheckResult *r;
    Diag *d;
    Arena *a;
    const Loc **seen; /* locations already reported, to say each thing once */
    int nseen, nreports;
} Reporter;

static bool same_loc(Loc x, Loc y)
{
    return x.src == y.src && x.line == y.line && x.col == y.col;
}

/* True the first time a location is reported (and while there is room for more). */
static bool first_report(Reporter *rep, const Loc *at)
{
    if (rep->nreports >= HB_MAX_REPORTS)
        return false;
    for (int i = 0; i < rep->nseen; i++)
        if (same_loc(*rep->seen[i], *at))
            return false;
    rep->seen = arena_grow(rep->a, rep->seen, (size_t)rep->nseen, (size_t)rep->nseen + 1, sizeof *rep->seen);
    rep->seen[rep->nseen++] = at;
    rep->nreports++;
    return true;
}

static const char *arrivals(Arena *a, int k)
{
    return k == 1 ? "1 switch arrival" : arena_printf(a, "%d switch arrivals", k);
}

static const IrOp *op_at(const CheckResult *r, HbEv e)
{
    return &r->p->ranks[e.rank].ops[e.idx];
}

/* The last op of `rank` of the given kind (and peer, for peer ops), or -1. */
static int last_op(const IrProgram *p, int rank, IrKind kind, int peer)
{
    const IrSeq *s = &p->ranks[rank];
    for (int i = s->nops - 1; i >= 0; i--)
        if (s->ops[i].kind == kind && (peer < 0 || s->ops[i].peer == peer))
            return i;
    return -1;
}

/* Where rank `rank` is stuck (its first unit that did not end), or -1 when it ended. */
static int stuck_at(const CheckResult *r, int rank)
{
    const HbFacts *f = &r->hb;
    for (int u = f->rank_unit[rank]; u < f->rank_unit[rank + 1]; u++)
        if (r->run.pc[u] < f->unit_end[u])
            return r->run.pc[u];
    return -1;
}

/* Points at the rank's last op of this kind; without one, at where the rank ends or is stuck:
   "rank 3 leaves here without ever <none>" / "rank 3 is stuck here itself, without ever <none>". */
static void note_last(Reporter *rep, int rank, IrKind kind, int peer, const char *what, const char *none)
{
    const CheckResult *r = rep->r;
    int i = last_op(r->p, rank, kind, peer), pc = stuck_at(r, rank);
    if (i >= 0) {
        const IrOp *op = &r->p->ranks[rank].ops[i];
        diag_note(rep->d, op->loc, "%s is here%s", what, check_ctx(rep->a, op));
    } else if (pc >= 0) {
        const IrOp *op = &r->p->ranks[rank].ops[pc];
        diag_note(rep->d, op->loc, "rank %d is stuck here itself%s, without ever %s", rank, check_ctx(rep->a, op),
                  none);
    } else {
        diag_note(rep->d, r->p->loc, "rank %d leaves here without ever %s", rank, none);
    }
}

/* The last op of `rank` of the given kind on semaphore `sem`, or -1; *count: how many there are. */
static int last_sem_op(const IrProgram *p, int rank, IrKind kind, int sem, int *count)
{
    const IrSeq *s = &p->ranks[rank];
    int last = -1;
    *count = 0;
    for (int i = 0; i < s->nops; i++)
        if (s->ops[i].kind == kind && s->ops[i].chan == sem)
            last = i, ++*count;
    return last;
}

/* A semaphore op with no partner: an acquire no release satisfies, or a release left over. */
static void report_semaphore(Reporter *rep, HbEv e, bool acquire)
{
    const CheckResult *r = rep->r;
    const IrOp *op = op_at(r, e);
    int k = r->hb.ordinal[e.rank][e.idx], sem = op->chan, n;
    IrKind other = ir_op_info(op->kind)->pair;
    int last = last_sem_op(r->p, e.rank, other, sem, &n);
    const char *verb = acquire ? "releases" : "acquires";
    const char *have = n ? arena_printf(rep->a, "rank %d %s it only %s", e.rank, verb, check_times(rep->a, n))
                         : arena_printf(rep->a, "no threadblock of rank %d %s it", e.rank, verb);
    if (acquire)
        diag_error(rep->d, op->loc, "rank %d waits forever here%s: this is its %s sem_acquire of semaphore %d, but %s",
                   e.rank, check_ctx(rep->a, op), check_nth(rep->a, k + 1), sem, have);
    else
        diag_error(rep->d, op->loc, "semaphore release never acquired: rank %d's %s sem_release of semaphore %d%s has "
                   "no matching sem_acquire: %s; the semaphore keeps its value across launches, so the next launch "
                   "would start out of step", e.rank, check_nth(rep->a, k + 1), sem, check_ctx(rep->a, op), have);
    if (last >= 0)
        diag_note(rep->d, r->p->ranks[e.rank].ops[last].loc, "rank %d's last %s of semaphore %d is here%s", e.rank,
                  ir_kind_name(other), sem, check_ctx(rep->a, &r->p->ranks[e.rank].ops[last]));
}

/* A peer wait with no matching signal anywhere. */
static void report_peer_forever(Reporter *rep, HbEv w)
{
    const IrOp *op = op_at(rep->r, w);
    int k = rep->r->hb.ordinal[w.rank][w.idx], p = op->peer;
    if (!first_report(rep, &op->loc))
        return;
    if (ir_is_semaphore(op->kind)) {
        report_semaphore(rep, w, true);
        return;
    }
    if (ir_is_packet(op->kind)) {
        const char *sent = k ? arena_printf(rep->a, "rank %d sends packets to rank %d only %s", p, w.rank,
                                            check_times(rep->a, k))
                             : arena_printf(rep->a, "rank %d never sends packets to rank %d", p, w.rank);
        diag_error(rep->d, op->loc, "rank %d waits forever here%s: this is its %s recv_packets from rank %d, but %s",
                   w.rank, check_ctx(rep->a, op), check_nth(rep->a, k + 1), p, sent);
        note_last(rep, p, ir_op_info(op->kind)->pair, w.rank, arena_printf(rep->a, "rank %d's last send_packets to rank %d", p, w.rank),
                  arena_printf(rep->a, "sending packets to rank %d", w.rank));
        return;
    }
    const char *supply = k ? arena_printf(rep->a, "rank %d signals rank %d only %s", p, w.rank, check_times(rep->a, k))
                           : arena_printf(rep->a, "rank %d never signals rank %d", p, w.rank);
    diag_error(rep->d, op->loc, "rank %d waits forever here%s: this is its %s wait for rank %d, but %s", w.rank,
               check_ctx(rep->a, op), check_nth(rep->a, k + 1), p, supply);
    note_last(rep, p, ir_op_info(op->kind)->pair, w.rank, arena_printf(rep->a, "rank %d's last signal to rank %d", p, w.rank),
              arena_printf(rep->a, "signalling rank %d", w.rank));
}

/* The first rank that never makes switch arrival k, or -1. */
static int missing_arrival(const HbFacts *f, int k)
{
    for (int q = 0; q < f->n; q++)
        if (f->nsw_sig[q] <= k)
            return q;
    return -1;
}

static void report_switch_forever(Reporter *rep, HbEv w, int q)
{
    const IrOp *op = op_at(rep->r, w);
    int k = rep->r->hb.ordinal[w.rank][w.idx];
    if (!first_report(rep, &op->loc))
        return;
    int made = rep->r->hb.nsw_sig[q];
    const char *supply = made ? arena_printf(rep->a, "rank %d makes only %d", q, made)
                              : arena_printf(rep->a, "rank %d makes none", q);
    diag_error(rep->d, op->loc, "rank %d waits forever here%s: it waits for every rank's %s switch arrival, but %s",
               w.rank, check_ctx(rep->a, op), check_nth(rep->a, k + 1), supply);
    note_last(rep, q, ir_op_info(op->kind)->pair, -1, arena_printf(rep->a, "rank %d's last switch arrival", q),
              "signalling the switch");
}

/* A barrier that some member never reaches as often as this meeting needs. */
static void report_barrier_forever(Reporter *rep, HbEv w, int m)
{
    const HbFacts *f = &rep->r->hb;
    const IrOp *op = op_at(rep->r, w);
    const HbBarrier *bar = &f->bars[f->partner[w.rank][w.idx]];
    int k = f->ordinal[w.rank][w.idx], v = bar->units[m];
    if (!first_report(rep, &op->loc))
        return;
    const IrOp *last = &rep->r->p->ranks[w.rank].ops[bar->uses[m][bar->nuses[m] - 1]];
    diag_error(rep->d, op->loc, "rank %d waits forever here%s: this is its %s use of barrier %d, but its "
               "threadblock %d uses that barrier only %s", w.rank, check_ctx(rep->a, op), check_nth(rep->a, k + 1), bar->id,
               v - f->rank_unit[w.rank], check_times(rep->a, bar->nuses[m]));
    diag_note(rep->d, last->loc, "threadblock %d's last use of barrier %d is here%s", v - f->rank_unit[w.rank],
              bar->id, check_ctx(rep->a, last));
}

/* A member of the barrier that has not come to this meeting; -1 when one never will. */
static int barrier_waits_for(Reporter *rep, int u, HbEv w)
{
    const HbFacts *f = &rep->r->hb;
    const HbBarrier *bar = &f->bars[f->partner[w.rank][w.idx]];
    int k = f->ordinal[w.rank][w.idx];
    for (int m = 0; m < bar->nunits; m++)
        if (bar->nuses[m] <= k) {
            report_barrier_forever(rep, w, m);
            return -1;
        }
    for (int m = 0; m < bar->nunits; m++)
        if (bar->units[m] != u && rep->r->run.pc[bar->units[m]] != bar->uses[m][k])
            return bar->units[m];
    return u;
}

/* A stuck unit's wait: the unit it waits for, or -1 when the wait can never be satisfied. */
static int waits_for(Reporter *rep, int u)
{
    const CheckResult *r = rep->r;
    const HbFacts *f = &r->hb;
    int rank = f->unit_rank[u];
    HbEv w = {rank, r->run.pc[u]};
    const IrOp *op = op_at(r, w);
    if (ir_is_barrier(op->kind))
        return barrier_waits_for(rep, u, w);
    if (ir_is_wait(op->kind)) {
        int sig = r->hb.partner[rank][w.idx];
        if (sig >= 0)
            return hb_unit(f, op->peer, sig);
        report_peer_forever(rep, w);
        return -1;
    }
    int k = r->hb.ordinal[rank][w.idx], q = missing_arrival(&r->hb, k);
    if (q >= 0) {
        report_switch_forever(rep, w, q);
        return -1;
    }
    /* The first other rank that has not arrived yet; else the rank itself. */
    for (q = 0; q < r->hb.n; q++)
        if (q != rank && r->hb.sw_sig[q][k] >= r->run.pc[f->sw_unit[q]])
            return f->sw_unit[q];
    return u;
}

/* "rank 1's 1st signal to rank 0, which rank 1 sends at 9:5" */
static const char *awaited(Reporter *rep, HbEv w, int target_unit)
{
    const CheckResult *r = rep->r;
    const IrOp *op = op_at(r, w);
    int k = r->hb.ordinal[w.rank][w.idx], target = r->hb.unit_rank[target_unit];
    if (ir_is_barrier(op->kind)) {
        int pc = r->run.pc[target_unit];
        return arena_printf(rep->a, "threadblock %d of rank %d to come to barrier %d; it is stuck at %d:%d",
                            target_unit - r->hb.rank_unit[target], target, op->barrier,
                            r->p->ranks[target].ops[pc].loc.line, r->p->ranks[target].ops[pc].loc.col);
    }
    if (ir_is_semaphore(op->kind)) {
        const IrOp *sig = &r->p->ranks[target].ops[r->hb.partner[w.rank][w.idx]];
        return arena_printf(rep->a, "threadblock %d's %s sem_release of semaphore %d, at %d:%d", sig->tb,
                            check_nth(rep->a, k + 1), op->chan, sig->loc.line, sig->loc.col);
    }
    if (ir_is_wait(op->kind)) {
        const IrOp *sig = &r->p->ranks[target].ops[r->hb.partner[w.rank][w.idx]];
        return arena_printf(rep->a, "rank %d's %s %s to rank %d, which rank %d sends at %d:%d", target,
                            check_nth(rep->a, k + 1), ir_kind_name(ir_op_info(op->kind)->pair), w.rank,
                            target, sig->loc.line, sig->loc.col);
    }
    const IrOp *sig = &r->p->ranks[target].ops[r->hb.sw_sig[target][k]];
    return arena_printf(rep->a, "rank %d's %s switch arrival, which rank %d makes at %d:%d", target,
                        check_nth(rep->a, k + 1), target, sig->loc.line, sig->loc.col);
}

static void record_cycle(Reporter *rep, const int *units, int len, CheckCycle *c)
{
    CheckResult *r = rep->r;
    int start = 0; /* begin the story at the lowest unit */
    for (int j = 1; j < len; j++)
        if (units[j] < units[start])
            start = j;
    c->waits = ARENA_ARRAY(rep->a, HbEv, (size_t)len);
    c->len = len;
    for (int j = 0; j < len; j++) {
        int u = units[(start + j) % len];
        c->waits[j] = (HbEv){r->hb.unit_rank[u], r->run.pc[u]};
    }
    r->cycles = arena_grow(rep->a, r->cycles, (size_t)r->ncycles, (size_t)r->ncycles + 1, sizeof *c);
    r->cycles[r->ncycles++] = *c;
}

/* One error at the first wait, then one note per step of the cycle. */
static void report_cycle(Reporter *rep, const int *units, int len)
{
    enum { MAX_STEPS = 16 };
    CheckCycle c;
    record_cycle(rep, units, len, &c);
    const IrOp *first = op_at(rep->r, c.waits[0]);
    if (!first_report(rep, &first->loc))
        return;
    const HbFacts *f = &rep->r->hb;
    int *order = ARENA_ARRAY(rep->a, int, (size_t)len), *ou = ARENA_ARRAY(rep->a, int, (size_t)len);
    for (int j = 0; j < len; j++) {
        order[j] = c.waits[j].rank;
        ou[j] = hb_unit(f, c.waits[j].rank, c.waits[j].idx);
    }
    if (len == 1 && ir_is_switch_wait(first->kind))
        diag_error(rep->d, first->loc, "deadlock: rank %d waits for its own switch arrival", order[0]);
    else if (len == 1)
        diag_error(rep->d, first->loc, "deadlock: rank %d waits for itself", order[0]);
    else
        diag_error(rep->d, first->loc, "deadlock: %s wait for each other in a cycle",
                   check_unit_list(f, rep->a, ou, len));
    for (int j = 0; j < len && j < MAX_STEPS; j++) {
        HbEv w = c.waits[j];
        diag_note(rep->d, op_at(rep->r, w)->loc, "rank %d waits here%s for %s", w.rank,
                  check_ctx(rep->a, op_at(rep->r, w)), awaited(rep, w, ou[(j + 1) % len]));
    }
    if (len > MAX_STEPS)
        diag_note(rep->d, (Loc){0}, "... and %d more steps, back to rank %d", len - MAX_STEPS, order[0]);
}

/* Follows "waits for" from every stuck rank; reports each cycle once. */
static void find_cycles(Reporter *rep, const int *succ)
{
    const CheckResult *r = rep->r;
    int n = r->hb.nunits;
    char *color = ARENA_ARRAY(rep->a, char, (size_t)n); /* 0 new, 1 on the path, 2 done */
    int *path = ARENA_ARRAY(rep->a, int, (size_t)n + 1);
    for (int s = 0; s < n; s++) {
        int len = 0, q = s;
        while (q >= 0 && color[q] == 0) {
            color[q] = 1;
            path[len++] = q;
            q = succ[q];
        }
        if (q >= 0 && color[q] == 1) {
            int from = 0;
            while (path[from] != q)
                from++;
            report_cycle(rep, path + from, len - from);
        }
        for (int j = 0; j < len; j++)
            color[path[j]] = 2;
    }
}

static void report_stuck(Reporter *rep)
{
    const CheckResult *r = rep->r;
    int n = r->hb.nunits;
    int *succ = ARENA_ARRAY(rep->a, int, (size_t)n);
    for (int u = 0; u < n; u++)
        succ[u] = r->run.pc[u] < r->hb.unit_end[u] ? waits_for(rep, u) : -1;
    find_cycles(rep, succ);
}

/* Signal i of rank q has no wait: say how often its peer does wait for q. */
static void report_leftover(Reporter *rep, int q, int i)
{
    const IrOp *op = &rep->r->p->ranks[q].ops[i];
    int k = rep->r->hb.ordinal[q][i], p = op->peer;
    if (ir_is_semaphore(op->kind)) {
        report_semaphore(rep, (HbEv){q, i}, false);
        return;
    }
    if (ir_is_packet(op->kind)) {
        const char *got = k ? arena_printf(rep->a, "rank %d receives packets from rank %d only %s", p, q,
                                           check_times(rep->a, k))
                            : arena_printf(rep->a, "rank %d never receives packets from rank %d", p, q);
        diag_error(rep->d, op->loc, "packets never received: rank %d's %s send_packets to rank %d%s has no matching "
                   "recv_packets: %s", q, check_nth(rep->a, k + 1), p, check_ctx(rep->a, op), got);
        note_last(rep, p, ir_op_info(op->kind)->pair, q, arena_printf(rep->a, "rank %d's last recv_packets from rank %d", p, q),
                  arena_printf(rep->a, "receiving packets from rank %d", q));
        return;
    }
    const char *waits = k ? arena_printf(rep->a, "rank %d waits for rank %d only %s", p, q, check_times(rep->a, k))
                          : arena_printf(rep->a, "rank %d never waits for rank %d", p, q);
    diag_error(rep->d, op->loc, "signal never consumed: rank %d's %s signal to rank %d%s has no matching wait: %s", q,
               check_nth(rep->a, k + 1), p, check_ctx(rep->a, op), waits);
    note_last(rep, p, ir_op_info(op->kind)->pair, q, arena_printf(rep->a, "rank %d's last wait for rank %d", p, q),
              arena_printf(rep->a, "waiting for rank %d", q));
}

static void report_leftover_signals(Reporter *rep)
{
    const CheckResult *r = rep->r;
    for (int q = 0; q < r->hb.n; q++) {
        const IrSeq *s = &r->p->ranks[q];
        for (int i = 0; i < s->nops; i++)
            if (ir_is_signal(s->ops[i].kind) && r->hb.partner[q][i] < 0 && !ir_unread_packets(&s->ops[i]) &&
                first_report(rep, &s->ops[i].loc))
                report_leftover(rep, q, i);
    }
}

/* Ranks that make different numbers of switch arrivals: some round never completes. */
static bool report_uneven_switch(Reporter *rep)
{
    const HbFacts *f = &rep->r->hb;
    int lo = 0, hi = 0;
    for (int q = 1; q < f->n; q++) {
        if (f->nsw_sig[q] < f->nsw_sig[lo])
            lo = q;
        if (f->nsw_sig[q] > f->nsw_sig[hi])
            hi = q;
    }
    if (f->nsw_sig[lo] == f->nsw_sig[hi])
        return false;
    HbEv extra = {hi, f->sw_sig[hi][f->nsw_sig[lo]]};
    const IrOp *op = op_at(rep->r, extra);
    if (!first_report(rep, &op->loc))
        return true;
    diag_error(rep->d, op->loc,
               "uneven switch arrivals: rank %d makes %s but rank %d makes %d; this %s arrival of rank %d%s is "
               "never matched",
               hi, arrivals(rep->a, f->nsw_sig[hi]), lo, f->nsw_sig[lo], check_nth(rep->a, f->nsw_sig[lo] + 1), hi,
               check_ctx(rep->a, op));
    note_last(rep, lo, op->kind, -1, arena_printf(rep->a, "rank %d's last switch arrival", lo),
              "signalling the switch");
    return true;
}

/* Every rank arrives equally often, but a rank waits for fewer rounds than there are. */
static void report_unwaited_rounds(Reporter *rep)
{
    const HbFacts *f = &rep->r->hb;
    for (int q = 0; q < f->n; q++) {
        if (f->nsw_wait[q] >= f->nsw_sig[q])
            continue;
        HbEv sig = {q, f->sw_sig[q][f->nsw_wait[q]]};
        const IrOp *op = op_at(rep->r, sig);
        if (!first_report(rep, &op->loc))
            continue;
        const char *waits = f->nsw_wait[q] ? arena_printf(rep->a, "waits on the switch only %s",
                                                          check_times(rep->a, f->nsw_wait[q]))
                                           : "never waits on the switch";
        diag_error(rep->d, op->loc,
                   "switch arrival never consumed: rank %d makes %s but %s; nothing waits for this %s arrival%s",
                   q, arrivals(rep->a, f->nsw_sig[q]), waits, check_nth(rep->a, f->nsw_wait[q] + 1),
                   check_ctx(rep->a, op));
        note_last(rep, q, ir_op_info(op->kind)->pair, -1, arena_printf(rep->a, "rank %d's last switch.wait", q),
                  "waiting on the switch");
    }
}

void sync_report(CheckResult *r, Diag *d)
{
    Reporter rep = {r, d, r->p->arena, NULL, 0, 0};
    if (!r->run.all_ended) {
        report_stuck(&rep);
        return;
    }
    report_leftover_signals(&rep);
    if (!report_uneven_switch(&rep))
        report_unwaited_rounds(&rep);
}
