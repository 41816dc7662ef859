/*
 * ast.c - building the syntax tree, and printing it (--dump-ast).
 *
 * The dump is one node per line, indented by depth, each with line:col, so that a golden file
 * pins down both the shape the parser built and the positions every later message will use.
 */
#include "ast.h"

#include "parser.h"

Expr *ast_expr(Arena *a, ExprKind k, Loc loc)
{
    Expr *e = ARENA_NEW(a, Expr);
    e->kind = k;
    e->loc = loc;
    e->depth = 1;
    return e;
}

Stmt *ast_stmt(Arena *a, StmtKind k, Loc loc)
{
    Stmt *s = ARENA_NEW(a, Stmt);
    s->kind = k;
    s->loc = loc;
    return s;
}

Decl *ast_decl(Arena *a, DeclKind k, Loc loc)
{
    Decl *d = ARENA_NEW(a, Decl);
    d->kind = k;
    d->loc = loc;
    return d;
}

/* Double the array when full; the old copy stays in the arena until the compilation ends. */
#define PUSH(a, arr, n, cap, item)                                                              \
    do {                                                                                        \
        if ((n) == (cap)) {                                                                     \
            int c_ = (cap) ? (cap) * 2 : 4;                                                     \
            (arr) = arena_grow((a), (arr), (size_t)(n), (size_t)c_, sizeof *(arr));             \
            (cap) = c_;                                                                         \
        }                                                                                       \
        (arr)[(n)++] = (item);                                                                  \
    } while (0)

void ast_expr_push(Arena *a, ExprList *l, Expr *e) { PUSH(a, l->items, l->n, l->cap, e); }
void ast_stmt_push(Arena *a, StmtList *l, Stmt *s) { PUSH(a, l->items, l->n, l->cap, s); }
void ast_param_push(Arena *a, Decl *d, Param p) { PUSH(a, d->params, d->nparams, d->cap, p); }
void ast_decl_push(Arena *a, AstFile *f, Decl *d) { PUSH(a, f->decls, f->ndecls, f->cap, d); }

static const char *op_text(int op)
{
    switch (op) {
    case TK_OR: return "||";
    case TK_AND: return "&&";
    case TK_EQ: return "==";
    case TK_NE: return "!=";
    case TK_LT: return "<";
    case TK_LE: return "<=";
    case TK_GT: return ">";
    case TK_GE: return ">=";
    case TK_PLUS: return "+";
    case TK_MINUS: return "-";
    case TK_STAR: return "*";
    case TK_SLASH: return "/";
    case TK_PERCENT: return "%";
    case TK_NOT: return "!";
    }
    return "?";
}

static void indent(FILE *out, int depth, Loc loc)
{
    fprintf(out, "%*s%d:%d ", depth * 2, "", loc.line, loc.col);
}

static void dump_expr(const Expr *e, int depth, FILE *out)
{
    indent(out, depth, e->loc);
    switch (e->kind) {
    case E_INT: fprintf(out, "int %lld\n", e->ival); return;
    case E_NAME: fprintf(out, "name %s\n", e->name); return;
    case E_CHAN: fprintf(out, "%s\n", e->name); break;
    case E_UNARY: fprintf(out, "unary %s\n", op_text(e->op)); break;
    case E_BINARY: fprintf(out, "binary %s\n", op_text(e->op)); break;
    case E_INDEX: fprintf(out, "chunks %s%s\n", e->name, e->rhs ? " range" : ""); break;
    }
    if (e->lhs)
        dump_expr(e->lhs, depth + 1, out);
    if (e->rhs)
        dump_expr(e->rhs, depth + 1, out);
}

static void dump_stmts(const StmtList *l, int depth, FILE *out);

static void dump_stmt(const Stmt *s, int depth, FILE *out)
{
    static const char *const names[] = {"let", "for", "if", "call", "method", "scratch", "buffer"};
    indent(out, depth, s->loc);
    fprintf(out, "%s", names[s->kind]);
    if (s->name)
        fprintf(out, " %s", s->name);
    fputc('\n', out);
    if (s->channel)
        dump_expr(s->channel, depth + 1, out);
    if (s->value)
        dump_expr(s->value, depth + 1, out);
    if (s->hi)
        dump_expr(s->hi, depth + 1, out);
    for (int i = 0; i < s->args.n; i++)
        dump_expr(s->args.items[i], depth + 1, out);
    dump_stmts(&s->body, depth + 1, out);
    if (s->has_else) {
        fprintf(out, "%*selse\n", (depth + 1) * 2, "");
        dump_stmts(&s->orelse, depth + 2, out);
    }
}

static void dump_stmts(const StmtList *l, int depth, FILE *out)
{
    for (int i = 0; i < l->n; i++)
        dump_stmt(l->items[i], depth, out);
}

static void dump_decl(const Decl *d, FILE *out)
{
    indent(out, 1, d->loc);
    switch (d->kind) {
    case D_IMPORT: fprintf(out, "import \"%s\"\n", d->name); return;
    case D_DEF: fprintf(out, "def %s\n", d->name); break;
    case D_PROGRAM: fprintf(out, "program %s implements %s\n", d->name, d->collective); break;
    }
    for (int i = 0; i < d->nparams; i++) {
        indent(out, 2, d->params[i].loc);
        fprintf(out, "param %s\n", d->params[i].name);
        if (d->params[i].init)
            dump_expr(d->params[i].init, 3, out);
    }
    dump_stmts(&d->body, 2, out);
}

void ast_dump(const AstUnit *u, FILE *out)
{
    for (int f = 0; f < u->nfiles; f++) {
        const AstFile *file = u->files[f];
        fprintf(out, "file %s\n", file->src->path);
        for (int i = 0; i < file->ndecls; i++)
            dump_decl(file->decls[i], out);
    }
}
