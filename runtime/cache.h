/*
 * cache.h - the JIT cache: compiled device code kept on disk, keyed by what produced it.
 *
 * Where: $CDSL_CACHE_DIR, else $XDG_CACHE_HOME/cdsl, else $HOME/.cache/cdsl (created 0700 when
 * missing). CDSL_NO_CACHE=1 turns it off; a folder that cannot be created or written is not
 * an error, compilation just goes uncached. CDSL_CACHE_VERBOSE=1 reports hits and misses.
 *
 * An entry is one file, KEY.EXT, where KEY is the SHA-256 of everything that determines the
 * output (the caller lists the parts). It starts with a 48-byte header, the magic "CDSLJIT1",
 * the payload's length (64-bit little-endian) and the payload's SHA-256, and is written to a
 * temporary file in the same folder and renamed into place, so a reader sees either nothing
 * or a whole entry. A file whose header does not match its payload (truncated, corrupted,
 * foreign) is a miss, reported as corrupt, and is overwritten by the next store.
 */
#ifndef CDSL_CACHE_H
#define CDSL_CACHE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum RtCacheResult { RT_CACHE_HIT, RT_CACHE_MISS, RT_CACHE_CORRUPT } RtCacheResult;

/* The cache folder, created if needed, in buf; NULL when caching is off or impossible (then
 * *why, if not NULL, says why, or is NULL when CDSL_NO_CACHE asked for it). */
const char *rt_cache_dir(char *buf, size_t size, const char **why);
bool rt_cache_verbose(void);

/* KEY: the SHA-256 (hex) of the parts, each length-prefixed so that no two lists collide. */
void rt_cache_key(const void *const *parts, const size_t *lens, int nparts, char key[65]);

/* Load KEY.EXT from dir: on a hit *data is malloc'd (free it) and *len set. */
RtCacheResult rt_cache_load(const char *dir, const char *key, const char *ext, void **data, size_t *len);
/* Store atomically; 0 on success (a failure only means the entry is not cached). */
int rt_cache_store(const char *dir, const char *key, const char *ext, const void *data, size_t len);
/* The path of an entry, for messages. */
void rt_cache_path(const char *dir, const char *key, const char *ext, char *buf, size_t size);

#endif
