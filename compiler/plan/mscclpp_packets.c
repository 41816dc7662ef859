/*
 * mscclpp_packets.c - a plan's packets paired by address, as MSCCL++'s executor pairs them.
 *
 * A packet (LL) op of a plan writes packets at a place of some rank's scratch, each packet
 * carrying the launch's flag, and a read polls a place of its own rank's scratch until the
 * flags there are this launch's (docs/mscclpp.md, "Packets"). Nothing counts them: a read takes
 * whatever write of this launch put packets at its address. mscclpp_map.c has made every
 * write an IR_MPKT_PUT and every read an IR_MPKT_READ or IR_MPKT_REDUCE on the plan's packet
 * buffer; this pass finds, chunk by chunk, the one write of each read, and splits both into
 * pieces, one per (write, read) pair, that share an id (IrOp.match). The checker then treats
 * each piece pair as a relaxed signal and its wait (happens_before.c), which is what a flagged
 * packet is: its own data is visible with its flag, nothing else is.
 *
 * What cannot be paired is an error here, at the op: a place that gets packets twice in one
 * launch (both carry the flag; which one a read sees depends on timing), a read of a place that
 * no write of the launch fills (it polls forever), and scratch that is plain data and packets
 * at once (the executor lays packet i over bytes 2i and 2i+1 of chunk size, where plain chunks
 * 2i and 2i+1 are).
 */
#include "mscclpp_packets.h"

#include <string.h>

typedef struct Piece {
    int w, wi;        /* the write: rank, op index */
    int r, ri;        /* the read */
    int first, count; /* packet chunks on rank r */
    int id;
    int next_w;       /* the write's next piece, -1 */
} Piece;

typedef struct Pairing {
    Msc *m;
    IrProgram *p;
    int buf, nchunks;  /* the packet buffer and its data chunks */
    int **wrank, **widx; /* [rank][chunk]: the write of each packet chunk, lazily made */
    Piece *pieces;
    int npieces, cap;
    int **head, **rfirst, **rcount; /* [rank][op]: a write's first piece; a read's pieces */
    int *ids;          /* [w * n + r]: the next id of the pair */
} Pairing;

static const IrRange *slot_of(const IrOp *op)
{
    return op->kind == IR_MPKT_REDUCE ? &op->src2 : op->kind == IR_MPKT_READ ? &op->src : &op->dst;
}

static const char *where(const Pairing *x, const IrOp *op)
{
    return arena_printf(x->m->a, "%s", op->ctx ? op->ctx : "");
}

/* Every write's chunks, each chunk once. */
static bool note_writes(Pairing *x)
{
    Msc *m = x->m;
    for (int w = 0; w < m->n; w++)
        for (int i = 0; i < x->p->ranks[w].nops; i++) {
            const IrOp *op = &x->p->ranks[w].ops[i];
            if (op->kind != IR_MPKT_PUT)
                continue;
            int d = op->peer;
            if (!x->wrank[d]) {
                x->wrank[d] = ARENA_ARRAY(m->a, int, (size_t)x->nchunks);
                x->widx[d] = ARENA_ARRAY(m->a, int, (size_t)x->nchunks);
                memset(x->wrank[d], 0xff, (size_t)x->nchunks * sizeof(int));
            }
            for (int c = op->dst.first; c < op->dst.first + op->dst.count; c++) {
                if (x->wrank[d][c] < 0) {
                    x->wrank[d][c] = w, x->widx[d][c] = i;
                    continue;
                }
                const IrOp *before = &x->p->ranks[x->wrank[d][c]].ops[x->widx[d][c]];
                diag_error(m->d, op->loc, "packet slot written twice in one launch: gpu %d (%s) writes packets into "
                           "scratch chunk %d of gpu %d, which gpu %d (%s) also writes; both carry the launch's flag, "
                           "so which one a read there takes depends on timing", w, where(x, op), c / m->scale, d,
                           x->wrank[d][c], where(x, before));
                diag_note(m->d, before->loc, "the other write of those packets is here");
                return false;
            }
        }
    return true;
}

static int add_piece(Pairing *x, Piece pc)
{
    if (x->npieces == x->cap) {
        int cap = x->cap ? 2 * x->cap : 64;
        x->pieces = arena_grow(x->m->a, x->pieces, (size_t)x->cap, (size_t)cap, sizeof(Piece));
        x->cap = cap;
    }
    int *id = &x->ids[(size_t)pc.w * (size_t)x->m->n + (size_t)pc.r];
    pc.id = (*id)++;
    pc.next_w = -1;
    x->pieces[x->npieces] = pc;
    return x->npieces++;
}

