/*
 * chunk_runs.c - interval maps over chunks (a treap threaded by a list), and the checker's budget.
 *
 * Treap priorities come from a counter through hb_mix64-style mixing, so the shape (and so the
 * cost) is the same on every run of the compiler. Splitting copies the payload into a new node
 * inserted after the old one; merging deletes the second node from the treap. Both are
 * O(log runs) expected; walking a range is O(runs in it).
 */
#include "chunk_runs.h"

#include <string.h>

bool budget_take(CheckBudget *b, size_t bytes, const char *what, Loc at)
{
    b->bytes += bytes;
    if (b->over || b->bytes <= b->max_bytes)
        return !b->over;
    b->over = true;
    b->at = at;
    b->what = what;
    b->runs_at_limit = b->runs;
    return false;
}

void budget_give(CheckBudget *b, size_t bytes)
{
    b->bytes -= bytes < b->bytes ? bytes : b->bytes;
}

bool budget_work(CheckBudget *b, uint64_t steps, const char *what, Loc at)
{
    b->steps += steps;
    if (b->over || b->steps <= b->max_steps)
        return !b->over;
    b->over = b->over_steps = true;
    b->at = at;
    b->what = what;
    b->runs_at_limit = b->runs;
    return false;
}

void runs_pool_init(RunPool *pool, Arena *a, size_t val_size, CheckBudget *b, const char *what)
{
    memset(pool, 0, sizeof *pool);
    pool->arena = a;
    pool->val_size = val_size;
    pool->node_size = (sizeof(Run) + val_size + 7) / 8 * 8;
    pool->budget = b;
    pool->what = what;
}

static uint32_t next_prio(RunPool *pool)
{
    uint64_t h = ++pool->counter * 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ull;
    return (uint32_t)(h >> 32);
}

static Run *node_new(RunPool *pool, int lo, int hi, const void *val)
{
    if (!budget_take(pool->budget, pool->node_size, pool->what, pool->at))
        return NULL;
    Run *r = pool->free_list;
    if (r)
        pool->free_list = r->next;
    else
        r = arena_alloc(pool->arena, pool->node_size);
    r->left = r->right = r->parent = r->prev = r->next = NULL;
    r->prio = next_prio(pool);
    r->lo = lo;
    r->hi = hi;
    memcpy(r->val, val, pool->val_size);
    pool->budget->runs++;
    return r;
}

static void node_free(RunPool *pool, Run *r)
{
    if (pool->release)
        pool->release(pool->ctx, r->val);
    r->next = pool->free_list;
    pool->free_list = r;
    budget_give(pool->budget, pool->node_size);
    pool->budget->runs--;
}

/* Where p pointed at old (or the root, when p is NULL), x now hangs. */
static void replace_child(RunMap *m, Run *p, Run *old, Run *x)
{
    if (!p)
        m->root = x;
    else if (p->left == old)
        p->left = x;
    else
        p->right = x;
}

/* Lifts x above its parent, keeping the key order. */
static void rotate_up(RunMap *m, Run *x)
{
    Run *p = x->parent, *g = p->parent;
    if (x == p->left) {
        p->left = x->right;
        if (x->right)
            x->right->parent = p;
        x->right = p;
    } else {
        p->right = x->left;
        if (x->left)
            x->left->parent = p;
        x->left = p;
    }
    p->parent = x;
    x->parent = g;
    replace_child(m, g, p, x);
}

/* Puts x into the treap as r's successor: a leaf where the successor goes, lifted while its
   priority beats its parent's (expected O(1) rotations). */
static void insert_after(RunMap *m, Run *r, Run *x)
{
    Run *at = r;
    x->left = x->right = NULL;
    if (!r->right) {
        r->right = x;
    } else {
        at = r->right;
        while (at->left)
            at = at->left;
        at->left = x;
    }
    x->parent = at;
    while (x->parent && x->parent->prio < x->prio)
        rotate_up(m, x);
}

/* Takes x out of the treap: rotated down until it has one child, which takes its place. */
static void erase(RunMap *m, Run *x)
{
    while (x->left && x->right)
        rotate_up(m, x->left->prio > x->right->prio ? x->left : x->right);
    Run *c = x->left ? x->left : x->right;
    if (c)
        c->parent = x->parent;
    replace_child(m, x->parent, x, c);
}

bool runs_init(RunMap *m, RunPool *pool, int nchunks, const void *val)
{
    m->nchunks = nchunks;
    m->root = m->first = m->hint = nchunks > 0 ? node_new(pool, 0, nchunks, val) : NULL;
    return nchunks <= 0 || m->root;
}

void runs_clear(RunMap *m, RunPool *pool)
{
    for (Run *r = m->first, *next; r; r = next) {
        next = r->next;
        node_free(pool, r);
    }
    m->root = m->first = m->hint = NULL;
}

static bool holds(const Run *r, int c)
{
    return r && c >= r->lo && c < r->hi;
}

Run *runs_find(RunMap *m, int c)
{
    Run *t = m->hint;
    if (holds(t, c))
        return t;
    if (t && holds(t->next, c))
        return m->hint = t->next;
    t = m->root;
    while (t && !holds(t, c))
        t = c < t->lo ? t->left : t->right;
    return m->hint = t;
}

Run *runs_split(RunMap *m, RunPool *pool, int c)
{
    if (c >= m->nchunks)
        return NULL;
    Run *r = runs_find(m, c);
    if (r->lo == c)
        return r;
    Run *x = node_new(pool, c, r->hi, r->val);
    if (!x)
        return NULL;
    if (pool->retain)
        pool->retain(pool->ctx, x->val);
    r->hi = c;
    x->prev = r;
    x->next = r->next;
    if (r->next)
        r->next->prev = x;
    r->next = x;
    insert_after(m, r, x);
    m->hint = x;
    return x;
}

Run *runs_range(RunMap *m, RunPool *pool, int lo, int hi)
{
    Run *first = runs_split(m, pool, lo);
    if (!first || (hi < m->nchunks && !runs_split(m, pool, hi)))
        return NULL;
    return first;
}

static void unlink_next(RunMap *m, RunPool *pool, Run *r)
{
    Run *x = r->next;
    r->hi = x->hi;
    r->next = x->next;
    if (x->next)
        x->next->prev = r;
    erase(m, x);
    if (m->hint == x)
        m->hint = r;
    node_free(pool, x);
}

bool runs_merge_next(RunMap *m, RunPool *pool, Run *r)
{
    if (!r->next || memcmp(r->val, r->next->val, pool->val_size))
        return false;
    unlink_next(m, pool, r);
    return true;
}

void runs_coalesce(RunMap *m, RunPool *pool, Run *first, int hi)
{
    Run *r = first->prev ? first->prev : first;
    while (r && r->lo < hi)
        if (!runs_merge_next(m, pool, r))
            r = r->next;
}

Run *runs_assign(RunMap *m, RunPool *pool, int lo, int hi, const void *val)
{
    Run *r = runs_range(m, pool, lo, hi);
    if (!r)
        return NULL;
    while (r->hi < hi)
        unlink_next(m, pool, r);
    if (pool->release)
        pool->release(pool->ctx, r->val);
    memcpy(r->val, val, pool->val_size);
    runs_merge_next(m, pool, r);
    if (r->prev && !memcmp(r->prev->val, val, pool->val_size)) {
        r = r->prev;
        unlink_next(m, pool, r);
    }
    return r;
}
