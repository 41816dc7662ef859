/*
 * limits_unit.c - the memory the sim sizes its buffers against (runtime/engines/mem_limit.c): cgroup
 * v1 and v2 limits read from made-up trees (the process's cgroup, its ancestors, "max", v1's
 * "no limit" value, a path missing under the mount as in a container), and RLIMIT_AS less
 * what is mapped. Prints "[PASS] name" / "[FAIL] name".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem_limit.h"

static int failures;
static char root[256];

static void result(const char *name, int ok)
{
    printf("[%s] %s\n", ok ? "PASS" : "FAIL", name);
    failures += !ok;
}

/* Writes text to root/rel, making the folders on the way. */
static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *s = path + strlen(root) + 1; (s = strchr(s, '/')); s++) {
        *s = 0;
        mkdir(path, 0700);
        *s = '/';
    }
    FILE *f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_cgroups(void)
{
    put("v2/memory.max", "max\n");
    put("v2/a/memory.max", "3221225472\n");
    put("v2/a/b/memory.max", "max\n");
    put("v2/a/b/c/memory.max", "4294967296\n");
    put("v1/memory/memory.limit_in_bytes", "9223372036854771712\n");
    put("v1/memory/box/memory.limit_in_bytes", "536870912\n");
    put("v1/memory/box/job/memory.limit_in_bytes", "9223372036854771712\n");
    char v2[300], v1[300], self[512];
    snprintf(v2, sizeof v2, "%s/v2", root);
    snprintf(v1, sizeof v1, "%s/v1", root);
    snprintf(self, sizeof self, "%s/self", root);
    put("self", "0::/a/b/c\n");
    result("v2: the least of the cgroup and its ancestors", rt_cgroup_limit(self, v2) == 3221225472u);
    put("self", "0::/a/b\n");
    result("v2: \"max\" is no limit, an ancestor's limit still counts", rt_cgroup_limit(self, v2) == 3221225472u);
    put("self", "0::/\n");
    result("v2: the root's \"max\": no limit", rt_cgroup_limit(self, v2) == SIZE_MAX);
    put("self", "0::/not/here\n");
    result("v2: a path missing under the mount: no limit found, none made up", rt_cgroup_limit(self, v2) == SIZE_MAX);
    put("self", "12:pids:/box\n4:cpu,memory:/box/job\n0::/\n");
    result("v1: memory among several controllers, the parent's limit", rt_cgroup_limit(self, v1) == 536870912u);
    put("self", "4:memory:/\n");
    result("v1: the largest value means no limit", rt_cgroup_limit(self, v1) == SIZE_MAX);
    put("self", "4:memory:/elsewhere/job\n");
    put("v1/memory/memory.limit_in_bytes", "1073741824\n");
    result("v1: a container's path missing under the mount: the mount's own limit",
           rt_cgroup_limit(self, v1) == 1073741824u);
    put("self", "garbage\n::\n0:\n");
    result("a malformed /proc/self/cgroup: no limit", rt_cgroup_limit(self, v1) == SIZE_MAX);
    result("no /proc/self/cgroup: no limit", rt_cgroup_limit("/nonexistent/cgroup", v2) == SIZE_MAX);
    put("v2/a/memory.max", "12abc\n");
    put("self", "0::/a\n");
    result("v2: a malformed limit file is ignored", rt_cgroup_limit(self, v2) == SIZE_MAX);
}

/* RLIMIT_AS (ulimit -v) bounds the answer: by the limit less what is mapped now. Not under
 * AddressSanitizer, whose shadow memory needs the whole address space. */
static void test_rlimit(void)
{
#if defined(__SANITIZE_ADDRESS__)
    printf("[SKIP] RLIMIT_AS under AddressSanitizer\n");
#else
    struct rlimit old, rl;
    getrlimit(RLIMIT_AS, &old);
    size_t before = rt_memory_limit();
    rl = old;
    rl.rlim_cur = (rlim_t)1 << 32;   /* 4 GiB of address space */
    if (setrlimit(RLIMIT_AS, &rl) != 0) {
        printf("[SKIP] RLIMIT_AS cannot be set here\n");
        return;
    }
    size_t under = rt_memory_limit();
    setrlimit(RLIMIT_AS, &old);
    result("ulimit -v: the limit, less what is mapped, bounds the answer", under < ((size_t)1 << 32) && under > 0);
    result("without ulimit -v: the machine's memory or a cgroup's", before > under);
#endif
}

int main(void)
{
    snprintf(root, sizeof root, "%s/limits_unit.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(root))
        return 2;
    test_cgroups();
    test_rlimit();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    int rc = system(cmd);
    (void)rc;
    return failures != 0;
}
