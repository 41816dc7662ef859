/*
 * colls.c - the collectives table: colls.def's rows as CollInfo (the expression columns become
 * small functions), lookups by name, and cdsl.h's cdsl_collective_* accessors, through which
 * tools and the Python package learn what a collective means without a list of their own.
 */
#include "colls.h"

#include <stdio.h>
#include <string.h>

#include "cdsl.h"
#include "ir.h"

#define DECLARED (-1)

/* Each expression column as a function of its row (-Wno-unused-parameter: a row may leave a
   variable unused). */
#define COLL(id, nm, in_, out_, ip, al, ho, first_, post_, from_, busbw_, msc)                              \
    static long long id##_in(long long n, long long C) { return in_; }                                      \
    static long long id##_out(long long n, long long C) { return out_; }                                    \
    static long long id##_first(long long r, long long C) { return first_; }                                \
    static long long id##_from(long long r, long long C) { return from_; }                                  \
    static double id##_busbw(double n) { return busbw_; }
#include "colls.def"
#undef COLL

static const CollInfo table[COLL_COUNT] = {
#define COLL(id, nm, in_, out_, ip, al, ho, first_, post_, from_, busbw_, msc)                              \
    [COLL_##id] = {nm, id##_in, id##_out, COLL_IN_PLACE_##ip, al, ho, id##_first, COLL_POST_##post_, id##_from, \
                   id##_busbw, msc},
#include "colls.def"
#undef COLL
};

static const char *const names[COLL_COUNT] = {
#define COLL(id, nm, ...) nm,
#include "colls.def"
#undef COLL
};

_Static_assert((int)COLL_POST_NONE == (int)CDSL_POST_NONE && (int)COLL_POST_BARRIER == (int)CDSL_POST_BARRIER &&
                   (int)COLL_POST_GATHER == (int)CDSL_POST_GATHER && (int)COLL_POST_SUM == (int)CDSL_POST_SUM &&
                   (int)COLL_POST_BROADCAST == (int)CDSL_POST_BROADCAST && (int)COLL_POST_REDUCE == (int)CDSL_POST_REDUCE,
               "colls.h's CollPost is cdsl.h's cdsl_postcondition");

const CollInfo *coll_info(Collective c)
{
    return (unsigned)c < COLL_COUNT ? &table[c] : NULL;
}

bool coll_find(const char *name, Collective *out)
{
    for (int i = 0; name && i < COLL_COUNT; i++)
        if (!strcmp(name, table[i].name)) {
            *out = (Collective)i;
            return true;
        }
    return false;
}

bool coll_find_mscclpp(const char *name, Collective *out)
{
    for (int i = 0; name && i < COLL_COUNT; i++)
        if (table[i].mscclpp && !strcmp(name, table[i].mscclpp)) {
            *out = (Collective)i;
            return true;
        }
    return false;
}

bool coll_declares_buffers(const CollInfo *ci)
{
    return ci->in(1, 1) == DECLARED;
}

bool coll_has_root(const CollInfo *ci)
{
    return ci->post == COLL_POST_BROADCAST || ci->post == COLL_POST_REDUCE;
}

bool coll_copies(const CollInfo *ci)
{
    return ci->post == COLL_POST_GATHER || ci->post == COLL_POST_BROADCAST;
}

bool coll_sums(const CollInfo *ci)
{
    return ci->post == COLL_POST_SUM || ci->post == COLL_POST_REDUCE;
}

bool coll_output_checked(const CollInfo *ci, int rank, int root)
{
    return (coll_copies(ci) || coll_sums(ci)) && (ci->post != COLL_POST_REDUCE || rank == root);
}

bool coll_alias_per_rank(const CollInfo *ci, int chunks)
{
    return ci->first(1, chunks) != ci->first(0, chunks);
}

const char *const *coll_names(void)
{
    return names;
}

const char *coll_list(bool (*keep)(const CollInfo *), const char *last_sep, char *buf, int size)
{
    int kept = 0, total = 0, at = 0;
    for (int i = 0; i < COLL_COUNT; i++)
        total += !keep || keep(&table[i]);
    buf[0] = '\0';
    for (int i = 0; i < COLL_COUNT && at < size; i++) {
        if (keep && !keep(&table[i]))
            continue;
        const char *sep = kept == 0 ? "" : kept == total - 1 ? last_sep : ", ";
        int w = snprintf(buf + at, (size_t)(size - at), "%s%s", sep, table[i].name);
        at += w > 0 ? w : 0;
        kept++;
    }
    return buf;
}

/* ---- cdsl.h ---------------------------------------------------------------------------------- */

int cdsl_collective_count(void)
{
    return COLL_COUNT;
}

const char *cdsl_collective_name(int coll)
{
    const CollInfo *ci = coll_info((Collective)coll);
    return ci ? ci->name : NULL;
}

int cdsl_collective_find(const char *name)
{
    Collective c;
    return coll_find(name, &c) ? (int)c : -1;
}

int cdsl_collective_chunks(int coll, int nranks, int chunks, long long *input, long long *output)
{
    const CollInfo *ci = coll_info((Collective)coll);
    if (!ci || nranks < 1 || chunks < 1)
        return CDSL_ERR_USAGE;
    if (input)
        *input = ci->in(nranks, chunks);
    if (output)
        *output = ci->out(nranks, chunks);
    return CDSL_OK;
}

double cdsl_collective_busbw_factor(int coll, int nranks)
{
    const CollInfo *ci = coll_info((Collective)coll);
    return ci && nranks >= 1 ? ci->busbw(nranks) : 0;
}

cdsl_postcondition cdsl_collective_postcondition(int coll)
{
    const CollInfo *ci = coll_info((Collective)coll);
    return ci ? (cdsl_postcondition)ci->post : CDSL_POST_NONE;
}

int cdsl_collective_has_root(int coll)
{
    const CollInfo *ci = coll_info((Collective)coll);
    return ci && coll_has_root(ci);
}

int cdsl_collective_in_place(int coll)
{
    const CollInfo *ci = coll_info((Collective)coll);
    return ci && ci->in_place != COLL_IN_PLACE_PLAN;
}
