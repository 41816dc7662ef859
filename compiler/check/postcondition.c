/*
 * postcondition.c - rule 4: follows every chunk's value symbolically and checks the collective's
 * postcondition (docs/language.md's table) at the end.
 *
 * A value is a sum of input chunks, a multiset of terms input@p[i], or "undefined" (an output
 * or scratch chunk before anything was written into it, and anything computed from one).
 * Programs move ranges, and the chunks of a range move together: chunk x of a range holds
 * input@p[x + k] when chunk x + k of its source did. So values are kept as families, one per
 * run of chunks (chunk_runs.h): a sorted multiset of (p, k) with counts, standing for
 * input@p[x + k] at chunk x. Copying a range shifts k by the distance moved, adding two ranges
 * merges their families, and a whole range costs what one chunk did. Families are
 * hash-consed (an id per distinct family, 0 for undefined), shifts and sums are memoised per
 * pair, and a switch reduction over n ranks is one sort of all the terms instead of n-1
 * merges. The ops run along sync_schedule.c's schedule; since rules 1 and 2 passed when this runs, any
 * schedule gives the same values. At the end each rank's output runs are compared with the
 * family the collective asks for (its row of colls.def: one per block of C chunks for a
 * gather, one for the whole output for a sum or a broadcast; a reduce's only on its root). A barrier's postcondition (no rank leaves before every rank has
 * entered) is a happens-before fact, checked on the final EXEC clocks.
 */
#include "check_text.h"
#include "happens_before.h"

#include <stdlib.h>
#include <string.h>

/* A term of a family: input@rank[x + off], count times, at chunk x. */
typedef struct FamTerm {
    int32_t rank, off;
    uint32_t count;
} FamTerm;

/* A term of one chunk's value, for messages: input@(term / nin)[term % nin]. */
typedef struct PostTerm {
    uint32_t term;
    uint32_t count;
} PostTerm;

/* 0: undefined; > 0: index into Post.vals. */
typedef int64_t PostId;

/* A family: its terms (FLAT), or the sum of two families not added up yet (SUM: a + b). A sum
   of many ranks' values built one term at a time would otherwise copy every partial sum
   (n^2 terms per rank); a SUM is added up only when its terms are needed. */
typedef struct PostVal {
    const FamTerm *t;  /* FLAT: the terms, sorted and combined; NULL for a SUM */
    int n;             /* FLAT: how many; SUM: at most how many (na + nb) */
    PostId a, b;       /* SUM: the two families */
    uint64_t hash;     /* multiset hash: the sum over terms of count * term_hash(term) */
} PostVal;

/* (x, y) -> value: sums (x + y) and shifts (x moved by y chunks). */
typedef struct Memo {
    PostId *x, *y, *val; /* val 0: empty slot */
    size_t mask;
    size_t n;
} Memo;

/* A run's value and the op that wrote it; no padding, so runs compare bytewise. */
typedef struct Cell {
    PostId id;
    int w_rank, w_idx; /* w_rank -1: nothing wrote it */
} Cell;

/* One piece of an op's result: its chunks [lo, hi) counted from the operand's first. */
typedef struct Piece {
    int lo, hi;
    PostId id;
} Piece;

typedef struct Post {
    CheckResult *r;
    const IrProgram *p;
    Arena *a;
    CheckBudget *budget;
    uint32_t nin;         /* input chunks per rank */
    PostVal *vals;        /* [id]; id 0 is undefined */
    int nvals, cap;
    int *intern;          /* hash table of ids by content */
    size_t intern_mask;
    Memo sums, shifts;
    RunPool pool;
    RunMap *cells;        /* [rank * nbufs + buf]: values, made when first touched */
    FamTerm *scratch;
    size_t scratch_cap;
    FamTerm *flat[2];     /* flatten()'s results: a candidate and the value compared with it */
    size_t flat_cap[2];
    unsigned *mark;       /* [id] flatten()'s visit stamp */
    uint64_t *mult;       /* [id] how many times the value occurs in what is flattened */
    PostId *order;        /* the SUMs and FLATs reached, children before parents */
    size_t mark_cap, order_cap;
    unsigned stamp;
    Piece *piece[3];      /* an op's pieces: source, second source, result */
    size_t piece_cap[3];
    PostId *want;         /* expected families, by block (allgather) or rank (reducescatter) */
    int *bounds;          /* switch reductions: run boundaries over all ranks */
    size_t bounds_cap;
    PostId *ids;          /* [nranks] */
    struct Sent **sent;   /* [rank][op]: what a send_packets read, made at its first send */
} Post;

/* The values a send_packets read when it ran, for its recv_packets: the packets carry the
   source as it was then, whatever the sender writes into it afterwards. */
typedef struct Sent {
    Piece *pieces; /* relative to the source's first chunk, values not shifted */
    int n;
} Sent;

static bool over(const Post *s)
{
    return s->budget->over;
}

