/*
 * mscclpp_export.c - a checked program as an MSCCL++ execution plan, in the current format
 * (MSCCL++ 1f5f065d, plus the switch signal and wait of PR #843); docs/mscclpp.md §3.4.
 *
 * First the program is lowered, in the IR, to what the plan will say (lower()): one thread
 * block per rank, its ops in IR order, with a nop wherever the block's threads must meet for
 * the block to be a sequence (compiler/check/plan_blocks.c's rules: before a data op that order.c marked
 * sync_before or that follows a wait, before a signal that follows a data op). A
 * switch.reduce (a multimem load-reduce into local memory, which the executor has no op for)
 * becomes, when its result is only stored on by the next op, one glres with that store; else
 * a glres into this rank's slot of a scratch region every rank has (the multimem store lands
 * in every rank's slot), a nop, and a local copy out of the slot; and since those stores land
 * in the other ranks, every switch signal and wait after one is made release and acquire. The
 * lowered program is checked again, and only a clean one is written: re-importing the file
 * gives back exactly the lowered IR (tests/mscclpp/export.sh holds every stdlib program to
 * that).
 *
 * Then the plan's text is printed from the lowered IR (write_plan()): buffers i, o and s (the
 * scratch buffers end to end, then the slot region), one memory channel to each rank a rank
 * signals or waits for, a remote buffer for each (rank, buffer) a put or get reaches, a
 * switch channel per buffer the switch ops reach (and one for the barrier). A get whose
 * offsets differ cannot be written (the executor swaps them) and stops the export.
 */
#include "mscclpp.h"

#include <jansson.h>
#include <limits.h>
#include <string.h>

#include "check.h"
#include "port_proxy.h"

typedef struct Export {
    const IrProgram *p;
    IrProgram *q;           /* the lowered program */
    Diag *d;
    Arena *a;
    int slot_base;          /* first chunk of the switch.reduce slots in q's scratch buffer, -1 none */
    int slot_size;          /* chunks per rank's slot */
    int scratch_at[IR_MAX_BUFS]; /* where each of p's scratch buffers starts in s */
    int nscratch;           /* chunks of s before the slots */
} Export;

static IrOp nop_like(const IrOp *op)
{
    IrOp n = *op;
    n.kind = IR_NOP;
    n.peer = -1;
    n.relaxed = false;
    n.dst.buf = n.src.buf = n.src2.buf = -1;
    n.sync_before = false;
    return n;
}

static bool same_range(IrRange a, IrRange b)
{
    return a.buf == b.buf && a.first == b.first && a.count == b.count;
}

/* Any op of any rank other than ops[i] and ops[i+1] of rank r touching `r` on rank r's copy. */
static bool touched_elsewhere(const IrProgram *p, int r, int i, IrRange x)
{
    for (int q = 0; q < p->nranks; q++)
        for (int k = 0; k < p->ranks[q].nops; k++) {
            const IrOp *op = &p->ranks[q].ops[k];
            if (q == r && (k == i || k == i + 1))
                continue;
            const IrRange rs[3] = {op->dst, op->src, op->src2};
            for (int j = 0; j < 3; j++)
                if (rs[j].buf == x.buf && rs[j].first < x.first + x.count && x.first < rs[j].first + rs[j].count &&
                    (q == r || ir_is_switch(op->kind) || op->peer == r))
                    return true;
        }
    return false;
}

/* ---- Lowering -------------------------------------------------------------------------------- */

typedef struct Lower {
    Export *x;
    int r;
    bool data, waited;      /* since the block's threads last met */
    bool strong;            /* a lowered switch.reduce came before: switch sync made strong */
    bool bad;               /* an op the plan cannot say was reported */
} Lower;

static void put(Lower *l, IrOp op)
{
    IrSeq *s = &l->x->q->ranks[l->r];
    if (ir_op_info(op.kind)->sync == SYNC_NOP) {
        if (s->nops && ir_op_info(s->ops[s->nops - 1].kind)->sync == SYNC_NOP)
            return;
        l->data = l->waited = false;
    }
    op.tb = 0;
    op.sync_before = false;
    ir_append(l->x->q, l->r, op);
}

