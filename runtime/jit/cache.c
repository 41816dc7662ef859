/*
 * cache.c - the on-disk JIT cache (see cache.h for the layout, the trust rules and the cap).
 *
 * Concurrency: writers never touch a published file; each writes its own temporary file (in
 * the cache folder, so the rename stays within one file system and is atomic) and renames it
 * over KEY.EXT. Two processes compiling the same key both rename; either result is a whole,
 * identical entry. Readers verify the header's key, length and digest, so a file cut short by
 * a crash or damaged on disk is recompiled, never loaded. Eviction and cleaning only unlink: a
 * reader that opened an entry first still reads all of it, and an unlink that loses a race to
 * another process (ENOENT) is not an error.
 */
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sha256.h"

static const char MAGIC[8] = {'C', 'D', 'S', 'L', 'J', 'I', 'T', '2'};
enum {
    KEY_HEX = 64,
    HEADER = 8 + KEY_HEX + 8 + 32,   /* magic, key, payload length, digest */
    MAX_ENTRY = 256 << 20,           /* far above any cubin of ours; a sanity bound */
    TOUCH_AFTER_S = 60               /* how stale a hit's use time may get before it is set */
};

static bool env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

bool rt_cache_verbose(void)
{
    return env_on("CDSL_CACHE_VERBOSE");
}

/* A byte count as CUDA_CACHE_MAXSIZE writes it: decimal digits only. */
static bool parse_bytes(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return true;
}

uint64_t rt_cache_max_size(void)
{
    uint64_t v;
    if (parse_bytes(getenv("CDSL_CACHE_MAXSIZE"), &v) || parse_bytes(getenv("CUDA_CACHE_MAXSIZE"), &v))
        return v;
    return RT_CACHE_DEFAULT_MAX;
}

/* ---- The folder --------------------------------------------------------------------------- */

/* mkdir -p, new folders private to the user. */
static int make_dirs(char *path)
{
    for (char *s = path + 1;; s++) {
        if (*s != '/' && *s != 0)
            continue;
        char c = *s;
        *s = 0;
        int r = mkdir(path, 0700);
        *s = c;
        if (r != 0 && errno != EEXIST)
            return -1;
        if (!c)
            return 0;
    }
}