static void *post_alloc(Post *s, size_t n, size_t size)
{
    budget_take(s->budget, n * size, "symbolic values", s->pool.at);
    return arena_array(s->a, n, size);
}

static int cmp_fam(FamTerm a, FamTerm b)
{
    if (a.rank != b.rank)
        return a.rank < b.rank ? -1 : 1;
    return (a.off > b.off) - (a.off < b.off);
}

static uint32_t add_counts(uint32_t x, uint32_t y);

static uint64_t term_hash(FamTerm t)
{
    return hb_mix64((uint64_t)(uint32_t)t.rank << 32 ^ (uint32_t)t.off);
}

/* Additive, so a SUM's hash is its two families' added: equal multisets, equal hashes. */
static uint64_t hash_terms(const FamTerm *t, int n)
{
    uint64_t h = 0;
    for (int i = 0; i < n; i++)
        h += term_hash(t[i]) * t[i].count;
    return h;
}

static void intern_rehash(Post *s)
{
    size_t cap = (s->intern_mask + 1) * 2;
    s->intern = post_alloc(s, cap, sizeof(int));
    s->intern_mask = cap - 1;
    for (int id = 1; id < s->nvals; id++) {
        size_t i = (size_t)s->vals[id].hash & s->intern_mask;
        while (s->intern[i])
            i = (i + 1) & s->intern_mask;
        s->intern[i] = id;
    }
}

static PostId new_val(Post *s, PostVal v, size_t slot)
{
    if (s->nvals == s->cap) {
        budget_take(s->budget, (size_t)s->cap * sizeof *s->vals, "symbolic values", s->pool.at);
        s->vals = arena_grow(s->a, s->vals, (size_t)s->nvals, (size_t)s->cap * 2, sizeof *s->vals);
        s->cap *= 2;
    }
    int id = s->nvals++;
    s->vals[id] = v;
    s->intern[slot] = id;
    if ((size_t)s->nvals * 2 > s->intern_mask)
        intern_rehash(s);
    return id;
}

static FamTerm *grow_terms(Post *s, FamTerm **buf, size_t *cap, size_t n)
{
    if (n > *cap) {
        *cap = 2 * n + 16;
        *buf = post_alloc(s, *cap, sizeof **buf);
    }
    return *buf;
}

static FamTerm *scratch(Post *s, size_t n)
{
    return grow_terms(s, &s->scratch, &s->scratch_cap, n);
}

static int cmp_term(const void *x, const void *y)
{
    return cmp_fam(*(const FamTerm *)x, *(const FamTerm *)y);
}

static uint32_t mul_counts(uint32_t count, uint64_t times)
{
    return times >= UINT32_MAX / (count ? count : 1) ? UINT32_MAX : (uint32_t)(count * times);
}

/* Sorts terms and combines equal ones; returns how many are left. */
static int combine(Post *s, FamTerm *t, size_t n)
{
    budget_work(s->budget, n, "symbolic values", s->pool.at);
    qsort(t, n, sizeof *t, cmp_term);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && !cmp_fam(t[m - 1], t[i]))
            t[m - 1].count = add_counts(t[m - 1].count, t[i].count);
        else
            t[m++] = t[i];
    }
    return (int)m;
}

/* The SUMs and FLATs reachable from the roots, each once, children before parents, with how
   many times each occurs in the sum of the roots (a SUM may use one value twice: x + x). */
static size_t reach(Post *s, const PostId *roots, int k)
{
    if ((size_t)s->nvals > s->mark_cap) {
        size_t cap = 2 * (size_t)s->nvals;
        s->mark = arena_grow(s->a, s->mark, s->mark_cap, cap, sizeof *s->mark);
        s->mult = arena_grow(s->a, s->mult, s->mark_cap, cap, sizeof *s->mult);
        s->order = arena_grow(s->a, s->order, s->order_cap, cap, sizeof *s->order);
        budget_take(s->budget, (cap - s->mark_cap) * 20, "symbolic values", s->pool.at);
        s->mark_cap = s->order_cap = cap;
    }
    unsigned stamp = ++s->stamp;
    size_t n = 0, top = 0;
    PostId *stack = s->order + s->order_cap / 2; /* the ids in the top half, order below */
    for (int i = 0; i < k; i++) {
        if (s->mark[roots[i]] != stamp) {
            s->mark[roots[i]] = stamp;
            s->mult[roots[i]] = 0;
            stack[top++] = roots[i];
        }
        s->mult[roots[i]]++;
        while (top) { /* postorder: a node leaves the stack once both its parts are placed */
            PostId x = stack[top - 1];
            const PostVal *v = &s->vals[x];
            if (!v->t && s->mark[v->a] != stamp) {
                s->mark[v->a] = stamp, s->mult[v->a] = 0, stack[top++] = v->a;
            } else if (!v->t && s->mark[v->b] != stamp) {
                s->mark[v->b] = stamp, s->mult[v->b] = 0, stack[top++] = v->b;
            } else {
                s->order[n++] = x;
                top--;
            }
        }
    }
    budget_work(s->budget, n, "symbolic values", s->pool.at);
    for (size_t i = n; i-- > 0;) { /* parents first: pass each one's count down */
        const PostVal *v = &s->vals[s->order[i]];
        uint64_t m = s->mult[s->order[i]];
        if (!v->t) {
            s->mult[v->a] = s->mult[v->a] + m < UINT32_MAX ? s->mult[v->a] + m : UINT32_MAX;
            s->mult[v->b] = s->mult[v->b] + m < UINT32_MAX ? s->mult[v->b] + m : UINT32_MAX;
        }
    }
    return n;
}

