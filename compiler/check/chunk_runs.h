/*
 * chunk_runs.h - interval maps over a buffer's chunks, and the budget the checker spends against.
 *
 * The checker's passes keep facts per chunk of every rank's buffers: who last wrote it and who
 * read it since (data_races.c), how the current stretch of ops reaches it (order.c), what value it
 * holds (postcondition.c). Programs move whole ranges at once, so neighbouring chunks almost always
 * carry the same fact. A RunMap stores a buffer as runs: maximal ranges [lo, hi) of chunks
 * with one payload each (a fixed-size blob, compared bytewise). A pass splits a run only where
 * an access starts or ends inside it, and merges neighbours that became equal, so the cost of
 * checking follows the number of distinct accesses, not chunks x ranks.
 *
 * The runs of one map are a treap keyed by lo (for finding the run holding a chunk) threaded
 * by a list in chunk order (for walking a range). A split inserts the new run right after the
 * old one and a merge deletes a run in place, both with parent links and rotations near the
 * run itself, and the map remembers the run last found: a pass that comes back to a buffer
 * touches the nodes around where it was, not a path from the root. Nodes come from a RunPool
 * shared by the maps of one pass and are recycled through its free list.
 *
 * CheckBudget bounds what checking may spend: bytes of the passes' own structures (runs, read
 * sets, clocks, values) and steps of work (runs visited, read sets scanned, terms merged).
 * The first pass that runs out records where and why; check.c turns that into one error.
 */
#ifndef CDSL_CHUNK_RUNS_H
#define CDSL_CHUNK_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "diag.h"

typedef struct CheckBudget {
    size_t max_bytes, bytes;      /* bytes of checker structures in use (net of recycling) */
    uint64_t max_steps, steps;    /* units of work done */
    bool over;                    /* ran out: every pass stops as soon as it sees this */
    bool over_steps;              /* it was the steps, not the bytes */
    Loc at;                       /* the op being checked when it ran out */
    const char *what;             /* what was growing: "access histories", "vector clocks", ... */
    size_t runs;                  /* runs alive in all maps */
    size_t runs_at_limit;         /* ... when the budget ran out, for the message */
} CheckBudget;

/* Counts bytes; false (and the budget marked over, at `at`) when that crosses the limit. */
bool budget_take(CheckBudget *b, size_t bytes, const char *what, Loc at);
void budget_give(CheckBudget *b, size_t bytes);
/* Counts steps; false (marked over) when that crosses the limit. */
bool budget_work(CheckBudget *b, uint64_t steps, const char *what, Loc at);

typedef struct Run {
    struct Run *left, *right, *parent; /* treap by lo */
    struct Run *prev, *next;           /* chunk order */
    uint32_t prio;
    int lo, hi;
    _Alignas(8) unsigned char val[]; /* the payload, RunPool.val_size bytes */
} Run;

typedef struct RunPool {
    Arena *arena;
    size_t val_size, node_size;
    Run *free_list;
    uint64_t counter;             /* source of treap priorities */
    CheckBudget *budget;
    const char *what;             /* charged as this in the budget */
    Loc at;                       /* the op now being checked, for the budget's message */
    /* Optional: a payload was copied (a run split) or dropped (merged, overwritten, cleared),
       for payloads that hold references. */
    void (*retain)(void *ctx, void *val);
    void (*release)(void *ctx, void *val);
    void *ctx;
} RunPool;

typedef struct RunMap {
    Run *root, *first;
    Run *hint;      /* the run last found: accesses mostly come back to it or its neighbour */
    int nchunks;
} RunMap;

void runs_pool_init(RunPool *pool, Arena *a, size_t val_size, CheckBudget *b, const char *what);
/* One run [0, nchunks) holding val. False when the budget ran out. */
bool runs_init(RunMap *m, RunPool *pool, int nchunks, const void *val);
/* Gives every run back to the pool; the map is empty afterwards. */
void runs_clear(RunMap *m, RunPool *pool);
/* The run holding chunk c (0 <= c < nchunks). */
Run *runs_find(RunMap *m, int c);
/* Makes a run start at chunk c and returns it (NULL when c == nchunks, or when the budget
   ran out). The payload of the run that held c is copied into both halves. */
Run *runs_split(RunMap *m, RunPool *pool, int c);
/* Splits at lo and hi and returns the first run of [lo, hi) (NULL: out of budget). */
Run *runs_range(RunMap *m, RunPool *pool, int lo, int hi);
/* Sets [lo, hi) to one run holding val, merged with equal neighbours; returns it. */
Run *runs_assign(RunMap *m, RunPool *pool, int lo, int hi, const void *val);
/* Merges r's next run into r when both hold the same payload; true when it did. */
bool runs_merge_next(RunMap *m, RunPool *pool, Run *r);
/* Merges the runs from the one before `first` up to the one after chunk hi - 1 where
   neighbours hold the same payload. */
void runs_coalesce(RunMap *m, RunPool *pool, Run *first, int hi);

#endif