/* The nops plan_blocks.c wants before op (and op itself). */
static void put_op(Lower *l, const IrOp *op)
{
    if (ir_op_info(op->kind)->src.on == ON_PEER && op->src.first != op->dst.first && !l->bad) { /* a get */
        diag_error(l->x->d, op->loc, "this get reads chunk %d of rank %d into chunk %d; MSCCL++'s executor swaps a "
                   "get's two offsets, so a plan can say it only where they are equal", op->src.first, op->peer,
                   op->dst.first);
        l->bad = true;
    }
    IrSync role = ir_op_info(op->kind)->sync;
    bool signal = ir_takes_order(op->kind) && role == SYNC_SIGNAL, wait = ir_takes_order(op->kind) && role == SYNC_WAIT;
    if (ir_is_data(op->kind) && (l->waited || op->sync_before))
        put(l, nop_like(op));
    if (signal && l->data)
        put(l, nop_like(op));
    IrOp o = *op;
    if (ir_is_switch(op->kind) && (signal || wait) && l->strong)
        o.relaxed = false;
    put(l, o);
    l->data |= ir_is_data(op->kind);
    l->waited |= wait;
}

/* switch.reduce: a load-reduce through the switch into the rank's own memory. */
static bool is_switch_reduce(IrKind k)
{
    return ir_op_info(k)->src.on == ON_ALL && ir_op_info(k)->dst.on == ON_SELF;
}

/* switch.store: the rank's own chunks stored through the switch into every rank. */
static bool is_switch_store(IrKind k)
{
    return ir_op_info(k)->src.on == ON_SELF && ir_op_info(k)->dst.on == ON_ALL;
}

/* switch.reduce(dst, src): fused with a following switch.store of dst, or through a slot. */
static int lower_switch_reduce(Lower *l, const IrSeq *s, int i)
{
    const IrOp *op = &s->ops[i];
    Export *x = l->x;
    if (i + 1 < s->nops && is_switch_store(s->ops[i + 1].kind) && same_range(s->ops[i + 1].src, op->dst) &&
        op->dst.buf >= 2 && !touched_elsewhere(x->p, l->r, i, x->p->ranks[l->r].ops[i].dst)) {
        IrOp f = s->ops[i + 1];  /* the sum lands where the store put it; the scratch is never read */
        f.kind = IR_SW_REDUCE_STORE;
        f.src = op->src;
        f.sync_before = f.sync_before || op->sync_before;
        put_op(l, &f);
        return i + 2;
    }
    IrOp g = *op, c = *op;
    IrRange slot = {2, x->slot_base + l->r * op->dst.count, op->dst.count};
    g.kind = IR_SW_REDUCE_STORE;
    g.dst = slot;
    put_op(l, &g);
    c.kind = IR_COPY;
    c.src = slot;
    c.sync_before = true; /* the slot was written through the multicast address */
    put_op(l, &c);
    l->strong = true;
    return i + 1;
}

/* Where a range of p lands in q: scratch buffers end to end in one. */
static IrRange moved(const Export *x, IrRange r)
{
    if (r.buf >= 2) {
        r.first += x->scratch_at[r.buf];
        r.buf = 2;
    }
    return r;
}

static void move_op(const Export *x, IrOp *op)
{
    op->dst = op->dst.buf >= 0 ? moved(x, op->dst) : op->dst;
    op->src = op->src.buf >= 0 ? moved(x, op->src) : op->src;
    op->src2 = op->src2.buf >= 0 ? moved(x, op->src2) : op->src2;
}

