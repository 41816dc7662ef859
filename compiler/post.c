/*
 * post.c - rule 4: follows every chunk's value symbolically and checks the collective's
 * postcondition (LANGUAGE.md's table) at the end.
 *
 * A value is a sum of input chunks: a multiset of (rank, chunk) terms, kept sorted with
 * counts, or "undefined" (id 0: an output or scratch chunk before anything was written into
 * it, and anything computed from one). Values are hash-consed, so a chunk holds an id and
 * copying, putting or storing a chunk costs nothing; sums are memoised per pair, and a switch
 * reduction over n ranks is one sort of all the terms instead of n-1 merges. A single input
 * chunk needs no table at all: its id is -1 - term. Buffers get their cells only when first
 * written: an input chunk nobody overwrote is its own singleton. The
 * ops run along sync.c's schedule; since rules 1 and 2 passed when this runs, any schedule
 * gives the same values. A barrier's postcondition (no rank leaves before every rank has
 * entered) is a happens-before fact, checked on the final EXEC clocks.
 */
#include "hb.h"

#include <stdlib.h>
#include <string.h>

typedef struct PostTerm {
    uint32_t term; /* rank * input chunks + chunk */
    uint32_t count;
} PostTerm;

/* 0: undefined; < 0: the single input chunk -1 - id; > 0: index into Post.vals. */
typedef int64_t PostId;

typedef struct PostVal {
    const PostTerm *t;
    int n;
    uint64_t hash;
} PostVal;

typedef struct Post {
    CheckResult *r;
    const IrProgram *p;
    Arena *a;
    uint32_t nin;         /* input chunks per rank */
    PostVal *vals;        /* [id]; id 0 is undefined */
    int nvals, cap;
    int *intern;          /* hash table of ids by content */
    size_t intern_mask;
    PostId *memo_x, *memo_y, *memo_vals; /* (x, y) -> x + y; memo_vals 0: empty slot */
    size_t memo_mask;
    int nmemo;
    PostId **cells;       /* [rank * nbufs + buf]: value per chunk, NULL until written */
    HbEv **writer;        /* the op that last wrote each cell */
    PostTerm *scratch;
    size_t scratch_cap;
} Post;

static uint64_t hash_terms(const PostTerm *t, int n)
{
    uint64_t h = (uint64_t)n;
    for (int i = 0; i < n; i++)
        h = hb_mix64(h ^ ((uint64_t)t[i].term << 32 | t[i].count)) + (uint64_t)i;
    return h;
}

static bool same_terms(const PostVal *v, const PostTerm *t, int n)
{
    return v->n == n && memcmp(v->t, t, (size_t)n * sizeof *t) == 0;
}

static void intern_rehash(Post *s)
{
    size_t cap = (s->intern_mask + 1) * 2;
    s->intern = ARENA_ARRAY(s->a, int, cap);
    s->intern_mask = cap - 1;
    for (int id = 1; id < s->nvals; id++) {
        size_t i = (size_t)s->vals[id].hash & s->intern_mask;
        while (s->intern[i])
            i = (i + 1) & s->intern_mask;
        s->intern[i] = id;
    }
}

/* The id of the value with these (sorted, combined) terms; copies them when new. */
static PostId intern(Post *s, const PostTerm *t, int n)
{
    if (n == 1 && t[0].count == 1)
        return -1 - (PostId)t[0].term;
    uint64_t h = hash_terms(t, n);
    size_t i = (size_t)h & s->intern_mask;
    for (; s->intern[i]; i = (i + 1) & s->intern_mask)
        if (s->vals[s->intern[i]].hash == h && same_terms(&s->vals[s->intern[i]], t, n))
            return s->intern[i];
    if (s->nvals == s->cap) {
        s->vals = arena_grow(s->a, s->vals, (size_t)s->nvals, (size_t)s->cap * 2, sizeof *s->vals);
        s->cap *= 2;
    }
    PostTerm *copy = ARENA_ARRAY(s->a, PostTerm, (size_t)n);
    memcpy(copy, t, (size_t)n * sizeof *t);
    int id = s->nvals++;
    s->vals[id] = (PostVal){copy, n, h};
    s->intern[i] = id;
    if ((size_t)s->nvals * 2 > s->intern_mask)
        intern_rehash(s);
    return id;
}

static PostId singleton(const Post *s, int rank, int chunk)
{
    return -1 - (PostId)((uint32_t)rank * s->nin + (uint32_t)chunk);
}

/* The terms of a defined value; a single chunk's one term is put in *one. */
static const PostTerm *terms_of(const Post *s, PostId id, PostTerm *one, int *n)
{
    if (id < 0) {
        *one = (PostTerm){(uint32_t)(-1 - id), 1};
        *n = 1;
        return one;
    }
    *n = s->vals[id].n;
    return s->vals[id].t;
}

