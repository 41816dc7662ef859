/*
 * lexer.re - the .cdsl lexer (re2c 3.0; generated into build/gen/lexer.c).
 *
 * The whole file is in memory with a NUL appended; re2c runs with bounds checks on the
 * sentinel (re2c:eof), so a NUL inside the file is an ordinary bad byte, not the end. Lines
 * are counted as newlines are crossed (also inside block comments), so every token carries
 * its line and column (a byte column, 1-based). Keywords are matched as literal rules ahead
 * of the identifier rule; re2c prefers the longest match and then the first rule. The channels'
 * keywords come from their table (compiler/ir/chans.def): an identifier that is one is a
 * channel token, so a new channel needs no rule here.
 */
#include <stdio.h>

#include "chans.h"
#include "lex.h"
#include "parser.h"

/*!rules:re2c:cfg
    re2c:define:YYCTYPE = "unsigned char";
    re2c:define:YYCURSOR = "l->cur";
    re2c:define:YYLIMIT = "l->lim";
    re2c:define:YYMARKER = "l->mar";
    re2c:yyfill:enable = 0;
    re2c:eof = 0;
*/

void lex_init(Lexer *l, const Source *src, Diag *d)
{
    l->src = src;
    l->diag = d;
    l->cur = (const unsigned char *)src->text;
    l->lim = l->cur + src->len;
    l->bol = l->cur;
    l->mar = l->tok = l->cur;
    l->line = 1;
}

static Loc here(const Lexer *l, const unsigned char *at)
{
    return (Loc){l->src, l->line, (int)(at - l->bol) + 1};
}

static void newline(Lexer *l, const unsigned char *after)
{
    l->line++;
    l->bol = after;
}

/* A block comment: skip to its end, counting lines; an error where it began if it never ends. */
static int skip_block_comment(Lexer *l)
{
    Loc open = here(l, l->tok);
    for (;;) {
        /*!local:re2c
            !use:cfg;
            "*" "/" { return 0; }
            "\n"    { newline(l, l->cur); continue; }
            $       { diag_error(l->diag, open, "unterminated comment");
                      return LEX_ERROR; }
            *       { continue; }
        */
    }
}

static int bad_byte(Lexer *l)
{
    unsigned c = l->tok[0];
    Loc at = here(l, l->tok);
    if (c >= 0x20 && c < 0x7f)
        diag_error(l->diag, at, "unexpected character '%c'", (int)c);
    else if (c >= 0x80)
        diag_error(l->diag, at, "unexpected byte 0x%02x (non-ASCII text can appear only in comments)", c);
    else
        diag_error(l->diag, at, "unexpected byte 0x%02x", c);
    return LEX_ERROR;
}

static int token(Lexer *l, Token *t, int kind)
{
    t->kind = kind;
    t->start = (const char *)l->tok;
    t->len = (int)(l->cur - l->tok);
    t->loc = here(l, l->tok);
    return kind;
}

/* An identifier, or a channel's keyword (chans.def). */
static int ident_kind(const Lexer *l)
{
    return chan_by_keyword((const char *)l->tok, (size_t)(l->cur - l->tok)) ? TK_CHAN : TK_IDENT;
}