static bool lower(Export *x)
{
    const IrProgram *p = x->p;
    IrProgram *q = ARENA_NEW(x->a, IrProgram);
    *q = *p;
    q->ranks = ARENA_ARRAY(x->a, IrSeq, (size_t)p->nranks);
    q->ntbs = ARENA_ARRAY(x->a, int, (size_t)p->nranks);
    x->q = q;
    for (int b = 2; b < p->nbufs; b++) {
        x->scratch_at[b] = x->nscratch;
        x->nscratch += p->bufs[b].nchunks;
    }
    x->slot_base = -1;
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++)
            if (is_switch_reduce(p->ranks[r].ops[i].kind) && p->ranks[r].ops[i].dst.count > x->slot_size)
                x->slot_size = p->ranks[r].ops[i].dst.count;
    if (x->slot_size)
        x->slot_base = x->nscratch;
    int total = x->nscratch + x->slot_size * p->nranks;
    q->nbufs = total ? 3 : 2;
    q->bufs[2] = (IrBuf){"scratch", total, p->loc, false};
    q->plan = true;
    for (int r = 0; r < p->nranks; r++) {
        IrSeq s = {ARENA_ARRAY(x->a, IrOp, (size_t)p->ranks[r].nops + 1), 0, 0};
        Lower l = {x, r, false, false, false, false};
        q->ntbs[r] = ir_ntbs(p, r);
        for (int i = 0; i < p->ranks[r].nops; i++) {
            IrOp op = p->ranks[r].ops[i];
            move_op(x, &op);
            if (op.tb != 0 && op.thread >= 0) { /* a block of a plan; port proxies are below */
                diag_error(x->d, op.loc, "a plan of several thread blocks per rank is written back only as it "
                           "was read: export the .cdsl program instead");
                return false;
            }
            if (op.tb == 0)
                s.ops[s.nops++] = op;
        }
        for (int i = 0; i < s.nops;) {
            if (is_switch_reduce(s.ops[i].kind)) {
                i = lower_switch_reduce(&l, &s, i);
                continue;
            }
            put_op(&l, &s.ops[i++]);
        }
        if (l.bad)
            return false;
        for (int i = 0; i < p->ranks[r].nops; i++) /* port proxies (port_proxy.h): the plan's ops remake them */
            if (p->ranks[r].ops[i].tb != 0) {
                IrOp op = p->ranks[r].ops[i];
                move_op(x, &op);
                ir_append(q, r, op);
            }
    }
    return true;
}

/* ---- The plan's text --------------------------------------------------------------------------- */

/* The plan is built as a jansson tree and written by json_dumpf, which escapes every string (a
 * plan's name is its strings', and may hold anything). The pieces are made with json_pack,
 * which returns NULL when memory runs out, as it does for a NULL piece ("o" takes a value and
 * releases it on failure): a NULL anywhere makes the root NULL, and that is out of memory. */

typedef struct Plan {
    Export *x;
    int *peers, npeers;          /* memory channels of this rank, by peer */
    int *ports, nports;          /* port channels of this rank, by peer */
    int *rb_rank, *rb_type, nrb; /* remote buffers through memory channels */
    int *prb_rank, *prb_type, nprb; /* through port channels */
    int *cursor;                 /* [unit]: how far the writer has read each port proxy */
    int sw_type[4], nsw;         /* switch channels: the buffer type each binds ('i', 'o', 's') */
    bool bad;                    /* an op the plan cannot hold was reported */
} Plan;

static const char *type_of(int buf)
{
    return buf == IR_INPUT ? "i" : buf == IR_OUTPUT ? "o" : "s";
}

static int peer_channel(const Plan *pl, int peer)
{
    for (int k = 0; k < pl->npeers; k++)
        if (pl->peers[k] == peer)
            return k;
    return -1;
}

static int add_peer(int *list, int *n, int peer)
{
    for (int k = 0; k < *n; k++)
        if (list[k] == peer)
            return k;
    list[*n] = peer;
    return (*n)++;
}

static int port_buffer(Plan *pl, int rank, const char *t)
{
    for (int k = 0; k < pl->nprb; k++)
        if (pl->prb_rank[k] == rank && pl->prb_type[k] == t[0])
            return k;
    pl->prb_rank[pl->nprb] = rank;
    pl->prb_type[pl->nprb] = t[0];
    return pl->nprb++;
}