/* The terms of the sum of the roots (all defined), sorted and combined, in flat[k]. */
static int flatten(Post *s, const PostId *roots, int k, int into, const FamTerm **out)
{
    if (k == 1 && s->vals[roots[0]].t) {
        *out = s->vals[roots[0]].t;
        return s->vals[roots[0]].n;
    }
    size_t n = reach(s, roots, k), total = 0;
    for (size_t i = 0; i < n; i++)
        if (s->vals[s->order[i]].t)
            total += (size_t)s->vals[s->order[i]].n;
    FamTerm *t = grow_terms(s, &s->flat[into], &s->flat_cap[into], total + 1);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const PostVal *v = &s->vals[s->order[i]];
        for (int j = 0; v->t && j < v->n; j++)
            t[m++] = (FamTerm){v->t[j].rank, v->t[j].off, mul_counts(v->t[j].count, s->mult[s->order[i]])};
    }
    *out = t;
    return combine(s, t, m);
}

static bool same_family(Post *s, PostId id, const FamTerm *t, int n)
{
    const FamTerm *u;
    int m = flatten(s, &id, 1, 1, &u);
    return m == n && memcmp(u, t, (size_t)n * sizeof *t) == 0;
}

/* The id of the family with these (sorted, combined) terms; copies them when new. Equal
   families get one id, whatever they were built as: a candidate with the same hash is
   compared term by term. */
static PostId intern(Post *s, const FamTerm *t, int n)
{
    uint64_t h = hash_terms(t, n);
    budget_work(s->budget, (uint64_t)n, "symbolic values", s->pool.at);
    size_t i = (size_t)h & s->intern_mask;
    for (; s->intern[i]; i = (i + 1) & s->intern_mask)
        if (s->vals[s->intern[i]].hash == h && same_family(s, s->intern[i], t, n))
            return s->intern[i];
    FamTerm *copy = post_alloc(s, (size_t)n, sizeof *copy);
    memcpy(copy, t, (size_t)n * sizeof *t);
    return new_val(s, (PostVal){copy, n, 0, 0, h}, i);
}

/* x + y as one id: an existing family when one is equal, else a SUM. */
static PostId intern_sum(Post *s, PostId x, PostId y)
{
    uint64_t h = s->vals[x].hash + s->vals[y].hash;
    size_t i = (size_t)h & s->intern_mask;
    const FamTerm *t = NULL;
    int n = 0;
    for (; s->intern[i]; i = (i + 1) & s->intern_mask) {
        PostId c = s->intern[i];
        if (s->vals[c].hash != h)
            continue;
        if (!t)
            n = flatten(s, (PostId[]){x, y}, 2, 0, &t);
        if (same_family(s, c, t, n))
            return c;
    }
    int64_t most = (int64_t)s->vals[x].n + s->vals[y].n;
    return new_val(s, (PostVal){NULL, most > INT32_MAX ? INT32_MAX : (int)most, x, y, h}, i);
}

static uint32_t add_counts(uint32_t x, uint32_t y)
{
    return x > UINT32_MAX - y ? UINT32_MAX : x + y; /* only "more than once" matters */
}

/* ---- Memo tables ----------------------------------------------------------------------- */

static uint64_t memo_hash(PostId x, PostId y)
{
    return hb_mix64((uint64_t)x * 0x9E3779B97F4A7C15ull ^ (uint64_t)y);
}

static void memo_alloc(Post *s, Memo *m, size_t cap)
{
    m->x = post_alloc(s, cap, sizeof(PostId));
    m->y = post_alloc(s, cap, sizeof(PostId));
    m->val = post_alloc(s, cap, sizeof(PostId));
    m->mask = cap - 1;
}

static size_t memo_slot(const Memo *m, PostId x, PostId y)
{
    size_t i = (size_t)memo_hash(x, y) & m->mask;
    while (m->val[i] && (m->x[i] != x || m->y[i] != y))
        i = (i + 1) & m->mask;
    return i;
}

