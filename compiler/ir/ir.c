/*
 * ir.c - small helpers over the per-rank operation sequences: names, appending, and a
 * textual dump (--dump-ir) that tests use to pin down what evaluation produced.
 */
#include "ir.h"

#include "escape.h"

#include <stdio.h>
#include <string.h>

#define NO {ON_NONE, false}
#define RD(on) {ON_##on, false}
#define WR(on) {ON_##on, true}
const IrOpInfo ir_ops[IR_NKINDS + 1] = {
#define IR_OP(kind, name, chan, method, dst, src, src2, sync, order, pair, packet, helper, msc, msc_alt) \
    [IR_##kind] = {IR_##kind, name, CH_##chan, method, dst, src, src2, SYNC_##sync, ORDER_##order, IR_##pair, \
                   packet, helper, msc, msc_alt},
#include "ops.def"
#undef IR_OP
    [IR_NKINDS] = {(IrKind)IR_NKINDS, "?", CH_LOCAL, NULL, NO, NO, NO, SYNC_NOP, ORDER_NONE, (IrKind)IR_NKINDS, false,
                   NULL, NULL, NULL},
};
#undef NO
#undef RD
#undef WR

const IrOpInfo *ir_op_by_method(IrChan chan, const char *method)
{
    for (int k = 0; k < IR_NKINDS; k++)
        if (ir_ops[k].chan == chan && ir_ops[k].method && !strcmp(ir_ops[k].method, method))
            return &ir_ops[k];
    return NULL;
}

const char *ir_msc_name(const IrOp *op)
{
    const IrOpInfo *in = ir_op_info(op->kind);
    bool peer_source = in->src2.on == ON_SELF_OR_PEER && op->peer >= 0;
    return (op->relaxed && ir_takes_order(op->kind)) || peer_source ? in->msc_alt : in->msc;
}

const IrOpInfo *ir_op_by_msc(const char *name, bool *alt)
{
    for (int k = 0; k < IR_NKINDS; k++) {
        *alt = ir_ops[k].msc_alt && !strcmp(ir_ops[k].msc_alt, name);
        if (*alt || (ir_ops[k].msc && !strcmp(ir_ops[k].msc, name)))
            return &ir_ops[k];
    }
    return NULL;
}

static int add_method(const char **out, int n, const char *m)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(out[i], m))
            return n;
    out[n] = m;
    return n + 1;
}

int ir_method_names(const IrChan *chans, int nchans, const char **out)
{
    int n = 0;
    for (int pass = 0; pass < 2; pass++)   /* data methods first, then synchronisation */
        for (int c = 0; c < nchans; c++)
            for (int k = 0; k < IR_NKINDS; k++)
                if (ir_ops[k].chan == chans[c] && ir_ops[k].method && ir_is_data((IrKind)k) == (pass == 0))
                    n = add_method(out, n, ir_ops[k].method);
    return n;
}

/* SELF_OR_PEER is the peer's memory when the op names a peer (a plan's read-reduce). */
static IrOn operand_on(IrOn on, const IrOp *op)
{
    return on == ON_SELF_OR_PEER ? (op->peer >= 0 ? ON_PEER : ON_SELF) : on;
}

IrEffects ir_effects(const IrOp *op)
{
    const IrOpInfo *in = ir_op_info(op->kind);
    const IrUse use[3] = {in->dst, in->src, in->src2};
    const IrRange range[3] = {op->dst, op->src, op->src2};
    IrEffects fx = {.n = 0};
    for (int i = 0; i < 3; i++) {
        if (use[i].on == ON_NONE || range[i].buf < 0)
            continue;
        fx.acc[fx.n++] = (IrAccess){range[i], operand_on(use[i].on, op), use[i].write};
    }
    return fx;
}

const IrOp *ir_port_proxy_op(const IrProgram *p)
{
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++)
            if (p->ranks[r].ops[i].thread < 0)
                return &p->ranks[r].ops[i];
    return NULL;
}

void ir_port_shape(const IrProgram *p, int *npairs, int *nproxies)
{
    *npairs = *nproxies = 0;
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const IrOp *op = &p->ranks[r].ops[i];
            if (!ir_is_chan_sync(op->kind) || op->chan < IR_PORT_REQ_CHAN)
                continue;
            if (op->chan >= IR_PORT_CHAN && op->chan - IR_PORT_CHAN >= *npairs)
                *npairs = op->chan - IR_PORT_CHAN + 1;
            else if (op->chan < IR_PORT_CHAN && (op->chan - IR_PORT_REQ_CHAN) / 2 >= *nproxies)
                *nproxies = (op->chan - IR_PORT_REQ_CHAN) / 2 + 1;
        }
}

int ir_block_units(const IrProgram *p, int rank)
{
    const IrSeq *s = &p->ranks[rank];
    for (int i = 0; i < s->nops; i++)
        if (s->ops[i].thread < 0)
            return s->ops[i].tb;
    return ir_ntbs(p, rank);
}

int ir_plan_channels(const IrProgram *p)
{
    int chans = 1;
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const IrOp *op = &p->ranks[r].ops[i];
            if (ir_is_chan_sync(op->kind) && op->chan >= chans && op->chan < IR_PORT_REQ_CHAN)
                chans = op->chan + 1;   /* a port channel's requests and semaphores have words of their own */
        }
    return chans;
}

