/*
 * resolve.c - name resolution over the syntax tree.
 *
 * Scopes are a simple chain (a stack of names), pushed on `let`, loop variables and
 * parameters and popped at the end of each block, as the language is lexically scoped. The
 * names every program sees are rank, nranks, input, output, its parameters and its scratch
 * buffers (visible in the whole program body, wherever declared at its top level). A def is
 * inlined at each call, so its body sees its parameters, rank, nranks and the calling program's
 * buffers; each def is resolved in the context of the chosen program.
 *
 * Every lookup marks the name it finds as used, so that a let nothing reads, and a scratch
 * buffer that neither the program nor a def it calls names, can be warned about (-Wunused)
 * once the program has resolved without errors. An unknown name is reported at its first use
 * only, with the known name closest to it ("did you mean"), as one misspelling is one error.
 */
#include "resolve.h"

#include <stdlib.h>
#include <string.h>

#include "suggest.h"

/* Unknown names remembered, so that each is reported once; past this many, every use is
 * reported (the diagnostics' error limit has stopped the printing long before). */
enum { RESOLVE_MAX_UNKNOWN = 64 };

/* What a name in scope is: lets and scratch buffers that nothing uses are warned about. */
typedef enum NameKind { NAME_OTHER, NAME_LET, NAME_SCRATCH } NameKind;

typedef struct Name {
    const char *name;
    Loc loc;
    NameKind kind;
    bool used;
} Name;

typedef struct Resolver {
    Arena *arena;
    Diag *diag;
    AstUnit *unit;
    Decl *program;
    Name *names;            /* the scope chain */
    int nnames, cap;
    Decl **defs;            /* every def of the unit */
    int ndefs;
    bool collect_unused;    /* the first walk over a body: lets that go out of scope unused are
                               kept in `unused` (later walks of a def see the same lets again) */
    Name *unused;
    int nunused, unused_cap;
    const char *unknown[RESOLVE_MAX_UNKNOWN];   /* names reported unknown, not reported again */
    int nunknown;
} Resolver;

static void push_named(Resolver *r, const char *name, Loc loc, NameKind kind)
{
    if (r->nnames == r->cap) {
        int cap = r->cap ? r->cap * 2 : 32;
        r->names = arena_grow(r->arena, r->names, (size_t)r->nnames, (size_t)cap, sizeof *r->names);
        r->cap = cap;
    }
    r->names[r->nnames++] = (Name){name, loc, kind, false};
}

static void push_name(Resolver *r, const char *name)
{
    push_named(r, name, (Loc){0}, NAME_OTHER);
}

static void note_unused(Resolver *r, const Name *n)
{
    if (r->nunused == r->unused_cap) {
        int cap = r->unused_cap ? r->unused_cap * 2 : 8;
        r->unused = arena_grow(r->arena, r->unused, (size_t)r->nunused, (size_t)cap, sizeof *r->unused);
        r->unused_cap = cap;
    }
    r->unused[r->nunused++] = *n;
}

/* The scope chain back to mark entries; lets leaving it unused are noted (names starting with
 * '_' excepted, by the usual convention for "unused on purpose"). */
static void pop_to(Resolver *r, int mark)
{
    for (int i = mark; r->collect_unused && i < r->nnames; i++)
        if (r->names[i].kind == NAME_LET && !r->names[i].used && r->names[i].name[0] != '_')
            note_unused(r, &r->names[i]);
    r->nnames = mark;
}

/* Looks the name up, innermost first, and marks it used. */
static bool in_scope(Resolver *r, const char *name)
{
    for (int i = r->nnames - 1; i >= 0; i--)
        if (!strcmp(r->names[i].name, name)) {
            r->names[i].used = true;
            return true;
        }
    return false;
}

static Decl *find_def(const Resolver *r, const char *name)
{
    for (int i = 0; i < r->ndefs; i++)
        if (!strcmp(r->defs[i]->name, name))
            return r->defs[i];
    return NULL;
}