static bool name_folder(RtCache *c)
{
    const char *dir = getenv("CDSL_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (dir && *dir)
        n = snprintf(c->path, sizeof c->path, "%s", dir);
    else if (xdg && *xdg)
        n = snprintf(c->path, sizeof c->path, "%s/cdsl", xdg);
    else if (home && *home)
        n = snprintf(c->path, sizeof c->path, "%s/.cache/cdsl", home);
    else {
        snprintf(c->why, sizeof c->why, "neither CDSL_CACHE_DIR, XDG_CACHE_HOME nor HOME is set");
        return false;
    }
    if (n <= 0 || (size_t)n >= sizeof c->path) {
        snprintf(c->why, sizeof c->why, "the cache folder's path is too long");
        return false;
    }
    return true;
}

/* Only a folder nobody else can write to is trusted: whoever can add files to it can plant
   device code that this user would load and run. */
static RtCacheState check_folder(RtCache *c, const struct stat *st)
{
    if (!S_ISDIR(st->st_mode)) {
        snprintf(c->why, sizeof c->why, "the cache folder %s is not a directory", c->path);
        return RT_CACHE_UNUSABLE;
    }
    if (st->st_uid != geteuid()) {
        snprintf(c->why, sizeof c->why, "the cache folder %s belongs to uid %lu, not to this user (uid %lu)",
                 c->path, (unsigned long)st->st_uid, (unsigned long)geteuid());
        return RT_CACHE_UNTRUSTED;
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(c->why, sizeof c->why, "the cache folder %s is writable by other users (mode %04o)",
                 c->path, (unsigned)(st->st_mode & 07777));
        return RT_CACHE_UNTRUSTED;
    }
    if (faccessat(c->fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
        snprintf(c->why, sizeof c->why, "the cache folder %s cannot be written", c->path);
        return RT_CACHE_UNUSABLE;
    }
    return RT_CACHE_OPEN;
}

static void sweep(RtCache *c, const char *keep, RtCacheEvicted *evicted);

RtCacheState rt_cache_open(RtCache *c, int flags)
{
    c->fd = -1;
    c->path[0] = c->why[0] = c->refused[0] = 0;
    c->max_size = rt_cache_max_size();
    if (!(flags & RT_CACHE_IGNORE_OFF) && env_on("CDSL_NO_CACHE")) {
        snprintf(c->why, sizeof c->why, "CDSL_NO_CACHE is set");
        return RT_CACHE_OFF;
    }
    if (!name_folder(c))
        return RT_CACHE_UNUSABLE;
    if ((flags & RT_CACHE_CREATE) && make_dirs(c->path) != 0) {
        snprintf(c->why, sizeof c->why, "the cache folder %s cannot be created: %s", c->path, strerror(errno));
        return RT_CACHE_UNUSABLE;
    }
    c->fd = open(c->path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
    if (c->fd < 0) {
        int e = errno;
        snprintf(c->why, sizeof c->why, "the cache folder %s cannot be opened: %s", c->path, strerror(e));
        return e == ENOENT && !(flags & RT_CACHE_CREATE) ? RT_CACHE_ABSENT : RT_CACHE_UNUSABLE;
    }
    struct stat st;
    RtCacheState state = fstat(c->fd, &st) == 0 ? check_folder(c, &st) : RT_CACHE_UNUSABLE;
    if (state != RT_CACHE_OPEN) {
        rt_cache_close(c);
        return state;
    }
    sweep(c, NULL, NULL);
    return RT_CACHE_OPEN;
}

void rt_cache_close(RtCache *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

void rt_cache_key(const void *const *parts, const size_t *lens, int nparts, char key[65])
{
    RtSha256 s;
    rt_sha256_init(&s);
    rt_sha256_update(&s, "cdsl-jit-cache-1", 16);
    for (int i = 0; i < nparts; i++) {
        uint8_t len[8];
        for (int b = 0; b < 8; b++)
            len[b] = (uint8_t)((uint64_t)lens[i] >> (8 * b));
        rt_sha256_update(&s, len, sizeof len);
        rt_sha256_update(&s, parts[i], lens[i]);
    }
    uint8_t digest[32];
    rt_sha256_final(&s, digest);
    rt_sha256_hex(digest, key);
}

void rt_cache_path(const RtCache *c, const char *key, const char *ext, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s.%s", c->path, key, ext);
}

/* ---- Names: which files are the cache's own --------------------------------------------------- */

static const char *const EXTS[] = {"cubin", "ptx", "nvrtc" /* memos of earlier versions */};

/* KEY.EXT (an entry) or KEY.EXT.tmp.SUFFIX (a store under way, or interrupted). */
static bool our_name(const char *name, bool *tmp)
{
    for (int i = 0; i < KEY_HEX; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return false;
    if (name[KEY_HEX] != '.')
        return false;
    const char *ext = name + KEY_HEX + 1;
    for (size_t i = 0; i < sizeof EXTS / sizeof *EXTS; i++) {
        size_t n = strlen(EXTS[i]);
        if (strncmp(ext, EXTS[i], n) != 0)
            continue;
        const char *rest = ext + n;
        *tmp = *rest != 0;
        if (!*tmp)
            return true;
        if (strncmp(rest, ".tmp.", 5) != 0 || !rest[5] || strlen(rest + 5) > 16)
            return false;
        for (const char *s = rest + 5; *s; s++)
            if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
                return false;
        return true;
    }
    return false;
}

/* One of our files that is a regular file of this user's (never a link, a FIFO, another's). */
typedef struct Found {
    char name[KEY_HEX + 32];
    bool tmp;
    uint64_t size;
    int64_t used;   /* the modification time, in nanoseconds: the last use of an entry */
} Found;

typedef int (*FoundFn)(RtCache *c, const Found *f, void *arg);

/* Calls fn for each of our files in the folder (only the temporary ones with tmp_only, which
   spares a stat per entry when the folder is opened); -1 if the folder cannot be read. */
static int each_file(RtCache *c, bool tmp_only, FoundFn fn, void *arg)
{
    int fd = dup(c->fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    rewinddir(d);
    struct dirent *e;
    int rc = 0;
    while (!rc && (e = readdir(d))) {
        Found f;
        struct stat st;
        if (strlen(e->d_name) >= sizeof f.name || !our_name(e->d_name, &f.tmp) || (tmp_only && !f.tmp) ||
            fstatat(c->fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        memcpy(f.name, e->d_name, strlen(e->d_name) + 1);   /* fits: checked above */
        f.size = (uint64_t)st.st_size;
        f.used = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        rc = fn(c, &f, arg);
    }
    closedir(d);
    return rc < 0 ? -1 : 0;
}

/* ---- Housekeeping: stale temporary files and the cap ----------------------------------------- */

typedef struct Sweep {
    Found *entries;
    size_t n, cap;
    uint64_t total;
    bool oom;
} Sweep;

static int sweep_one(RtCache *c, const Found *f, void *arg)
{
    Sweep *s = arg;
    if (f->tmp) {
        /* Older than any store takes: its writer is gone. */
        if (f->used / 1000000000 < time(NULL) - RT_CACHE_STALE_S)
            unlinkat(c->fd, f->name, 0);
        return 0;
    }
    s->total += f->size;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        Found *grown = realloc(s->entries, cap * sizeof *grown);
        if (!grown) {
            s->oom = true;
            return 1;
        }
        s->entries = grown;
        s->cap = cap;
    }
    s->entries[s->n++] = *f;
    return 0;
}

static int older_first(const void *a, const void *b)
{
    const Found *x = a, *y = b;
    return x->used < y->used ? -1 : x->used > y->used;
}

/* Removes stale temporary files; with keep (the entry just stored), also evicts the least
   recently used entries other than keep until the rest fit under the cap. */
static void sweep(RtCache *c, const char *keep, RtCacheEvicted *evicted)
{
    Sweep s = {0};
    if (each_file(c, !keep, sweep_one, &s) == 0 && !s.oom && keep && s.total > c->max_size) {
        qsort(s.entries, s.n, sizeof *s.entries, older_first);
        for (size_t i = 0; i < s.n && s.total > c->max_size; i++) {
            if (strcmp(s.entries[i].name, keep) == 0 || unlinkat(c->fd, s.entries[i].name, 0) != 0)
                continue;
            s.total -= s.entries[i].size;
            if (evicted) {
                evicted->files++;
                evicted->bytes += s.entries[i].size;
            }
        }
    }
    free(s.entries);
}

typedef struct Clean {
    FILE *report;
    RtCacheEvicted *removed;
} Clean;

static int clean_one(RtCache *c, const Found *f, void *arg)
{
    Clean *k = arg;
    if (unlinkat(c->fd, f->name, 0) != 0)
        return 0;
    k->removed->files++;
    k->removed->bytes += f->size;
    if (k->report)
        fprintf(k->report, "removed %s/%s\n", c->path, f->name);
    return 0;
}

int rt_cache_clean(RtCache *c, FILE *report, RtCacheEvicted *removed)
{
    Clean k = {report, removed};
    removed->files = 0;
    removed->bytes = 0;
    return each_file(c, false, clean_one, &k);
}

/* ---- Reading an entry ----------------------------------------------------------------------- */

static uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--)
        v = v << 8 | p[b];
    return v;
}

static void put_le64(unsigned char *p, uint64_t v)
{
    for (int b = 0; b < 8; b++)
        p[b] = (unsigned char)(v >> (8 * b));
}

/* The digest over the header's first 80 bytes and the payload. */
static void entry_digest(const unsigned char *head, const void *payload, size_t len, uint8_t out[32])
{
    RtSha256 s;
    rt_sha256_init(&s);
    rt_sha256_update(&s, head, HEADER - 32);
    rt_sha256_update(&s, payload, len);
    rt_sha256_final(&s, out);
}

static int read_all(int fd, unsigned char *buf, size_t len)
{
    while (len) {
        ssize_t n = read(fd, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Opens KEY.EXT without following a link or waiting on a FIFO; *fd and *st on RT_CACHE_HIT
   (meaning only: a regular file of ours, of a size worth reading), else c->refused says why. */
static RtCacheResult open_entry(RtCache *c, const char *name, int *fd, struct stat *st)
{
    *fd = openat(c->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (*fd < 0) {
        if (errno == ENOENT)
            return RT_CACHE_MISS;
        snprintf(c->refused, sizeof c->refused, "%s", errno == ELOOP ? "a symbolic link" : strerror(errno));
        return RT_CACHE_REFUSED;
    }
    if (fstat(*fd, st) != 0)
        snprintf(c->refused, sizeof c->refused, "%s", strerror(errno));
    else if (!S_ISREG(st->st_mode))
        snprintf(c->refused, sizeof c->refused, "not a regular file");
    else if (st->st_uid != geteuid())
        snprintf(c->refused, sizeof c->refused, "owned by uid %u, not by you", (unsigned)st->st_uid);
    else if (st->st_size > MAX_ENTRY)
        snprintf(c->refused, sizeof c->refused, "too large: %lld bytes, over the %d bytes an entry may have",
                 (long long)st->st_size, MAX_ENTRY);
    else
        return RT_CACHE_HIT;
    close(*fd);
    return RT_CACHE_REFUSED;
}

/* A hit is a use: the eviction order is by modification time. */
static void mark_used(int fd, const struct stat *st)
{
    if (st->st_mtime < time(NULL) - TOUCH_AFTER_S)
        futimens(fd, NULL);
}

static bool entry_ok(const unsigned char *file, size_t size, const char *key)
{
    if (size <= HEADER || memcmp(file, MAGIC, 8) != 0 || memcmp(file + 8, key, KEY_HEX) != 0 ||
        get_le64(file + 8 + KEY_HEX) != size - HEADER)
        return false;
    uint8_t digest[32];
    entry_digest(file, file + HEADER, size - HEADER, digest);
    return memcmp(digest, file + HEADER - 32, 32) == 0;
}

RtCacheResult rt_cache_load(RtCache *c, const char *key, const char *ext, void **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    if (strlen(key) != KEY_HEX)
        return RT_CACHE_MISS;
    char name[KEY_HEX + 32];
    snprintf(name, sizeof name, "%s.%s", key, ext);
    int fd;
    struct stat st;
    RtCacheResult r = open_entry(c, name, &fd, &st);
    if (r != RT_CACHE_HIT)
        return r;
    size_t size = (size_t)st.st_size;
    unsigned char *file = malloc(size ? size : 1);
    bool ok = file && read_all(fd, file, size) == 0 && entry_ok(file, size, key);
    if (ok)
        mark_used(fd, &st);
    close(fd);
    if (!ok) {
        free(file);
        return RT_CACHE_CORRUPT;
    }
    memmove(file, file + HEADER, size - HEADER);
    *data = file;
    *len = size - HEADER;
    return RT_CACHE_HIT;
}

/* ---- Writing an entry ----------------------------------------------------------------------- */

static int write_all(int fd, const void *data, size_t len)
{
    const unsigned char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* A new file NAME.tmp.XXXXXX in the folder, created exclusively (mkstemp, relative to the
   folder's descriptor). */
static int create_temp(RtCache *c, const char *name, char *tmp, size_t size)
{
    static const char alnum[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t x = (uint64_t)now.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid() << 32 ^ (uintptr_t)tmp;
    for (int attempt = 0; attempt < 100; attempt++) {
        char suffix[7];
        for (int i = 0; i < 6; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            suffix[i] = alnum[(x >> 33) % (sizeof alnum - 1)];
        }
        suffix[6] = 0;
        snprintf(tmp, size, "%s.tmp.%s", name, suffix);
        int fd = openat(c->fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

int rt_cache_store(RtCache *c, const char *key, const char *ext, const void *data, size_t len,
                   RtCacheEvicted *evicted)
{
    if (evicted)
        evicted->files = 0, evicted->bytes = 0;
    if (strlen(key) != KEY_HEX)
        return -1;
    if (len == 0 || len > MAX_ENTRY - HEADER || HEADER + len > c->max_size)
        return 1;
    char name[KEY_HEX + 32], tmp[KEY_HEX + 48];
    snprintf(name, sizeof name, "%s.%s", key, ext);
    int fd = create_temp(c, name, tmp, sizeof tmp);
    if (fd < 0)
        return -1;
    unsigned char header[HEADER];
    memcpy(header, MAGIC, 8);
    memcpy(header + 8, key, KEY_HEX);
    put_le64(header + 8 + KEY_HEX, len);
    entry_digest(header, data, len, header + HEADER - 32);
    int rc = write_all(fd, header, sizeof header) || write_all(fd, data, len);
    rc = close(fd) != 0 || rc;
    if (!rc)
        rc = renameat(c->fd, tmp, c->fd, name) != 0;
    if (rc) {
        unlinkat(c->fd, tmp, 0);
        return -1;
    }
    sweep(c, name, evicted);
    return 0;
}
