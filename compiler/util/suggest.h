/*
 * suggest.h - "did you mean 'store'?": the known name closest to a misspelt one.
 *
 * Closeness is the edit distance of optimal string alignment (Damerau-Levenshtein without
 * repeated edits of one substring): inserting, deleting or replacing a character, or swapping
 * two neighbours, costs one. A name is suggested only when it is a likely typo: its distance
 * is at most a third of the longer name's length (names of one or two letters get none), it
 * is the only candidate at that distance, and it is not the misspelt name itself.
 */
#ifndef CDSL_SUGGEST_H
#define CDSL_SUGGEST_H

/* The candidate to suggest for typo, or NULL. */
const char *suggest_closest(const char *typo, const char *const *candidates, int n);

/* "; did you mean 'x'?" for the candidate to suggest, or "" (a static string or one of
 * candidates' text spliced into buf, which holds size bytes). */
const char *suggest_text(const char *typo, const char *const *candidates, int n, char *buf, int size);

#endif
