/*
 * unneeded_sync.c - the warnings that need the checker: synchronisation the program does not need.
 *
 * Both are decided by the checker itself, on a copy of the program with the synchronisation
 * taken away, so that a warning can never suggest a change that makes the program wrong:
 *
 *   -Wredundant-barrier  a signal statement S and a wait statement W that pair only with each
 *                        other (every wait at W consumes a signal made at S and every signal
 *                        at S is consumed at W; for the switch, every round that has an
 *                        arrival at S has all its arrivals at S and all its waits at W), such
 *                        that the program without every operation of S and W passes every
 *                        check (races, synchronisation, rounds, the postcondition). Deleting
 *                        the two statements gives exactly that program.
 *   -Wstronger-order     a release signal statement S such that the program with every
 *                        operation of S relaxed passes every check.
 *
 * The copies are checked one after another, each with the changes already found kept in it
 * (barriers first, in source order, then orders), so that taking every suggestion together
 * gives a program the checker accepts. Each holds for the rank count and parameters the
 * program was compiled for ("at 4 ranks"); another rank count may need what this one does not.
 *
 * The trials run the whole checker again, so they are bounded: programs of more than
 * LINT_MAX_OPS operations over all ranks are not linted, at most LINT_MAX_TRIALS copies are
 * checked, each within the program's own checking limits and in an arena of its own that is
 * freed after it (running out of memory in a trial only ends the linting).
 */
#include "unneeded_sync.h"

#include <stdlib.h>
#include <string.h>

#include "happens_before.h"
#include "port_proxy.h"

enum { LINT_MAX_OPS = 1 << 16, LINT_MAX_TRIALS = 64 };
enum { KEEP = 0, REMOVED = 1, RELAXED = 2 };

/* One synchronisation statement: every op made from it shares its Loc. */
typedef struct LintStmt {
    Loc loc;
    IrKind kind;        /* SIGNAL, WAIT, SW_SIGNAL or SW_WAIT */
    bool release;       /* a signal that is not relaxed */
    int parent;         /* union-find over statements that pair with each other */
    int nsig, nwait;    /* at the root: the signal and wait statements of the group */
    int sig, wait;      /* at the root, when there is one of each: which */
    unsigned char state;
} LintStmt;

typedef struct Lint {
    IrProgram *p;
    const CheckResult *r;
    Arena *a;
    LintStmt *stmts;
    int nstmts, cap;
    int *table;         /* open addressing, Loc -> statement */
    size_t table_mask;
    int **id;           /* [rank][op]: the op's statement, -1 for data operations */
    int trials;
} Lint;

/* The signals and waits a program writes with a memory order it could weaken or drop (packet
   ops are always relaxed and carry data: not these; a port channel's, lowered from what the
   user wrote, take no order: not these either). */
static bool is_sync(const IrOp *op, int rank)
{
    /* a plan's semaphore has no relaxed form; a port channel's lowered ops take no order */
    return ir_takes_order(op->kind) && !ir_is_semaphore(op->kind) && !port_lowered(op, rank);
}

static bool is_signal(IrKind k)
{
    return ir_takes_order(k) && ir_op_info(k)->sync == SYNC_SIGNAL;
}

static bool same_loc(Loc a, Loc b)
{
    return a.src == b.src && a.line == b.line && a.col == b.col;
}

static int stmt_of(Lint *l, const IrOp *op)
{
    uint64_t h = hb_mix64((uint64_t)(uintptr_t)op->loc.src ^ ((uint64_t)op->loc.line << 32) ^ (uint64_t)op->loc.col);
    for (size_t i = h & l->table_mask;; i = (i + 1) & l->table_mask) {
        int s = l->table[i];
        if (s < 0) {
            if (l->nstmts == l->cap) {
                int cap = l->cap ? l->cap * 2 : 16;
                l->stmts = arena_grow(l->a, l->stmts, (size_t)l->nstmts, (size_t)cap, sizeof *l->stmts);
                l->cap = cap;
            }
            s = l->nstmts++;
            l->stmts[s] = (LintStmt){op->loc, op->kind, is_signal(op->kind) && !op->relaxed, s, 0, 0, -1, -1, KEEP};
            l->table[i] = s;
            return s;
        }
        if (same_loc(l->stmts[s].loc, op->loc))
            return s;
    }
}

