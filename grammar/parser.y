/*
 * parser.y - the .cdsl grammar (Lemon 3.40; generated into build/gen/parser.c).
 *
 * Tokens are values (Token: a slice of the source and its position), as in SQLite's parse.y.
 * Actions build the AST in the compilation's arena (compiler/front/ast.h); nothing is freed, so no
 * %destructor is needed. There is no error recovery: %syntax_error reports once and the driver
 * (compiler/front/parse.c) stops feeding tokens.
 *
 * Lists are left-recursive so the parser stack stays flat however long a list is.
 *
 * The engine's functions (lemon_parse, lemon_parseInit, ...) are the library's own: their
 * prefix is not cdsl_, the API's, and libcdsl.map keeps them out of libcdsl.so's exports.
 */

%name lemon_parse
%token_prefix TK_
%token_type {Token}
%default_type {Token}
%extra_context {Parser *px}
%stack_size 4000
%start_symbol unit

%include {
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "lex.h"
#include "parse.h"

#define YYNOERRORRECOVERY 1
#define YYPARSEFREENEVERNULL 1

typedef struct Block { StmtList list; Loc open, close; } Block;
typedef struct ParamList { Param *items; int n, cap; } ParamList;

static void param_push(Arena *a, ParamList *l, Param p)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        l->items = arena_grow(a, l->items, (size_t)l->n, (size_t)cap, sizeof(Param));
        l->cap = cap;
    }
    l->items[l->n++] = p;
}

static const char *tok_text(Parser *px, Token t)
{
    return arena_strndup(px->arena, t.start, (size_t)t.len);
}

/* Give e its children and its height; refuse trees so deep that recursing over them could
 * exhaust the C stack (200,000 terms of a+a+...+a make a chain that deep). */
static Expr *node(Parser *px, Expr *e, Expr *l, Expr *r)
{
    e->lhs = l;
    e->rhs = r;
    int hl = l ? l->depth : 0, hr = r ? r->depth : 0;
    e->depth = 1 + (hl > hr ? hl : hr);
    if (e->depth > AST_MAX_DEPTH && !px->failed) {
        if (!px->trial)
            diag_error(px->diag, e->loc, "expression nested too deeply (more than %d levels)", AST_MAX_DEPTH);
        px->failed = true;
    }
    return e;
}

/* A channel: its keyword (chans.def) as the name, its rank, if written, as lhs. */
static Expr *chan(Parser *px, Token k, Expr *rank)
{
    Expr *e = ast_expr(px->arena, E_CHAN, k.loc);
    e->name = tok_text(px, k);
    return node(px, e, rank, NULL);
}

static Expr *binary(Parser *px, Token op, Expr *l, Expr *r)
{
    Expr *e = ast_expr(px->arena, E_BINARY, op.loc);
    e->op = op.kind;
    return node(px, e, l, r);
}
}

%syntax_error { parse_syntax_error(px, TOKEN, yypParser); }
%stack_overflow {
    if (!px->trial)
        diag_error(px->diag, px->at, "nested too deeply for the parser (a long expression or else-if chain?)");
    px->failed = true;
}

%token IMPORT DEF PROGRAM IMPLEMENTS SCRATCH LET FOR IN IF ELSE CHAN IDENT INT STRING
       DOTDOT DOT COMMA SEMI LPAREN RPAREN LBRACKET RBRACKET LBRACE RBRACE ASSIGN.

%left OR.
%left AND.
%nonassoc EQ NE.
%nonassoc LT LE GT GE.
%left PLUS MINUS.
%left STAR SLASH PERCENT.
%right NOT.

unit ::= decls.

decls ::= .
decls ::= decls decl(D).                { ast_decl_push(px->arena, px->file, D); }

%type decl {Decl *}
decl(D) ::= IMPORT(K) STRING(S) SEMI. {
    D = ast_decl(px->arena, D_IMPORT, K.loc);
    D->name = arena_strndup(px->arena, S.start + 1, (size_t)S.len - 2);
    D->name_loc = S.loc;
}
decl(D) ::= DEF(K) IDENT(N) LPAREN defparams(P) RPAREN block(B). {
    D = ast_decl(px->arena, D_DEF, K.loc);
    D->name = tok_text(px, N);
    D->name_loc = N.loc;
    D->params = P.items;
    D->nparams = P.n;
    D->body = B.list;
    D->close = B.close;
}
decl(D) ::= PROGRAM(K) IDENT(N) progparams(P) IMPLEMENTS IDENT(C) block(B). {
    D = ast_decl(px->arena, D_PROGRAM, K.loc);
    D->name = tok_text(px, N);
    D->name_loc = N.loc;
    D->params = P.items;
    D->nparams = P.n;
    D->collective = tok_text(px, C);
    D->coll_loc = C.loc;
    D->body = B.list;
    D->close = B.close;
}