/* A read's pieces: its chunks split where the write that filled them changes. */
static bool pair_read(Pairing *x, int r, int i)
{
    Msc *m = x->m;
    const IrOp *op = &x->p->ranks[r].ops[i];
    IrRange at = *slot_of(op);
    x->rfirst[r][i] = x->npieces;
    for (int c = at.first; c < at.first + at.count;) {
        if (!x->wrank[r] || x->wrank[r][c] < 0) {
            diag_error(m->d, op->loc, "packet read that no packet write feeds: gpu %d (%s) polls scratch chunk %d for "
                       "packets of this launch, but no op of the plan writes packets there, so it waits forever", r,
                       where(x, op), c / m->scale);
            return false;
        }
        int w = x->wrank[r][c], wi = x->widx[r][c], end = c + 1;
        while (end < at.first + at.count && x->wrank[r][end] == w && x->widx[r][end] == wi)
            end++;
        int k = add_piece(x, (Piece){w, wi, r, i, c, end - c, 0, -1});
        /* the write's pieces in the order of its chunks' readers: append */
        int *link = &x->head[w][wi];
        while (*link >= 0)
            link = &x->pieces[*link].next_w;
        *link = k;
        c = end;
    }
    x->rcount[r][i] = x->npieces - x->rfirst[r][i];
    return true;
}

/* Plain scratch chunks j sit on bytes [j, j+1) of chunk size, packet chunk i on [2i, 2i+2). */
static bool plain_apart(Pairing *x)
{
    Msc *m = x->m;
    for (int r = 0; r < m->n; r++) {
        const IrSeq *s = &x->p->ranks[r];
        unsigned char *as_pkt = ARENA_ARRAY(m->a, unsigned char, (size_t)x->nchunks * 2 + 1);
        memset(as_pkt, 0, (size_t)x->nchunks * 2 + 1);
        for (int q = 0; q < m->n; q++)
            for (int i = 0; i < x->p->ranks[q].nops; i++) {
                const IrOp *op = &x->p->ranks[q].ops[i];
                if (!ir_is_msc_packet(op->kind) || (op->kind == IR_MPKT_PUT ? op->peer : q) != r)
                    continue;
                const IrRange *at = slot_of(op);
                memset(as_pkt + 2 * at->first, 1, 2 * (size_t)at->count);
            }
        for (int i = 0; i < s->nops; i++) {
            IrEffects fx = ir_effects(&s->ops[i]);
            for (int k = 0; k < fx.n; k++) {
                const IrAccess *a = &fx.acc[k];
                int owner = ir_access_rank(a, &s->ops[i], r);
                if (a->range.buf != 2 || owner != r)
                    continue;
                for (int c = a->range.first; c < a->range.first + a->range.count && c < 2 * x->nchunks; c++)
                    if (as_pkt[c]) {
                        diag_error(m->d, s->ops[i].loc, "scratch used as plain data and as packets at once: gpu %d's "
                                   "scratch chunk %d (%s) is plain data here, and the executor lays the packets of "
                                   "scratch chunk %d over the same bytes, so data words read as flags and flags as "
                                   "data", r, c / m->scale,
                                   where(x, &s->ops[i]), c / 2 / m->scale);
                        return false;
                    }
            }
        }
    }
    return true;
}

/* A piece of op, its packets `pc` and everything else moved along by the same offset. */
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
        if (op->kind == IR_MPKT_PUT) {
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

bool msc_packets_pair(Msc *m)
{
    if (m->pkt_buf < 0)
        return true;
    IrProgram *p = m->p;
    Pairing x = {m, p, m->pkt_buf, p->bufs[m->pkt_buf].nchunks / (2 * p->msc_halves), NULL, NULL,
                 NULL, 0, 0, NULL, NULL, NULL, NULL};
    x.wrank = ARENA_ARRAY(m->a, int *, (size_t)m->n);
    x.widx = ARENA_ARRAY(m->a, int *, (size_t)m->n);
    x.head = ARENA_ARRAY(m->a, int *, (size_t)m->n);
    x.rfirst = ARENA_ARRAY(m->a, int *, (size_t)m->n);
    x.rcount = ARENA_ARRAY(m->a, int *, (size_t)m->n);
    x.ids = ARENA_ARRAY(m->a, int, (size_t)m->n * (size_t)m->n);
    for (int r = 0; r < m->n; r++) {
        size_t nops = (size_t)p->ranks[r].nops + 1;
        x.head[r] = ARENA_ARRAY(m->a, int, nops);
        memset(x.head[r], 0xff, nops * sizeof(int));
        x.rfirst[r] = ARENA_ARRAY(m->a, int, nops);
        x.rcount[r] = ARENA_ARRAY(m->a, int, nops);
    }
    if (!plain_apart(&x) || !note_writes(&x))
        return false;
    for (int r = 0; r < m->n; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            IrKind k = p->ranks[r].ops[i].kind;
            if ((k == IR_MPKT_READ || k == IR_MPKT_REDUCE) && !pair_read(&x, r, i))
                return false;
        }
    for (int r = 0; r < m->n; r++)
        rebuild(&x, r);
    return true;
}