static PostTerm *scratch(Post *s, size_t n)
{
    if (n > s->scratch_cap) {
        s->scratch_cap = n * 2;
        s->scratch = ARENA_ARRAY(s->a, PostTerm, s->scratch_cap);
    }
    return s->scratch;
}

static uint32_t add_counts(uint32_t x, uint32_t y)
{
    return x > UINT32_MAX - y ? UINT32_MAX : x + y; /* only "more than once" matters */
}

static PostId merge(Post *s, PostId x, PostId y)
{
    PostTerm one_a, one_b;
    int na, nb;
    const PostTerm *a = terms_of(s, x, &one_a, &na), *b = terms_of(s, y, &one_b, &nb);
    PostTerm *out = scratch(s, (size_t)na + (size_t)nb);
    int i = 0, j = 0, n = 0;
    while (i < na || j < nb) {
        if (j == nb || (i < na && a[i].term < b[j].term))
            out[n++] = a[i++];
        else if (i == na || b[j].term < a[i].term)
            out[n++] = b[j++];
        else {
            out[n++] = (PostTerm){a[i].term, add_counts(a[i].count, b[j].count)};
            i++;
            j++;
        }
    }
    return intern(s, out, n);
}

static uint64_t memo_hash(PostId x, PostId y)
{
    return hb_mix64((uint64_t)x * 0x9E3779B97F4A7C15ull ^ (uint64_t)y);
}

static void memo_alloc(Post *s, size_t cap)
{
    s->memo_x = ARENA_ARRAY(s->a, PostId, cap);
    s->memo_y = ARENA_ARRAY(s->a, PostId, cap);
    s->memo_vals = ARENA_ARRAY(s->a, PostId, cap);
    s->memo_mask = cap - 1;
}

static void memo_grow(Post *s)
{
    size_t old = s->memo_mask + 1;
    PostId *xs = s->memo_x, *ys = s->memo_y, *vals = s->memo_vals;
    memo_alloc(s, old * 2);
    for (size_t i = 0; i < old; i++)
        if (vals[i]) {
            size_t j = (size_t)memo_hash(xs[i], ys[i]) & s->memo_mask;
            while (s->memo_vals[j])
                j = (j + 1) & s->memo_mask;
            s->memo_x[j] = xs[i];
            s->memo_y[j] = ys[i];
            s->memo_vals[j] = vals[i];
        }
}

/* x + y; never a single chunk, so never 0 or negative when both are defined. */
static PostId sum2(Post *s, PostId x, PostId y)
{
    if (!x || !y)
        return 0;
    if (x > y) {
        PostId t = x;
        x = y;
        y = t;
    }
    size_t i = (size_t)memo_hash(x, y) & s->memo_mask;
    for (; s->memo_vals[i]; i = (i + 1) & s->memo_mask)
        if (s->memo_x[i] == x && s->memo_y[i] == y)
            return s->memo_vals[i];
    PostId v = merge(s, x, y);
    s->memo_x[i] = x;
    s->memo_y[i] = y;
    s->memo_vals[i] = v;
    if ((size_t)++s->nmemo * 2 > s->memo_mask)
        memo_grow(s);
    return v;
}

static int cmp_term(const void *x, const void *y)
{
    uint32_t a = ((const PostTerm *)x)->term, b = ((const PostTerm *)y)->term;
    return (a > b) - (a < b);
}

/* The sum of k values: all their terms sorted once, equal terms combined. */
static PostId sum_many(Post *s, const PostId *ids, int k)
{
    size_t total = 0;
    for (int i = 0; i < k; i++) {
        if (!ids[i])
            return 0;
        total += ids[i] < 0 ? 1 : (size_t)s->vals[ids[i]].n;
    }
    PostTerm *t = scratch(s, total + 1);
    size_t n = 0;
    for (int i = 0; i < k; i++) {
        PostTerm one;
        int m;
        const PostTerm *from = terms_of(s, ids[i], &one, &m);
        memcpy(t + n, from, (size_t)m * sizeof *t);
        n += (size_t)m;
    }
    qsort(t, n, sizeof *t, cmp_term);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (m && t[m - 1].term == t[i].term)
            t[m - 1].count = add_counts(t[m - 1].count, t[i].count);
        else
            t[m++] = t[i];
    }
    return intern(s, t, (int)m);
}

/* ---- Buffers ----------------------------------------------------------------------------- */

static PostId get_cell(const Post *s, int rank, int buf, int chunk)
{
    const PostId *c = s->cells[rank * s->p->nbufs + buf];
    if (c)
        return c[chunk];
    return buf == IR_INPUT ? singleton(s, rank, chunk) : 0;
}