%type defparams {ParamList}
defparams(L) ::= .                       { memset(&L, 0, sizeof L); }
defparams(L) ::= defparamlist(A).        { L = A; }
%type defparamlist {ParamList}
defparamlist(L) ::= IDENT(N).            { memset(&L, 0, sizeof L); param_push(px->arena, &L, (Param){tok_text(px, N), N.loc, NULL}); }
defparamlist(L) ::= defparamlist(A) COMMA IDENT(N). { L = A; param_push(px->arena, &L, (Param){tok_text(px, N), N.loc, NULL}); }

%type progparams {ParamList}
progparams(L) ::= .                      { memset(&L, 0, sizeof L); }
progparams(L) ::= LPAREN RPAREN.         { memset(&L, 0, sizeof L); }
progparams(L) ::= LPAREN progparamlist(A) RPAREN. { L = A; }
%type progparamlist {ParamList}
progparamlist(L) ::= IDENT(N) ASSIGN expr(E). {
    memset(&L, 0, sizeof L);
    param_push(px->arena, &L, (Param){tok_text(px, N), N.loc, E});
}
progparamlist(L) ::= progparamlist(A) COMMA IDENT(N) ASSIGN expr(E). {
    L = A;
    param_push(px->arena, &L, (Param){tok_text(px, N), N.loc, E});
}

%type block {Block}
block(B) ::= LBRACE(O) stmts(L) RBRACE(C). { B.list = L; B.open = O.loc; B.close = C.loc; }

%type stmts {StmtList}
stmts(L) ::= .                           { memset(&L, 0, sizeof L); }
stmts(L) ::= stmts(A) stmt(S).           { L = A; ast_stmt_push(px->arena, &L, S); }

%type stmt {Stmt *}
stmt(S) ::= LET(K) IDENT(N) ASSIGN expr(E) SEMI. {
    S = ast_stmt(px->arena, S_LET, K.loc);
    S->name = tok_text(px, N);
    S->name_loc = N.loc;
    S->value = E;
}
stmt(S) ::= FOR(K) IDENT(N) IN expr(L) DOTDOT expr(H) block(B). {
    S = ast_stmt(px->arena, S_FOR, K.loc);
    S->name = tok_text(px, N);
    S->name_loc = N.loc;
    S->value = L;
    S->hi = H;
    S->body = B.list;
}
stmt(S) ::= ifstmt(I).                    { S = I; }
stmt(S) ::= IDENT(N) LPAREN args(A) RPAREN SEMI. {
    S = ast_stmt(px->arena, S_CALL, N.loc);
    S->name = tok_text(px, N);
    S->name_loc = N.loc;
    S->args = A;
}
stmt(S) ::= channel(C) DOT IDENT(N) LPAREN args(A) RPAREN SEMI. {
    S = ast_stmt(px->arena, S_METHOD, N.loc);
    S->channel = C;
    S->name = tok_text(px, N);
    S->name_loc = N.loc;
    S->args = A;
}
stmt(S) ::= SCRATCH(K) IDENT(N) LBRACKET expr(E) RBRACKET SEMI. {
    S = ast_stmt(px->arena, S_SCRATCH, K.loc);
    S->name = tok_text(px, N);
    S->name_loc = N.loc;
    S->value = E;
}
stmt(S) ::= IDENT(N) LBRACKET expr(E) RBRACKET SEMI. {
    S = ast_stmt(px->arena, S_BUFFER, N.loc);
    S->name = tok_text(px, N);
    S->name_loc = N.loc;
    S->value = E;
}

%type ifstmt {Stmt *}
ifstmt(S) ::= IF(K) expr(E) block(B). {
    S = ast_stmt(px->arena, S_IF, K.loc);
    S->value = E;
    S->body = B.list;
}
ifstmt(S) ::= IF(K) expr(E) block(B) ELSE block(O). {
    S = ast_stmt(px->arena, S_IF, K.loc);
    S->value = E;
    S->body = B.list;
    S->orelse = O.list;
    S->has_else = true;
}
ifstmt(S) ::= IF(K) expr(E) block(B) ELSE ifstmt(O). {
    S = ast_stmt(px->arena, S_IF, K.loc);
    S->value = E;
    S->body = B.list;
    ast_stmt_push(px->arena, &S->orelse, O);
    S->has_else = true;
}

%type channel {Expr *}
channel(C) ::= CHAN(K).                   { C = chan(px, K, NULL); }
channel(C) ::= CHAN(K) LPAREN expr(E) RPAREN. { C = chan(px, K, E); }
channel(C) ::= IDENT(N).                  { C = ast_expr(px->arena, E_NAME, N.loc); C->name = tok_text(px, N); }

