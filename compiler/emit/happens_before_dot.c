/*
 * happens_before_dot.c - the happens-before graph as Graphviz (--emit-dot).
 *
 * One cluster per rank, drawn as a column: its start, its ops in program order, its end.
 * Peer signal -> wait edges join the columns (dashed when relaxed: they order execution but
 * publish nothing); each switch round is one diamond that every rank's k-th switch.signal
 * points to and every rank's k-th switch.wait comes from. What the checker found is drawn
 * in red: races between their two sides (start and end events included), deadlock cycles
 * from each waiting op to the op the next rank is stuck at, signals or waits left
 * unmatched, and switch arrivals that may come ahead of their round.
 */
#include "check.h"

#include <string.h>

#include "check_text.h"
#include "escape.h"
#include "happens_before.h"

/* A label: each character in escape.c's printable form (names may come from a plan's
 * strings), then quoted for dot; a line break stays one inside the label. */
static void dot_string(FILE *out, const char *s)
{
    char form[ESC_MAX + 1];
    int width;
    size_t len = strlen(s);
    fputc('"', out);
    for (size_t i = 0; i < len;) {
        if (s[i] == '\n') {
            fputs("\\n", out);
            i++;
            continue;
        }
        i += esc_char(s + i, len - i, false, form, &width);
        for (const char *c = form; *c; c++) {
            if (*c == '"' || *c == '\\')
                fputc('\\', out);
            fputc(*c, out);
        }
    }
    fputc('"', out);
}

static const char *dot_range(const IrProgram *p, IrRange r)
{
    return check_chunks(p, r.buf, r.first, r.count);
}

static const char *dot_label(const IrProgram *p, const IrOp *op)
{
    Arena *a = p->arena;
    const char *s = arena_printf(a, "%d:%d %s", op->loc.line, op->loc.col, ir_kind_name(op->kind));
    if (ir_is_semaphore(op->kind))
        s = arena_printf(a, "%s sem=%d", s, op->chan);
    else if (op->peer >= 0)
        s = arena_printf(a, "%s peer=%d", s, op->peer);
    if (ir_takes_order(op->kind))
        s = arena_printf(a, "%s%s", s, op->relaxed ? " relaxed" : "");
    if (op->dst.buf >= 0)
        s = arena_printf(a, "%s %s", s, dot_range(p, op->dst));
    if (op->src.buf >= 0)
        s = arena_printf(a, "%s <- %s", s, dot_range(p, op->src));
    if (op->src2.buf >= 0)
        s = arena_printf(a, "%s + %s", s, dot_range(p, op->src2));
    if (op->ctx)
        s = arena_printf(a, "%s\n%s", s, op->ctx);
    return s;
}

/* Node names: r3_s (start), r3_7 (op 7), r3_e (end). */
static void dot_node(FILE *out, const IrProgram *p, HbEv e)
{
    if (e.idx < 0)
        fprintf(out, "r%d_s", e.rank);
    else if (e.idx >= p->ranks[e.rank].nops)
        fprintf(out, "r%d_e", e.rank);
    else
        fprintf(out, "r%d_%d", e.rank, e.idx);
}

static bool dot_unmatched(const HbFacts *f, const HbRun *run, int r, int i)
{
    const IrOp *op = &f->p->ranks[r].ops[i];
    if (ir_is_signal(op->kind) || ir_is_wait(op->kind)) /* packets too */
        if (f->partner[r][i] < 0)
            return true;
    return run && run->pc[hb_unit(f, r, i)] == i; /* the wait this unit is stuck at */
}

static void dot_rank(FILE *out, const IrProgram *p, const HbFacts *f, const HbRun *run, int r)
{
    const IrSeq *s = &p->ranks[r];
    fprintf(out, "  subgraph cluster_r%d {\n    label=\"rank %d\";\n", r, r);
    fprintf(out, "    r%d_s [label=\"start\", shape=oval];\n", r);
    for (int i = 0; i < s->nops; i++) {
        fprintf(out, "    r%d_%d [label=", r, i);
        dot_string(out, dot_label(p, &s->ops[i]));
        fputs(dot_unmatched(f, run, r, i) ? ", color=red];\n" : "];\n", out);
    }
    fprintf(out, "    r%d_e [label=\"end\", shape=oval];\n", r);
    for (int u = f->rank_unit[r]; u < f->rank_unit[r + 1]; u++) { /* each unit's program order */
        fputs("    ", out);
        dot_node(out, p, (HbEv){r, -1});
        for (int i = f->unit_first[u]; i < f->unit_end[u]; i++) {
            fputs(" -> ", out);
            dot_node(out, p, (HbEv){r, i});
        }
        fputs(" -> ", out);
        dot_node(out, p, (HbEv){r, s->nops});
        fputs(" [weight=100];\n", out);
    }
    fputs("  }\n", out);
}

