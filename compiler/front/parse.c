/*
 * parse.c - drives the Lemon parser with tokens from the re2c lexer, one file at a time.
 *
 * The loop is SQLite's: fetch a token, hand it to the parser, stop at the first error. Around
 * it sit the two things a good message needs that the grammar cannot give: the bracket stack
 * (so that a missing '}' at the end of the file names the '{' it should close, and absurd
 * nesting is refused before it can exhaust any stack), and, for a syntax error, the list of
 * tokens that would have fit, found by running a copy of the parser on each candidate.
 */
#include "parse.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parser.h"

void lemon_parseInit(void *engine, Parser *px);
void lemon_parse(void *engine, int kind, Token tok);
void lemon_parseFinalize(void *engine);
int lemon_parse_would_accept(void *engine, int kind, Token at);
int lemon_parse_ntokens(void);
size_t lemon_parse_snapshot_size(void);
void lemon_parse_save(const void *engine, void *snap);

enum { MAX_EXPECTED = 4 };

static const char *closer_of(int open_kind)
{
    switch (open_kind) {
    case TK_LBRACE: return "'}'";
    case TK_LPAREN: return "')'";
    default: return "']'";
    }
}

/* How a token reads after "after": "')'", "identifier 'x'", "integer '3'". */
static const char *token_words(Token t, char *buf, size_t size)
{
    if (t.kind == TK_IDENT || t.kind == TK_INT)
        snprintf(buf, size, "%s '%.*s'", lex_spelling(t.kind), t.len > 24 ? 24 : t.len, t.start);
    else if (t.kind == TK_CHAN)     /* a keyword, as the others are named: by its spelling */
        snprintf(buf, size, "'%.*s'", t.len > 24 ? 24 : t.len, t.start);
    else
        snprintf(buf, size, "%s", lex_spelling(t.kind));
    return buf;
}

/* Just after the previous token: where a missing ';' or ')' belongs (the next token may be on
 * a later line). The bad token itself when there is none. */
static Loc after_prev(const Parser *px, Token tok)
{
    if (!px->have_prev)
        return tok.loc;
    Loc at = px->prev.loc;
    at.col += px->prev.len;
    return at;
}

/* The token that is missing, when one stands out among those that would fit: a ';' whenever
 * one fits (the cproc and chibicc "expected ';' after ..."), else the closer of the innermost
 * open bracket or a '{' when it fits and the list of what fits is too long to be of use (or
 * holds only it). 0: none. */
static int missing_token(const Parser *px, const bool *fits, int nexp)
{
    if (fits[TK_SEMI])
        return TK_SEMI;
    int closer = 0, d = px->depth_before;
    if (d > 0)
        closer = px->open_kind[d - 1] == TK_LBRACE ? TK_RBRACE : px->open_kind[d - 1] == TK_LPAREN ? TK_RPAREN : TK_RBRACKET;
    bool listable = nexp > 1 && nexp <= MAX_EXPECTED;
    if (closer && fits[closer] && !listable)
        return closer;
    if (fits[TK_LBRACE] && !listable)
        return TK_LBRACE;
    return 0;
}

/* "expected ';' after ')'" at the end of the previous token (or "expected '}' at end of
 * file"), with a note at the bracket a missing closer should match. */
static void report_missing(Parser *px, Token tok, int missing)
{
    char prev[64];
    Loc at = after_prev(px, tok);
    bool closer = missing == TK_RBRACE || missing == TK_RPAREN || missing == TK_RBRACKET;
    if (tok.kind == LEX_EOF && missing == TK_RBRACE)
        diag_error(px->diag, at, "expected %s at end of file", lex_spelling(missing));
    else if (px->have_prev)
        diag_error(px->diag, at, "expected %s after %s", lex_spelling(missing), token_words(px->prev, prev, sizeof prev));
    else
        diag_error(px->diag, at, "expected %s", lex_spelling(missing));
    int d = px->depth_before;
    if (closer && d > 0)
        diag_note(px->diag, px->open[d - 1], "to close this %s, a %s is missing", lex_spelling(px->open_kind[d - 1]),
                  closer_of(px->open_kind[d - 1]));
}

/* A comparison right after an operand where none fits: it follows another comparison (they
 * are non-associative, so 1 < 2 < 3 is refused rather than read as (1 < 2) < 3). */
static bool chained_comparison(const Parser *px, Token tok)
{
    bool cmp = tok.kind == TK_LT || tok.kind == TK_LE || tok.kind == TK_GT || tok.kind == TK_GE || tok.kind == TK_EQ ||
               tok.kind == TK_NE;
    int p = px->have_prev ? px->prev.kind : 0;
    return cmp && (p == TK_IDENT || p == TK_INT || p == TK_RPAREN || p == TK_RBRACKET);
}