static int root(Lint *l, int s)
{
    while (l->stmts[s].parent != s)
        s = l->stmts[s].parent = l->stmts[l->stmts[s].parent].parent;
    return s;
}

static void unite(Lint *l, int a, int b)
{
    a = root(l, a);
    b = root(l, b);
    if (a != b)
        l->stmts[a].parent = b;
}

/* Statements of every sync op; then the pairs the checker matched, joined: a peer signal with
 * its wait, every arrival and wait of a switch round with each other. */
static void group_statements(Lint *l)
{
    const IrProgram *p = l->p;
    size_t nsync = 0;
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++)
            nsync += is_sync(&p->ranks[r].ops[i], r);
    size_t size = 16;
    while (size < 2 * nsync + 16)
        size *= 2;
    l->table = ARENA_ARRAY(l->a, int, size);
    memset(l->table, 0xff, size * sizeof *l->table);
    l->table_mask = size - 1;
    l->id = ARENA_ARRAY(l->a, int *, (size_t)p->nranks);
    for (int r = 0; r < p->nranks; r++) {
        l->id[r] = ARENA_ARRAY(l->a, int, (size_t)p->ranks[r].nops + 1);
        for (int i = 0; i < p->ranks[r].nops; i++)
            l->id[r][i] = is_sync(&p->ranks[r].ops[i], r) ? stmt_of(l, &p->ranks[r].ops[i]) : -1;
    }
    const HbFacts *f = &l->r->hb;
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const IrOp *op = &p->ranks[r].ops[i];
            if (l->id[r][i] >= 0 && is_signal(op->kind) && ir_is_signal(op->kind) && f->partner[r][i] >= 0)
                unite(l, l->id[r][i], l->id[op->peer][f->partner[r][i]]);
        }
    for (int k = 0; k < f->nrounds; k++) {
        int first = -1;
        for (int r = 0; r < p->nranks; r++) {
            int ops[2] = {k < f->nsw_sig[r] ? f->sw_sig[r][k] : -1, k < f->nsw_wait[r] ? f->sw_wait[r][k] : -1};
            for (int j = 0; j < 2; j++)
                if (ops[j] >= 0) {
                    if (first >= 0)
                        unite(l, first, l->id[r][ops[j]]);
                    else
                        first = l->id[r][ops[j]];
                }
        }
    }
    for (int s = 0; s < l->nstmts; s++) {
        LintStmt *g = &l->stmts[root(l, s)];
        if (is_signal(l->stmts[s].kind)) {
            g->nsig++;
            g->sig = s;
        } else {
            g->nwait++;
            g->wait = s;
        }
    }
}

/* Does the program, with the statements' states applied (removed, relaxed), pass every check? */
static bool checks_clean(Lint *l, const CheckLimits *limits)
{
    const IrProgram *p = l->p;
    if (l->trials++ >= LINT_MAX_TRIALS)
        return false;
    Arena *a = arena_create();
    if (!a)
        return false;
    ArenaTrap trap;
    arena_trap_push(a, &trap);
    if (setjmp(trap.env)) {   /* out of memory in the trial: not shown to be clean */
        arena_destroy(a);
        l->trials = LINT_MAX_TRIALS;
        return false;
    }
    IrProgram *c = ARENA_NEW(a, IrProgram);
    *c = *p;
    c->arena = a;
    c->ranks = ARENA_ARRAY(a, IrSeq, (size_t)p->nranks);
    for (int r = 0; r < p->nranks; r++) {
        IrSeq *to = &c->ranks[r];
        to->ops = ARENA_ARRAY(a, IrOp, (size_t)p->ranks[r].nops + 1);
        for (int i = 0; i < p->ranks[r].nops; i++) {
            int s = l->id[r][i];
            if (s >= 0 && l->stmts[s].state == REMOVED)
                continue;
            IrOp op = p->ranks[r].ops[i];
            op.relaxed |= s >= 0 && l->stmts[s].state == RELAXED;
            op.sync_before = false;
            to->ops[to->nops++] = op;
        }
        to->cap = to->nops;
    }
    Diag quiet;
    diag_init(&quiet, NULL);
    check_program(c, &quiet, limits);
    arena_trap_pop(a, &trap);
    arena_destroy(a);
    return quiet.nerrors == 0;
}

