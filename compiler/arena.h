/*
 * arena.h - one bump allocator per compilation.
 *
 * Everything the compiler builds (tokens' copies, the AST, the per-rank IR, the checker's
 * facts, the emitted text) lives in one Arena and dies with it: no individual frees, no
 * leaks, one arena_destroy() at the end (QBE's and chibicc's policy). Allocation failure is
 * fatal: it prints a message and exits 1 rather than returning NULL into every caller.
 */
#ifndef CDSL_ARENA_H
#define CDSL_ARENA_H

#include <stddef.h>

typedef struct Arena Arena;

Arena *arena_create(void);
void arena_destroy(Arena *a);

/* Zeroed memory, aligned for any object. */
void *arena_alloc(Arena *a, size_t size);
/* Zeroed array of n objects of size each; overflow-checked. */
void *arena_array(Arena *a, size_t n, size_t size);
/* Grow an array kept in the arena: returns a copy of old (n_old elements) with room for n_new. */
void *arena_grow(Arena *a, void *old, size_t n_old, size_t n_new, size_t size);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);
/* printf into the arena. */
char *arena_printf(Arena *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Total bytes handed out, for the benchmarks' peak-memory report. */
size_t arena_used(const Arena *a);

#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_array((a), (n), sizeof(T)))

#endif