/* A syntax error at tok: the token that is missing when one stands out; otherwise
 * "unexpected ')'; expected ';'" when few tokens fit, else just "unexpected ')'". */
void parse_syntax_error(Parser *px, Token tok, void *engine)
{
    px->failed = true;
    if (px->trial)
        return;
    int expected[MAX_EXPECTED], nexp = 0;
    bool fits[256] = {false};
    px->trial = true;
    void *before = px->snapshot ? px->snapshot : engine;   /* the state before this token */
    for (int k = 1; k < lemon_parse_ntokens() && k < 256; k++)
        if (lemon_parse_would_accept(before, k, tok)) {
            if (nexp < MAX_EXPECTED)
                expected[nexp] = k;
            fits[k] = true;
            nexp++;
        }
    px->trial = false;
    if (chained_comparison(px, tok)) {
        diag_error(px->diag, tok.loc, "unexpected %s: comparisons cannot be chained (write a < b && b < c)",
                   lex_spelling(tok.kind));
        return;
    }
    int missing = missing_token(px, fits, nexp);
    if (missing) {
        report_missing(px, tok, missing);
        return;
    }
    char what[64], words[64];
    if (tok.kind == LEX_EOF)
        snprintf(what, sizeof what, "unexpected end of file");
    else
        snprintf(what, sizeof what, "unexpected %s", token_words(tok, words, sizeof words));
    if (nexp >= 1 && nexp <= MAX_EXPECTED) {
        char list[160] = "";
        for (int i = 0; i < nexp; i++) {
            strcat(list, i == 0 ? "" : i == nexp - 1 ? " or " : ", ");
            strcat(list, lex_spelling(expected[i]));
        }
        diag_error(px->diag, tok.loc, "%s; expected %s", what, list);
    } else {
        diag_error(px->diag, tok.loc, "%s", what);
    }
    if (tok.kind == LEX_EOF && px->depth > 0)
        diag_note(px->diag, px->open[px->depth - 1], "to close this %s, a %s is missing",
                  lex_spelling(px->open_kind[px->depth - 1]), closer_of(px->open_kind[px->depth - 1]));
}

/* Decimal or 0x hex, at most 2^62 so that sums and products of two literals cannot overflow
 * before eval.c's checked arithmetic sees them. */
long long parse_int(Parser *px, Token tok)
{
    const long long max = (long long)1 << 62;
    int base = tok.len > 2 && tok.start[0] == '0' && (tok.start[1] == 'x' || tok.start[1] == 'X') ? 16 : 10;
    long long v = 0;
    for (int i = base == 16 ? 2 : 0; i < tok.len; i++) {
        int c = tok.start[i], d = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
        if (v > (max - d) / base) {
            if (!px->trial)
                diag_error(px->diag, tok.loc, "integer literal too large (the limit is 2^62)");
            px->failed = true;
            return 0;
        }
        v = v * base + d;
    }
    return v;
}

/* Keep the bracket stack; false (after an error) when nesting goes past the limit. */
static bool track_brackets(Parser *px, const Token *t)
{
    switch (t->kind) {
    case TK_LBRACE:
    case TK_LPAREN:
    case TK_LBRACKET:
        if (px->depth == PARSE_MAX_DEPTH) {
            diag_error(px->diag, t->loc, "nested too deeply: more than %d open brackets", PARSE_MAX_DEPTH);
            px->failed = true;
            return false;
        }
        px->open[px->depth] = t->loc;
        px->open_kind[px->depth++] = t->kind;
        return true;
    case TK_RBRACE:
    case TK_RPAREN:
    case TK_RBRACKET:
        if (px->depth > 0)
            px->depth--;
        return true;
    default:
        return true;
    }
}

AstFile *parse_file(Arena *a, Diag *d, Source *src)
{
    Parser *px = ARENA_NEW(a, Parser);
    px->arena = a;
    px->diag = d;
    px->file = ARENA_NEW(a, AstFile);
    px->file->src = src;
    /* The engine lives in the arena too: running out of memory in a grammar action unwinds
     * (arena.h) past this function, and must leave nothing behind. */
    void *engine = arena_alloc(a, lemon_parse_snapshot_size());
    lemon_parseInit(engine, px);
    px->snapshot = arena_alloc(a, lemon_parse_snapshot_size());
    Lexer lx;
    lex_init(&lx, src, d);
    Token t;
    int kind;
    do {
        kind = lex_next(&lx, &t);
        px->depth_before = px->depth;
        if (kind == LEX_ERROR || !track_brackets(px, &t)) {
            px->failed = true;
            break;
        }
        px->at = t.loc;
        lemon_parse_save(engine, px->snapshot);
        lemon_parse(engine, kind, t);
        px->prev = t;
        px->have_prev = true;
    } while (kind != LEX_EOF && !px->failed);
    lemon_parseFinalize(engine);
    return px->failed ? NULL : px->file;
}
