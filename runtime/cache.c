/*
 * cache.c - the on-disk JIT cache (see cache.h for the layout and the guarantees).
 *
 * Concurrency: writers never touch a published file; each writes its own temporary file
 * (mkstemp in the cache folder, so rename() stays within one file system and is atomic) and
 * renames it over KEY.EXT. Two processes compiling the same key both rename; either result
 * is a whole, identical entry. Readers verify the header's length and checksum, so a file
 * cut short by a crash or damaged on disk is recompiled, never loaded.
 */
#include "cache.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sha256.h"

static const char MAGIC[8] = {'C', 'D', 'S', 'L', 'J', 'I', 'T', '1'};
enum { HEADER = 8 + 8 + 32, MAX_ENTRY = 1 << 30 };

bool rt_cache_verbose(void)
{
    const char *v = getenv("CDSL_CACHE_VERBOSE");
    return v && *v && strcmp(v, "0") != 0;
}

static bool env_on(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

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

const char *rt_cache_dir(char *buf, size_t size, const char **why)
{
    if (why)
        *why = NULL;
    if (env_on("CDSL_NO_CACHE"))
        return NULL;
    const char *dir = getenv("CDSL_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (dir && *dir)
        n = snprintf(buf, size, "%s", dir);
    else if (xdg && *xdg)
        n = snprintf(buf, size, "%s/cdsl", xdg);
    else if (home && *home)
        n = snprintf(buf, size, "%s/.cache/cdsl", home);
    else {
        if (why)
            *why = "neither CDSL_CACHE_DIR, XDG_CACHE_HOME nor HOME is set";
        return NULL;
    }
    if (n <= 0 || (size_t)n >= size) {
        if (why)
            *why = "the cache folder's path is too long";
        return NULL;
    }
    struct stat st;
    if (make_dirs(buf) != 0 || stat(buf, &st) != 0 || !S_ISDIR(st.st_mode) || access(buf, W_OK) != 0) {
        if (why)
            *why = "the cache folder cannot be created or written";
        return NULL;
    }
    return buf;
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

void rt_cache_path(const char *dir, const char *key, const char *ext, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s.%s", dir, key, ext);
}

static uint64_t get_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--)
        v = v << 8 | p[b];
    return v;
}

/* The whole file into memory; -1 if it cannot be read, 1 if it is implausibly large. */
static int read_file(const char *path, unsigned char **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    struct stat st;
    int rc = 1;
    if (fstat(fileno(f), &st) == 0 && st.st_size >= 0 && st.st_size <= MAX_ENTRY) {
        *len = (size_t)st.st_size;
        *data = malloc(*len ? *len : 1);
        rc = *data && fread(*data, 1, *len, f) == *len ? 0 : 1;
        if (rc) {
            free(*data);
            *data = NULL;
        }
    }
    fclose(f);
    return rc;
}

RtCacheResult rt_cache_load(const char *dir, const char *key, const char *ext, void **data, size_t *len)
{
    char path[4096];
    rt_cache_path(dir, key, ext, path, sizeof path);
    unsigned char *file = NULL;
    size_t size = 0;
    int rc = read_file(path, &file, &size);
    if (rc < 0)
        return RT_CACHE_MISS;
    if (rc > 0 || size < HEADER || memcmp(file, MAGIC, 8) != 0 || get_le64(file + 8) != size - HEADER) {
        free(file);
        return RT_CACHE_CORRUPT;
    }
    uint8_t digest[32];
    rt_sha256(file + HEADER, size - HEADER, digest);
    if (memcmp(digest, file + 16, 32) != 0) {
        free(file);
        return RT_CACHE_CORRUPT;
    }
    memmove(file, file + HEADER, size - HEADER);
    *data = file;
    *len = size - HEADER;
    return RT_CACHE_HIT;
}

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

int rt_cache_store(const char *dir, const char *key, const char *ext, const void *data, size_t len)
{
    char path[4096], tmp[4200];
    rt_cache_path(dir, key, ext, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return -1;
    unsigned char header[HEADER];
    memcpy(header, MAGIC, 8);
    for (int b = 0; b < 8; b++)
        header[8 + b] = (unsigned char)((uint64_t)len >> (8 * b));
    rt_sha256(data, len, header + 16);
    int rc = write_all(fd, header, sizeof header) || write_all(fd, data, len);
    rc = close(fd) != 0 || rc;
    if (!rc)
        rc = rename(tmp, path) != 0;
    if (rc)
        unlink(tmp);
    return rc ? -1 : 0;
}