static void dot_sync_edges(FILE *out, const IrProgram *p, const HbFacts *f)
{
    for (int k = 0; k < f->nrounds; k++)
        fprintf(out, "  sw%d [label=\"switch round %d\", shape=diamond];\n", k, k + 1);
    for (int r = 0; r < p->nranks; r++) {
        const IrSeq *s = &p->ranks[r];
        for (int i = 0; i < s->nops; i++) {
            const IrOp *op = &s->ops[i];
            int w = f->partner[r][i];
            if (ir_is_signal(op->kind) && w >= 0) /* a send_packets: always dashed (relaxed) */
                fprintf(out, "  r%d_%d -> r%d_%d%s;\n", r, i, op->peer, w,
                        hb_strong(op, &p->ranks[op->peer].ops[w]) ? "" : " [style=dashed]");
            else if (ir_is_switch_signal(op->kind))
                fprintf(out, "  r%d_%d -> sw%d%s;\n", r, i, f->ordinal[r][i], op->relaxed ? " [style=dashed]" : "");
            else if (ir_is_switch_wait(op->kind) && f->ordinal[r][i] < f->nrounds)
                fprintf(out, "  sw%d -> r%d_%d%s;\n", f->ordinal[r][i], r, i, op->relaxed ? " [style=dashed]" : "");
        }
    }
}

static void dot_findings(FILE *out, const IrProgram *p, const CheckResult *r)
{
    static const char *const kinds[] = {"write/write race", "write/read race", "read/write race",
                                        "before start", "write not visible at end", "read not done at end"};
    for (int i = 0; i < r->nraces; i++) {
        const CheckRace *f = &r->races[i];
        fputs("  ", out);
        dot_node(out, p, f->a);
        fputs(" -> ", out);
        dot_node(out, p, f->b);
        fprintf(out, " [color=red, fontcolor=red, penwidth=2, constraint=false, label=\"%s\"];\n", kinds[f->kind]);
    }
    for (int i = 0; i < r->nearly; i++) {
        fputs("  ", out);
        dot_node(out, p, r->early[i]);
        fprintf(out, " -> sw%d [color=red, fontcolor=red, penwidth=2, constraint=false, label=\"ahead of its round\"];\n",
                r->hb.ordinal[r->early[i].rank][r->early[i].idx]);
    }
    for (int c = 0; c < r->ncycles; c++) {
        const CheckCycle *cy = &r->cycles[c];
        for (int j = 0; j < cy->len; j++) {
            fputs("  ", out);
            dot_node(out, p, cy->waits[j]);
            fputs(" -> ", out);
            dot_node(out, p, cy->waits[(j + 1) % cy->len]);
            fputs(" [color=red, fontcolor=red, penwidth=2, constraint=false, label=\"waits for\"];\n", out);
        }
    }
}

void check_emit_dot(const IrProgram *p, const struct CheckResult *r, FILE *out)
{
    HbFacts own;
    const HbFacts *f = r ? &r->hb : &own;
    if (!r)
        hb_match(p, &own);
    fputs("digraph cdsl {\n", out);
    fputs("  graph [newrank=true, rankdir=TB, fontname=\"Helvetica\", label=", out);
    dot_string(out, arena_printf(p->arena, "%s implements %s, nranks=%d", p->name, p->coll_name, p->nranks));
    fputs("];\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n", out);
    for (int q = 0; q < p->nranks; q++)
        dot_rank(out, p, f, r ? &r->run : NULL, q);
    dot_sync_edges(out, p, f);
    if (r)
        dot_findings(out, p, r);
    fputs("}\n", out);
}
