/*
 * escape.h - user text made safe to print on a terminal (escape.c says what is escaped).
 */
#ifndef CDSL_ESCAPE_H
#define CDSL_ESCAPE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum { ESC_MAX = 10 };   /* the longest form: \U000e0041 */

/* The printable form of the character at text (len bytes left, len >= 1) into out; returns the
 * bytes it took. *width is the columns the form takes on a terminal (1 for a character shown
 * as itself). A tab stays a tab when keep_tab is set (quoted source lines). */
size_t esc_char(const char *text, size_t len, bool keep_tab, char out[ESC_MAX + 1], int *width);
/* len bytes of s, every character in its printable form. */
void esc_write(FILE *out, const char *s, size_t len);
/* The same for a NUL-terminated s (a name in a dump). */
void esc_puts(FILE *out, const char *s);
/* printf, then every character of the result in its printable form. */
void esc_vprint(FILE *out, const char *fmt, va_list ap);

#endif
