/*
 * ir.c - small helpers over the per-rank operation sequences: names, appending, and a
 * textual dump (--dump-ir) that tests use to pin down what evaluation produced.
 */
#include "ir.h"

#include "escape.h"

#include <stdio.h>

const char *ir_kind_name(IrKind k)
{
    switch (k) {
    case IR_COPY: return "copy";
    case IR_REDUCE: return "reduce";
    case IR_PUT: return "put";
    case IR_GET: return "get";
    case IR_SIGNAL: return "signal";
    case IR_WAIT: return "wait";
    case IR_SW_STORE: return "switch.store";
    case IR_SW_REDUCE: return "switch.reduce";
    case IR_SW_REDUCE_STORE: return "switch.reduce_store";
    case IR_SW_SIGNAL: return "switch.signal";
    case IR_SW_WAIT: return "switch.wait";
    case IR_NOP: return "nop";
    case IR_BARRIER: return "barrier";
    case IR_PKT_SEND: return "send_packets";
    case IR_PKT_RECV: return "recv_packets";
    }
    return "?";
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

bool ir_is_data(IrKind k)
{
    return k == IR_COPY || k == IR_REDUCE || k == IR_PUT || k == IR_GET || k == IR_SW_STORE ||
           k == IR_SW_REDUCE || k == IR_SW_REDUCE_STORE || k == IR_PKT_SEND || k == IR_PKT_RECV;
}

bool ir_is_switch(IrKind k)
{
    return k >= IR_SW_STORE && k <= IR_SW_WAIT;
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

static void dump_range(const IrProgram *p, IrRange r, FILE *out)
{
    esc_puts(out, p->bufs[r.buf].name);
    if (r.count == 1)
        fprintf(out, "[%d]", r.first);
    else
        fprintf(out, "[%d..%d]", r.first, r.first + r.count);
}

/* Names may come from a plan's strings: they go through escape.c, as diagnostics do. */
void ir_dump(const IrProgram *p, FILE *out)
{
    fputs("program ", out);
    esc_puts(out, p->name);
    fprintf(out, " implements %s, nranks=%d, chunks=%d\n", p->coll_name, p->nranks, p->chunks);
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
        bool per_rank = coll_alias_per_rank(coll_info(p->coll), p->chunks);
        fprintf(out, "[%s .. %s] on rank r; operations name ", !per_rank ? "0" : p->chunks == 1 ? "r" : "r*C",
                !per_rank ? "nranks*C" : p->chunks == 1 ? "r+1" : "(r+1)*C");
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
            fprintf(out, " %d:%d %s", op->loc.line, op->loc.col, ir_kind_name(op->kind));
            if (op->peer >= 0)
                fprintf(out, " peer=%d", op->peer);
            if (op->chan > 0 && (op->kind == IR_SIGNAL || op->kind == IR_WAIT))
                fprintf(out, " chan=%d", op->chan);
            if (op->kind == IR_BARRIER)
                fprintf(out, " id=%d blocks=%d", op->chan, op->arg);
            if (ir_is_packet(op->kind))
                fprintf(out, " slot=%d", op->arg);
            if (op->kind == IR_SIGNAL || op->kind == IR_SW_SIGNAL)
                fputs(op->relaxed ? " relaxed" : " release", out);
            if (op->kind == IR_WAIT || op->kind == IR_SW_WAIT)
                fputs(op->relaxed ? " relaxed" : " acquire", out);
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
                if (op->kind == IR_REDUCE && op->peer >= 0) /* a plan's read-reduce */
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