static void set_cell(Post *s, int rank, int buf, int chunk, PostId val, HbEv by)
{
    int slot = rank * s->p->nbufs + buf;
    if (!s->cells[slot]) {
        int n = s->p->bufs[buf].nchunks;
        s->cells[slot] = ARENA_ARRAY(s->a, PostId, (size_t)n);
        s->writer[slot] = ARENA_ARRAY(s->a, HbEv, (size_t)n);
        for (int c = 0; c < n; c++) {
            s->cells[slot][c] = buf == IR_INPUT ? singleton(s, rank, c) : 0;
            s->writer[slot][c] = (HbEv){-1, -1};
        }
    }
    s->cells[slot][chunk] = val;
    s->writer[slot][chunk] = by;
}

/* Chunk j of src summed over every rank. */
static PostId reduce_over_ranks(Post *s, IrRange src, int j, PostId *ids)
{
    for (int q = 0; q < s->p->nranks; q++)
        ids[q] = get_cell(s, q, src.buf, src.first + j);
    return sum_many(s, ids, s->p->nranks);
}

static void run_op(Post *s, HbEv e, PostId *vals, PostId *ids)
{
    const IrOp *op = &s->p->ranks[e.rank].ops[e.idx];
    int r = e.rank, n = op->dst.count;
    for (int j = 0; j < n; j++) { /* read everything first: dst may overlap a source */
        switch (op->kind) {
        case IR_COPY:
        case IR_PUT:
        case IR_SW_STORE: vals[j] = get_cell(s, r, op->src.buf, op->src.first + j); break;
        case IR_GET: vals[j] = get_cell(s, op->peer, op->src.buf, op->src.first + j); break;
        case IR_REDUCE:
            vals[j] = sum2(s, get_cell(s, r, op->src.buf, op->src.first + j),
                           get_cell(s, r, op->src2.buf, op->src2.first + j));
            break;
        default: vals[j] = reduce_over_ranks(s, op->src, j, ids); break;
        }
    }
    bool everywhere = op->kind == IR_SW_STORE || op->kind == IR_SW_REDUCE_STORE;
    int target = op->kind == IR_PUT ? op->peer : r;
    for (int q = everywhere ? 0 : target; q < (everywhere ? s->p->nranks : target + 1); q++)
        for (int j = 0; j < n; j++)
            set_cell(s, q, op->dst.buf, op->dst.first + j, vals[j], e);
}

/* ---- The postcondition ------------------------------------------------------------------- */

