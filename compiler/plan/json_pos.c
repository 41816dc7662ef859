/*
 * json_pos.c - jansson's tree of a JSON text, and where each of its values starts.
 *
 * The second pass (record_values) walks the accepted text once with a stack of containers:
 * in an object it alternates key and value, and only values are recorded, in document order.
 * The pre-order walk of the tree (number_values) then pairs the k-th value with the k-th
 * offset. Nesting is bounded by jansson (2048 levels), so the walk's recursion and the
 * container stack are too. Offsets become line and column through the Source's line table.
 */
#include "json_pos.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { JSON_MAX_DEPTH = 2048 + 2 };

struct JsonPos {
    const Source *src;
    json_t *root;
    size_t *line_start;   /* byte offset of each line's first byte */
    int nlines;
    size_t *offsets;      /* value starts, in document order */
    size_t noffsets;
    const json_t **keys;  /* hash table: value -> index into offsets */
    size_t *vals;
    size_t mask;
};

/* ---- Syntax errors -------------------------------------------------------------------------- */

/* For a syntax error, once: a walk from the start. */
static Loc loc_of_offset(const Source *src, size_t off)
{
    int line = 1;
    size_t start = 0;
    for (size_t i = 0; i < off && i < src->len; i++)
        if (src->text[i] == '\n') {
            line++;
            start = i + 1;
        }
    return (Loc){src, line, (int)(off - start) + 1};
}

static void index_lines(JsonPos *jp, Arena *a)
{
    const Source *src = jp->src;
    int n = 1;
    for (size_t i = 0; i < src->len; i++)
        n += src->text[i] == '\n';
    jp->line_start = ARENA_ARRAY(a, size_t, (size_t)n);
    jp->nlines = n;
    int k = 1;
    for (size_t i = 0; i < src->len; i++)
        if (src->text[i] == '\n')
            jp->line_start[k++] = i + 1;
}

static Loc loc_at(const JsonPos *jp, size_t off)
{
    int lo = 0, hi = jp->nlines - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (jp->line_start[mid] <= off)
            lo = mid;
        else
            hi = mid - 1;
    }
    return (Loc){jp->src, lo + 1, (int)(off - jp->line_start[lo]) + 1};
}

/* jansson's position is just past the token it quotes ("... near 'tru'"): step back over it. */
static size_t token_start(const Source *src, const json_error_t *e)
{
    size_t end = e->position > 0 ? (size_t)e->position : 0;
    if (end > src->len)
        end = src->len;
    const char *near = strstr(e->text, "near '");
    if (near) {
        near += 6;
        const char *q = strrchr(near, '\'');
        size_t n = q ? (size_t)(q - near) : 0;
        if (n && n <= end && !memcmp(src->text + end - n, near, n))
            return end - n;
    }
    return end > 0 ? end - 1 : 0;
}

/* Bytes JSON never allows raw, which jansson either passes over (NUL between tokens) or
 * reports at the start of the string that holds them: NUL anywhere, a control byte outside
 * strings other than the four whitespace bytes, any control byte inside one. The first is an
 * error at its own line and column. Strings are told apart as JSON does (a quote opens, a
 * backslash takes the next byte, a quote closes), which is exact up to the first error. */
static bool refuse_raw_bytes(Diag *d, const Source *src)
{
    const unsigned char *t = (const unsigned char *)src->text;
    bool in_string = false;
    for (size_t i = 0; i < src->len; i++) {
        unsigned char c = t[i];
        if (c == 0) {
            diag_error(d, loc_of_offset(src, i), "NUL byte in JSON");
            return false;
        }
        if (c < 0x20 && in_string) {
            diag_error(d, loc_of_offset(src, i), "control byte 0x%02x in a JSON string (write it escaped, as \\u%04x)",
                       c, c);
            return false;
        }
        if (c < 0x20 && c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            diag_error(d, loc_of_offset(src, i), "unexpected byte 0x%02x in JSON", c);
            return false;
        }
        if (c == '"')
            in_string = !in_string;
        else if (c == '\\' && in_string && i + 1 < src->len && t[i + 1] >= 0x20)
            i++;
    }
    return true;
}

/* ---- Where values start --------------------------------------------------------------------- */

