/*
 * check.c - the checker's entry point and the wording its messages share.
 *
 * check_program runs the passes in dependency order: lower/order.c (intra-rank ordering for the
 * code generator, a lowering that plan_blocks.c reads and that spends this budget), hb_match (which signal each wait consumes), for an
 * imported plan plan_blocks.c (each thread block's ops may be taken in program order), sync_schedule.c's
 * simulation and rule 2, data_races.c's replay with vector clocks (rule 1), switch_rounds.c (the switch's
 * arrivals keep to their rounds, part of rule 2), packet_rules.c (packet sizes match, and a packet
 * slot is not reused before its reader read it), and postcondition.c (rule 4)
 * only when rules 1 and 2 passed, since with a race or a deadlock the final values depend on
 * the schedule. check_text.c keeps the passes' messages worded alike.
 */
#include "check.h"

#include "cdsl.h"
#include "happens_before.h"
#include "lower.h"

static const char *size_text(Arena *a, size_t bytes)
{
    static const char *const units[] = {"GiB", "MiB", "KiB"};
    for (int k = 0; k < 3; k++) {
        size_t unit = (size_t)1 << (30 - 10 * k);
        if (bytes >= unit && bytes % unit == 0)
            return arena_printf(a, "%zu %s", bytes / unit, units[k]);
    }
    return arena_printf(a, "%zu bytes", bytes);
}

/* One error where checking ran out, naming the limit and what outgrew it. */
static void report_budget(CheckResult *r, Diag *d)
{
    const CheckBudget *b = &r->budget;
    Arena *a = r->p->arena;
    if (b->over_steps)
        diag_error(d, b->at, "checking needs more than %llu steps of work: its %s outgrew that here (the limit "
                   "is the check_steps option, cdslc --check-steps)", (unsigned long long)b->max_steps, b->what);
    else
        diag_error(d, b->at, "checking needs more than %s of memory: its %s outgrew that here (the limit is "
                   "the check_memory option, cdslc --check-memory)", size_text(a, b->max_bytes), b->what);
    diag_note(d, r->p->loc, "by then it followed %zu ranges of chunks over the %d ranks", b->runs_at_limit,
              r->p->nranks);
}

struct CheckResult *check_program(IrProgram *p, Diag *d, const CheckLimits *limits)
{
    CheckResult *r = ARENA_NEW(p->arena, CheckResult);
    r->p = p;
    r->budget.max_bytes = limits ? limits->memory : CDSL_CHECK_MEMORY_DEFAULT;
    r->budget.max_steps = limits ? limits->steps : CDSL_CHECK_STEPS_DEFAULT;
    r->budget.at = p->loc;
    order_program(p, &r->budget); /* lowering the rules read (lower.h): sync_before, on this budget */
    hb_match(p, &r->hb);
    int before = d->nerrors;
    order_blocks_check(r, d); /* a plan's thread blocks: each may be taken as a sequence */
    sync_simulate(&r->hb, p->arena, &r->run);
    /* A deadlock comes first (it is why later ops never ran); leftovers after the races. */
    if (!r->run.all_ended)
        sync_report(r, d);
    if (!r->budget.over)
        race_check(r, d);
    if (r->run.all_ended) {
        int synced = d->nerrors;
        sync_report(r, d);
        if (d->nerrors == synced && !r->budget.over) { /* uneven or unconsumed arrivals say enough */
            rounds_check(r, d);
            packets_check(r, d);
        }
    }
    if (d->nerrors == before && !r->budget.over)
        post_check(r, d);
    if (r->budget.over)
        report_budget(r, d);
    return r;
}
