/*
 * cache.h - the JIT cache: compiled device code kept on disk, keyed by what produced it.
 *
 * Where: $CDSL_CACHE_DIR, else $XDG_CACHE_HOME/cdsl, else $HOME/.cache/cdsl (created 0700 when
 * missing). CDSL_NO_CACHE=1 turns it off; a folder that cannot be created or written is not
 * an error, compilation just goes uncached. CDSL_CACHE_VERBOSE=1 reports hits and misses.
 *
 * Trust (docs/security.md): the folder is used only when it is a directory owned by the
 * effective user with no group or other write bit; otherwise it is RT_CACHE_UNTRUSTED and the
 * caller says so and goes on uncached. The folder is opened once and every entry is reached
 * relative to that descriptor, so renaming folders above it cannot swap it afterwards. Entries
 * are opened with O_NOFOLLOW|O_NONBLOCK (a link or a FIFO is refused, never followed or waited
 * on) and must be regular files owned by the user, of a sane size.
 *
 * An entry is one file, KEY.EXT, where KEY is the SHA-256 (hex) of everything that determines
 * the output (the caller lists the parts). It starts with a 112-byte header: the magic
 * "CDSLJIT2", KEY itself (64 hex characters), the payload's length (64-bit little-endian) and
 * the SHA-256 of those 80 bytes followed by the payload. The key inside ties the payload to the
 * name it is found under, so an entry copied to another key's name is refused; a payload of
 * length 0 is never stored nor served. This is integrity, not authentication against someone
 * who can write the folder: anyone can compute the digest, which is why the folder check is
 * the defence. Entries are written to a temporary file (KEY.EXT.tmp.XXXXXX) in the same folder
 * and renamed into place, so a reader sees either nothing or a whole entry. A file whose header
 * does not match its payload (truncated, corrupted, foreign, older format) is a miss, reported
 * as corrupt, and is overwritten by the next store.
 *
 * Housekeeping: temporary files older than RT_CACHE_STALE_S (a store that was interrupted) are
 * removed when the folder is opened. After each store, when the entries add up to more than the
 * cap, the least recently used go first: a hit sets an entry's modification time (at most once
 * a minute), so that time is its last use. The cap is CDSL_CACHE_MAXSIZE, else
 * CUDA_CACHE_MAXSIZE (CUDA's JIT cache convention: a byte count), else RT_CACHE_DEFAULT_MAX; an
 * entry larger than the cap is not stored, so a cap of 0 stores nothing.
 */
#ifndef CDSL_CACHE_H
#define CDSL_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RT_CACHE_DEFAULT_MAX (256ull << 20)
enum { RT_CACHE_STALE_S = 600 };

typedef enum RtCacheResult {
    RT_CACHE_HIT,
    RT_CACHE_MISS,       /* no such entry */
    RT_CACHE_CORRUPT,    /* a regular file of ours whose contents do not check out */
    RT_CACHE_REFUSED     /* a link, a FIFO or another non-file, someone else's file, absurd size */
} RtCacheResult;

typedef enum RtCacheState {
    RT_CACHE_OPEN,
    RT_CACHE_OFF,        /* CDSL_NO_CACHE asked for it */
    RT_CACHE_ABSENT,     /* the folder does not exist (only when not asked to create it) */
    RT_CACHE_UNUSABLE,   /* no folder can be named, created, opened or written */
    RT_CACHE_UNTRUSTED   /* others could write to it: never used */
} RtCacheState;

/* An open cache folder. why says, in one sentence naming the folder, why it is not open. */
typedef struct RtCache {
    int fd;
    uint64_t max_size;
    char path[4096];
    char why[4352];
    char refused[160];  /* after rt_cache_load said RT_CACHE_REFUSED: why, in a few words */
} RtCache;

enum {
    RT_CACHE_CREATE = 1,       /* create the folder (0700) when missing */
    RT_CACHE_IGNORE_OFF = 2    /* open it even when CDSL_NO_CACHE is set (for cleaning) */
};
/* Opens the folder (c->fd >= 0 only when RT_CACHE_OPEN) and removes stale temporary files. */
RtCacheState rt_cache_open(RtCache *c, int flags);
void rt_cache_close(RtCache *c);
bool rt_cache_verbose(void);
/* The cap in bytes, from the environment (see above). */
uint64_t rt_cache_max_size(void);

/* KEY: the SHA-256 (hex) of the parts, each length-prefixed so that no two lists collide. */
void rt_cache_key(const void *const *parts, const size_t *lens, int nparts, char key[65]);

/* Load KEY.EXT: on a hit *data is malloc'd (free it) and *len set (never 0). */
RtCacheResult rt_cache_load(RtCache *c, const char *key, const char *ext, void **data, size_t *len);

/* What a store evicted to stay under the cap. */
typedef struct RtCacheEvicted {
    unsigned files;
    uint64_t bytes;
} RtCacheEvicted;
/* Store atomically, then evict down to the cap. 0: stored; 1: not stored because the payload
 * is empty or the entry would be larger than the cap; -1: the write failed (either way the entry
 * is only not cached). evicted may be NULL. */
int rt_cache_store(RtCache *c, const char *key, const char *ext, const void *data, size_t len,
                   RtCacheEvicted *evicted);
/* The path of an entry, for messages. */
void rt_cache_path(const RtCache *c, const char *key, const char *ext, char *buf, size_t size);

/* Remove the cache's own files (entries and temporary files, regular and the user's; nothing
 * else), writing "removed PATH" for each to report (NULL: quiet). 0, or -1 if the folder could
 * not be read (some files may be gone). */
int rt_cache_clean(RtCache *c, FILE *report, RtCacheEvicted *removed);

#endif