%type args {ExprList}
args(L) ::= .                             { memset(&L, 0, sizeof L); }
args(L) ::= arglist(A).                   { L = A; }
%type arglist {ExprList}
arglist(L) ::= expr(E).                   { memset(&L, 0, sizeof L); ast_expr_push(px->arena, &L, E); }
arglist(L) ::= arglist(A) COMMA expr(E).  { L = A; ast_expr_push(px->arena, &L, E); }

%type expr {Expr *}
expr(E) ::= INT(T).                       { E = ast_expr(px->arena, E_INT, T.loc); E->ival = parse_int(px, T); }
expr(E) ::= IDENT(N).                     { E = ast_expr(px->arena, E_NAME, N.loc); E->name = tok_text(px, N); }
expr(E) ::= LPAREN expr(A) RPAREN.        { E = A; }
expr(E) ::= IDENT(N) LBRACKET expr(I) RBRACKET. {
    E = ast_expr(px->arena, E_INDEX, N.loc);
    E->name = tok_text(px, N);
    node(px, E, I, NULL);
}
expr(E) ::= IDENT(N) LBRACKET expr(I) DOTDOT expr(J) RBRACKET. {
    E = ast_expr(px->arena, E_INDEX, N.loc);
    E->name = tok_text(px, N);
    node(px, E, I, J);
}
expr(E) ::= CHAN(K) LPAREN expr(A) RPAREN. { E = chan(px, K, A); }
expr(E) ::= CHAN(K).                      { E = chan(px, K, NULL); }
expr(E) ::= MINUS(O) expr(A). [NOT]       { E = node(px, ast_expr(px->arena, E_UNARY, O.loc), A, NULL); E->op = O.kind; }
expr(E) ::= NOT(O) expr(A).               { E = node(px, ast_expr(px->arena, E_UNARY, O.loc), A, NULL); E->op = O.kind; }
expr(E) ::= expr(A) OR(O) expr(B).        { E = binary(px, O, A, B); }
expr(E) ::= expr(A) AND(O) expr(B).       { E = binary(px, O, A, B); }
expr(E) ::= expr(A) EQ(O) expr(B).        { E = binary(px, O, A, B); }
expr(E) ::= expr(A) NE(O) expr(B).        { E = binary(px, O, A, B); }
expr(E) ::= expr(A) LT(O) expr(B).        { E = binary(px, O, A, B); }
expr(E) ::= expr(A) LE(O) expr(B).        { E = binary(px, O, A, B); }
expr(E) ::= expr(A) GT(O) expr(B).        { E = binary(px, O, A, B); }
expr(E) ::= expr(A) GE(O) expr(B).        { E = binary(px, O, A, B); }
expr(E) ::= expr(A) PLUS(O) expr(B).      { E = binary(px, O, A, B); }
expr(E) ::= expr(A) MINUS(O) expr(B).     { E = binary(px, O, A, B); }
expr(E) ::= expr(A) STAR(O) expr(B).      { E = binary(px, O, A, B); }
expr(E) ::= expr(A) SLASH(O) expr(B).     { E = binary(px, O, A, B); }
expr(E) ::= expr(A) PERCENT(O) expr(B).   { E = binary(px, O, A, B); }

%code {
#include <stddef.h>

size_t lemon_parse_snapshot_size(void)
{
    return sizeof(yyParser);
}

/* Save the parser's state (its fields and the live part of its stack) into snap, before each
 * token: a syntax error is found only after Lemon has made the default reductions for the bad
 * token, and the tokens that would have fitted must be asked of the state before them. */
void lemon_parse_save(const void *engine, void *snap)
{
    const yyParser *p = engine;
    yyParser *s = snap;
    size_t live = (size_t)(p->yytos - p->yystack) + 1;
    memcpy(s, p, offsetof(yyParser, yystack));
    memcpy(s->yystack, p->yystack, live * sizeof(yyStackEntry));
    s->yytos = s->yystack + (live - 1);
    s->yystackEnd = &s->yystack[YYSTACKDEPTH - 1];
}

/* Would the parser, in its present state, accept token kind k next? Run a copy of it. */
int lemon_parse_would_accept(void *engine, int k, Token at)
{
    yyParser copy;
    memcpy(&copy, engine, sizeof copy);
    /* The copy's stack pointers must point into the copy's own stack. */
    copy.yytos = copy.yystack + (((yyParser *)engine)->yytos - ((yyParser *)engine)->yystack);
    copy.yystackEnd = &copy.yystack[YYSTACKDEPTH - 1];
    Parser *px = copy.px;
    bool failed = px->failed;
    px->failed = false;
    at.kind = k;
    lemon_parse(&copy, k, at);
    bool ok = !px->failed;
    px->failed = failed;
    return ok;
}

int lemon_parse_ntokens(void)
{
    return YYNTOKEN;
}
}
