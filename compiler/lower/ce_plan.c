/*
 * ce_plan.c - lowering a checked program to copy-engine stream operations (see ce_plan.h).
 *
 * Three passes over the IR. First every signal is counted per (sender, receiver) and every
 * switch arrival per rank, which gives each word's per-run growth. Then each rank's list is
 * lowered in program order: a data operation becomes copies (a switch.store one per rank,
 * starting with the rank itself and then the peers from rank + 1 on, as NCCL rotates them),
 * gathered into batches of copies that do not touch what another copy of the batch writes; a
 * batch of several copies is fanned out over lanes between a FORK and a JOIN, and every
 * signal or wait ends the batch before it. Last, one enqueue order for all ranks is found by
 * running the steps as the hardware would, a wait only once the write it needs is enqueued:
 * the checker proved the program free of deadlocks, so this always finishes.
 */
#include "ce_plan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cdsl.h"
#include "escape.h"

/* ---- Building the step lists ---------------------------------------------------------------- */

typedef struct Copy {
    CePlace dst, src;
    int count, op;
} Copy;

typedef struct Lowering {
    const IrProgram *ir;
    CePlan *plan;
    int max_lanes;
    int n;
    unsigned long long *sigs;   /* [from * n + to]: signals per run */
    unsigned long long *arrivals;   /* [r]: switch arrivals per run */
    int *sig_of;                /* [r * n + p]: signals from r to p lowered so far */
    int *wait_of;               /* [p * n + r]: waits of p for r lowered so far */
    int *arrived, *waited;      /* [r]: switch arrivals / waits lowered so far */
    int *sig_ops;               /* [r]: signal operations lowered so far */
    int **peer_sig_op;          /* [r * n + p]: the signal number of r's k-th signal to p */
    int **sw_sig_op;            /* [r]: the signal number of r's k-th switch arrival */
    Copy batch[CE_MAX_BATCH];
    int nbatch;
    bool oom;
} Lowering;