static int remote_buffer(Plan *pl, int rank, const char *t)
{
    for (int k = 0; k < pl->nrb; k++)
        if (pl->rb_rank[k] == rank && pl->rb_type[k] == t[0])
            return k;
    pl->rb_rank[pl->nrb] = rank;
    pl->rb_type[pl->nrb] = t[0];
    return pl->nrb++;
}

static int switch_channel(Plan *pl, const char *t)
{
    for (int k = 0; k < pl->nsw; k++)
        if (pl->sw_type[k] == t[0])
            return k;
    pl->sw_type[pl->nsw] = t[0];
    return pl->nsw++;
}

static void sort_ints(int *v, int n)
{
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (v[b] < v[a]) {
                int t = v[a];
                v[a] = v[b];
                v[b] = t;
            }
}

/* The channels and buffers every rank declares: the same switch channels on every rank (in
   one order: the multicast objects are made in it), memory channels to the ranks it syncs
   with (each pair has one on each side), remote buffers for its puts and gets. */
static void collect(Plan *pl, const IrProgram *q, int r)
{
    bool barrier = false;
    pl->npeers = pl->nrb = pl->nsw = pl->nports = pl->nprb = 0;
    for (int s = 0; s < q->nranks; s++)
        for (int i = 0; i < q->ranks[s].nops; i++) {
            const IrOp *op = &q->ranks[s].ops[i];
            const IrOpInfo *in = ir_op_info(op->kind);
            if (port_lowered(op, s)) { /* a port channel's (port_proxy.h): its own list, none of the rest */
                if (s == r || op->port_peer == r)
                    add_peer(pl->ports, &pl->nports, s == r ? op->port_peer : s);
                continue;
            }
            if (ir_takes_order(op->kind) && in->chan == CH_PEER && (s == r || op->peer == r)) {
                int other = s == r ? op->peer : s;
                if (peer_channel(pl, other) < 0)
                    pl->peers[pl->npeers++] = other;
            }
            if (in->src.on == ON_ALL)
                switch_channel(pl, type_of(op->src.buf));
            if (in->dst.on == ON_ALL)
                switch_channel(pl, type_of(op->dst.buf));
            barrier |= ir_is_switch(op->kind) && ir_takes_order(op->kind);
        }
    if (barrier && !pl->nsw) /* the barrier's counter comes with a switch channel: switch channel 0 */
        switch_channel(pl, "o");
    sort_ints(pl->peers, pl->npeers); /* in rank order: both sides then pair channel 0 with 0 */
    sort_ints(pl->ports, pl->nports);
    const IrSeq *s = &q->ranks[r];
    for (int i = 0; i < s->nops; i++) {
        if (port_lowered(&s->ops[i], r))
            continue;
        IrEffects fx = ir_effects(&s->ops[i]);
        for (int k = 0; k < fx.n; k++)
            if (fx.acc[k].on == ON_PEER)
                remote_buffer(pl, s->ops[i].peer, type_of(fx.acc[k].range.buf));
    }
}

static json_t *range_json(IrRange r)
{
    return json_pack("{s:s, s:i, s:i}", "type", type_of(r.buf), "index", r.first, "size", r.count);
}

static json_t *remote_json(Plan *pl, IrRange r, int peer)
{
    return json_pack("{s:i, s:i, s:i}", "buffer_id", remote_buffer(pl, peer, type_of(r.buf)), "index", r.first,
                     "size", r.count);
}

static json_t *switch_json(Plan *pl, IrRange r)
{
    return json_pack("{s:i, s:i, s:i}", "switch_channel_id", switch_channel(pl, type_of(r.buf)), "index", r.first,
                     "size", r.count);
}

/* Appends v (NULL: out of memory, or an op that was reported) to the array *a, which becomes
   NULL, freed, when either is. */
static void append(json_t **a, json_t *v)
{
    if (*a && json_array_append_new(*a, v)) {
        json_decref(*a);
        *a = NULL;
    } else if (!*a) {
        json_decref(v);
    }
}

