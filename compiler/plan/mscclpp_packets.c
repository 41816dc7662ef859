/*
 * mscclpp_packets.c - a plan's packets paired by address, as MSCCL++'s executor pairs them.
 *
 * A packet (LL) op of a plan writes packets at a place of some rank's scratch, each packet
 * carrying the launch's flag, and a read polls a place of its own rank's scratch until the
 * flags there are this launch's (docs/mscclpp.md §3.8). Nothing counts them: a read takes
 * whatever write of this launch put packets at its address. mscclpp_map.c has made every
 * write an IR_MPKT_PUT and every read an IR_MPKT_READ or IR_MPKT_REDUCE on the plan's packet
 * buffer; this pass finds the one write of each chunk a read polls, and splits both into
 * pieces, one per (write, read) pair, that share an id (IrOp.match). The checker then treats
 * each piece pair as a relaxed signal and its wait (happens_before.c), which is what a flagged
 * packet is: its own data is visible with its flag, nothing else is.
 *
 * What cannot be paired is an error here, at the op: a place that gets packets twice in one
 * launch (both carry the flag; which one a read sees depends on timing), a read of a place that
 * no write of the launch fills (it polls forever), and scratch that is plain data and packets
 * at once (the executor lays packet chunk c over plain chunks 2c and 2c + 1).
 *
 * Places are kept as sorted intervals, so time and memory follow the number of ops, not the
 * size of the scratch.
 */
#include "mscclpp_packets.h"

#include <stdlib.h>
#include <string.h>

typedef struct Span {   /* packets [first, first + count) on rank `at`, of op (rank, idx) */
    int at, first, count;
    int rank, idx;
} Span;

typedef struct Piece {
    int w, wi;        /* the write: rank, op index */
    int first, count; /* its packet chunks read here */
    int id;
    int next_w;       /* the write's next piece, -1 */
} Piece;

typedef struct Pairing {
    Msc *m;
    IrProgram *p;
    Span *writes;      /* every write, by (at, first) */
    int nwrites;
    Piece *pieces;
    int npieces, cap;
    int **head, **tail, **rfirst, **rcount; /* [rank][op]: a write's pieces; a read's */
    int *ids;          /* [w * n + r]: the next id of the pair */
} Pairing;

static const IrRange *slot_of(const IrOp *op)
{
    /* the packets: a write's destination; a read's source, or its second one when it sums (ops.def) */
    return ir_op_info(op->kind)->src2.on != ON_NONE ? &op->src2 : ir_is_msc_packet_read(op->kind) ? &op->src : &op->dst;
}

static const char *where(const IrOp *op)
{
    return op->ctx ? op->ctx : "";
}

static int by_place(const void *a, const void *b)
{
    const Span *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    if (x->first != y->first)
        return x->first < y->first ? -1 : 1;
    return x->rank != y->rank ? (x->rank < y->rank ? -1 : 1) : (x->idx > y->idx) - (x->idx < y->idx);
}

/* The packet places of the plan's ops: writes only, or every packet op. Sorted by place. */
static Span *spans(Pairing *x, bool writes_only, int *n)
{
    size_t count = 0;
    for (int r = 0; r < x->m->n; r++)
        for (int i = 0; i < x->p->ranks[r].nops; i++)
            count += ir_is_msc_packet(x->p->ranks[r].ops[i].kind) &&
                     (!writes_only || ir_is_msc_packet_write(x->p->ranks[r].ops[i].kind));
    Span *s = ARENA_ARRAY(x->m->a, Span, count + 1);
    *n = 0;
    for (int r = 0; r < x->m->n; r++)
        for (int i = 0; i < x->p->ranks[r].nops; i++) {
            const IrOp *op = &x->p->ranks[r].ops[i];
            if (!ir_is_msc_packet(op->kind) || (writes_only && !ir_is_msc_packet_write(op->kind)))
                continue;
            const IrRange *at = slot_of(op);
            s[(*n)++] = (Span){ir_is_msc_packet_write(op->kind) ? op->peer : r, at->first, at->count, r, i};
        }
    qsort(s, (size_t)*n, sizeof *s, by_place);
    return s;
}

static const IrOp *op_of(const Pairing *x, const Span *s)
{
    return &x->p->ranks[s->rank].ops[s->idx];
}

