/*
 * colls.h - the collectives table (colls.def) as C: the Collective enum and one CollInfo per
 * row, which every phase that needs to know what a collective means reads instead of
 * switching on the collective (colls.c).
 */
#ifndef CDSL_COLLS_H
#define CDSL_COLLS_H

#include <stdbool.h>

typedef enum Collective {
#define COLL(id, ...) COLL_##id,
#include "colls.def"
#undef COLL
} Collective;

enum {
    COLL_COUNT = 0
#define COLL(...) +1
#include "colls.def"
#undef COLL
};

/* colls.def's in_place column. */
typedef enum CollInPlace {
    COLL_IN_PLACE_NCCL, /* NCCL's in-place form: a program compiles in place */
    COLL_IN_PLACE_PLAN, /* only an imported in-place plan, laid out as the row says */
    COLL_IN_PLACE_SAME, /* no data: in place runs the same, nothing is aliased */
} CollInPlace;

/* colls.def's post column; the values are cdsl.h's cdsl_postcondition. */
typedef enum CollPost {
    COLL_POST_NONE,
    COLL_POST_BARRIER,
    COLL_POST_GATHER,
    COLL_POST_SUM,
    COLL_POST_BROADCAST,
    COLL_POST_REDUCE,
} CollPost;

/* A row of colls.def; the expressions are functions. */
typedef struct CollInfo {
    const char *name;
    long long (*in)(long long nranks, long long C);  /* one rank's input chunks; -1: declared */
    long long (*out)(long long nranks, long long C); /* its output chunks; -1: declared */
    CollInPlace in_place;
    int aliased, holder;                             /* IR_INPUT, IR_OUTPUT or -1 */
    long long (*first)(long long rank, long long C); /* the aliased buffer's place in the holder */
    CollPost post;
    long long (*from)(long long rank, long long C);  /* the input chunk rank's output starts from */
    double (*busbw)(double nranks);
    const char *mscclpp;                             /* a plan's name for it; NULL: "custom" */
} CollInfo;

const CollInfo *coll_info(Collective c);
/* The collective called `name` (colls.def's name column); false when there is none. */
bool coll_find(const char *name, Collective *out);
/* The collective an MSCCL++ plan's "collective" names, when cdsl has one of its own. */
bool coll_find_mscclpp(const char *name, Collective *out);
/* Whether the program declares its own input and output (custom). */
bool coll_declares_buffers(const CollInfo *ci);
/* Whether its programs have a root (broadcast, reduce): the name `root`, -D root=R. */
bool coll_has_root(const CollInfo *ci);
/* Whether its result is a copy of inputs (compared bit for bit), not a sum. */
bool coll_copies(const CollInfo *ci);
/* Whether its result is a sum of every rank's inputs. */
bool coll_sums(const CollInfo *ci);
/* Whether rank r's output is constrained (reduce: only the root's). */
bool coll_output_checked(const CollInfo *ci, int rank, int root);
/* Whether in place puts the aliased buffer at a different place of the holder on each rank. */
bool coll_alias_per_rank(const CollInfo *ci, int chunks);
/* Every name, in the table's order (COLL_COUNT of them), for "did you mean". */
const char *const *coll_names(void);
/* The names of the rows that `keep` accepts (every row when NULL) as a list in words,
   "a, b and c" with last_sep " and ", into buf. */
const char *coll_list(bool (*keep)(const CollInfo *), const char *last_sep, char *buf, int size);

#endif
