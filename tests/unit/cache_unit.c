/*
 * cache_unit.c - unit tests for the JIT cache (runtime/jit/cache.c) through its own interface, with
 * made-up payloads, so that no NVRTC is needed: miss, store, hit; keys length-prefixed; a flipped
 * or truncated entry is corrupt and replaced; a payload of length 0 is never stored; an entry
 * names its key; the cap's precedence and its least-recently-used eviction; stale temporary
 * files; cleaning. Built and run under ASan and UBSan by tests/emit/cache_unit.sh. Prints one
 * [PASS]/[FAIL] line per test; exits 1 on any failure.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"

static int failures;
static char dir[] = "/tmp/cdsl_cache_unitXXXXXX";

static void report(const char *name, int ok, const char *why)
{
    printf("[%s] cache_unit: %s%s%s\n", ok ? "PASS" : "FAIL", name, ok ? "" : ": ", ok ? "" : why);
    failures += !ok;
}

static void key_of(const char *text, char key[65])
{
    const void *parts[] = {text};
    size_t lens[] = {strlen(text)};
    rt_cache_key(parts, lens, 1, key);
}

static bool open_cache(RtCache *c)
{
    setenv("CDSL_CACHE_DIR", dir, 1);
    return rt_cache_open(c, RT_CACHE_CREATE) == RT_CACHE_OPEN;
}

static RtCacheResult load_compare(RtCache *c, const char *key, const void *want, size_t wlen)
{
    void *data = NULL;
    size_t len = 0;
    RtCacheResult r = rt_cache_load(c, key, "cubin", &data, &len);
    if (r == RT_CACHE_HIT && (len != wlen || memcmp(data, want, wlen) != 0))
        r = RT_CACHE_CORRUPT;
    free(data);
    return r;
}

static void flip_byte(const char *path, long at)
{
    FILE *f = fopen(path, "r+b");
    if (!f)
        return;
    fseek(f, at, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(ch ^ 0x5a, f);
    fclose(f);
}

static void set_age(RtCache *c, const char *key, long seconds)
{
    char path[4400];
    rt_cache_path(c, key, "cubin", path, sizeof path);
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= seconds;
    t[1] = t[0];
    utimensat(AT_FDCWD, path, t, 0);
}

static bool exists(RtCache *c, const char *key)
{
    char path[4400];
    rt_cache_path(c, key, "cubin", path, sizeof path);
    return access(path, F_OK) == 0;
}

static void test_round_trip(void)
{
    RtCache c;
    if (!open_cache(&c)) {
        report("the folder opens", 0, c.why);
        return;
    }
    const char *payload = "cubin bytes \x7f\x00 and more";
    size_t plen = 24;
    const void *parts[] = {"src", "opts"}, *parts2[] = {"sr", "copts"};   /* same bytes, split differently */
    size_t lens[] = {3, 4}, lens2[] = {2, 5};
    char key[65], key2[65], path[4400];
    rt_cache_key(parts, lens, 2, key);
    rt_cache_key(parts2, lens2, 2, key2);
    int ok = strcmp(key, key2) != 0 && load_compare(&c, key, payload, plen) == RT_CACHE_MISS;
    ok &= rt_cache_store(&c, key, "cubin", payload, plen, NULL) == 0;
    ok &= load_compare(&c, key, payload, plen) == RT_CACHE_HIT;
    report("miss, store, hit with the same bytes; keys length-prefixed", ok, "unexpected result");

    rt_cache_path(&c, key, "cubin", path, sizeof path);
    flip_byte(path, 112 + 3);
    ok = load_compare(&c, key, payload, plen) == RT_CACHE_CORRUPT;
    ok &= truncate(path, 40) == 0 && load_compare(&c, key, payload, plen) == RT_CACHE_CORRUPT;
    ok &= rt_cache_store(&c, key, "cubin", payload, plen, NULL) == 0 &&
          load_compare(&c, key, payload, plen) == RT_CACHE_HIT;
    report("a flipped payload byte or a truncated file is corrupt, and is replaced", ok, "accepted a bad entry");

    char path2[4400];
    rt_cache_path(&c, key2, "cubin", path2, sizeof path2);
    ok = link(path, path2) == 0 && load_compare(&c, key2, payload, plen) == RT_CACHE_CORRUPT;
    report("an entry found under another key's name is refused", ok, "served another key's entry");
    unlink(path2);

    ok = rt_cache_store(&c, key2, "cubin", "", 0, NULL) == 1 && !exists(&c, key2);
    report("a payload of length 0 is not stored", ok, "stored an empty payload");
    unlink(path);   /* the eviction test counts bytes in an empty folder */
    rt_cache_close(&c);
}

