/*
 * json_pos.h - JSON text to a jansson tree, with the source position of every value.
 *
 * jansson (Debian's libjansson-dev) parses; it knows where a syntax error is, but not where a
 * value it accepted came from. So after it has accepted the text, a light second pass over the
 * same bytes records, in document order, where every value starts (skipping whitespace,
 * strings with their escapes, number and literal runs, and object keys; the text is known to
 * be valid, so it validates nothing). A pre-order walk of the parsed tree meets the values in
 * the same order (objects iterate in document order, and JSON_REJECT_DUPLICATES means none
 * was dropped), so the k-th value of the walk is the k-th recorded offset; a hash table maps
 * each value to it. docs/mscclpp.md §4 says why jansson and these flags.
 *
 * Numbers are decoded as doubles (JSON_DECODE_INT_AS_REAL: MSCCL++ writes 2^64 - 1, which
 * jansson's integers cannot hold); json_pos_int() takes the integral ones back.
 */
#ifndef CDSL_JSON_POS_H
#define CDSL_JSON_POS_H

#include <stdbool.h>

#include <jansson.h>

#include "arena.h"
#include "diag.h"

enum {
    JSON_POS_MAX_BYTES = 16 * 1024 * 1024, /* larger files are refused before parsing */
};

typedef struct JsonPos JsonPos;

/* Parses src (its whole text). NULL after a diag_error at the position of a syntax error (or
   of anything jansson refuses: duplicate keys, bad UTF-8, nesting deeper than 2048), or at
   the first byte JSON never allows raw (a NUL anywhere, a control byte in a string, a control
   byte other than whitespace between tokens).
   The tree lives until json_pos_free; its positions are in the arena. */
JsonPos *json_pos_parse(Arena *a, Diag *d, const Source *src);
void json_pos_free(JsonPos *jp);
json_t *json_pos_root(const JsonPos *jp);
/* Where v starts (its first byte: '{', '[', '"', a digit, ...); the root's position for a
   value that is not in the tree. */
Loc json_pos_loc(const JsonPos *jp, const json_t *v);
/* v as an int in [lo, hi]: false when v is not a number, not integral, or out of range. */
bool json_pos_int(const json_t *v, long long lo, long long hi, long long *out);

#endif
