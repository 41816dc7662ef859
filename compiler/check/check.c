/*
 * check.c - the checker's entry point: the facts the rules read, then the rules in rules.def's
 * order, each under its row's condition.
 *
 * check_program first computes the facts: lower/order.c (intra-rank ordering for the code
 * generator, a lowering that plan_blocks.c reads and that spends this budget), hb_match (which
 * signal each wait consumes) and sync_simulate (one schedule that respects those edges). Then it
 * walks rules.def: plan_blocks.c, sync_schedule.c's rule 2, data_races.c's rule 1,
 * switch_rounds.c, packet_rules.c and postcondition.c's rule 4 (only when rules 1 and 2
 * passed, since with a race or a deadlock the final values depend on the schedule), and last
 * the budget's own error here. check_text.c keeps the rules' messages worded alike.
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

/* One error where checking ran out, naming the limit and what outgrew it (rules.def's last row). */
void report_budget(CheckResult *r, Diag *d)
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

typedef enum RuleWhen {
    WHEN_ALWAYS, WHEN_STUCK, WHEN_IN_BUDGET, WHEN_ALL_ENDED, WHEN_SYNC_QUIET, WHEN_CLEAN, WHEN_OVER_BUDGET,
} RuleWhen;

#define RULE(name, function, when, basis) RULE_##name,
typedef enum RuleId {
#include "rules.def"
    NRULES
} RuleId;
#undef RULE

typedef struct Rule {
    void (*run)(CheckResult *r, Diag *d);
    RuleWhen when;
    const char *basis;
} Rule;

#define RULE(name, function, when, basis) [RULE_##name] = {function, WHEN_##when, basis},
static const Rule rules[NRULES] = {
#include "rules.def"
};
#undef RULE

/* What the rows walked so far did, for the conditions that look back. */
typedef struct RuleLog {
    int errors_before;       /* d->nerrors before the first row */
    bool ran[NRULES];
    int said[NRULES];        /* errors the row reported */
    bool over_after[NRULES]; /* the budget was over once it returned */
} RuleLog;

static bool rule_runs(RuleWhen when, const CheckResult *r, const Diag *d, const RuleLog *log)
{
    bool over = r->budget.over;
    switch (when) {
    case WHEN_ALWAYS: return true;
    case WHEN_STUCK: return !r->run.all_ended;
    case WHEN_IN_BUDGET: return !over;
    case WHEN_ALL_ENDED: return r->run.all_ended;
    case WHEN_SYNC_QUIET:
        return log->ran[RULE_leftover_sync] && !log->said[RULE_leftover_sync] && !log->over_after[RULE_leftover_sync];
    case WHEN_CLEAN: return d->nerrors == log->errors_before && !over;
    case WHEN_OVER_BUDGET: return over;
    }
    return false;
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
    sync_simulate(&r->hb, p->arena, &r->run);
    RuleLog log = {.errors_before = d->nerrors};
    for (int k = 0; k < NRULES; k++) {
        if (!rule_runs(rules[k].when, r, d, &log))
            continue;
        int before = d->nerrors;
        const char *outer = d->rule;
        d->rule = rules[k].basis;
        rules[k].run(r, d);
        d->rule = outer;
        log.ran[k] = true;
        log.said[k] = d->nerrors - before;
        log.over_after[k] = r->budget.over;
    }
    return r;
}