static void test_cap_from_environment(void)
{
    unsetenv("CDSL_CACHE_MAXSIZE");
    unsetenv("CUDA_CACHE_MAXSIZE");
    int ok = rt_cache_max_size() == RT_CACHE_DEFAULT_MAX && RT_CACHE_DEFAULT_MAX == 256ull << 20;
    setenv("CUDA_CACHE_MAXSIZE", "1000", 1);
    ok &= rt_cache_max_size() == 1000;
    setenv("CDSL_CACHE_MAXSIZE", "5000", 1);
    ok &= rt_cache_max_size() == 5000;
    setenv("CDSL_CACHE_MAXSIZE", "5M", 1);   /* not a byte count: ignored */
    ok &= rt_cache_max_size() == 1000;
    setenv("CDSL_CACHE_MAXSIZE", "0", 1);
    ok &= rt_cache_max_size() == 0;
    report("the cap: CDSL_CACHE_MAXSIZE, else CUDA_CACHE_MAXSIZE, else 256 MiB", ok, "wrong cap");
    unsetenv("CDSL_CACHE_MAXSIZE");
    unsetenv("CUDA_CACHE_MAXSIZE");
}

static void test_eviction(void)
{
    char a[65], b[65], d[65], big[65];
    key_of("a", a), key_of("b", b), key_of("d", d), key_of("big", big);
    char payload[1000];
    memset(payload, 'x', sizeof payload);
    /* Room for two entries of 1000 bytes and their 112-byte headers, not three. */
    setenv("CDSL_CACHE_MAXSIZE", "2300", 1);
    RtCache c;
    if (!open_cache(&c)) {
        report("eviction: the folder opens", 0, c.why);
        return;
    }
    RtCacheEvicted ev;
    int ok = rt_cache_store(&c, a, "cubin", payload, sizeof payload, &ev) == 0 && ev.files == 0;
    ok &= rt_cache_store(&c, b, "cubin", payload, sizeof payload, &ev) == 0 && ev.files == 0;
    set_age(&c, a, 7200);
    set_age(&c, b, 3600);
    ok &= load_compare(&c, a, payload, sizeof payload) == RT_CACHE_HIT;   /* a is used again */
    ok &= rt_cache_store(&c, d, "cubin", payload, sizeof payload, &ev) == 0 && ev.files == 1 &&
          ev.bytes == 1112;
    ok &= exists(&c, a) && !exists(&c, b) && exists(&c, d);
    report("over the cap, the least recently used entry is evicted", ok, "wrong entries evicted");

    char huge[3000] = {0};
    ok = rt_cache_store(&c, big, "cubin", huge, sizeof huge, &ev) == 1 && !exists(&c, big) && exists(&c, a);
    report("an entry larger than the cap is not stored", ok, "stored it, or evicted for it");
    rt_cache_close(&c);
    unsetenv("CDSL_CACHE_MAXSIZE");
}

static void touch_file(const char *name, long age)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0)
        close(fd);
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= age;
    t[1] = t[0];
    utimensat(AT_FDCWD, path, t, 0);
}

static bool file_exists(const char *name)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_temporary_files_and_clean(void)
{
    touch_file(HEX64 ".cubin.tmp.old123", 3600);
    touch_file(HEX64 ".ptx.tmp.new123", 0);
    touch_file("other.tmp.old123", 3600);
    touch_file(HEX64 ".CUBIN", 0);
    RtCache c;
    if (!open_cache(&c)) {
        report("temporary files: the folder opens", 0, c.why);
        return;
    }
    int ok = !file_exists(HEX64 ".cubin.tmp.old123") && file_exists(HEX64 ".ptx.tmp.new123") &&
             file_exists("other.tmp.old123");
    report("opening removes stale temporary files only", ok, "wrong files removed");

    char buf[8192] = {0};
    FILE *report_to = fmemopen(buf, sizeof buf - 1, "w");
    RtCacheEvicted removed;
    ok = rt_cache_clean(&c, report_to, &removed) == 0;
    fclose(report_to);
    /* left: the two entries of test_eviction (a, d), and the fresh temporary file */
    ok &= removed.files == 3 && strstr(buf, "removed ") && file_exists("other.tmp.old123") &&
          file_exists(HEX64 ".CUBIN") && !file_exists(HEX64 ".ptx.tmp.new123");
    report("cleaning removes entries and temporary files, and nothing else", ok, buf);
    rt_cache_close(&c);
    unlink(strcat(strcpy(buf, dir), "/other.tmp.old123"));
    unlink(strcat(strcpy(buf, dir), "/" HEX64 ".CUBIN"));
}

static void test_untrusted(void)
{
    RtCache c;
    int ok = chmod(dir, 01777) == 0 && !open_cache(&c) && c.fd < 0 && strstr(c.why, "mode 1777");
    ok &= chmod(dir, 0755) == 0 && open_cache(&c);   /* readable by others is fine */
    rt_cache_close(&c);
    report("a folder others can write to is not opened", ok, c.why);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        report("a temporary folder", 0, "mkdtemp failed");
        return 1;
    }
    unsetenv("CDSL_NO_CACHE");
    unsetenv("CDSL_CACHE_MAXSIZE");
    unsetenv("CUDA_CACHE_MAXSIZE");
    test_round_trip();
    test_cap_from_environment();
    test_eviction();
    test_temporary_files_and_clean();
    test_untrusted();
    RtCache c;
    if (open_cache(&c)) {
        RtCacheEvicted removed;
        rt_cache_clean(&c, NULL, &removed);
        rt_cache_close(&c);
    }
    rmdir(dir);
    return failures ? 1 : 0;
}
