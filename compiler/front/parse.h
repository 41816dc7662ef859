/*
 * parse.h - turning one Source into an AstFile (the Lemon parser driven by the re2c lexer).
 *
 * The tokenizer calls the parser (Lemon's push model), as SQLite does. Parsing stops at the
 * first error: one clear message beats a cascade. For a missing '}' the error at the end of
 * the file carries a note pointing at the '{' that was never closed.
 */
#ifndef CDSL_PARSE_H
#define CDSL_PARSE_H

#include <stdbool.h>

#include "ast.h"
#include "lex.h"

enum { PARSE_MAX_DEPTH = 256 };   /* nested blocks/brackets a file may open */

typedef struct Parser {
    Arena *arena;
    Diag *diag;
    AstFile *file;
    bool failed;
    bool trial;                 /* probing which tokens would fit: report nothing */
    Loc at;                     /* the token being parsed, for stack-overflow errors */
    Token prev;                 /* the token before it: a missing ';' belongs after it */
    bool have_prev;
    void *snapshot;             /* the parser's state before that token (lemon_parse_save) */
    int depth;                  /* open '{', '(' and '[' right now */
    int depth_before;           /* the same before the token being parsed */
    Loc open[PARSE_MAX_DEPTH];  /* where each of them opened */
    int open_kind[PARSE_MAX_DEPTH];
} Parser;

/* Parse src into a new AstFile in arena a; NULL after reporting errors. */
AstFile *parse_file(Arena *a, Diag *d, Source *src);

/* Called by the grammar's actions and error hooks (grammar/parser.y). */
void parse_syntax_error(Parser *px, Token tok, void *engine);
long long parse_int(Parser *px, Token tok);

#endif