static void memo_put(Post *s, Memo *m, PostId x, PostId y, PostId v)
{
    size_t i = memo_slot(m, x, y);
    m->x[i] = x;
    m->y[i] = y;
    m->val[i] = v;
    if (++m->n * 2 <= m->mask)
        return;
    Memo old = *m;
    memo_alloc(s, m, (old.mask + 1) * 2);
    for (size_t j = 0; j <= old.mask; j++)
        if (old.val[j]) {
            size_t k = memo_slot(m, old.x[j], old.y[j]);
            m->x[k] = old.x[j];
            m->y[k] = old.y[j];
            m->val[k] = old.val[j];
        }
}

/* ---- Sums and shifts --------------------------------------------------------------------- */

/* The family moved by `by` chunks: input@p[x + k] becomes input@p[x + k + by]. */
static PostId shift(Post *s, PostId x, int by)
{
    if (!x || !by)
        return x;
    size_t i = memo_slot(&s->shifts, x, by);
    if (s->shifts.val[i])
        return s->shifts.val[i];
    const FamTerm *from;
    int n = flatten(s, &x, 1, 0, &from);
    FamTerm *t = scratch(s, (size_t)n);
    for (int j = 0; j < n; j++)
        t[j] = (FamTerm){from[j].rank, from[j].off + by, from[j].count};
    PostId id = intern(s, t, n);
    memo_put(s, &s->shifts, x, by, id);
    return id;
}

enum { FLAT_MAX = 16 }; /* sums up to this many terms are added up at once */

static PostId merge(Post *s, PostId x, PostId y)
{
    const PostVal *va = &s->vals[x], *vb = &s->vals[y];
    int na = va->n, nb = vb->n;
    FamTerm *out = scratch(s, (size_t)na + (size_t)nb);
    const FamTerm *a = s->vals[x].t, *b = s->vals[y].t;
    int i = 0, j = 0, n = 0;
    while (i < na || j < nb) {
        int c = i == na ? 1 : j == nb ? -1 : cmp_fam(a[i], b[j]);
        if (c < 0)
            out[n++] = a[i++];
        else if (c > 0)
            out[n++] = b[j++];
        else {
            out[n++] = (FamTerm){a[i].rank, a[i].off, add_counts(a[i].count, b[j].count)};
            i++;
            j++;
        }
    }
    return intern(s, out, n);
}

/* x + y; undefined when either is. */
static PostId sum2(Post *s, PostId x, PostId y)
{
    if (!x || !y)
        return 0;
    if (x > y) {
        PostId t = x;
        x = y;
        y = t;
    }
    size_t i = memo_slot(&s->sums, x, y);
    if (s->sums.val[i])
        return s->sums.val[i];
    const PostVal *vx = &s->vals[x], *vy = &s->vals[y];
    bool small = vx->t && vy->t && (int64_t)vx->n + vy->n <= FLAT_MAX;
    PostId v = small ? merge(s, x, y) : intern_sum(s, x, y);
    memo_put(s, &s->sums, x, y, v);
    return v;
}

/* The sum of k families: all their terms sorted once, equal terms combined. */
static PostId sum_many(Post *s, const PostId *ids, int k)
{
    for (int i = 0; i < k; i++)
        if (!ids[i])
            return 0;
    const FamTerm *t;
    int n = flatten(s, ids, k, 0, &t);
    return intern(s, t, n);
}

/* ---- Buffers ----------------------------------------------------------------------------- */

/* The values of a rank's buffer: the input holds input@rank[x] at chunk x until written. In
   place, the output's part that is the input (allgather, allreduce) starts out as the input. */
static RunMap *cells(Post *s, int rank, int buf)
{
    RunMap *m = &s->cells[(size_t)rank * (size_t)s->p->nbufs + (size_t)buf];
    if (!m->first && s->p->bufs[buf].nchunks > 0) {
        Cell c = {0, -1, -1};
        if (buf == IR_INPUT)
            c.id = intern(s, &(FamTerm){rank, 0, 1}, 1);
        runs_init(m, &s->pool, s->p->bufs[buf].nchunks, &c);
        int aliased, holder;
        if (ir_in_place(s->p, &aliased, &holder) && buf == holder && aliased == IR_INPUT) {
            int first = ir_in_place_first(s->p, rank);
            Cell in = {intern(s, &(FamTerm){rank, -first, 1}, 1), -1, -1};
            runs_assign(m, &s->pool, first, first + s->p->bufs[IR_INPUT].nchunks, &in);
        }
    }
    return m;
}

/* Room for n pieces in array k, keeping those already there. */
static Piece *pieces(Post *s, int k, size_t n)
{
    if (n > s->piece_cap[k]) {
        size_t cap = 2 * n + 8;
        budget_take(s->budget, (cap - s->piece_cap[k]) * sizeof(Piece), "symbolic values", s->pool.at);
        s->piece[k] = arena_grow(s->a, s->piece[k], s->piece_cap[k], cap, sizeof(Piece));
        s->piece_cap[k] = cap;
    }
    return s->piece[k];
}