static bool is_order(const char *name)
{
    return !strcmp(name, "relaxed") || !strcmp(name, "release") || !strcmp(name, "acquire");
}

/* Whether name was reported unknown already; remembers it when not. */
static bool reported_unknown(Resolver *r, const char *name)
{
    for (int i = 0; i < r->nunknown; i++)
        if (!strcmp(r->unknown[i], name))
            return true;
    if (r->nunknown < RESOLVE_MAX_UNKNOWN)
        r->unknown[r->nunknown++] = name;
    return false;
}

/* "unknown name 'rnak'; did you mean 'rank'?" among the names in scope here, at the name's
 * first use only (the first use is where to look; the rest would repeat it). A channel's
 * candidates include the switch, which is a keyword and no name in scope; with none close,
 * a channel's error says what the channels are. */
static void unknown_name(Resolver *r, Loc at, const char *name, bool channel)
{
    if (reported_unknown(r, name))
        return;
    char buf[128];
    int n = r->nnames;
    IrChan written[CH_COUNT];
    int nwritten = channel ? chan_written(written) : 0;
    const char **names = ARENA_ARRAY(r->arena, const char *, (size_t)n + CH_COUNT);
    for (int i = 0; i < r->nnames; i++)
        names[i] = r->names[i].name;
    for (int i = 0; i < nwritten; i++)
        if (!chan_info(written[i])->rank)   /* a bare name can only be a channel written alone */
            names[n++] = chan_info(written[i])->keyword;
    const char *hint = suggest_text(name, names, n, buf, sizeof buf);
    char list[160];
    if (channel && !*hint)
        hint = arena_printf(r->arena, "; the channels are %s", chan_list(false, ", ", " and ", list, sizeof list));
    diag_error(r->diag, at, "unknown name '%s'%s", name, hint);
}

/* A channel written as its keyword: with a rank where its row takes one, else without. */
static void resolve_chan(Resolver *r, const Expr *e)
{
    const ChanInfo *c = chan_by_keyword(e->name, strlen(e->name));
    if (c->rank && !e->lhs)
        diag_error(r->diag, e->loc, "'%s' needs the rank at its other end: write %s(R)", c->keyword, c->keyword);
    else if (!c->rank && e->lhs)
        diag_error(r->diag, e->loc, "'%s' is one channel of every rank and takes no rank: write %s", c->keyword,
                   c->keyword);
}

static void resolve_expr(Resolver *r, const Expr *e)
{
    if (!e)
        return;
    if ((e->kind == E_NAME || e->kind == E_INDEX) && !in_scope(r, e->name)) {
        if (is_order(e->name))
            diag_error(r->diag, e->loc, "memory order '%s' can only be the argument of signal or wait", e->name);
        else
            unknown_name(r, e->loc, e->name, false);
    }
    if (e->kind == E_CHAN)
        resolve_chan(r, e);
    resolve_expr(r, e->lhs);
    resolve_expr(r, e->rhs);
}

static void resolve_stmts(Resolver *r, const StmtList *l, bool top);

/* signal(order) / wait(order): at most one argument, a memory order valid for the operation. */
static void check_order_arg(Resolver *r, const Stmt *s, const IrOpInfo *op)
{
    if (s->args.n > 1) {
        diag_error(r->diag, s->args.items[1]->loc, "%s takes at most one argument (a memory order), not %d", s->name,
                   s->args.n);
        return;
    }
    if (s->args.n == 0)
        return;
    const Expr *e = s->args.items[0];
    const char *valid = op->order == ORDER_RELEASE ? "release" : "acquire";
    const char *orders[] = {valid, "relaxed"};
    char buf[128];
    if (e->kind != E_NAME || (strcmp(e->name, valid) && strcmp(e->name, "relaxed"))) {
        if (e->kind == E_NAME && is_order(e->name))
            diag_error(r->diag, e->loc, "%s cannot be '%s'; its memory order is '%s' (the default) or 'relaxed'",
                       s->name, e->name, valid);
        else if (e->kind == E_NAME && *suggest_text(e->name, orders, 2, buf, sizeof buf))
            diag_error(r->diag, e->loc, "unknown memory order '%s' for %s%s", e->name, s->name, buf);
        else
            diag_error(r->diag, e->loc, "bad memory order for %s; expected '%s' or 'relaxed'", s->name, valid);
    }
}

