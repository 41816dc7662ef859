/*
 * arena.h - one bump allocator per compilation.
 *
 * Everything the compiler builds (tokens' copies, the AST, the per-rank IR, the checker's
 * facts, the emitted text) lives in one Arena and dies with it: no individual frees, no
 * leaks, one arena_destroy() at the end (QBE's and chibicc's policy).
 *
 * Allocation never returns NULL into its callers. When memory runs out (or the arena's limit,
 * if one is set, is reached) it unwinds, as Lua's allocator does, with longjmp to the newest
 * trap set on the arena: the library's entry points (cdsl_compile and the others that
 * allocate) set one, so that out-of-memory becomes CDSL_ERR_SYSTEM for the caller. Code
 * between a trap and an allocation must therefore hold nothing that the jump would leak: no
 * malloc'ed memory, no open FILE, no lock. Allocating with no trap set is a bug; it aborts.
 */
#ifndef CDSL_ARENA_H
#define CDSL_ARENA_H

#include <setjmp.h>
#include <stddef.h>

typedef struct Arena Arena;

/* NULL when even the arena's header cannot be allocated. */
Arena *arena_create(void);
void arena_destroy(Arena *a);

/* A place to unwind to when memory runs out. Use:
 *
 *     ArenaTrap t;
 *     arena_trap_push(a, &t);
 *     if (setjmp(t.env)) { ... out of memory: the trap is already popped ... }
 *     ... allocate ...
 *     arena_trap_pop(a, &t);
 *
 * Traps nest (an entry point may call another); a jump pops its trap first. */
typedef struct ArenaTrap {
    jmp_buf env;
    struct ArenaTrap *prev;
    size_t asked;               /* after a jump: the request that failed, in bytes */
} ArenaTrap;
void arena_trap_push(Arena *a, ArenaTrap *t);
void arena_trap_pop(Arena *a, ArenaTrap *t);
/* From a trap that caught running out of memory and freed what it held outside the arena
 * (a parser's malloc'ed tree): unwind on to the next trap, as if that one had caught it. */
_Noreturn void arena_rethrow(Arena *a, size_t asked);

/* Treat more than `bytes` in all as out of memory (0: no limit). The fuzz harnesses bound
 * their inputs' memory with it. */
void arena_set_limit(Arena *a, size_t bytes);

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