const char *ir_coll_name(Collective c)
{
    const CollInfo *ci = coll_info(c);
    return ci ? ci->name : "?";
}

bool ir_in_place(const IrProgram *p, int *aliased, int *holder)
{
    const CollInfo *ci = p ? coll_info(p->coll) : NULL;
    if (!p || !p->in_place || !ci || ci->aliased < 0)
        return false;
    if (aliased)
        *aliased = ci->aliased;
    if (holder)
        *holder = ci->holder;
    return true;
}

int ir_in_place_first(const IrProgram *p, int rank)
{
    return (int)coll_info(p->coll)->first(rank, p->chunks);
}

void ir_append(IrProgram *p, int rank, IrOp op)
{
    IrSeq *s = &p->ranks[rank];
    if (s->nops == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        s->ops = arena_grow(p->arena, s->ops, (size_t)s->nops, (size_t)cap, sizeof(IrOp));
        s->cap = cap;
    }
    s->ops[s->nops++] = op;
}

const char *ir_chunks_text(char *buf, int first, int count)
{
    if (count == 1)
        snprintf(buf, IR_CHUNKS_TEXT, "[%d]", first);
    else
        snprintf(buf, IR_CHUNKS_TEXT, "[%d..%d]", first, first + count);
    return buf;
}

static void dump_range(const IrProgram *p, IrRange r, FILE *out)
{
    char t[IR_CHUNKS_TEXT];
    esc_puts(out, p->bufs[r.buf].name);
    fputs(ir_chunks_text(t, r.first, r.count), out);
}

/* Names may come from a plan's strings: they go through escape.c, as diagnostics do. */
void ir_dump(const IrProgram *p, FILE *out)
{
    fputs("program ", out);
    esc_puts(out, p->name);
    fprintf(out, " implements %s, nranks=%d, chunks=%d", p->coll_name, p->nranks, p->chunks);
    if (coll_has_root(coll_info(p->coll)))
        fprintf(out, ", root=%d", p->root);
    fputc('\n', out);
    for (int b = 0; b < p->nbufs; b++) {
        fputs("buffer ", out);
        esc_puts(out, p->bufs[b].name);
        fprintf(out, "[%d]%s\n", p->bufs[b].nchunks, p->bufs[b].internal ? " (the runtime's)" : "");
    }
    int aliased, holder;
    if (ir_in_place(p, &aliased, &holder)) {
        fputs("in place: ", out);
        esc_puts(out, p->bufs[aliased].name);
        fputs(" is ", out);
        esc_puts(out, p->bufs[holder].name);
        const CollInfo *ci = coll_info(p->coll);
        bool per_rank = coll_alias_per_rank(ci, p->chunks);
        const char *whole = ci->in(2, 1) == 1 ? "C" : "nranks*C"; /* broadcast's C, allreduce's n*C */
        fprintf(out, "[%s .. %s] on rank r; operations name ", !per_rank ? "0" : p->chunks == 1 ? "r" : "r*C",
                !per_rank ? whole : p->chunks == 1 ? "r+1" : "(r+1)*C");
        esc_puts(out, p->bufs[holder].name);
        fputs(" only\n", out);
    }
    for (int r = 0; r < p->nranks; r++) {
        const IrSeq *s = &p->ranks[r];
        for (int i = 0; i < s->nops; i++) {
            const IrOp *op = &s->ops[i];
            fprintf(out, "r%d", r);
            if (p->ntbs)
                fprintf(out, " tb%d", op->tb);
            const IrOpInfo *in = ir_op_info(op->kind);
            fprintf(out, " %d:%d %s", op->loc.line, op->loc.col, in->name);
            if (ir_is_semaphore(op->kind))
                fprintf(out, " sem=%d", op->chan);
            else if (op->peer >= 0)
                fprintf(out, " peer=%d", op->peer);
            if (op->chan > 0 && (ir_is_signal(op->kind) || ir_is_wait(op->kind)) && !in->packet && !ir_is_semaphore(op->kind))
                fprintf(out, " chan=%d", op->chan);
            if (in->sync == SYNC_BARRIER)
                fprintf(out, " id=%d blocks=%d", op->barrier, op->blocks);
            if (in->packet == 1)
                fprintf(out, " slot=%d", op->slot);
            if (in->packet == 2)
                fprintf(out, " match=%d", op->match);
            if (ir_takes_order(op->kind))
                fputs(op->relaxed ? " relaxed" : in->order == ORDER_RELEASE ? " release" : " acquire", out);
            if (op->dst.buf >= 0) {
                fputc(' ', out);
                dump_range(p, op->dst, out);
            }
            if (op->src.buf >= 0) {
                fputs(" <- ", out);
                dump_range(p, op->src, out);
            }
            if (op->src2.buf >= 0) {
                fputs(" + ", out);
                dump_range(p, op->src2, out);
                if (operand_on(in->src2.on, op) == ON_PEER) /* a plan's read-reduce */
                    fprintf(out, "@%d", op->peer);
            }
            if (op->sync_before)
                fputs(" [sync]", out);
            if (op->ctx) {
                fputs(" (", out);
                esc_puts(out, op->ctx);
                fputc(')', out);
            }
            fputc('\n', out);
        }
    }
}