static size_t skip_space(const char *t, size_t i, size_t n)
{
    while (i < n && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r'))
        i++;
    return i;
}

static size_t skip_string(const char *t, size_t i, size_t n)
{
    for (i++; i < n && t[i] != '"'; i++)
        if (t[i] == '\\')
            i++;
    return i + 1;
}

/* A number or a literal (true, false, null): the bytes they are made of, and at least one, so
 * that the scan moves on whatever byte it meets. */
static bool atom_byte(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '+' || c == '-' ||
           c == '.';
}

static size_t skip_atom(const char *t, size_t i, size_t n)
{
    do
        i++;
    while (i < n && atom_byte(t[i]));
    return i;
}

/* The offsets of every value, in document order. The text is valid JSON. */
static void record_values(JsonPos *jp, Arena *a)
{
    const char *t = jp->src->text;
    size_t n = jp->src->len, cap = 64, count = 0;
    size_t *out = ARENA_ARRAY(a, size_t, cap);
    char stack[JSON_MAX_DEPTH];   /* '{' (expecting a key next), ':' (a value), '[' */
    int depth = 0;
    for (size_t i = skip_space(t, 0, n); i < n; i = skip_space(t, i, n)) {
        char c = t[i];
        if (c == ',' || c == ':') {
            if (depth > 0 && stack[depth - 1] != '[')
                stack[depth - 1] = c == ',' ? '{' : ':';
            i++;
            continue;
        }
        if (c == '}' || c == ']') {
            depth -= depth > 0;
            i++;
            continue;
        }
        if (depth > 0 && stack[depth - 1] == '{') { /* a key */
            i = skip_string(t, i, n);
            continue;
        }
        if (count == cap) {
            out = arena_grow(a, out, count, cap * 2, sizeof *out);
            cap *= 2;
        }
        out[count++] = i;
        if ((c == '{' || c == '[') && depth < JSON_MAX_DEPTH) {
            stack[depth++] = c;
            i++;
        } else if (c == '"') {
            i = skip_string(t, i, n);
        } else {
            i = skip_atom(t, i, n);
        }
    }
    jp->offsets = out;
    jp->noffsets = count;
}

static size_t slot_of(const JsonPos *jp, const json_t *v)
{
    size_t i = (size_t)(((uintptr_t)v >> 4) * 0x9E3779B97F4A7C15ull) & jp->mask;
    while (jp->keys[i] && jp->keys[i] != v)
        i = (i + 1) & jp->mask;
    return i;
}

/* Pre-order, in document order: the k-th value met is the k-th offset. */
static void number_values(JsonPos *jp, json_t *v, size_t *k)
{
    size_t i = slot_of(jp, v);
    jp->keys[i] = v;
    jp->vals[i] = *k < jp->noffsets ? jp->offsets[*k] : 0;
    ++*k;
    if (json_is_object(v)) {
        const char *key;
        json_t *x;
        json_object_foreach(v, key, x)
            number_values(jp, x, k);
    } else if (json_is_array(v)) {
        size_t j;
        json_t *x;
        json_array_foreach(v, j, x)
            number_values(jp, x, k);
    }
}

/* Positions for the accepted tree. Runs under a trap: out of memory frees the tree first. */
static void index_values(JsonPos *jp, Arena *a)
{
    ArenaTrap trap;
    arena_trap_push(a, &trap);
    if (setjmp(trap.env)) {
        json_decref(jp->root);
        jp->root = NULL;
        arena_rethrow(a, trap.asked);
    }
    index_lines(jp, a);
    record_values(jp, a);
    size_t cap = 16;
    while (cap < 2 * jp->noffsets + 2)
        cap *= 2;
    jp->keys = ARENA_ARRAY(a, const json_t *, cap);
    jp->vals = ARENA_ARRAY(a, size_t, cap);
    jp->mask = cap - 1;
    size_t k = 0;
    number_values(jp, jp->root, &k);
    arena_trap_pop(a, &trap);
}

JsonPos *json_pos_parse(Arena *a, Diag *d, const Source *src)
{
    JsonPos *jp = ARENA_NEW(a, JsonPos);
    jp->src = src;
    Loc top = {src, 1, 1};
    if (src->len > JSON_POS_MAX_BYTES) {
        diag_error(d, top, "the plan is %zu bytes; plans are read up to %d MiB", src->len,
                   JSON_POS_MAX_BYTES >> 20);
        return NULL;
    }
    if (!refuse_raw_bytes(d, src))
        return NULL;
    json_error_t e;
    jp->root = json_loadb(src->text, src->len, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &e);
    if (!jp->root) {
        diag_error(d, loc_of_offset(src, token_start(src, &e)), "malformed JSON: %s", e.text);
        return NULL;
    }
    index_values(jp, a);
    return jp;
}

void json_pos_free(JsonPos *jp)
{
    if (jp && jp->root) {
        json_decref(jp->root);
        jp->root = NULL;
    }
}

json_t *json_pos_root(const JsonPos *jp)
{
    return jp->root;
}

Loc json_pos_loc(const JsonPos *jp, const json_t *v)
{
    size_t off = 0;
    if (v) {
        size_t i = slot_of(jp, v);
        if (jp->keys[i] == v)
            off = jp->vals[i];
    }
    return loc_at(jp, off);
}

bool json_pos_int(const json_t *v, long long lo, long long hi, long long *out)
{
    if (!json_is_number(v))
        return false;
    double x = json_number_value(v);
    if (!isfinite(x) || x != floor(x) || x < (double)lo || x > (double)hi)
        return false;
    *out = (long long)x;
    return true;
}