static void check_arity(Resolver *r, const Stmt *s, const char *what, int want)
{
    if (s->args.n != want)
        diag_error(r->diag, s->name_loc, "%s takes %d argument%s, not %d", what, want, want == 1 ? "" : "s",
                   s->args.n);
}

/* "store, reduce or wait": names[0..n) for a message, then `last` as one more alternative. */
static const char *alternatives(Arena *a, const char **names, int n, const char *last)
{
    const char *s = names[0];
    for (int i = 1; i < n; i++)
        s = arena_printf(a, "%s%s%s", s, i == n - 1 && !last ? " or " : ", ", names[i]);
    return last ? arena_printf(a, "%s or %s", s, last) : s;
}

/* The operations of the channels (the op table's methods): "unknown operation" with the
   closest one, or the whole list. */
static void unknown_method(Resolver *r, const Stmt *s, const char *on, const IrChan *chans, int nchans)
{
    const char *names[IR_NKINDS];
    int n = ir_method_names(chans, nchans, names);
    char buf[128];
    const char *hint = suggest_text(s->name, names, n, buf, sizeof buf);
    if (*hint)
        diag_error(r->diag, s->name_loc, "unknown operation '%s' on %s%s", s->name, on, hint);
    else
        diag_error(r->diag, s->name_loc, "unknown operation '%s' on %s; expected %s", s->name, on,
                   alternatives(r->arena, names, n, NULL));
}

static void resolve_method(Resolver *r, Stmt *s)
{
    const Expr *ch = s->channel;
    if (ch->kind == E_NAME && !in_scope(r, ch->name)) {
        unknown_name(r, ch->loc, ch->name, true);
        return;
    }
    resolve_expr(r, ch);
    /* A let-bound channel may be any channel: eval.c checks which, once it knows. */
    IrChan chans[CH_COUNT];
    bool named = ch->kind == E_NAME;
    const ChanInfo *written = named ? NULL : chan_by_keyword(ch->name, strlen(ch->name));
    int nchans = named ? chan_written(chans) : 1;
    if (written)
        chans[0] = written->id;
    const IrOpInfo *op = NULL;
    for (int i = 0; i < nchans && !op; i++)
        op = ir_op_by_method(chans[i], s->name);
    if (!op) {
        unknown_method(r, s, named ? "a channel" : written->what, chans, nchans);
        return;
    }
    if (ir_takes_order(op->kind)) {
        check_order_arg(r, s, op);
        return;
    }
    const Expr *first = s->args.n ? s->args.items[0] : NULL;
    if (!ir_is_data(op->kind) && s->args.n == 1 && first->kind == E_NAME && is_order(first->name)) {
        const char *fixed = op->sync == SYNC_WAIT ? ": it always acquires" : op->sync == SYNC_SIGNAL ? ": it always "
                            "releases" : "";
        diag_error(r->diag, first->loc, "%s takes no memory order%s", op->name, fixed);
        return;
    }
    check_arity(r, s, op->name, ir_op_arity(op));
    for (int i = 0; i < s->args.n; i++)
        resolve_expr(r, s->args.items[i]);
}

