/*
 * check_text.c - the wording the checker's passes share (check_text.h): ordinals, counts, an
 * op's tag and loop context, chunk ranges, accesses (with their other name in place) and lists
 * of ranks or thread blocks.
 */
#include "check_text.h"

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
    char t[IR_CHUNKS_TEXT];
    return arena_printf(p->arena, "%s%s", p->bufs[buf].name, ir_chunks_text(t, first, count));
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
