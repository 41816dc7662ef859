/*
 * ast.h - the syntax tree of .cdsl files, as the parser builds it.
 *
 * Every node keeps the Loc of the token that names it (an operator, a keyword, the name of
 * a call) so that every later message can point at it. Lists are arrays built by the parser
 * and kept in the compilation's arena. Names are resolved by resolve.c, which fills in the
 * `def` a call refers to; everything else about meaning is left to eval.c.
 */
#ifndef CDSL_AST_H
#define CDSL_AST_H

#include <stdbool.h>
#include <stdio.h>

#include "arena.h"
#include "diag.h"

enum { AST_MAX_DEPTH = 1000 };  /* deeper expressions are refused: later phases recurse */

typedef struct Expr Expr;
typedef struct Stmt Stmt;
typedef struct Decl Decl;

typedef enum ExprKind {
    E_INT,      /* ival */
    E_NAME,     /* name: a let, loop variable, parameter, rank, nranks, buffer, memory order */
    E_UNARY,    /* op ('-' or '!'), lhs */
    E_BINARY,   /* op (a TK_ code), lhs, rhs */
    E_INDEX,    /* name[lhs] or name[lhs .. rhs]: a chunk reference */
    E_CHAN,     /* a channel: name is its keyword (chans.def), lhs its rank when written
                   (peer(lhs)), else NULL (switch) */
} ExprKind;

struct Expr {
    ExprKind kind;
    Loc loc;
    int depth;          /* height of this subtree, bounded by the parser (AST_MAX_DEPTH) */
    int op;
    long long ival;
    const char *name;
    Expr *lhs, *rhs;
};

typedef struct ExprList {
    Expr **items;
    int n, cap;
} ExprList;

typedef struct StmtList {
    Stmt **items;
    int n, cap;
} StmtList;

typedef enum StmtKind {
    S_LET,      /* let name = value; */
    S_FOR,      /* for name in lo .. hi { body } */
    S_IF,       /* if cond { body } else { orelse } (orelse may hold one S_IF: else if) */
    S_CALL,     /* name(args); a builtin (copy, reduce) or a def */
    S_METHOD,   /* channel.name(args); channel is an Expr (E_CHAN, or E_NAME) */
    S_SCRATCH,  /* scratch name[size]; */
    S_BUFFER,   /* input[size]; or output[size]; in a custom program */
} StmtKind;

struct Stmt {
    StmtKind kind;
    Loc loc;
    const char *name;
    Loc name_loc;
    Expr *value;        /* let value; for lo; if cond; scratch/buffer size */
    Expr *hi;           /* for hi */
    Expr *channel;      /* S_METHOD */
    ExprList args;
    StmtList body, orelse;
    bool has_else;
    Decl *target;       /* S_CALL to a def, filled by resolve.c */
};

typedef struct Param {
    const char *name;
    Loc loc;
    Expr *init;         /* program parameters: the default; NULL for def parameters */
} Param;

typedef enum DeclKind { D_IMPORT, D_DEF, D_PROGRAM } DeclKind;

struct Decl {
    DeclKind kind;
    Loc loc;
    const char *name;   /* def or program name; import path */
    Loc name_loc;
    Param *params;
    int nparams, cap;
    const char *collective;
    Loc coll_loc;
    StmtList body;
    Loc close;          /* the closing brace */
    int walk;           /* resolve.c's depth-first state: 0 new, 1 being walked, 2 done */
    bool reachable;     /* a def the chosen program calls, directly or not */
};

/* One parsed file. */
typedef struct AstFile {
    Source *src;
    Decl **decls;
    int ndecls, cap;
} AstFile;

/* Every file of one compilation: the main file first, then imports in load order. */
typedef struct AstUnit {
    AstFile **files;
    int nfiles;
} AstUnit;

Expr *ast_expr(Arena *a, ExprKind k, Loc loc);
Stmt *ast_stmt(Arena *a, StmtKind k, Loc loc);
Decl *ast_decl(Arena *a, DeclKind k, Loc loc);
void ast_expr_push(Arena *a, ExprList *l, Expr *e);
void ast_stmt_push(Arena *a, StmtList *l, Stmt *s);
void ast_param_push(Arena *a, Decl *d, Param p);
void ast_decl_push(Arena *a, AstFile *f, Decl *d);
/* The tree as indented text with positions, for --dump-ast and golden tests. */
void ast_dump(const AstUnit *u, FILE *out);

#endif
