/*
 * arena.c - bump allocation in large blocks, released all at once.
 *
 * Blocks grow geometrically up to 64 MiB; a request larger than a block gets a block of its
 * own. Memory is zeroed so that AST and IR nodes start with every optional field empty.
 * Running out of memory jumps to the newest trap (arena.h); the blocks allocated so far stay
 * owned by the arena and are freed with it.
 */
#include "arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Block {
    struct Block *next;
    size_t size, used;
    max_align_t data[];
} Block;

struct Arena {
    Block *head;
    size_t next_size;
    size_t total;
    size_t limit;       /* bytes in blocks at most; 0: none */
    size_t in_blocks;   /* bytes in blocks now */
    ArenaTrap *trap;    /* where running out of memory unwinds to */
};

static _Noreturn void out_of_memory(Arena *a, size_t n)
{
    ArenaTrap *t = a->trap;
    if (!t) {
        /* Every entry point of the library sets a trap before it allocates. */
        fprintf(stderr, "cdsl: internal error: out of memory (%zu bytes) with no trap set\n", n);
        abort();
    }
    a->trap = t->prev;
    t->asked = n;
    longjmp(t->env, 1);
}

Arena *arena_create(void)
{
    Arena *a = calloc(1, sizeof *a);
    if (a)
        a->next_size = 64 * 1024;
    return a;
}

void arena_trap_push(Arena *a, ArenaTrap *t)
{
    t->prev = a->trap;
    t->asked = 0;
    a->trap = t;
}

void arena_trap_pop(Arena *a, ArenaTrap *t)
{
    if (a->trap == t)
        a->trap = t->prev;
}

void arena_rethrow(Arena *a, size_t asked)
{
    out_of_memory(a, asked);
}

void arena_set_limit(Arena *a, size_t bytes)
{
    a->limit = bytes;
}

void arena_destroy(Arena *a)
{
    if (!a)
        return;
    for (Block *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(a);
}

static Block *new_block(Arena *a, size_t need)
{
    size_t size = a->next_size;
    if (size < need)
        size = need;
    if (size > SIZE_MAX - sizeof(Block) || (a->limit && (a->in_blocks > a->limit || size > a->limit - a->in_blocks)))
        out_of_memory(a, size);
    Block *b = malloc(sizeof(Block) + size);
    if (!b)
        out_of_memory(a, size);
    a->in_blocks += size;
    b->size = size;
    b->used = 0;
    b->next = a->head;
    a->head = b;
    if (a->next_size < 64u * 1024 * 1024)
        a->next_size *= 2;
    return b;
}

void *arena_alloc(Arena *a, size_t size)
{
    const size_t align = sizeof(max_align_t);
    if (size > SIZE_MAX - align)
        out_of_memory(a, size);
    size = (size + align - 1) / align * align;
    Block *b = a->head;
    if (!b || b->size - b->used < size)
        b = new_block(a, size);
    void *p = (char *)b->data + b->used;
    b->used += size;
    a->total += size;
    memset(p, 0, size);
    return p;
}

void *arena_array(Arena *a, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        out_of_memory(a, SIZE_MAX);
    return arena_alloc(a, n * size);
}

void *arena_grow(Arena *a, void *old, size_t n_old, size_t n_new, size_t size)
{
    void *p = arena_array(a, n_new, size);
    if (old && n_old)
        memcpy(p, old, (n_old < n_new ? n_old : n_new) * size);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    char *p = arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

size_t arena_used(const Arena *a)
{
    return a->total;
}