int lex_next(Lexer *l, Token *t)
{
    for (;;) {
        l->tok = l->cur;
        /*!local:re2c
            !use:cfg;
            ident = [A-Za-z_][A-Za-z0-9_]*;
            $                   { token(l, t, LEX_EOF); return LEX_EOF; }
            [ \t\r\f\v]+        { continue; }
            "\n"                { newline(l, l->cur); continue; }
            "//" [^\n\x00]*     { continue; }
            "/" "*"             { if (skip_block_comment(l) < 0) return LEX_ERROR; continue; }

            "import"            { return token(l, t, TK_IMPORT); }
            "def"               { return token(l, t, TK_DEF); }
            "program"           { return token(l, t, TK_PROGRAM); }
            "implements"        { return token(l, t, TK_IMPLEMENTS); }
            "scratch"           { return token(l, t, TK_SCRATCH); }
            "let"               { return token(l, t, TK_LET); }
            "for"               { return token(l, t, TK_FOR); }
            "in"                { return token(l, t, TK_IN); }
            "if"                { return token(l, t, TK_IF); }
            "else"              { return token(l, t, TK_ELSE); }
            ident               { return token(l, t, ident_kind(l)); }

            "0" [xX] [0-9a-fA-F]+ { return token(l, t, TK_INT); }
            [0-9]+              { return token(l, t, TK_INT); }
            [0-9]+ [A-Za-z_][A-Za-z0-9_]* {
                diag_error(l->diag, here(l, l->tok), "malformed number '%.*s'",
                           (int)(l->cur - l->tok) > 40 ? 40 : (int)(l->cur - l->tok), (const char *)l->tok);
                return LEX_ERROR;
            }
            ["] [^"\n\x00]* ["]  { return token(l, t, TK_STRING); }
            ["]                 { diag_error(l->diag, here(l, l->tok), "unterminated string");
                                  return LEX_ERROR; }

            ".."                { return token(l, t, TK_DOTDOT); }
            "."                 { return token(l, t, TK_DOT); }
            ","                 { return token(l, t, TK_COMMA); }
            ";"                 { return token(l, t, TK_SEMI); }
            "("                 { return token(l, t, TK_LPAREN); }
            ")"                 { return token(l, t, TK_RPAREN); }
            "["                 { return token(l, t, TK_LBRACKET); }
            "]"                 { return token(l, t, TK_RBRACKET); }
            "{"                 { return token(l, t, TK_LBRACE); }
            "}"                 { return token(l, t, TK_RBRACE); }
            "="                 { return token(l, t, TK_ASSIGN); }
            "=="                { return token(l, t, TK_EQ); }
            "!="                { return token(l, t, TK_NE); }
            "<"                 { return token(l, t, TK_LT); }
            "<="                { return token(l, t, TK_LE); }
            ">"                 { return token(l, t, TK_GT); }
            ">="                { return token(l, t, TK_GE); }
            "&&"                { return token(l, t, TK_AND); }
            "||"                { return token(l, t, TK_OR); }
            "!"                 { return token(l, t, TK_NOT); }
            "+"                 { return token(l, t, TK_PLUS); }
            "-"                 { return token(l, t, TK_MINUS); }
            "*"                 { return token(l, t, TK_STAR); }
            "/"                 { return token(l, t, TK_SLASH); }
            "%"                 { return token(l, t, TK_PERCENT); }
            *                   { return bad_byte(l); }
        */
    }
}

const char *lex_spelling(int kind)
{
    switch (kind) {
    case LEX_EOF: return "end of file";
    case TK_IMPORT: return "'import'";
    case TK_DEF: return "'def'";
    case TK_PROGRAM: return "'program'";
    case TK_IMPLEMENTS: return "'implements'";
    case TK_SCRATCH: return "'scratch'";
    case TK_LET: return "'let'";
    case TK_FOR: return "'for'";
    case TK_IN: return "'in'";
    case TK_IF: return "'if'";
    case TK_ELSE: return "'else'";
    case TK_CHAN: return "channel";
    case TK_IDENT: return "identifier";
    case TK_INT: return "integer";
    case TK_STRING: return "string";
    case TK_DOTDOT: return "'..'";
    case TK_DOT: return "'.'";
    case TK_COMMA: return "','";
    case TK_SEMI: return "';'";
    case TK_LPAREN: return "'('";
    case TK_RPAREN: return "')'";
    case TK_LBRACKET: return "'['";
    case TK_RBRACKET: return "']'";
    case TK_LBRACE: return "'{'";
    case TK_RBRACE: return "'}'";
    case TK_ASSIGN: return "'='";
    case TK_EQ: return "'=='";
    case TK_NE: return "'!='";
    case TK_LT: return "'<'";
    case TK_LE: return "'<='";
    case TK_GT: return "'>'";
    case TK_GE: return "'>='";
    case TK_AND: return "'&&'";
    case TK_OR: return "'||'";
    case TK_NOT: return "'!'";
    case TK_PLUS: return "'+'";
    case TK_MINUS: return "'-'";
    case TK_STAR: return "'*'";
    case TK_SLASH: return "'/'";
    case TK_PERCENT: return "'%'";
    }
    return "token";
}