typedef struct Placed {
    Loc loc;
    int stmt;
} Placed;

static int by_position(const void *pa, const void *pb)
{
    const Loc *a = &((const Placed *)pa)->loc, *b = &((const Placed *)pb)->loc;
    int c = strcmp(a->src->path, b->src->path);
    return c ? c : a->line != b->line ? a->line - b->line : a->col - b->col;
}

/* The statements in source order. */
static int *in_source_order(Lint *l)
{
    Placed *placed = ARENA_ARRAY(l->a, Placed, (size_t)l->nstmts + 1);
    for (int s = 0; s < l->nstmts; s++)
        placed[s] = (Placed){l->stmts[s].loc, s};
    if (l->nstmts > 1)
        qsort(placed, (size_t)l->nstmts, sizeof *placed, by_position);
    int *order = ARENA_ARRAY(l->a, int, (size_t)l->nstmts + 1);
    for (int s = 0; s < l->nstmts; s++)
        order[s] = placed[s].stmt;
    return order;
}

static void redundant_barriers(Lint *l, Diag *d, const CheckLimits *limits, const int *order)
{
    for (int k = 0; k < l->nstmts; k++) {
        LintStmt *s = &l->stmts[order[k]];
        const LintStmt *g = &l->stmts[root(l, order[k])];
        if (!is_signal(s->kind) || g->nsig != 1 || g->nwait != 1)
            continue;
        LintStmt *w = &l->stmts[g->wait];
        s->state = w->state = REMOVED;
        if (!checks_clean(l, limits)) {
            s->state = w->state = KEEP;
            continue;
        }
        diag_warning(d, DIAG_W_REDUNDANT_BARRIER, s->loc,
                     "redundant barrier: without this %s and the %s it pairs with (%d:%d), the program still "
                     "checks clean at %d ranks",
                     ir_kind_name(s->kind), ir_kind_name(w->kind), w->loc.line, w->loc.col, l->p->nranks);
        diag_note(d, w->loc, "the %s it pairs with", ir_kind_name(w->kind));
    }
}

static void stronger_orders(Lint *l, Diag *d, const CheckLimits *limits, const int *order)
{
    for (int k = 0; k < l->nstmts; k++) {
        LintStmt *s = &l->stmts[order[k]];
        if (!s->release || s->state != KEEP)
            continue;
        s->state = RELAXED;
        if (!checks_clean(l, limits)) {
            s->state = KEEP;
            continue;
        }
        diag_warning(d, DIAG_W_STRONGER_ORDER, s->loc,
                     "this %s need not be a release: the program checks clean at %d ranks with %s(relaxed) here",
                     ir_kind_name(s->kind), l->p->nranks, ir_kind_name(s->kind));
    }
}

void lint_program(IrProgram *p, const CheckResult *r, Diag *d, const CheckLimits *limits)
{
    bool barriers = !(d->warn_off & DIAG_W_REDUNDANT_BARRIER), orders = !(d->warn_off & DIAG_W_STRONGER_ORDER);
    if (!r || (!barriers && !orders) || r->hb.nops_total > LINT_MAX_OPS)
        return;
    Lint l = {.p = p, .r = r, .a = p->arena};
    group_statements(&l);
    if (l.nstmts == 0)
        return;
    const int *order = in_source_order(&l);
    if (barriers)
        redundant_barriers(&l, d, limits, order);
    if (orders)
        stronger_orders(&l, d, limits, order);
    diag_warnings_done(d);
}