static CeStep *step_add(Lowering *L, int rank, CeStepKind kind, int op)
{
    CeRankPlan *rp = &L->plan->ranks[rank];
    if (rp->nsteps == rp->cap) {
        int cap = rp->cap ? rp->cap * 2 : 32;
        CeStep *s = realloc(rp->steps, (size_t)cap * sizeof *s);
        if (!s) {
            L->oom = true;
            return NULL;
        }
        rp->steps = s;
        rp->cap = cap;
    }
    CeStep *s = &rp->steps[rp->nsteps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->op = op;
    s->sig = s->from_rank = s->from_sig = -1;
    return s;
}

static bool overlaps(CePlace a, int na, CePlace b, int nb)
{
    return a.rank == b.rank && a.buf == b.buf && a.first < b.first + nb && b.first < a.first + na;
}

/* A copy may run beside c only when neither writes what the other reads or writes. */
static bool conflicts(const Copy *a, const Copy *b)
{
    return overlaps(a->dst, a->count, b->dst, b->count) || overlaps(a->dst, a->count, b->src, b->count) ||
           overlaps(a->src, a->count, b->dst, b->count);
}

/* The batch so far as steps: one copy on lane 0, or a FORK, the copies round robin over the
 * lanes, and a JOIN. */
static void batch_flush(Lowering *L, int rank)
{
    int n = L->nbatch;
    L->nbatch = 0;
    if (n == 0)
        return;
    int lanes = n < L->max_lanes ? n : L->max_lanes;
    CeRankPlan *rp = &L->plan->ranks[rank];
    if (lanes > rp->nlanes)
        rp->nlanes = lanes;
    CeStep *s;
    if (lanes > 1 && (s = step_add(L, rank, CE_FORK, L->batch[0].op)))
        s->lane = lanes - 1;
    for (int i = 0; i < n; i++) {
        const Copy *c = &L->batch[i];
        if (!(s = step_add(L, rank, CE_COPY, c->op)))
            return;
        s->lane = i % lanes;
        s->dst = c->dst;
        s->src = c->src;
        s->count = c->count;
    }
    if (lanes > 1 && (s = step_add(L, rank, CE_JOIN, L->batch[n - 1].op)))
        s->lane = lanes - 1;
}

static void batch_add(Lowering *L, int rank, Copy c)
{
    if (c.dst.rank == c.src.rank && c.dst.buf == c.src.buf && c.dst.first == c.src.first)
        return;     /* in place (rule 3's one allowed overlap): nothing moves */
    bool clash = L->nbatch == CE_MAX_BATCH;
    for (int i = 0; i < L->nbatch && !clash; i++)
        clash = conflicts(&c, &L->batch[i]);
    if (clash)
        batch_flush(L, rank);
    L->batch[L->nbatch++] = c;
}

static CePlace place(int rank, IrRange r)
{
    return (CePlace){rank, r.buf, r.first};
}

/* A copy from the source's owner to the destination's (the op table says whose memory each
 * is); a destination on every rank is one copy per rank. lowerable() let only copies through. */
static void lower_data(Lowering *L, int r, int i, const IrOp *op)
{
    const IrOpInfo *in = ir_op_info(op->kind);
    int n = L->n, count = op->dst.count;
    CePlace src = place(ir_owner(in->src.on, op, r), op->src);
    if (in->dst.on != ON_ALL) {
        batch_add(L, r, (Copy){place(ir_owner(in->dst.on, op, r), op->dst), src, count, i});
        return;
    }
    for (int k = 0; k < n; k++)
        batch_add(L, r, (Copy){place((r + k) % n, op->dst), src, count, i});
}

/* A write (or wait) of `value` on word `word` of rank `word_rank`, for IR operation i. */
static CeStep *flag_step(Lowering *L, int r, CeStepKind kind, int i, int word_rank, int word, int value,
                         unsigned long long per_run)
{
    CeStep *s = step_add(L, r, kind, i);
    if (s) {
        s->word_rank = word_rank;
        s->word = word;
        s->value = (unsigned long long)value;
        s->per_run = per_run;
        s->ordered = !L->ir->ranks[r].ops[i].relaxed;
    }
    return s;
}

static void lower_signal(Lowering *L, int r, int i, const IrOp *op)
{
    int n = L->n, p = op->peer, k = ++L->sig_of[r * n + p], sig = L->sig_ops[r]++;
    CeStep *s = flag_step(L, r, CE_WRITE, i, p, CE_WORD_PEER(r), k, L->sigs[r * n + p]);
    if (s)
        s->sig = sig;
}

static void lower_wait(Lowering *L, int r, int i, const IrOp *op)
{
    int n = L->n, p = op->peer, k = ++L->wait_of[r * n + p];
    CeStep *s = flag_step(L, r, CE_WAIT, i, r, CE_WORD_PEER(p), k, L->sigs[p * n + r]);
    if (s) {
        s->from_rank = p;
        s->from_sig = L->peer_sig_op[p * n + r][k - 1];
    }
}

/* One arrival: rank r's word on every rank, starting with r's own. */
static void lower_sw_signal(Lowering *L, int r, int i)
{
    int n = L->n, a = ++L->arrived[r], sig = L->sig_ops[r]++;
    for (int k = 0; k < n; k++) {
        CeStep *s = flag_step(L, r, CE_WRITE, i, (r + k) % n, CE_WORD_SWITCH(n, r), a, L->arrivals[r]);
        if (!s)
            return;
        s->sig = k == 0 ? sig : -1;
    }
}

/* The k-th switch wait: every rank's k-th arrival. */
static void lower_sw_wait(Lowering *L, int r, int i)
{
    int n = L->n, k = ++L->waited[r];
    for (int q = 0; q < n; q++) {
        CeStep *s = flag_step(L, r, CE_WAIT, i, r, CE_WORD_SWITCH(n, q), k, L->arrivals[q]);
        if (!s)
            return;
        s->from_rank = q;
        s->from_sig = L->sw_sig_op[q][k - 1];
    }
}

static void lower_rank(Lowering *L, int r)
{
    const IrSeq *seq = &L->ir->ranks[r];
    L->plan->ranks[r].nlanes = 1;
    for (int i = 0; i < seq->nops && !L->oom; i++) {
        const IrOp *op = &seq->ops[i];
        if (ir_is_data(op->kind)) {
            lower_data(L, r, i, op);
            continue;
        }
        batch_flush(L, r);
        if (ir_is_signal(op->kind))         /* a peer's: packets never get here (lowerable) */
            lower_signal(L, r, i, op);
        else if (ir_is_wait(op->kind))
            lower_wait(L, r, i, op);
        else if (ir_is_switch_signal(op->kind))
            lower_sw_signal(L, r, i);
        else if (ir_is_switch_wait(op->kind))
            lower_sw_wait(L, r, i);
    }
    batch_flush(L, r);
    L->plan->ranks[r].nsigs = L->sig_ops[r];
}

/* ---- What can be lowered --------------------------------------------------------------------- */

static void where(const IrOp *op, char *out, size_t len)
{
    char path[256] = "";
    if (op->loc.src)
        cdsl_escape(op->loc.src->path, path, sizeof path);
    snprintf(out, len, "%s%s%d:%d", path, *path ? ":" : "line ", op->loc.line, op->loc.col);
}

/* Computes what it stores: a second source, or the sum over every rank's copy (the switch). */
static bool is_reduction(const IrOpInfo *in)
{
    return in->src2.on != ON_NONE || in->src.on == ON_ALL;
}

/* What the copy engine can do: copies (a put, get or switch store is one or more) and the
 * signals and waits between them, in one program order per rank. Anything else is refused by
 * name, not skipped: reductions and packets need the SMs, and a plan's thread blocks are units
 * that one stream per rank would put in an order the plan never promised. */
static bool lowerable_kind(IrKind k)
{
    const IrOpInfo *in = ir_op_info(k);
    if (in->packet)
        return false;
    if (in->sync == SYNC_SIGNAL || in->sync == SYNC_WAIT)
        return true;
    return in->sync == SYNC_DATA && !is_reduction(in);
}

static bool lowerable(const IrProgram *ir, char *why, size_t len)
{
    if (ir->ntbs) {
        snprintf(why, len, "%s has thread blocks (an MSCCL++ plan): each is its own program order", ir->name);
        return false;
    }
    for (int r = 0; r < ir->nranks; r++)
        for (int i = 0; i < ir->ranks[r].nops; i++) {
            const IrOp *op = &ir->ranks[r].ops[i];
            if (lowerable_kind(op->kind))
                continue;
            char at[300];
            where(op, at, sizeof at);
            bool reduction = is_reduction(ir_op_info(op->kind));
            snprintf(why, len, "rank %d's %s at %s %s", r, ir_kind_name(op->kind), at,
                     reduction             ? "is a reduction: reductions need the SMs"
                     : ir_is_packet(op->kind) ? "is a packet operation: packets need the SMs"
                                              : "is not a copy, signal or wait");
            return false;
        }
    return true;
}

/* Signals per (sender, receiver) and switch arrivals per rank, for one run; false when they do
 * not balance (waits that no signal answers: the checker refuses those). */
static bool count_signals(Lowering *L)
{
    int n = L->n;
    unsigned long long *waits = calloc((size_t)n * (size_t)n, sizeof *waits);
    unsigned long long *sw_waits = calloc((size_t)n, sizeof *sw_waits);
    bool ok = waits && sw_waits;
    for (int r = 0; ok && r < n; r++)
        for (int i = 0; i < L->ir->ranks[r].nops; i++) {
            const IrOp *op = &L->ir->ranks[r].ops[i];
            if (ir_is_signal(op->kind))
                L->sigs[r * n + op->peer]++;
            else if (ir_is_wait(op->kind))
                waits[op->peer * n + r]++;
            else if (ir_is_switch_signal(op->kind))
                L->arrivals[r]++;
            else if (ir_is_switch_wait(op->kind))
                sw_waits[r]++;
        }
    if (!ok)
        L->oom = true;
    for (size_t k = 0; ok && k < (size_t)n * (size_t)n; k++)
        ok = waits[k] == L->sigs[k];
    for (int r = 0; ok && r < n; r++)
        ok = sw_waits[r] == L->arrivals[0] && L->arrivals[r] == L->arrivals[0];
    free(waits);
    free(sw_waits);
    return ok;
}

/* The number of every signal operation among its rank's signals (what a wait of events mode
 * names), per (sender, receiver) and per rank's switch arrivals: known before any rank is
 * lowered, since a rank's waits name signals of ranks lowered after it. */
static bool number_signals(Lowering *L)
{
    int n = L->n;
    for (int r = 0; r < n; r++) {
        for (int p = 0; p < n; p++) {
            unsigned long long k = L->sigs[r * n + p];
            if (k && !(L->peer_sig_op[r * n + p] = calloc(k, sizeof(int))))
                return false;
        }
        if (L->arrivals[r] && !(L->sw_sig_op[r] = calloc(L->arrivals[r], sizeof(int))))
            return false;
        int sig = 0, arrived = 0, *to = L->sig_of + (size_t)r * (size_t)n;
        for (int i = 0; i < L->ir->ranks[r].nops; i++) {
            const IrOp *op = &L->ir->ranks[r].ops[i];
            if (ir_is_signal(op->kind))
                L->peer_sig_op[r * n + op->peer][to[op->peer]++] = sig++;
            else if (ir_is_switch_signal(op->kind))
                L->sw_sig_op[r][arrived++] = sig++;
        }
        memset(to, 0, (size_t)n * sizeof *to);      /* lowering counts again */
    }
    return true;
}

static void lowering_free(Lowering *L)
{
    size_t n = (size_t)L->n;
    if (L->peer_sig_op)
        for (size_t k = 0; k < n * n; k++)
            free(L->peer_sig_op[k]);
    if (L->sw_sig_op)
        for (size_t r = 0; r < n; r++)
            free(L->sw_sig_op[r]);
    free(L->peer_sig_op);
    free(L->sw_sig_op);
    free(L->sigs);
    free(L->arrivals);
    free(L->sig_of);
    free(L->wait_of);
    free(L->arrived);
    free(L->waited);
    free(L->sig_ops);
}

static bool lowering_init(Lowering *L, const IrProgram *ir, CePlan *plan, int max_lanes)
{
    size_t n = (size_t)ir->nranks;
    memset(L, 0, sizeof *L);
    L->ir = ir;
    L->plan = plan;
    L->n = ir->nranks;
    L->max_lanes = max_lanes < 1 ? 1 : max_lanes > CE_MAX_LANES ? CE_MAX_LANES : max_lanes;
    L->sigs = calloc(n * n, sizeof *L->sigs);
    L->arrivals = calloc(n, sizeof *L->arrivals);
    L->sig_of = calloc(n * n, sizeof *L->sig_of);
    L->wait_of = calloc(n * n, sizeof *L->wait_of);
    L->arrived = calloc(n, sizeof *L->arrived);
    L->waited = calloc(n, sizeof *L->waited);
    L->sig_ops = calloc(n, sizeof *L->sig_ops);
    L->peer_sig_op = calloc(n * n, sizeof *L->peer_sig_op);
    L->sw_sig_op = calloc(n, sizeof *L->sw_sig_op);
    return L->sigs && L->arrivals && L->sig_of && L->wait_of && L->arrived && L->waited && L->sig_ops &&
           L->peer_sig_op && L->sw_sig_op;
}

/* ---- The enqueue order ------------------------------------------------------------------------ */

static bool order_add(CePlan *p, int rank, int begin, int end)
{
    if (p->norder == p->order_cap) {
        int cap = p->order_cap ? p->order_cap * 2 : 64;
        CeSegment *o = realloc(p->order, (size_t)cap * sizeof *o);
        if (!o)
            return false;
        p->order = o;
        p->order_cap = cap;
    }
    p->order[p->norder++] = (CeSegment){rank, begin, end};
    return true;
}

/* Rank r's steps from pos[r] on, up to a wait whose write is not enqueued yet; written[] holds
 * what every write enqueued so far stored. */
static int advance(const CePlan *p, int r, int pos, unsigned long long *written)
{
    const CeRankPlan *rp = &p->ranks[r];
    size_t words = (size_t)CE_WORDS(p->nranks);
    for (; pos < rp->nsteps; pos++) {
        const CeStep *s = &rp->steps[pos];
        if (s->kind == CE_WAIT && written[(size_t)r * words + (size_t)s->word] < s->value)
            break;
        if (s->kind == CE_WRITE)
            written[(size_t)s->word_rank * words + (size_t)s->word] = s->value;
    }
    return pos;
}

/* Round robin over the ranks, each as far as it can go. */
static int plan_order(CePlan *p)
{
    int n = p->nranks;
    int *pos = calloc((size_t)n, sizeof *pos);
    unsigned long long *written = calloc((size_t)n * (size_t)CE_WORDS(n), sizeof *written);
    int st = pos && written ? CDSL_OK : CDSL_ERR_SYSTEM;
    for (bool moved = true; !st && moved;) {
        moved = false;
        for (int r = 0; !st && r < n; r++) {
            int end = advance(p, r, pos[r], written);
            if (end == pos[r])
                continue;
            if (!order_add(p, r, pos[r], end))
                st = CDSL_ERR_SYSTEM;
            pos[r] = end;
            moved = true;
        }
    }
    for (int r = 0; !st && r < n; r++)
        if (pos[r] != p->ranks[r].nsteps)
            st = CDSL_ERR_PROGRAM;      /* a wait no write answers: not a checked program */
    free(pos);
    free(written);
    return st;
}

/* ---- Entry points ------------------------------------------------------------------------------ */

void ce_plan_free(CePlan *p)
{
    if (!p)
        return;
    if (p->ranks)
        for (int r = 0; r < p->nranks; r++)
            free(p->ranks[r].steps);
    free(p->ranks);
    free(p->order);
    free(p);
}

static int plan_lower(Lowering *L, char *why, size_t whylen)
{
    if (!count_signals(L)) {
        if (!L->oom)
            snprintf(why, whylen, "its signals and waits do not balance (it did not pass the checker)");
        return L->oom ? CDSL_ERR_SYSTEM : CDSL_ERR_PROGRAM;
    }
    if (!number_signals(L))
        return CDSL_ERR_SYSTEM;
    for (int r = 0; r < L->n && !L->oom; r++)
        lower_rank(L, r);
    if (L->oom)
        return CDSL_ERR_SYSTEM;
    int st = plan_order(L->plan);
    if (st == CDSL_ERR_PROGRAM)
        snprintf(why, whylen, "some wait has no write to wait for (it did not pass the checker)");
    return st;
}

int ce_plan_build(const IrProgram *ir, int max_lanes, CePlan **out, char *why, size_t whylen)
{
    *out = NULL;
    if (whylen)
        *why = '\0';
    if (!lowerable(ir, why, whylen))
        return CDSL_ERR_PROGRAM;
    CePlan *plan = calloc(1, sizeof *plan);
    if (!plan)
        return CDSL_ERR_SYSTEM;
    plan->ir = ir;
    plan->nranks = ir->nranks;
    plan->ranks = calloc((size_t)ir->nranks, sizeof *plan->ranks);
    Lowering L;
    int st = plan->ranks && lowering_init(&L, ir, plan, max_lanes) ? plan_lower(&L, why, whylen) : CDSL_ERR_SYSTEM;
    if (plan->ranks)
        lowering_free(&L);
    if (st == CDSL_ERR_SYSTEM && whylen)
        snprintf(why, whylen, "out of memory");
    if (st) {
        ce_plan_free(plan);
        return st;
    }
    *out = plan;
    return CDSL_OK;
}

/* ---- Printing ------------------------------------------------------------------------------------ */

static void dump_place(const CePlan *p, CePlace at, int count, FILE *out)
{
    char t[IR_CHUNKS_TEXT];
    fprintf(out, "r%d.", at.rank);
    esc_puts(out, p->ir->bufs[at.buf].name);
    fputs(ir_chunks_text(t, at.first, count), out);
}

static void dump_word(const CePlan *p, int rank, int word, FILE *out)
{
    int n = p->nranks;
    if (word < n)
        fprintf(out, "r%d.peer[%d]", rank, word);
    else
        fprintf(out, "r%d.switch[%d]", rank, word - n);
}

static void dump_step(const CePlan *p, int r, const CeStep *s, FILE *out)
{
    const IrOp *op = &p->ir->ranks[r].ops[s->op];
    fprintf(out, "r%d %d:%d ", r, op->loc.line, op->loc.col);
    switch (s->kind) {
    case CE_FORK:
    case CE_JOIN:
        fprintf(out, "%s lanes 1..%d", s->kind == CE_FORK ? "fork" : "join", s->lane);
        break;
    case CE_COPY:
        fprintf(out, "lane %d copy ", s->lane);
        dump_place(p, s->dst, s->count, out);
        fprintf(out, " <- ");
        dump_place(p, s->src, s->count, out);
        break;
    case CE_WRITE:
        fprintf(out, "write ");
        dump_word(p, s->word_rank, s->word, out);
        fprintf(out, " = %llu%+lld/run %s", s->value, (long long)s->per_run, s->ordered ? "release" : "relaxed");
        break;
    case CE_WAIT:
        fprintf(out, "wait ");
        dump_word(p, s->word_rank, s->word, out);
        fprintf(out, " >= %llu%+lld/run %s", s->value, (long long)s->per_run, s->ordered ? "acquire" : "relaxed");
        break;
    }
    fprintf(out, "  (%s)\n", ir_kind_name(op->kind));
}

void ce_plan_dump(const CePlan *p, FILE *out)
{
    fputs("copy-engine plan of ", out);   /* a plan's name is its strings': escape.c */
    esc_puts(out, p->ir->name);
    fprintf(out, ", %d ranks\n", p->nranks);
    for (int r = 0; r < p->nranks; r++) {
        const CeRankPlan *rp = &p->ranks[r];
        fprintf(out, "rank %d: %d steps, %d lane%s, %d signal%s\n", r, rp->nsteps, rp->nlanes,
                rp->nlanes == 1 ? "" : "s", rp->nsigs, rp->nsigs == 1 ? "" : "s");
        for (int i = 0; i < rp->nsteps; i++)
            dump_step(p, r, &rp->steps[i], out);
    }
    fprintf(out, "enqueue order:");
    for (int i = 0; i < p->norder; i++)
        fprintf(out, " r%d[%d..%d)", p->order[i].rank, p->order[i].begin, p->order[i].end);
    fprintf(out, "\n");
}

int ce_plan_print(const IrProgram *ir, FILE *out)
{
    char why[512];
    CePlan *plan = NULL;
    int st = ce_plan_build(ir, CE_MAX_LANES, &plan, why, sizeof why);
    if (st == CDSL_ERR_PROGRAM) {
        esc_puts(out, ir->name);
        fputs(": no copy-engine plan: ", out);
        esc_puts(out, why);
        fputc('\n', out);
        return CDSL_OK;
    }
    if (st)
        return st;
    ce_plan_dump(plan, out);
    ce_plan_free(plan);
    return CDSL_OK;
}