/* The runs of src [first, first+count) on `rank`, as pieces moved to start at chunk `to`. */
static int read_range(Post *s, int rank, IrRange src, int to, int out)
{
    RunMap *m = cells(s, rank, src.buf);
    int n = 0, hi = src.first + src.count;
    for (const Run *r = m->first ? runs_find(m, src.first) : NULL; r && r->lo < hi; r = r->next) {
        budget_work(s->budget, 1, "symbolic values", s->pool.at);
        Piece *p = pieces(s, out, (size_t)n + 1);
        int lo = r->lo > src.first ? r->lo : src.first, end = r->hi < hi ? r->hi : hi;
        p[n++] = (Piece){lo - src.first, end - src.first, shift(s, ((const Cell *)r->val)->id, src.first - to)};
    }
    return n;
}

/* dst = a + b, piece by piece where both are constant. */
static int add_pieces(Post *s, const Piece *a, int na, const Piece *b, int nb, Piece *out)
{
    int n = 0, i = 0, j = 0, lo = 0;
    while (i < na && j < nb) {
        int hi = a[i].hi < b[j].hi ? a[i].hi : b[j].hi;
        out[n++] = (Piece){lo, hi, sum2(s, a[i].id, b[j].id)};
        lo = hi;
        i += a[i].hi == hi;
        j += b[j].hi == hi;
    }
    return n;
}