/* What output[o] of rank r must hold, as terms (sorted). Returns how many. */
static int expected(Post *s, int r, int o, PostTerm *t)
{
    const IrProgram *p = s->p;
    int C = p->chunks;
    if (p->coll == COLL_ALLGATHER) {
        t[0] = (PostTerm){(uint32_t)(o / C) * s->nin + (uint32_t)(o % C), 1};
        return 1;
    }
    int chunk = p->coll == COLL_REDUCESCATTER ? r * C + o : o;
    for (int q = 0; q < p->nranks; q++)
        t[q] = (PostTerm){(uint32_t)q * s->nin + (uint32_t)chunk, 1};
    return p->nranks;
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

static void report_wrong(Post *s, Diag *d, int r, int o, PostId val, const PostTerm *want, int nwant)
{
    const IrProgram *p = s->p;
    const char *chunk = check_chunks(p, IR_OUTPUT, o, 1);
    const char *has = "undefined", *diff = "";
    if (val) {
        PostTerm one;
        int n;
        const PostTerm *t = terms_of(s, val, &one, &n);
        has = arena_printf(s->a, "= %s", terms_text(s, t, n, 4));
        diff = diff_text(s, t, n, want, nwant);
    }
    diag_error(d, p->loc, "%s postcondition fails: rank %d ends with %s %s; it should hold %s%s", p->coll_name, r,
               chunk, has, should_hold(s, want, nwant), diff);
    int slot = r * p->nbufs + IR_OUTPUT;
    HbEv w = s->writer[slot] ? s->writer[slot][o] : (HbEv){-1, -1};
    if (w.rank >= 0) {
        const IrOp *op = &p->ranks[w.rank].ops[w.idx];
        diag_note(d, op->loc, "rank %d's %s was last written here, by rank %d %s", r, chunk, w.rank,
                  check_op_tag(s->a, op));
    } else {
        diag_note(d, p->loc, "nothing writes %s of rank %d", chunk, r);
    }
}

/* The last writer's location, or the program's when nothing wrote the chunk. */
static Loc writer_loc(const Post *s, int r, int o)
{
    int slot = r * s->p->nbufs + IR_OUTPUT;
    HbEv w = s->writer[slot] ? s->writer[slot][o] : (HbEv){-1, -1};
    return w.rank >= 0 ? s->p->ranks[w.rank].ops[w.idx].loc : s->p->loc;
}

/* The id of what output[o] of rank r must hold; allreduce's are the same on every rank, so
   they are made once each (comparing ids, not terms, keeps this linear in the output). */
static PostId expected_id(Post *s, int r, int o, PostTerm *want, PostId *cache)
{
    if (s->p->coll == COLL_ALLREDUCE && cache[o])
        return cache[o];
    PostId id = intern(s, want, expected(s, r, o, want));
    if (s->p->coll == COLL_ALLREDUCE)
        cache[o] = id;
    return id;
}

static void check_outputs(Post *s, Diag *d)
{
    enum { MAX_SHOWN = 4 };
    const IrProgram *p = s->p;
    PostTerm *want = ARENA_ARRAY(s->a, PostTerm, (size_t)p->nranks + 1);
    PostId *cache = ARENA_ARRAY(s->a, PostId, (size_t)p->bufs[IR_OUTPUT].nchunks + 1);
    Loc shown_at[MAX_SHOWN];
    int shown = 0, wrong = 0;
    for (int r = 0; r < p->nranks; r++)
        for (int o = 0; o < p->bufs[IR_OUTPUT].nchunks; o++) {
            PostId val = get_cell(s, r, IR_OUTPUT, o), want_id = expected_id(s, r, o, want, cache);
            if (val && val == want_id)
                continue;
            int nwant = expected(s, r, o, want);
            wrong++;
            Loc at = writer_loc(s, r, o); /* one error per place that went wrong */
            bool seen = false;
            for (int i = 0; i < shown; i++)
                seen |= at.src == shown_at[i].src && at.line == shown_at[i].line && at.col == shown_at[i].col;
            if (seen || shown == MAX_SHOWN)
                continue;
            shown_at[shown++] = at;
            report_wrong(s, d, r, o, val, want, nwant);
        }
    if (wrong > shown)
        diag_note(d, p->loc, "%d output chunks are wrong in all, over the %d ranks", wrong, p->nranks);
}

static void check_barrier(CheckResult *r, Diag *d)
{
    const IrProgram *p = r->p;
    for (int q = 0; q < p->nranks; q++) {
        HbView e = hb_exec_view(&r->replay, q);
        for (int s = 0; s < p->nranks; s++)
            if (hb_get(e, s) < HB_START_TIME) {
                diag_error(d, p->loc, "barrier postcondition fails: rank %d may leave before rank %d has entered: "
                           "there is no signal->wait path from rank %d's start to rank %d's end", q, s, s, q);
                return;
            }
    }
}

static void post_init(Post *s, CheckResult *r)
{
    const IrProgram *p = r->p;
    memset(s, 0, sizeof *s);
    s->r = r;
    s->p = p;
    s->a = p->arena;
    s->nin = p->bufs[IR_INPUT].nchunks > 0 ? (uint32_t)p->bufs[IR_INPUT].nchunks : 1;
    s->cap = 64;
    s->vals = ARENA_ARRAY(s->a, PostVal, (size_t)s->cap);
    s->nvals = 1; /* id 0: undefined */
    s->intern_mask = 255;
    s->intern = ARENA_ARRAY(s->a, int, s->intern_mask + 1);
    memo_alloc(s, 256);
    size_t cells = (size_t)p->nranks * (size_t)p->nbufs;
    s->cells = ARENA_ARRAY(s->a, PostId *, cells);
    s->writer = ARENA_ARRAY(s->a, HbEv *, cells);
}

void post_check(CheckResult *r, Diag *d)
{
    const IrProgram *p = r->p;
    if (!r->run.all_ended)
        return;
    if (p->coll == COLL_BARRIER && r->replayed) {
        check_barrier(r, d);
        return;
    }
    if (p->coll != COLL_ALLGATHER && p->coll != COLL_REDUCESCATTER && p->coll != COLL_ALLREDUCE)
        return;
    Post s;
    post_init(&s, r);
    int maxc = 1;
    for (int b = 0; b < p->nbufs; b++)
        maxc = p->bufs[b].nchunks > maxc ? p->bufs[b].nchunks : maxc;
    PostId *vals = ARENA_ARRAY(s.a, PostId, (size_t)maxc);
    PostId *ids = ARENA_ARRAY(s.a, PostId, (size_t)p->nranks);
    for (size_t i = 0; i < r->run.nsched; i++) {
        HbEv e = r->run.sched[i];
        if (ir_is_data(p->ranks[e.rank].ops[e.idx].kind))
            run_op(&s, e, vals, ids);
    }
    check_outputs(&s, d);
}