static void resolve_call(Resolver *r, Stmt *s)
{
    for (int i = 0; i < s->args.n; i++)
        resolve_expr(r, s->args.items[i]);
    const IrOpInfo *op = ir_op_by_method(CH_LOCAL, s->name);
    if (op) {
        check_arity(r, s, op->name, ir_op_arity(op));
        return;
    }
    Decl *def = find_def(r, s->name);
    if (!def) {
        static const IrChan local[] = {CH_LOCAL};
        const char **names = ARENA_ARRAY(r->arena, const char *, (size_t)r->ndefs + IR_NKINDS);
        int nops = ir_method_names(local, 1, names);
        for (int i = 0; i < r->ndefs; i++)
            names[nops + i] = r->defs[i]->name;
        char buf[128];
        const char *hint = suggest_text(s->name, names, r->ndefs + nops, buf, sizeof buf);
        if (*hint)
            diag_error(r->diag, s->name_loc, "unknown operation '%s'%s", s->name, hint);
        else
            diag_error(r->diag, s->name_loc, "unknown operation '%s'; expected %s", s->name,
                       alternatives(r->arena, names, nops, "a def"));
        return;
    }
    s->target = def;
    if (s->args.n != def->nparams) {
        diag_error(r->diag, s->name_loc, "%s takes %d argument%s, not %d", def->name, def->nparams,
                   def->nparams == 1 ? "" : "s", s->args.n);
        diag_note(r->diag, def->name_loc, "%s is defined here", def->name);
    }
}

static void resolve_stmt(Resolver *r, Stmt *s, bool top)
{
    int mark = r->nnames;
    switch (s->kind) {
    case S_LET:
        resolve_expr(r, s->value);
        push_named(r, s->name, s->name_loc, NAME_LET);
        return;   /* visible to the rest of the block */
    case S_FOR:
        resolve_expr(r, s->value);
        resolve_expr(r, s->hi);
        push_name(r, s->name);
        resolve_stmts(r, &s->body, false);
        break;
    case S_IF:
        resolve_expr(r, s->value);
        resolve_stmts(r, &s->body, false);
        pop_to(r, mark);
        resolve_stmts(r, &s->orelse, false);
        break;
    case S_CALL: resolve_call(r, s); break;
    case S_METHOD: resolve_method(r, s); break;
    case S_SCRATCH:
    case S_BUFFER:
        if (!top)
            diag_error(r->diag, s->loc, "buffers are declared at the top level of a program");
        resolve_expr(r, s->value);
        break;
    }
    pop_to(r, mark);
}

static void resolve_stmts(Resolver *r, const StmtList *l, bool top)
{
    int mark = r->nnames;
    for (int i = 0; i < l->n && r->diag->nerrors < 50; i++)
        resolve_stmt(r, l->items[i], top);
    pop_to(r, mark);
}

/* Builtins, buffers and parameters of the chosen program: the bottom of every scope chain. */
static void push_program_names(Resolver *r)
{
    push_name(r, "rank");
    push_name(r, "nranks");
    Collective c;
    if (coll_find(r->program->collective, &c) && coll_has_root(coll_info(c)))
        push_name(r, "root"); /* the root rank, -D root=R (eval.c) */
    push_name(r, "input");
    push_name(r, "output");
    for (int i = 0; i < r->program->body.n; i++)
        if (r->program->body.items[i]->kind == S_SCRATCH)
            push_named(r, r->program->body.items[i]->name, r->program->body.items[i]->name_loc, NAME_SCRATCH);
}

static void resolve_def(Resolver *r, Decl *def)
{
    int mark = r->nnames;
    for (int i = 0; i < def->nparams; i++)
        push_name(r, def->params[i].name);
    resolve_stmts(r, &def->body, false);
    pop_to(r, mark);
}

/* Depth-first over the calls, each def walked once: meeting a def that is still being walked
 * is recursion. Linear in the size of the program, however the calls fan out. */
static bool walk_calls(Resolver *r, const StmtList *l)
{
    for (int i = 0; i < l->n; i++) {
        const Stmt *s = l->items[i];
        Decl *def = s->kind == S_CALL ? s->target : NULL;
        if (def && def->walk == 1) {
            diag_error(r->diag, s->name_loc, "recursive call of '%s'; defs are inlined, so they cannot recurse",
                       def->name);
            diag_note(r->diag, def->name_loc, "%s is defined here", def->name);
            return true;
        }
        if (def && def->walk == 0) {
            def->walk = 1;
            if (walk_calls(r, &def->body))
                return true;
            def->walk = 2;
        }
        if (walk_calls(r, &s->body) || walk_calls(r, &s->orelse))
            return true;
    }
    return false;
}

