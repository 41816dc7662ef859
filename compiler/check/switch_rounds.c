/*
 * switch_rounds.c - the switch's counting rule: a rank arrives for round k+1 only after round k is over.
 *
 * The language says that the k-th switch.wait completes once every rank has made its k-th
 * arrival. The hardware cannot count that way cheaply: the nvls flavour (one multimem.red on a
 * counter that every rank holds a copy of), the p2p emulation, MSCCL++'s switch channel and sim
 * all keep one counter per rank that every arrival of every rank increments, and the k-th wait
 * passes once that counter has reached k * nranks. The two meanings agree exactly when no rank
 * can make its (k+1)-th arrival before round k has completed somewhere: then, the first time
 * any k-th wait passes, no rank has made more than k arrivals, so k * nranks arrivals in all
 * means k from each rank (and by induction the same holds for every later round, and across
 * launches, since every launch ends with every round waited for). A program in which a rank
 * arrives twice before another rank arrives once could let a wait pass too soon.
 *
 * So the checker requires, for every rank q and round k >= 1, that q's (k+1)-th switch signal
 * is ordered in execution (EXEC: program order and every signal -> wait edge, relaxed ones
 * included) after some rank's k-th switch wait. Almost always q's own k-th wait comes before it
 * in program order, which costs nothing to see; only the arrivals for which that fails are
 * looked at again, with the vector clocks of a replay of sync_schedule.c's schedule.
 */
#include "check_text.h"
#include "happens_before.h"

/* q's k-th switch signal (0-based), and whether q's own (k-1)-th wait precedes it. */
static bool after_own_wait(const HbFacts *f, int q, int k)
{
    return k - 1 < f->nsw_wait[q] && f->sw_wait[q][k - 1] < f->sw_sig[q][k];
}

/* Whether some rank's (k-1)-th switch wait is EXEC-ordered before the signal, by its clock. */
static bool after_some_wait(const HbFacts *f, HbView v, int k)
{
    for (int p = 0; p < f->n; p++)
        if (k - 1 < f->nsw_wait[p] && hb_get(v, f->sw_unit[p]) >= hb_time(f->sw_wait[p][k - 1]))
            return true;
    return false;
}

static bool already_reported(const CheckResult *r, const IrOp *op)
{
    for (int i = 0; i < r->nearly; i++) {
        const IrOp *o = &r->p->ranks[r->early[i].rank].ops[r->early[i].idx];
        if (o->loc.src == op->loc.src && o->loc.line == op->loc.line && o->loc.col == op->loc.col)
            return true;
    }
    return false;
}

static void report(CheckResult *r, Diag *d, int q, int k)
{
    const HbFacts *f = &r->hb;
    Arena *a = r->p->arena;
    HbEv e = {q, f->sw_sig[q][k]};
    const IrOp *op = &r->p->ranks[q].ops[e.idx];
    if (r->nearly >= HB_MAX_REPORTS || already_reported(r, op))
        return;
    r->early = arena_grow(a, r->early, (size_t)r->nearly, (size_t)r->nearly + 1, sizeof e);
    r->early[r->nearly++] = e;
    diag_error(d, op->loc,
               "switch arrival ahead of its round: rank %d may make its %s switch arrival%s before round %d of the "
               "switch has completed: no switch.wait of round %d is ordered before it",
               q, check_nth(a, k + 1), check_ctx(a, op), k, k);
    if (k - 1 < f->nsw_wait[q]) {
        const IrOp *w = &r->p->ranks[q].ops[f->sw_wait[q][k - 1]];
        diag_note(d, w->loc, "rank %d waits for round %d only here, after that arrival%s", q, k, check_ctx(a, w));
    }
    diag_note(d, r->p->loc,
              "the switch counts the arrivals of all ranks together (the k-th wait passes once k x %d arrivals "
              "have been made in all), so an early arrival can stand in for a rank that has not arrived yet",
              r->p->nranks);
}

void rounds_check(CheckResult *r, Diag *d)
{
    const HbFacts *f = &r->hb;
    const IrProgram *p = r->p;
    char **suspect = NULL; /* [q][i]: 1 when op i of q is a switch signal not after q's own
                              wait, 2 once the replay found no other rank's wait before it */
    for (int q = 0; q < f->n; q++)
        for (int k = 1; k < f->nsw_sig[q]; k++)
            if (!after_own_wait(f, q, k)) {
                if (!suspect)
                    suspect = ARENA_ARRAY(p->arena, char *, (size_t)f->n);
                if (!suspect[q])
                    suspect[q] = ARENA_ARRAY(p->arena, char, (size_t)p->ranks[q].nops);
                suspect[q][f->sw_sig[q][k]] = 1;
            }
    if (!suspect)
        return;
    HbReplay rp;
    hb_replay_init(&rp, f, p->arena, &r->budget);
    for (size_t i = 0; i < r->run.nsched && !r->budget.over; i++) {
        HbEv e = r->run.sched[i];
        hb_replay_step(&rp, e.rank, e.idx);
        if (suspect[e.rank] && suspect[e.rank][e.idx] == 1 &&
            !after_some_wait(f, hb_exec_view(&rp, hb_unit(f, e.rank, e.idx)), f->ordinal[e.rank][e.idx]))
            suspect[e.rank][e.idx] = 2;
    }
    /* Reported by rank, then program order, whatever order the schedule found them in. */
    for (int q = 0; q < f->n; q++)
        for (int k = 1; suspect[q] && k < f->nsw_sig[q]; k++)
            if (suspect[q][f->sw_sig[q][k]] == 2)
                report(r, d, q, k);
}