static int cmp_int(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

/* src summed over every rank, moved to start at `to`: pieces between the run boundaries of
   all ranks. */
static int reduce_over_ranks(Post *s, IrRange src, int to, int out)
{
    int nb = 0, hi = src.first + src.count;
    for (int q = 0; q < s->p->nranks; q++) {
        RunMap *m = cells(s, q, src.buf);
        for (const Run *r = m->first ? runs_find(m, src.first) : NULL; r && r->lo < hi; r = r->next) {
            budget_work(s->budget, 1, "symbolic values", s->pool.at);
            if ((size_t)nb + 1 > s->bounds_cap) {
                s->bounds_cap = 2 * (size_t)nb + 16;
                s->bounds = arena_grow(s->a, s->bounds, (size_t)nb, s->bounds_cap, sizeof(int));
            }
            s->bounds[nb++] = r->lo > src.first ? r->lo : src.first;
        }
    }
    qsort(s->bounds, (size_t)nb, sizeof(int), cmp_int);
    int n = 0;
    for (int i = 0; i < nb && !over(s); i++) {
        if (i && s->bounds[i] == s->bounds[i - 1])
            continue;
        int lo = s->bounds[i], end = hi;
        for (int j = i + 1; j < nb; j++)
            if (s->bounds[j] != lo) {
                end = s->bounds[j];
                break;
            }
        for (int q = 0; q < s->p->nranks; q++)
            s->ids[q] = ((const Cell *)runs_find(cells(s, q, src.buf), lo)->val)->id;
        Piece *p = pieces(s, out, (size_t)n + 1);
        p[n++] = (Piece){lo - src.first, end - src.first, shift(s, sum_many(s, s->ids, s->p->nranks), src.first - to)};
    }
    return n;
}

static void send_packets(Post *s, HbEv e, const IrOp *op)
{
    if (!s->sent[e.rank])
        s->sent[e.rank] = post_alloc(s, (size_t)s->p->ranks[e.rank].nops, sizeof(Sent));
    int n = read_range(s, e.rank, op->src, op->src.first, 0);
    Sent *t = &s->sent[e.rank][e.idx];
    t->pieces = post_alloc(s, (size_t)n + 1, sizeof(Piece));
    memcpy(t->pieces, s->piece[0], (size_t)n * sizeof(Piece));
    t->n = n;
}

/* The matching send's pieces, moved to start at the receive's dst. */
static int recv_packets(Post *s, HbEv e, const IrOp *op)
{
    int from = op->peer, i = s->r->hb.partner[e.rank][e.idx];
    const IrOp *send = &s->p->ranks[from].ops[i];
    const Sent *t = &s->sent[from][i];
    Piece *p = pieces(s, 0, (size_t)t->n + 1);
    for (int j = 0; j < t->n; j++)
        p[j] = (Piece){t->pieces[j].lo, t->pieces[j].hi, shift(s, t->pieces[j].id, send->src.first - op->dst.first)};
    return t->n;
}

/* An operand's value as the op reads it: one rank's copy, or through the switch the sum of
   every rank's. Into piece array `out`; returns how many pieces. */
static int read_operand(Post *s, const IrOp *op, int r, const IrAccess *a, int to, int out)
{
    if (a->on == ON_ALL)
        return reduce_over_ranks(s, a->range, to, out);
    return read_range(s, ir_access_rank(a, op, r), a->range, to, out);
}

static void run_op(Post *s, HbEv e)
{
    const IrOp *op = &s->p->ranks[e.rank].ops[e.idx];
    int r = e.rank, to = op->dst.first, n;
    s->pool.at = op->loc;
    if (ir_is_packet_send(op->kind)) {
        send_packets(s, e, op);
        return;
    }
    IrEffects fx = ir_effects(op); /* dst, then the sources */
    Piece *res;
    if (ir_is_packet_recv(op->kind)) {
        n = recv_packets(s, e, op), res = s->piece[0];
    } else { /* everything is read first: dst may overlap a source */
        n = read_operand(s, op, r, &fx.acc[1], to, 0), res = s->piece[0];
        if (fx.n == 3) { /* a reduce: the sum of its two sources */
            int nb = read_operand(s, op, r, &fx.acc[2], to, 1);
            res = pieces(s, 2, (size_t)n + (size_t)nb);
            n = add_pieces(s, s->piece[0], n, s->piece[1], nb, res);
        }
    }
    int target = ir_access_rank(&fx.acc[0], op, r);
    bool everywhere = target < 0;
    for (int q = everywhere ? 0 : target; q < (everywhere ? s->p->nranks : target + 1) && !over(s); q++) {
        RunMap *m = cells(s, q, op->dst.buf);
        for (int j = 0; j < n && m->first; j++)
            runs_assign(m, &s->pool, to + res[j].lo, to + res[j].hi, &(Cell){res[j].id, r, e.idx});
    }
}

/* ---- The postcondition ------------------------------------------------------------------- */

/* What output[o] of rank r must hold, as terms (sorted). Returns how many. The collective's row
   (colls.def) says which kind of result and where in the inputs it starts (from). */
static int expected(Post *s, int r, int o, PostTerm *t)
{
    const IrProgram *p = s->p;
    const CollInfo *ci = coll_info(p->coll);
    int C = p->chunks, from = (int)ci->from(r, C);
    if (ci->post == COLL_POST_GATHER) {
        t[0] = (PostTerm){(uint32_t)(o / C) * s->nin + (uint32_t)(from + o % C), 1};
        return 1;
    }
    if (ci->post == COLL_POST_BROADCAST) {
        t[0] = (PostTerm){(uint32_t)p->root * s->nin + (uint32_t)(from + o), 1};
        return 1;
    }
    for (int q = 0; q < p->nranks; q++)
        t[q] = (PostTerm){(uint32_t)q * s->nin + (uint32_t)(from + o), 1};
    return p->nranks;
}

/* The family output chunks [lo, ...) of rank r must hold, and where it stops holding for the
   next ones (a gather's changes with each block of C chunks). Families are cached by block
   (a gather) or by rank (a sum), or once when they are the same for every rank; a gather that
   differs from rank to rank is not cached (intern finds it again). */
static PostId expected_family(Post *s, int r, int lo, int *hi)
{
    const IrProgram *p = s->p;
    const CollInfo *ci = coll_info(p->coll);
    int C = p->chunks, q = lo / C, from = (int)ci->from(r, C);
    bool gather = ci->post == COLL_POST_GATHER, per_rank = ci->from(1, C) != ci->from(0, C);
    *hi = gather ? (q + 1) * C : p->bufs[IR_OUTPUT].nchunks;
    PostId none = 0, *cached = gather ? (per_rank ? &none : &s->want[q]) : &s->want[per_rank ? r : 0];
    if (*cached)
        return *cached;
    FamTerm *t = scratch(s, (size_t)p->nranks + 1);
    if (gather) {
        t[0] = (FamTerm){q, from - q * C, 1};
        return *cached = intern(s, t, 1);
    }
    if (ci->post == COLL_POST_BROADCAST) {
        t[0] = (FamTerm){p->root, from, 1};
        return *cached = intern(s, t, 1);
    }
    for (int k = 0; k < p->nranks; k++)
        t[k] = (FamTerm){k, from, 1};
    return *cached = intern(s, t, p->nranks);
}

/* A family's terms at chunk x, as one chunk's value. */
static int terms_at(Post *s, PostId id, int x, PostTerm **out)
{
    const FamTerm *t;
    int n = flatten(s, &id, 1, 0, &t);
    *out = ARENA_ARRAY(s->a, PostTerm, (size_t)n);
    for (int i = 0; i < n; i++)
        (*out)[i] = (PostTerm){(uint32_t)t[i].rank * s->nin + (uint32_t)(x + t[i].off), t[i].count};
    return n;
}

static const char *term_text(const Post *s, PostTerm t)
{
    const char *one = arena_printf(s->a, "input@%u[%u]", t.term / s->nin, t.term % s->nin);
    return t.count == 1 ? one : arena_printf(s->a, "%u*%s", t.count, one);
}

/* A sum of every rank's same chunk, once each: "the sum over all 8 ranks p of input@p[3]". */
static bool sum_over_ranks(const Post *s, const PostTerm *t, int n)
{
    if (n != s->p->nranks || n < 2)
        return false;
    for (int i = 0; i < n; i++)
        if (t[i].count != 1 || t[i].term / s->nin != (uint32_t)i || t[i].term % s->nin != t[0].term % s->nin)
            return false;
    return true;
}

static const char *terms_text(const Post *s, const PostTerm *t, int n, int max)
{
    if (sum_over_ranks(s, t, n))
        return arena_printf(s->a, "the sum over all %d ranks p of input@p[%u]", n, t[0].term % s->nin);
    const char *out = "";
    for (int i = 0; i < n && i < max; i++)
        out = arena_printf(s->a, "%s%s%s", out, i ? " + " : "", term_text(s, t[i]));
    if (n > max)
        out = arena_printf(s->a, "%s + ... (%d terms)", out, n);
    return out;
}

/* " (missing input@2[0]; extra input@1[0])": what differs from the expected terms. */
static const char *diff_text(const Post *s, const PostTerm *t, int n, const PostTerm *want, int nwant)
{
    const char *missing = "", *extra = "";
    int nmiss = 0, nextra = 0, i = 0, j = 0;
    while (i < n || j < nwant) {
        PostTerm have = i < n ? t[i] : (PostTerm){UINT32_MAX, 0};
        PostTerm need = j < nwant ? want[j] : (PostTerm){UINT32_MAX, 0};
        if (j < nwant && (i == n || need.term < have.term)) {
            if (nmiss++ < 3)
                missing = arena_printf(s->a, "%s%s%s", missing, nmiss > 1 ? ", " : "", term_text(s, need));
            j++;
        } else if (i < n && (j == nwant || have.term < need.term)) {
            if (nextra++ < 3)
                extra = arena_printf(s->a, "%s%s%s", extra, nextra > 1 ? ", " : "", term_text(s, have));
            i++;
        } else {
            if (have.count != need.count && nextra++ < 3)
                extra = arena_printf(s->a, "%s%s%s", extra, nextra > 1 ? ", " : "",
                                     term_text(s, (PostTerm){have.term, have.count - need.count}));
            i++;
            j++;
        }
    }
    if (nmiss + nextra > 3)
        return ""; /* a wholly different value: the two sums already say it */
    const char *m = nmiss ? arena_printf(s->a, "missing %s%s", missing, nmiss > 3 ? ", ..." : "") : "";
    const char *x = nextra ? arena_printf(s->a, "extra %s%s", extra, nextra > 3 ? ", ..." : "") : "";
    return arena_printf(s->a, " (%s%s%s)", m, nmiss && nextra ? "; " : "", x);
}

static const char *should_hold(const Post *s, const PostTerm *want, int nwant)
{
    return terms_text(s, want, nwant, 4);
}

static void report_wrong(Post *s, Diag *d, int r, int o, const Cell *c, const PostTerm *want, int nwant)
{
    const IrProgram *p = s->p;
    const char *chunk = check_chunks(p, IR_OUTPUT, o, 1);
    const char *has = "undefined", *diff = "";
    if (c->id) {
        PostTerm *t;
        int n = terms_at(s, c->id, o, &t);
        has = arena_printf(s->a, "= %s", terms_text(s, t, n, 4));
        diff = diff_text(s, t, n, want, nwant);
    }
    const char *root = coll_has_root(coll_info(p->coll)) ? arena_printf(s->a, " (root %d)", p->root) : "";
    diag_error(d, p->loc, "%s postcondition%s fails: rank %d ends with %s %s; it should hold %s%s", p->coll_name, root,
               r, chunk, has, should_hold(s, want, nwant), diff);
    if (c->w_rank >= 0) {
        const IrOp *op = &p->ranks[c->w_rank].ops[c->w_idx];
        diag_note(d, op->loc, "rank %d's %s was last written here, by rank %d %s", r, chunk, c->w_rank,
                  check_op_tag(s->a, op));
    } else {
        diag_note(d, p->loc, "nothing writes %s of rank %d", chunk, r);
    }
}

/* The last writer's location, or the program's when nothing wrote the chunk. */
static Loc writer_loc(const Post *s, const Cell *c)
{
    return c->w_rank >= 0 ? s->p->ranks[c->w_rank].ops[c->w_idx].loc : s->p->loc;
}

typedef struct Wrong {
    Loc shown_at[4];
    int shown, count;
    PostTerm *want;
} Wrong;

/* Output chunks [lo, hi) of rank r hold one value and should hold one (other) value. */
static void wrong_piece(Post *s, Diag *d, Wrong *w, int r, int lo, int hi, const Cell *c)
{
    enum { MAX_SHOWN = 4 };
    w->count += hi - lo;
    Loc at = writer_loc(s, c); /* one error per place that went wrong */
    for (int i = 0; i < w->shown; i++)
        if (at.src == w->shown_at[i].src && at.line == w->shown_at[i].line && at.col == w->shown_at[i].col)
            return;
    if (w->shown == MAX_SHOWN)
        return;
    w->shown_at[w->shown++] = at;
    report_wrong(s, d, r, lo, c, w->want, expected(s, r, lo, w->want));
}

static void check_outputs(Post *s, Diag *d)
{
    const IrProgram *p = s->p;
    Wrong w = {.want = ARENA_ARRAY(s->a, PostTerm, (size_t)p->nranks + 1)};
    int aliased, buf = IR_OUTPUT, nout = p->bufs[IR_OUTPUT].nchunks;
    if (ir_in_place(p, &aliased, NULL) && aliased == IR_OUTPUT)
        buf = IR_INPUT; /* in place, a reducescatter's output is its part of the input */
    for (int r = 0; r < p->nranks && !over(s); r++) {
        if (!coll_output_checked(coll_info(p->coll), r, p->root))
            continue; /* a reduce's other ranks: their output is not part of the result */
        int base = buf == IR_OUTPUT ? 0 : ir_in_place_first(p, r);
        RunMap *m = cells(s, r, buf);
        for (const Run *run = m->first ? runs_find(m, base) : NULL; run && run->lo < base + nout && !over(s);
             run = run->next) {
            Cell c = *(const Cell *)run->val;
            c.id = shift(s, c.id, base); /* as output chunks, counted from the output's first */
            int end = (run->hi < base + nout ? run->hi : base + nout) - base;
            for (int lo = (run->lo > base ? run->lo : base) - base, hi; lo < end; lo = hi) {
                PostId want = expected_family(s, r, lo, &hi);
                hi = hi < end ? hi : end;
                if (!c.id || c.id != want)
                    wrong_piece(s, d, &w, r, lo, hi, &c);
            }
        }
    }
    if (w.count > w.shown && coll_info(p->coll)->post == COLL_POST_REDUCE)
        diag_note(d, p->loc, "%d output chunks are wrong in all, on the root %d", w.count, p->root);
    else if (w.count > w.shown)
        diag_note(d, p->loc, "%d output chunks are wrong in all, over the %d ranks", w.count, p->nranks);
}

static void check_barrier(CheckResult *r, Diag *d)
{
    const IrProgram *p = r->p;
    for (int q = 0; q < p->nranks; q++) {
        HbClock *made;
        HbView e = hb_end_view(&r->replay, q, false, &made);
        for (int s = 0; s < p->nranks; s++)
            if (!hb_knows_start(&r->hb, e, s)) {
                diag_error(d, p->loc, "barrier postcondition fails: rank %d may leave before rank %d has entered: "
                           "there is no signal->wait path from rank %d's start to rank %d's end", q, s, s, q);
                hb_end_view_done(&r->replay, made);
                return;
            }
        hb_end_view_done(&r->replay, made);
    }
}

static void post_init(Post *s, CheckResult *r)
{
    const IrProgram *p = r->p;
    memset(s, 0, sizeof *s);
    s->r = r;
    s->p = p;
    s->a = p->arena;
    s->budget = &r->budget;
    runs_pool_init(&s->pool, s->a, sizeof(Cell), s->budget, "symbolic values");
    s->pool.at = p->loc;
    s->nin = p->bufs[IR_INPUT].nchunks > 0 ? (uint32_t)p->bufs[IR_INPUT].nchunks : 1;
    s->cap = 64;
    s->vals = post_alloc(s, (size_t)s->cap, sizeof(PostVal));
    s->nvals = 1; /* id 0: undefined */
    s->intern_mask = 255;
    s->intern = post_alloc(s, s->intern_mask + 1, sizeof(int));
    memo_alloc(s, &s->sums, 256);
    memo_alloc(s, &s->shifts, 256);
    s->cells = post_alloc(s, (size_t)p->nranks * (size_t)p->nbufs, sizeof(RunMap));
    s->ids = post_alloc(s, (size_t)p->nranks, sizeof(PostId));
    s->want = post_alloc(s, (size_t)p->nranks + 1, sizeof(PostId));
    s->sent = post_alloc(s, (size_t)p->nranks, sizeof(Sent *));
}

void post_check(CheckResult *r, Diag *d)
{
    const IrProgram *p = r->p;
    if (!r->run.all_ended)
        return;
    CollPost post = coll_info(p->coll)->post;
    if (post == COLL_POST_BARRIER && r->replayed) {
        check_barrier(r, d);
        return;
    }
    if (!coll_copies(coll_info(p->coll)) && !coll_sums(coll_info(p->coll)))
        return;
    Post s;
    post_init(&s, r);
    for (size_t i = 0; i < r->run.nsched && !over(&s); i++) {
        HbEv e = r->run.sched[i];
        if (ir_is_data(p->ranks[e.rank].ops[e.idx].kind))
            run_op(&s, e);
    }
    if (!over(&s))
        check_outputs(&s, d);
}