static void mark_reachable(const StmtList *l)
{
    for (int i = 0; i < l->n; i++) {
        const Stmt *s = l->items[i];
        if (s->kind == S_CALL && s->target && !s->target->reachable) {
            s->target->reachable = true;
            mark_reachable(&s->target->body);
        }
        mark_reachable(&s->body);
        mark_reachable(&s->orelse);
    }
}

/* Scratch buffers of every program in the unit: a def may use the scratch of whichever
 * program calls it, so a def is first resolved against all of them. */
static void push_all_scratch(Resolver *r)
{
    for (int f = 0; f < r->unit->nfiles; f++)
        for (int i = 0; i < r->unit->files[f]->ndecls; i++) {
            const Decl *d = r->unit->files[f]->decls[i];
            for (int k = 0; d->kind == D_PROGRAM && k < d->body.n; k++)
                if (d->body.items[k]->kind == S_SCRATCH)
                    push_name(r, d->body.items[k]->name);
        }
}

static void collect_defs(Resolver *r)
{
    int n = 0;
    for (int f = 0; f < r->unit->nfiles; f++)
        n += r->unit->files[f]->ndecls;
    r->defs = ARENA_ARRAY(r->arena, Decl *, (size_t)n + 1);
    for (int f = 0; f < r->unit->nfiles; f++)
        for (int i = 0; i < r->unit->files[f]->ndecls; i++) {
            Decl *d = r->unit->files[f]->decls[i];
            if (d->kind != D_DEF)
                continue;
            Decl *prev = find_def(r, d->name);
            if (prev) {
                diag_error(r->diag, d->name_loc, "'%s' is defined twice", d->name);
                diag_note(r->diag, prev->name_loc, "first defined here");
                continue;
            }
            r->defs[r->ndefs++] = d;
        }
}

/* "; did you mean 'allgather_ring'?" among every program of the unit, or "". */
static const char *program_hint(Resolver *r, const char *want)
{
    int n = 0;
    for (int f = 0; f < r->unit->nfiles; f++)
        n += r->unit->files[f]->ndecls;
    const char **names = ARENA_ARRAY(r->arena, const char *, (size_t)n + 1);
    n = 0;
    for (int f = 0; f < r->unit->nfiles; f++)
        for (int i = 0; i < r->unit->files[f]->ndecls; i++)
            if (r->unit->files[f]->decls[i]->kind == D_PROGRAM)
                names[n++] = r->unit->files[f]->decls[i]->name;
    char *buf = arena_alloc(r->arena, 160);
    return suggest_text(want, names, n, buf, 160);
}

/* The program named want (searching the main file, then the imports), or the main file's only one. */
static Decl *choose_program(Resolver *r, const char *want)
{
    const char *path = r->unit->files[0]->src->path;
    Decl *only = NULL;
    int count = 0;
    for (int f = 0; f < r->unit->nfiles; f++)
        for (int i = 0; i < r->unit->files[f]->ndecls; i++) {
            Decl *d = r->unit->files[f]->decls[i];
            if (d->kind != D_PROGRAM)
                continue;
            if (want && !strcmp(d->name, want))
                return d;
            if (f == 0) {
                only = d;
                count++;
            }
        }
    if (want)
        diag_usage(r->diag, "%s has no program named '%s'%s", path, want, program_hint(r, want));
    else if (count == 0)
        diag_fatal(r->diag, "%s holds no program", path);
    else if (count > 1)
        diag_usage(r->diag, "%s holds %d programs; choose one by name (the program option, cdslc --program NAME)", path, count);
    return count == 1 ? only : NULL;
}

