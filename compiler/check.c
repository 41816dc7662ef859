/*
 * check.c - the checker's entry point and the wording its messages share.
 *
 * check_program runs the passes in dependency order: order.c (intra-rank ordering for the code
 * generator, independent of the rest), hb_match (which signal each wait consumes), for an
 * imported plan blocks.c (each thread block's ops may be taken in program order), sync.c's
 * simulation and rule 2, race.c's replay with vector clocks (rule 1), rounds.c (the switch's
 * arrivals keep to their rounds, part of rule 2), packets.c (packet sizes match, and a packet
 * slot is not reused before its reader read it), and post.c (rule 4)
 * only when rules 1 and 2 passed, since with a race or a deadlock the final values depend on
 * the schedule. The helpers below keep ranks, chunks and loop contexts worded alike in every
 * message.
 */
#include "check.h"

#include "cdsl.h"
#include "hb.h"

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
    order_program(p, &r->budget);
    partition_program(p);
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

const char *check_nth(Arena *a, int k)
{
    const char *suffix = "th";
    if (k % 100 < 11 || k % 100 > 13) {
        if (k % 10 == 1)
            suffix = "st";
        else if (k % 10 == 2)
            suffix = "nd";
        else if (k % 10 == 3)
            suffix = "rd";
    }
    return arena_printf(a, "%d%s", k, suffix);
}

const char *check_times(Arena *a, int k)
{
    if (k == 1)
        return "once";
    if (k == 2)
        return "twice";
    return arena_printf(a, "%d times", k);
}

const char *check_op_tag(Arena *a, const IrOp *op)
{
    if (op->ctx)
        return arena_printf(a, "(%s, %s)", ir_kind_name(op->kind), op->ctx);
    return arena_printf(a, "(%s)", ir_kind_name(op->kind));
}

const char *check_ctx(Arena *a, const IrOp *op)
{
    return op->ctx ? arena_printf(a, " (%s)", op->ctx) : "";
}

const char *check_chunks(const IrProgram *p, int buf, int first, int count)
{
    if (count == 1)
        return arena_printf(p->arena, "%s[%d]", p->bufs[buf].name, first);
    return arena_printf(p->arena, "%s[%d..%d]", p->bufs[buf].name, first, first + count);
}

/* In place, chunks of the holder that are (part of) the owner's aliased buffer are named both
 * ways, since the program may have written the other name: " (rank 1's input[0] in place)". */
static const char *in_place_alias(const IrProgram *p, int rank, int owner, int buf, int first, int count)
{
    int aliased, holder;
    if (!ir_in_place(p, &aliased, &holder) || buf != holder)
        return "";
    int lo = ir_in_place_first(p, owner), n = p->bufs[aliased].nchunks;
    int a = first > lo ? first : lo, b = first + count < lo + n ? first + count : lo + n;
    if (a >= b)
        return "";
    const char *whose = owner == rank ? "its" : arena_printf(p->arena, "rank %d's", owner);
    return arena_printf(p->arena, " (%s%s %s in place)", a == first && b == first + count ? "" : "part: ", whose,
                        check_chunks(p, aliased, a - lo, b - a));
}

const char *check_access(const IrProgram *p, int rank, bool write, int owner, int buf, int first, int count)
{
    const char *chunks = check_chunks(p, buf, first, count);
    const char *alias = in_place_alias(p, rank, owner, buf, first, count);
    const char *verb = write ? "writes" : "reads";
    if (owner == rank)
        return arena_printf(p->arena, "rank %d %s its %s%s", rank, verb, chunks, alias);
    return arena_printf(p->arena, "rank %d %s %s of rank %d%s", rank, verb, chunks, owner, alias);
}

const char *check_rank_list(Arena *a, const int *ranks, int n)
{
    if (n == 1)
        return arena_printf(a, "rank %d", ranks[0]);
    if (n > 6)
        return arena_printf(a, "%d ranks (%d, %d, %d, ..., %d)", n, ranks[0], ranks[1], ranks[2], ranks[n - 1]);
    const char *s = arena_printf(a, "ranks %d", ranks[0]);
    for (int i = 1; i < n; i++)
        s = arena_printf(a, "%s%s%d", s, i == n - 1 ? " and " : ", ", ranks[i]);
    return s;
}

const char *check_unit_list(const HbFacts *f, Arena *a, const int *units, int n)
{
    if (!f->p->ntbs) {
        int *ranks = ARENA_ARRAY(a, int, (size_t)n);
        for (int i = 0; i < n; i++)
            ranks[i] = f->unit_rank[units[i]];
        return check_rank_list(a, ranks, n);
    }
    const char *s = "";
    for (int i = 0; i < n && i < 6; i++) {
        int r = f->unit_rank[units[i]];
        s = arena_printf(a, "%s%srank %d threadblock %d", s, i == 0 ? "" : i == n - 1 ? " and " : ", ", r,
                         units[i] - f->rank_unit[r]);
    }
    return n > 6 ? arena_printf(a, "%s and %d more", s, n - 6) : s;
}
