/*
 * mem_limit.c - how much memory this process may still take: the machine's, its memory
 * cgroup's and its rlimits' say.
 *
 * The sim backend sizes its buffers against this before allocating: under overcommit, calloc
 * succeeds beyond a container's limit and the process is killed when the pages are touched,
 * so asking the kernel is not enough. Sources, the least of which wins:
 *   - physical memory (sysconf);
 *   - the memory cgroup of this process and of each ancestor: cgroup v2's memory.max ("max"
 *     means none), v1's memory.limit_in_bytes (a huge value means none). The process's
 *     cgroup is read from /proc/self/cgroup ("0::/path" for v2, "N:memory:/path" or
 *     "N:...,memory,...:/path" for v1); in a container the path may not exist under the
 *     mount, and the walk up to the mount's root still finds the container's limit;
 *   - RLIMIT_AS (ulimit -v) less the address space mapped now, RLIMIT_DATA less the data
 *     mapped now (/proc/self/statm).
 */
#include "mem_limit.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

enum { PATH_LEN = 4096 };

static size_t least(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* A limit file: a number of bytes, or "max"; SIZE_MAX for no limit or no file. */
static size_t read_limit(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return SIZE_MAX;
    char text[64] = "";
    bool got = fgets(text, sizeof text, f) != NULL;
    fclose(f);
    char *end;
    unsigned long long v = got ? strtoull(text, &end, 10) : 0;
    if (!got || end == text || (*end && *end != '\n') || v >= SIZE_MAX)
        return SIZE_MAX;
    return (size_t)v;
}

/* The least limit in `file` of dir and each of its ancestors up to root (dir starts with
 * root). dir is changed in place. */
static size_t walk_up(char *dir, size_t root_len, const char *file)
{
    size_t lim = SIZE_MAX;
    char path[PATH_LEN + 64];
    for (;;) {
        snprintf(path, sizeof path, "%s/%s", dir, file);
        lim = least(lim, read_limit(path));
        char *slash = strrchr(dir + root_len, '/');
        if (!slash)
            return lim;
        *slash = 0;
    }
}

/* "memory" among the comma-separated controllers of a v1 line. */
static bool has_memory(const char *controllers, size_t len)
{
    for (const char *c = controllers; c < controllers + len;) {
        size_t n = strcspn(c, ",:");
        if (n == 6 && !strncmp(c, "memory", 6))
            return true;
        c += n + 1;
    }
    return false;
}

/* One /proc/self/cgroup line: "ID:CONTROLLERS:PATH". */
static size_t line_limit(const char *line, const char *root)
{
    const char *c = strchr(line, ':');
    const char *p = c ? strchr(c + 1, ':') : NULL;
    if (!p || p[1] != '/')
        return SIZE_MAX;
    bool v2 = p == c + 1 && !strncmp(line, "0:", 2);
    if (!v2 && !has_memory(c + 1, (size_t)(p - c - 1)))
        return SIZE_MAX;
    char dir[PATH_LEN];
    int n = snprintf(dir, sizeof dir, "%s%s", root, v2 ? "" : "/memory");
    size_t root_len = (size_t)n;
    size_t plen = strcspn(p + 1, "\n");
    if (n < 0 || root_len + plen >= sizeof dir)
        return SIZE_MAX;
    memcpy(dir + root_len, p + 1, plen);
    dir[root_len + plen] = 0;
    while (root_len + plen > root_len && dir[root_len + plen - 1] == '/')
        dir[root_len + --plen] = 0;   /* "/" itself: the root */
    size_t lim = walk_up(dir, root_len, v2 ? "memory.max" : "memory.limit_in_bytes");
    /* v1 says "no limit" with the largest multiple of the page size below 2^63. */
    return !v2 && lim >= ((size_t)1 << 62) ? SIZE_MAX : lim;
}

size_t rt_cgroup_limit(const char *self_cgroup, const char *root)
{
    FILE *f = fopen(self_cgroup, "r");
    if (!f)
        return SIZE_MAX;
    size_t lim = SIZE_MAX;
    char line[PATH_LEN];
    while (fgets(line, sizeof line, f))
        lim = least(lim, line_limit(line, root));
    fclose(f);
    return lim;
}

/* limit less what is in use, for one rlimit; SIZE_MAX for none. */
static size_t rlimit_left(int resource, size_t in_use)
{
    struct rlimit rl;
    if (getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= SIZE_MAX)
        return SIZE_MAX;
    size_t cur = (size_t)rl.rlim_cur;
    return cur > in_use ? cur - in_use : 0;
}

size_t rt_memory_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t lim = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : SIZE_MAX;
    lim = least(lim, rt_cgroup_limit("/proc/self/cgroup", "/sys/fs/cgroup"));
    unsigned long long size = 0, resident, shared, text, lib, data = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%llu %llu %llu %llu %llu %llu", &size, &resident, &shared, &text, &lib, &data) != 6)
            size = data = 0;
        fclose(f);
    }
    size_t pg = page > 0 ? (size_t)page : 4096;
    lim = least(lim, rlimit_left(RLIMIT_AS, (size_t)size * pg));
    lim = least(lim, rlimit_left(RLIMIT_DATA, (size_t)data * pg));
    return lim;
}