/* o[key] = v, taking v; NULL (o released) when either is NULL or memory runs out. */
static json_t *with(json_t *o, const char *key, json_t *v)
{
    if (!o) {
        json_decref(v);
        return NULL;
    }
    if (!v || json_object_set_new(o, key, v)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* An operand as the plan names it: a local buffer, a remote buffer of the peer, or the
   switch's multicast address. */
static json_t *operand_json(Plan *pl, const IrAccess *a, int peer)
{
    return a->on == ON_PEER ? remote_json(pl, a->range, peer) : a->on == ON_ALL ? switch_json(pl, a->range)
                                                                                : range_json(a->range);
}

/* The op as ops.def's MSCCL++ column names it, with its operands (src_buff: its sources,
   dst_buff: its destination), the peer channel it goes through, the channel type, and for a
   sum the reduce_op; the switch's signal and wait name the switch channel alone. */
static json_t *op_json(Plan *pl, const IrOp *op)
{
    const IrOpInfo *in = ir_op_info(op->kind);
    const char *name = ir_msc_name(op);
    if (!name || ir_is_barrier(op->kind)) { /* packets: refused before lowering (no_packets); switch.reduce:
                                               lowered away; barriers: never made by lower() */
        diag_error(pl->x->d, op->loc, "internal error: a %s left in the plan", ir_kind_name(op->kind));
        pl->bad = true;
        return NULL;
    }
    json_t *o = with(json_object(), "name", json_string(name));
    if (ir_is_switch(op->kind) && !ir_is_data(op->kind))
        return with(o, "switch_channel_id", json_integer(0));
    IrEffects fx = ir_effects(op);
    bool remote = false;
    if (fx.n) {
        json_t *src = json_array(), *dst = json_array();
        for (int k = 1; k < fx.n; k++)
            append(&src, operand_json(pl, &fx.acc[k], op->peer));
        append(&dst, operand_json(pl, &fx.acc[0], op->peer));
        o = with(with(o, "src_buff", src), "dst_buff", dst);
        for (int k = 0; k < fx.n; k++)
            remote |= fx.acc[k].on == ON_PEER;
    }
    if (in->chan == CH_PEER) {
        int chan = peer_channel(pl, op->peer);
        o = with(o, "channel_ids", json_pack("[i]", chan < 0 ? 0 : chan));
    }
    if (in->chan != CH_BLOCK)
        o = with(o, "channel_type", json_string(in->chan == CH_SWITCH ? "switch"
                                                : in->chan == CH_PEER || remote ? "memory" : "none"));
    if (fx.n == 3 || in->src.on == ON_ALL)
        o = with(o, "reduce_op", json_string("sum"));
    return o;
}

/* ---- Port channels: a block's request, written as the plan op its proxy serves ---------------- */

/* The proxy's work for rank r's request `req` (port_proxy.h): its ops after the wait for the
   request, up to the next request. */
static void served(Plan *pl, const IrProgram *q, int r, const IrOp *req, bool *put, bool *sig, bool *flush,
                   const IrOp **data)
{
    const IrSeq *s = &q->ranks[r];
    int unit = 1 + (req->chan - IR_PORT_REQ_CHAN) / 2, i = pl->cursor[unit];
    while (i < s->nops && (s->ops[i].tb != unit || !ir_is_chan_wait(s->ops[i].kind) || s->ops[i].chan != req->chan))
        i++;
    *put = *sig = *flush = false;
    for (i++; i < s->nops && s->ops[i].tb == unit && !ir_is_chan_wait(s->ops[i].kind); i++) {
        const IrOp *op = &s->ops[i];
        if (ir_is_data(op->kind))
            *put = true, *data = op;
        else if (op->peer == r)
            *flush = true;
        else
            *sig = true;
    }
    pl->cursor[unit] = i;
}

static json_t *port_json(Plan *pl, const IrProgram *q, int r, const IrOp *op)
{
    int chan = add_peer(pl->ports, &pl->nports, op->port_peer);
    json_t *o = json_object();
    if (ir_is_chan_wait(op->kind)) /* on the port semaphore (a flush's own wait is the flush's) */
        return with(with(with(o, "name", json_string("wait")), "channel_ids", json_pack("[i]", chan)),
                    "channel_type", json_string("port"));
    bool put, sig, flush;
    const IrOp *data = NULL;
    served(pl, q, r, op, &put, &sig, &flush, &data);
    const char *name = put ? (sig ? (flush ? "pwsf" : "pws") : "put") : sig ? "signal" : "flush";
    o = with(o, "name", json_string(name));
    if (put)
        o = with(with(o, "src_buff", json_pack("[o]", range_json(data->src))), "dst_buff",
                 json_pack("[{s:i, s:i, s:i}]", "buffer_id", port_buffer(pl, op->port_peer, type_of(data->dst.buf)),
                           "index", data->dst.first, "size", data->dst.count));
    else if (flush) /* the executor flushes as many channels as the op has destinations */
        o = with(o, "dst_buff", json_pack("[{s:i, s:i, s:i}]", "buffer_id", port_buffer(pl, op->port_peer, "o"),
                                          "index", 0, "size", 1));
    return with(with(o, "channel_ids", json_pack("[i]", chan)), "channel_type", json_string("port"));
}

/* [0, 1, ..., n-1], or v[0..n-1] */
static json_t *ints(int n, const int *v)
{
    json_t *a = json_array();
    for (int k = 0; a && k < n; k++)
        if (json_array_append_new(a, json_integer(v ? v[k] : k))) {
            json_decref(a);
            a = NULL;
        }
    return a;
}

/* The channels a thread block uses ("memory" ids, then "switch" ids), and the rank's. */
static json_t *block_channels(const Plan *pl)
{
    json_t *a = json_array();
    if (pl->npeers)
        append(&a, json_pack("{s:s, s:o}", "channel_type", "memory", "channel_ids", ints(pl->npeers, NULL)));
    if (pl->nports)
        append(&a, json_pack("{s:s, s:o}", "channel_type", "port", "channel_ids", ints(pl->nports, NULL)));
    if (pl->nsw)
        append(&a, json_pack("{s:s, s:o}", "channel_type", "switch", "channel_ids", ints(pl->nsw, NULL)));
    return a;
}

static json_t *rank_channels(const Plan *pl, const IrProgram *q)
{
    json_t *a = json_array();
    if (pl->npeers)
        append(&a, json_pack("{s:s, s:o}", "channel_type", "memory", "connected_to", ints(pl->npeers, pl->peers)));
    if (pl->nports)
        append(&a, json_pack("{s:s, s:o}", "channel_type", "port", "connected_to", ints(pl->nports, pl->ports)));
    for (int k = 0; k < pl->nsw; k++) {
        char t[2] = {(char)pl->sw_type[k], 0};
        append(&a, json_pack("{s:s, s:s, s:[{s:i, s:o}]}", "channel_type", "switch", "buffer_type", t,
                             "rank_groups", "size", q->nranks, "ranks", ints(q->nranks, NULL)));
    }
    return a;
}

static json_t *remote_buffers(const Plan *pl)
{
    json_t *a = json_array();
    for (int k = 0; k < pl->nrb + pl->nprb; k++) {
        bool port = k >= pl->nrb;
        char t[2] = {(char)(port ? pl->prb_type[k - pl->nrb] : pl->rb_type[k]), 0};
        append(&a, json_pack("{s:i, s:s, s:[s]}", "rank", port ? pl->prb_rank[k - pl->nrb] : pl->rb_rank[k], "type", t,
                             "access_channel_types", port ? "port" : "memory"));
    }
    return a;
}

/* The block's remote buffers by access type: the memory ones, then the port ones. */
static json_t *remote_refs(const Plan *pl)
{
    json_t *a = json_array();
    if (pl->nrb)
        append(&a, json_pack("{s:s, s:o}", "access_channel_type", "memory", "remote_buffer_ids", ints(pl->nrb, NULL)));
    if (pl->nprb) {
        json_t *ids = json_array();
        for (int k = 0; k < pl->nprb; k++)
            append(&ids, json_integer(pl->nrb + k));
        append(&a, json_pack("{s:s, s:o}", "access_channel_type", "port", "remote_buffer_ids", ids));
    }
    return a;
}

static json_t *gpu_json(Plan *pl, const IrProgram *q, int r)
{
    int C = q->bufs[IR_INPUT].nchunks, O = q->bufs[IR_OUTPUT].nchunks;
    collect(pl, q, r);
    json_t *ops = json_array();
    const IrSeq *s = &q->ranks[r];
    for (int u = 0; u < ir_ntbs(q, r); u++)
        pl->cursor[u] = 0;
    for (int i = 0; i < s->nops && ops && s->ops[i].tb == 0; i++) {
        const IrOp *op = &s->ops[i];
        if (!port_lowered(op, r))
            append(&ops, op_json(pl, op));
        else if (!(ir_is_chan_wait(op->kind) && op->peer == r)) /* a flush's wait is part of the flush */
            append(&ops, port_json(pl, q, r, op));
    }
    json_t *block = json_pack("{s:i, s:o, s:o, s:o}", "id", 0, "ops", ops, "channels", block_channels(pl),
                              "remote_buffer_refs", remote_refs(pl));
    return json_pack("{s:i, s:i, s:i, s:i, s:[o], s:o, s:o, s:[]}", "id", r, "input_chunks", C ? C : 1,
                     "output_chunks", O ? O : 1, "scratch_chunks", q->nbufs > 2 ? q->bufs[2].nchunks : 0,
                     "threadblocks", block, "channels", rank_channels(pl, q), "remote_buffers",
                     remote_buffers(pl), "semaphores");
}

/* MSCCL++'s own plans say 2^64 - 1 ("no limit"); jansson's integers stop at 2^63 - 1, which
   the executor reads the same way. */
static json_t *plan_json(Plan *pl, const IrProgram *q)
{
    const char *coll = coll_info(q->coll)->mscclpp ? coll_info(q->coll)->mscclpp : "custom";
    json_t *gpus = json_array();
    for (int r = 0; r < q->nranks && gpus; r++)
        append(&gpus, gpu_json(pl, q, r));
    return json_pack("{s:s, s:s, s:s, s:b, s:b, s:i, s:b, s:i, s:i, s:I, s:o}", "name", q->name, "collective", coll,
                     "protocol", "Simple", "inplace", 0, "reuse_resources", 0, "num_threads_per_block", 1024,
                     "use_double_scratch_buffer", 0, "buffer_alignment", 16, "min_message_size", 0,
                     "max_message_size", (json_int_t)LLONG_MAX, "gpus", gpus);
}

/* Written as MSCCL++'s own tools write plans (two spaces a level, keys in order), and in ASCII:
   a name's control or bidi characters appear as \u escapes, never raw. */
static bool write_plan(Export *x, FILE *out)
{
    const IrProgram *q = x->q;
    Plan pl = {.x = x};
    pl.peers = ARENA_ARRAY(x->a, int, (size_t)q->nranks + 1);
    size_t most = 1;
    for (int r = 0; r < q->nranks; r++)
        most += (size_t)q->ranks[r].nops;
    pl.rb_rank = ARENA_ARRAY(x->a, int, most);
    pl.rb_type = ARENA_ARRAY(x->a, int, most);
    pl.prb_rank = ARENA_ARRAY(x->a, int, most);
    pl.prb_type = ARENA_ARRAY(x->a, int, most);
    pl.ports = ARENA_ARRAY(x->a, int, (size_t)q->nranks + 1);
    int units = 1;
    for (int r = 0; r < q->nranks; r++)
        units = ir_ntbs(q, r) > units ? ir_ntbs(q, r) : units;
    pl.cursor = ARENA_ARRAY(x->a, int, (size_t)units);
    json_t *root = plan_json(&pl, q);   /* no arena allocation from here on: the tree is malloc's */
    if (pl.bad) {
        json_decref(root);
        return false;
    }
    if (!root)
        arena_rethrow(x->a, 0);   /* out of memory, as the arena says it */
    int rc = json_dumpf(root, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
    json_decref(root);
    if (rc == 0)
        fputc('\n', out);
    return true;   /* a failed write shows in ferror(out), which the caller reads */
}

/* MSCCL++'s packet ops (put_packets into a peer's scratch at an offset the plan names,
   unpack_packets from it) pair by scratch address and use its executor's flags; cdsl's pair by
   order, with slots that are the runtime's, not the program's. No mapping, so no plan. */
static bool no_packets(Export *x)
{
    for (int r = 0; r < x->p->nranks; r++)
        for (int i = 0; i < x->p->ranks[r].nops; i++) {
            const IrOp *op = &x->p->ranks[r].ops[i];
            if (ir_is_msc_packet(op->kind)) { /* an imported plan's: its pieces are pairings, not plan ops */
                diag_error(x->d, op->loc, "an imported plan's packet ops are not written back to a plan: cdsl "
                           "keeps them as pairs of a write and a read, not as the plan's ops (docs/mscclpp.md, "
                           "\"Packets\")");
                return false;
            }
            if (!ir_is_packet(op->kind))
                continue;
            diag_error(x->d, op->loc, "%s is not written to MSCCL++ plans: their packet operations name scratch "
                       "offsets and pair by address, cdsl's pair by order with slots of the runtime's "
                       "(docs/mscclpp.md)", ir_kind_name(op->kind));
            return false;
        }
    return true;
}

/* A plan names its collective but no root: MSCCL++ hands the root to the algorithm at run time
   (ncclBroadcast's "root" hint, src/ext/nccl/nccl.cc:577), and a broadcast plan is read back as
   root 0's. A collective MSCCL++ does not name (reduce: src/ext/nccl/nccl.cc:540) would become
   "custom" and lose its postcondition. */
static bool root_fits_plan(Export *x)
{
    const IrProgram *p = x->p;
    const CollInfo *ci = coll_info(p->coll);
    if (!coll_has_root(ci))
        return true;
    if (!ci->mscclpp) {
        diag_error(x->d, p->loc, "MSCCL++ has no %s collective: a plan of it would say \"custom\" and lose what it "
                   "means; run the .cdsl program instead", ci->name);
        return false;
    }
    if (p->root != 0) {
        diag_error(x->d, p->loc, "this %s is compiled for root %d, but a plan names no root and is read back as "
                   "root 0's: export the program compiled for root 0", ci->name, p->root);
        return false;
    }
    return true;
}

/* The lowered program, checked; NULL after errors. */
static IrProgram *lower_checked(Export *x)
{
    const IrProgram *p = x->p;
    int before = x->d->nerrors;
    if (!root_fits_plan(x))
        return NULL;
    if (p->in_place) {
        diag_error(x->d, p->loc, "an in-place plan is written back only as it was read: export the .cdsl program "
                   "instead");
        return NULL;
    }
    if (!no_packets(x))
        return NULL;
    if (!lower(x))
        return NULL;
    check_program(x->q, x->d, NULL); /* the plan as it will be read back */
    if (x->d->nerrors != before) {
        diag_note(x->d, p->loc, "so %s is not written as a plan: the plan it would become does not check", p->name);
        return NULL;
    }
    return x->q;
}

IrProgram *mscclpp_lower(const IrProgram *p, Diag *d)
{
    Export x = {.p = p, .d = d, .a = p->arena};
    return lower_checked(&x);
}

bool mscclpp_export(const IrProgram *p, FILE *out, Diag *d)
{
    Export x = {.p = p, .d = d, .a = p->arena};
    return lower_checked(&x) && write_plan(&x, out);
}
