/*
 * suggest.c - the closest known name to a misspelt one, for "did you mean" (suggest.h).
 *
 * Names are short (identifiers, operations, collectives), so the distance is the textbook
 * dynamic programme over two rows of the matrix plus the one before (for swaps), cut off as
 * soon as every entry of a row exceeds the largest distance that could still be suggested.
 */
#include "suggest.h"

#include <stdio.h>
#include <string.h>

enum { SUGGEST_MAX_LEN = 64 };

static int min3(int a, int b, int c)
{
    int m = a < b ? a : b;
    return m < c ? m : c;
}

/* The optimal-string-alignment distance of a and b, or limit + 1 once it must exceed limit. */
static int distance(const char *a, const char *b, int limit)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > SUGGEST_MAX_LEN || lb > SUGGEST_MAX_LEN || la - lb > limit || lb - la > limit)
        return limit + 1;
    int rows[3][SUGGEST_MAX_LEN + 1];
    int *before = rows[0], *prev = rows[1], *cur = rows[2];
    for (int j = 0; j <= lb; j++)
        prev[j] = j;
    for (int i = 1; i <= la; i++) {
        cur[0] = i;
        int best = cur[0];
        for (int j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1];
            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && before[j - 2] + 1 < cur[j])
                cur[j] = before[j - 2] + 1;
            if (cur[j] < best)
                best = cur[j];
        }
        if (best > limit)
            return limit + 1;
        int *t = before;
        before = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

const char *suggest_closest(const char *typo, const char *const *candidates, int n)
{
    const char *best = NULL;
    int best_d = 0, ties = 0;
    for (int i = 0; i < n; i++) {
        const char *c = candidates[i];
        if (!c || !strcmp(c, typo) || (best && !strcmp(c, best)))
            continue;
        int longer = (int)(strlen(c) > strlen(typo) ? strlen(c) : strlen(typo));
        if (longer < 3)
            continue;   /* one or two letters: any name is "close"; suggesting one is noise */
        int limit = longer / 3;
        int d = distance(typo, c, limit);
        if (d > limit)
            continue;
        if (!best || d < best_d) {
            best = c;
            best_d = d;
            ties = 0;
        } else if (d == best_d) {
            ties++;
        }
    }
    return ties ? NULL : best;
}

const char *suggest_text(const char *typo, const char *const *candidates, int n, char *buf, int size)
{
    const char *s = suggest_closest(typo, candidates, n);
    if (!s)
        return "";
    snprintf(buf, (size_t)size, "; did you mean '%s'?", s);
    return buf;
}
