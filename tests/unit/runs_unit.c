/*
 * runs_unit.c - unit tests for compiler/check/chunk_runs.c: interval maps over chunks, and the budget.
 *
 * A RunMap is driven by random splits, assignments and merges next to a plain array with one
 * value per chunk; after every step the map must hold exactly the array's values, its runs must
 * tile [0, nchunks) in list order, every chunk must be found through the treap, and after an
 * assignment no two neighbours in the assigned area may hold the same value. The retain and
 * release hooks must balance: every payload copy made is dropped by the end. The budget must
 * refuse the node that crosses its limit and count what is given back.
 *
 * Build: cc -std=c11 -Icompiler -Iruntime tests/unit/runs_unit.c build/libcdsl.a -ljansson -ldl -lpthread -lm
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunk_runs.h"

static int failures, tests;

/* On failure: count it, say why, and leave through the test's `out:` (which frees). */
#define CHECK(cond, ...)                                                                                         \
    do {                                                                                                         \
        if (!(cond)) {                                                                                           \
            failures++;                                                                                          \
            printf("[FAIL] " __VA_ARGS__);                                                                       \
            printf(" (%s:%d)\n", __FILE__, __LINE__);                                                            \
            goto out;                                                                                            \
        }                                                                                                        \
    } while (0)

typedef struct Val {
    int v, pad;
} Val;

static long live; /* payload copies held by runs, through the hooks */

static void on_retain(void *ctx, void *val)
{
    (void)ctx;
    (void)val;
    live++;
}

static void on_release(void *ctx, void *val)
{
    (void)ctx;
    (void)val;
    live--;
}

static unsigned long long rng = 88172645463325252ull;

static int rnd(int n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int)(rng % (unsigned long long)n);
}

/* The treap under t: keys in order within (lo, hi), parents above children in priority, and
   every child pointing back at its parent. Returns how many nodes, or -1. */
static long treap_ok(const Run *t, const Run *parent, int lo, int hi)
{
    if (!t)
        return 0;
    if (t->parent != parent || t->lo <= lo || t->lo >= hi || (parent && parent->prio < t->prio))
        return -1;
    long l = treap_ok(t->left, t, lo, t->lo), r = treap_ok(t->right, t, t->lo, hi);
    return l < 0 || r < 0 ? -1 : l + r + 1;
}

/* The map against the model: same values, runs tiling [0, n), found through the treap; and,
   when `merged`, no two neighbours holding the same value. */
static int matches(RunMap *m, const int *model, int n, int merged)
{
    int at = 0;
    for (Run *r = m->first; r; r = r->next) {
        if (r->lo != at || r->hi <= r->lo || (r->next && r->next->prev != r))
            return 0;
        if (merged && r->next && ((Val *)r->val)->v == ((Val *)r->next->val)->v)
            return 0;
        for (int c = r->lo; c < r->hi; c++)
            if (model[c] != ((Val *)r->val)->v || runs_find(m, c) != r)
                return 0;
        at = r->hi;
    }
    return at == n;
}

/* Random assignments and in-place changes (coalesced), and with `splits` bare splits too,
   which may leave equal neighbours. */
static void test_random_edits(int n, int steps, int splits)
{
    tests++;
    Arena *a = arena_create();
    CheckBudget b = {.max_bytes = (size_t)1 << 40, .max_steps = ~0ull};
    RunPool pool;
    runs_pool_init(&pool, a, sizeof(Val), &b, "test runs");
    pool.retain = on_retain;
    pool.release = on_release;
    RunMap m = {0};
    int *model = calloc((size_t)n, sizeof *model);
    live = 1;
    CHECK(runs_init(&m, &pool, n, &(Val){0, 0}), "runs_init");
    for (int step = 0; step < steps; step++) {
        int lo = rnd(n), hi = lo + 1 + rnd(n - lo), v = rnd(4), op = rnd(splits ? 3 : 2);
        if (op == 0) { /* assign one value to [lo, hi) */
            live++;
            Run *r = runs_assign(&m, &pool, lo, hi, &(Val){v, 0});
            for (int c = lo; c < hi; c++)
                model[c] = v;
            CHECK(r && r->lo <= lo && r->hi >= hi, "runs_assign returns the run holding [%d, %d)", lo, hi);
        } else if (op == 1) { /* change each run of [lo, hi) in place, then coalesce */
            Run *first = runs_range(&m, &pool, lo, hi);
            CHECK(first && first->lo == lo, "runs_range starts at %d", lo);
            for (Run *r = first; r && r->lo < hi; r = r->next)
                ((Val *)r->val)->v = (((Val *)r->val)->v + v) % 4;
            for (int c = lo; c < hi; c++)
                model[c] = (model[c] + v) % 4;
            CHECK(runs_find(&m, hi - 1)->hi == hi || hi == n, "runs_range ends at %d", hi);
            runs_coalesce(&m, &pool, first, hi);
        } else { /* a split alone */
            Run *r = runs_split(&m, &pool, lo);
            CHECK(r && r->lo == lo, "runs_split at %d", lo);
        }
        CHECK(matches(&m, model, n, !splits), "the map differs from the model after step %d", step);
        long nodes = 0;
        for (Run *r = m.first; r; r = r->next)
            nodes++;
        CHECK(treap_ok(m.root, NULL, -1, n) == nodes, "the treap holds every run, in order, as a heap");
        CHECK(live == nodes, "hooks: %ld payloads held by %ld runs", live, nodes);
        CHECK(b.runs == (size_t)nodes && b.bytes == (size_t)nodes * pool.node_size, "budget counts the runs alive");
    }
    runs_clear(&m, &pool);
    CHECK(live == 0 && b.bytes == 0 && b.runs == 0, "runs_clear gives everything back");
    printf("[PASS] runs: %d random edits of %d chunks%s\n", steps, n, splits ? ", bare splits too" : "");
out:
    free(model);
    arena_destroy(a);
}

static void test_budget(void)
{
    tests++;
    Arena *a = arena_create();
    RunPool pool;
    CheckBudget b = {.max_bytes = 0, .max_steps = 10};
    runs_pool_init(&pool, a, sizeof(Val), &b, "test runs");
    b.max_bytes = 3 * pool.node_size;
    RunMap m = {0};
    CHECK(runs_init(&m, &pool, 100, &(Val){1, 0}), "one run fits");
    CHECK(runs_split(&m, &pool, 10) && runs_split(&m, &pool, 20), "three runs fit");
    CHECK(!b.over, "not over at the limit");
    CHECK(!runs_split(&m, &pool, 30) && b.over && !b.over_steps, "the fourth run is refused");
    CHECK(!strcmp(b.what, "test runs") && b.runs_at_limit == 3, "the budget says what and how many");
    CheckBudget w = {.max_bytes = 100, .max_steps = 10};
    CHECK(budget_work(&w, 10, "work", (Loc){0}) && !w.over, "ten steps fit");
    CHECK(!budget_work(&w, 1, "work", (Loc){0}) && w.over && w.over_steps, "the eleventh is refused");
    printf("[PASS] runs: the budget refuses the node and the step past its limits\n");
out:
    arena_destroy(a);
}

int main(void)
{
    test_random_edits(1, 50, 1);
    test_random_edits(7, 2000, 0);
    test_random_edits(7, 2000, 1);
    test_random_edits(100, 5000, 0);
    test_random_edits(100, 5000, 1);
    test_random_edits(5000, 3000, 1);
    test_budget();
    if (failures)
        printf("%d of %d tests failed\n", failures, tests);
    return failures != 0;
}