static void check_program_header(Resolver *r)
{
    Decl *p = r->program;
    Collective c;
    char buf[128], names[256];
    if (!coll_find(p->collective, &c) && *suggest_text(p->collective, coll_names(), COLL_COUNT, buf, sizeof buf))
        diag_error(r->diag, p->coll_loc, "unknown collective '%s'%s", p->collective, buf);
    else if (!coll_find(p->collective, &c))
        diag_error(r->diag, p->coll_loc, "unknown collective '%s'; expected %s", p->collective,
                   coll_list(NULL, " or ", names, sizeof names));
    for (int i = 0; i < p->nparams; i++) {
        for (int j = 0; j < i; j++)
            if (!strcmp(p->params[i].name, p->params[j].name)) {
                diag_error(r->diag, p->params[i].loc, "parameter '%s' is declared twice", p->params[i].name);
                break;
            }
        resolve_expr(r, p->params[i].init);   /* may use nranks and earlier parameters */
        push_name(r, p->params[i].name);
    }
}

static int name_order(const void *pa, const void *pb)
{
    const Name *a = pa, *b = pb;
    int c = strcmp(a->loc.src->path, b->loc.src->path);
    return c ? c : a->loc.line != b->loc.line ? a->loc.line - b->loc.line : a->loc.col - b->loc.col;
}

/* -Wunused: lets that nothing read, and scratch buffers of the program that neither it nor a
 * def it calls names; in source order. Only for a program that resolved without errors. */
static void warn_unused(Resolver *r, int scratch_from, int scratch_to)
{
    for (int i = scratch_from; i < scratch_to; i++)
        if (r->names[i].kind == NAME_SCRATCH && !r->names[i].used && r->names[i].name[0] != '_')
            note_unused(r, &r->names[i]);
    if (r->nunused > 1)
        qsort(r->unused, (size_t)r->nunused, sizeof *r->unused, name_order);
    for (int i = 0; i < r->nunused; i++) {
        const Name *n = &r->unused[i];
        if (i > 0 && !name_order(n, &r->unused[i - 1]))
            continue;   /* a let of a def, seen again by a later walk */
        if (n->kind == NAME_LET)
            diag_warning(r->diag, DIAG_W_UNUSED, n->loc, "let '%s' is never used", n->name);
        else
            diag_warning(r->diag, DIAG_W_UNUSED, n->loc, "scratch buffer '%s' is never used", n->name);
    }
    diag_warnings_done(r->diag);
}

Decl *resolve_unit(Arena *a, Diag *d, AstUnit *u, const char *want)
{
    Resolver *r = ARENA_NEW(a, Resolver);
    r->arena = a;
    r->diag = d;
    r->unit = u;
    collect_defs(r);
    r->program = choose_program(r, want);
    if (!r->program)
        return NULL;
    push_name(r, "nranks");
    int base = r->nnames;
    check_program_header(r);
    r->nnames = base - 1;
    push_program_names(r);
    int program_names = r->nnames;
    push_all_scratch(r);
    r->collect_unused = true;
    for (int i = 0; i < r->ndefs; i++)
        resolve_def(r, r->defs[i]);
    r->nnames = program_names;
    for (int i = 0; i < r->program->nparams; i++)
        push_name(r, r->program->params[i].name);
    resolve_stmts(r, &r->program->body, true);
    r->collect_unused = false;
    for (int i = 0; i < r->ndefs && !d->nerrors; i++)
        if (r->defs[i]->walk == 0) {
            r->defs[i]->walk = 1;
            walk_calls(r, &r->defs[i]->body);
            r->defs[i]->walk = 2;
        }
    if (d->nerrors)
        return NULL;
    /* The defs this program calls must find their buffers among this program's. */
    r->nnames = program_names;
    mark_reachable(&r->program->body);
    for (int i = 0; i < r->ndefs; i++)
        if (r->defs[i]->reachable)
            resolve_def(r, r->defs[i]);
    if (d->nerrors)
        return NULL;
    warn_unused(r, 4, program_names);   /* after rank, nranks, input, output: the scratch */
    return d->nerrors ? NULL : r->program;   /* -Werror */
}
