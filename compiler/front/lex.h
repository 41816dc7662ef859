/*
 * lex.h - tokens and the lexer over one Source (grammar/lexer.re).
 *
 * A Token is a slice of the source plus its position; token kinds are Lemon's TK_ codes from
 * build/gen/parser.h, 0 being the end of input. The lexer reports bad bytes, unterminated
 * comments and strings itself (through the Diag) and returns LEX_ERROR; the parser driver
 * then stops, so one bad byte gives one error, not a cascade.
 */
#ifndef CDSL_LEX_H
#define CDSL_LEX_H

#include "diag.h"

enum { LEX_EOF = 0, LEX_ERROR = -1 };

typedef struct Token {
    int kind;
    const char *start;
    int len;
    Loc loc;
} Token;

typedef struct Lexer {
    const Source *src;
    Diag *diag;
    const unsigned char *cur, *lim, *mar, *tok;
    const unsigned char *bol;   /* first byte of the current line */
    int line;
} Lexer;

void lex_init(Lexer *l, const Source *src, Diag *d);
/* The next token into *t; returns its kind, LEX_EOF or LEX_ERROR. */
int lex_next(Lexer *l, Token *t);
/* How a token kind reads in messages: "'{'", "identifier", "end of file". */
const char *lex_spelling(int kind);

#endif