/* No place is written twice: neighbours in place order do not overlap. */
static bool writes_apart(Pairing *x)
{
    Msc *m = x->m;
    x->writes = spans(x, true, &x->nwrites);
    for (int k = 1; k < x->nwrites; k++) {
        const Span *a = &x->writes[k - 1], *b = &x->writes[k];
        if (a->at != b->at || a->first + a->count <= b->first)
            continue;
        const IrOp *later = op_of(x, b), *before = op_of(x, a);
        diag_error(m->d, later->loc, "packet slot written twice in one launch: gpu %d (%s) writes packets into "
                   "scratch chunk %d of gpu %d, which gpu %d (%s) also writes; both carry the launch's flag, so "
                   "which one a read there takes depends on timing", b->rank, where(later), b->first / m->scale,
                   b->at, a->rank, where(before));
        diag_note(m->d, before->loc, "the other write of those packets is here");
        return false;
    }
    return true;
}

/* The first write on rank `at` that ends after chunk c (writes are disjoint, so sorted by end
   too), or nwrites. */
static int write_after(const Pairing *x, int at, int c)
{
    int lo = 0, hi = x->nwrites;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        const Span *s = &x->writes[mid];
        if (s->at < at || (s->at == at && s->first + s->count <= c))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void add_piece(Pairing *x, Piece pc, int r)
{
    if (x->npieces == x->cap) {
        int cap = x->cap ? 2 * x->cap : 64;
        x->pieces = arena_grow(x->m->a, x->pieces, (size_t)x->cap, (size_t)cap, sizeof(Piece));
        x->cap = cap;
    }
    int *id = &x->ids[(size_t)pc.w * (size_t)x->m->n + (size_t)r];
    pc.id = (*id)++;
    pc.next_w = -1;
    int k = x->npieces++;
    x->pieces[k] = pc;
    int *tail = &x->tail[pc.w][pc.wi];
    if (*tail >= 0)
        x->pieces[*tail].next_w = k;
    else
        x->head[pc.w][pc.wi] = k;
    *tail = k;
}

/* A read's pieces: its chunks split where the write that filled them changes. */
static bool pair_read(Pairing *x, int r, int i)
{
    Msc *m = x->m;
    const IrOp *op = &x->p->ranks[r].ops[i];
    IrRange at = *slot_of(op);
    x->rfirst[r][i] = x->npieces;
    for (int c = at.first, k = write_after(x, r, at.first); c < at.first + at.count; k++) {
        const Span *w = k < x->nwrites ? &x->writes[k] : NULL;
        if (!w || w->at != r || w->first > c) {
            diag_error(m->d, op->loc, "packet read that no packet write feeds: gpu %d (%s) polls scratch chunk %d for "
                       "packets of this launch, but no op of the plan writes packets there, so it waits forever", r,
                       where(op), c / m->scale);
            return false;
        }
        int end = w->first + w->count < at.first + at.count ? w->first + w->count : at.first + at.count;
        add_piece(x, (Piece){w->rank, w->idx, c, end - c, 0, -1}, r);
        c = end;
    }
    x->rcount[r][i] = x->npieces - x->rfirst[r][i];
    return true;
}

/* Plain scratch chunk j sits on bytes [j, j+1) of chunk size, packet chunk c on [2c, 2c+2):
   no plain access of a rank's scratch may meet its packets. The packet places, merged per rank,
   are searched for each plain access. */
static bool plain_apart(Pairing *x)
{
    Msc *m = x->m;
    int n;
    Span *s = spans(x, false, &n), *u = ARENA_ARRAY(m->a, Span, (size_t)n + 1);
    int nu = 0;
    for (int k = 0; k < n; k++) {
        if (nu && u[nu - 1].at == s[k].at && s[k].first <= u[nu - 1].first + u[nu - 1].count) {
            int end = s[k].first + s[k].count;
            if (end > u[nu - 1].first + u[nu - 1].count)
                u[nu - 1].count = end - u[nu - 1].first;
        } else {
            u[nu++] = s[k];
        }
    }
    for (int r = 0; r < m->n; r++) {
        const IrSeq *seq = &x->p->ranks[r];
        for (int i = 0; i < seq->nops; i++) {
            IrEffects fx = ir_effects(&seq->ops[i]);
            for (int k = 0; k < fx.n; k++) {
                const IrAccess *a = &fx.acc[k];
                if (a->range.buf != 2 || ir_access_rank(a, &seq->ops[i], r) != r)
                    continue;
                /* the packets that meet plain chunks [lo, hi): chunks c with 2c + 2 > lo, 2c < hi */
                int lo = a->range.first, hi = a->range.first + a->range.count, l = 0, h = nu;
                while (l < h) { /* the first merged place on r ending after chunk lo / 2 */
                    int mid = l + (h - l) / 2;
                    if (u[mid].at < r || (u[mid].at == r && 2 * (u[mid].first + u[mid].count) <= lo))
                        l = mid + 1;
                    else
                        h = mid;
                }
                if (l == nu || u[l].at != r || 2 * u[l].first >= hi)
                    continue;
                int c = 2 * u[l].first > lo ? 2 * u[l].first : lo;
                diag_error(m->d, seq->ops[i].loc, "scratch used as plain data and as packets at once: gpu %d's "
                           "scratch chunk %d (%s) is plain data here, and the executor lays the packets of scratch "
                           "chunk %d over the same bytes, so data words read as flags and flags as data", r,
                           c / m->scale, where(&seq->ops[i]), c / 2 / m->scale);
                return false;
            }
        }
    }
    return true;
}

/* A piece of op: its packets `pc` and everything else moved along by the same offset. */
static IrOp piece_of(const IrOp *op, const Piece *pc, int peer)
{
    IrOp o = *op;
    const IrRange *at = slot_of(op);
    int shift = pc->first - at->first;
    IrRange *all[3] = {&o.dst, &o.src, &o.src2};
    for (int k = 0; k < 3; k++)
        if (all[k]->buf >= 0)
            all[k]->first += shift, all[k]->count = pc->count;
    o.peer = peer;
    o.match = pc->id;
    return o;
}

/* Rank r's list again, each packet op as its pieces. */
static void rebuild(Pairing *x, int r)
{
    IrSeq old = x->p->ranks[r];
    memset(&x->p->ranks[r], 0, sizeof(IrSeq));
    for (int i = 0; i < old.nops; i++) {
        const IrOp *op = &old.ops[i];
        if (ir_is_msc_packet_write(op->kind)) {
            IrOp whole = *op;
            whole.match = -1;
            int covered = 0;
            for (int k = x->head[r][i]; k >= 0; k = x->pieces[k].next_w) {
                ir_append(x->p, r, piece_of(op, &x->pieces[k], op->peer));
                covered += x->pieces[k].count;
            }
            if (covered < op->dst.count) /* packets nobody reads: written all the same */
                ir_append(x->p, r, whole);
        } else if (ir_is_msc_packet(op->kind)) {
            for (int k = x->rfirst[r][i]; k < x->rfirst[r][i] + x->rcount[r][i]; k++)
                ir_append(x->p, r, piece_of(op, &x->pieces[k], x->pieces[k].w));
        } else {
            ir_append(x->p, r, *op);
        }
    }
}

static int *ops_array(Arena *a, int nops, int fill)
{
    int *v = ARENA_ARRAY(a, int, (size_t)nops + 1);
    memset(v, fill, ((size_t)nops + 1) * sizeof(int));
    return v;
}

bool msc_packets_pair(Msc *m)
{
    if (m->pkt_buf < 0)
        return true;
    IrProgram *p = m->p;
    Pairing x = {m, p, NULL, 0, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL};
    x.head = ARENA_ARRAY(m->a, int *, (size_t)m->n);
    x.tail = ARENA_ARRAY(m->a, int *, (size_t)m->n);
    x.rfirst = ARENA_ARRAY(m->a, int *, (size_t)m->n);
    x.rcount = ARENA_ARRAY(m->a, int *, (size_t)m->n);
    x.ids = ops_array(m->a, m->n * m->n, 0); /* n <= IR_MAX_RANKS, so n * n fits an int */
    for (int r = 0; r < m->n; r++) {
        int nops = p->ranks[r].nops;
        x.head[r] = ops_array(m->a, nops, 0xff);
        x.tail[r] = ops_array(m->a, nops, 0xff);
        x.rfirst[r] = ops_array(m->a, nops, 0);
        x.rcount[r] = ops_array(m->a, nops, 0);
    }
    if (!plain_apart(&x) || !writes_apart(&x))
        return false;
    for (int r = 0; r < m->n; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            IrKind k = p->ranks[r].ops[i].kind;
            if (ir_is_msc_packet_read(k) && !pair_read(&x, r, i))
                return false;
        }
    for (int r = 0; r < m->n; r++)
        rebuild(&x, r);
    return true;
}
