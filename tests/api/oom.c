/*
 * oom.c - out of memory through the API: the library unwinds to an error return and the
 * host goes on. With the address space limited (RLIMIT_AS) to a little more than is mapped:
 *   1. cdsl_compile of a program whose evaluation needs far more than that returns
 *      CDSL_ERR_SYSTEM with *out NULL, after "out of memory" on the diagnostics stream;
 *   2. cdsl_emit_cuda and cdsl_program_dump of a compiled program return NULL (errno ENOMEM)
 *      and CDSL_ERR_SYSTEM;
 * then, with the limit lifted, the same calls succeed in the same process: nothing was left
 * locked or half-made. Not under AddressSanitizer (its shadow needs the whole address space).
 *
 *     oom BIG.cdsl SMALL.cdsl    (BIG needs GiBs to evaluate at -n 1; SMALL passes at -n 1)
 *
 * Prints "[PASS] name" / "[FAIL] name".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "cdsl.h"
#include "fixture.h"

static size_t mapped_now(void)
{
    unsigned long long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%llu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return (size_t)pages * 4096;
}

static struct rlimit saved;

static int limit_to(size_t more)
{
    struct rlimit rl = saved;
    rl.rlim_cur = (rlim_t)(mapped_now() + more);
    return setrlimit(RLIMIT_AS, &rl);
}

/* The diagnostics of one call, in memory. */
static char text[4096];
static FILE *capture(void)
{
    memset(text, 0, sizeof text);
    return fmemopen(text, sizeof text - 1, "w");
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 99;
    getrlimit(RLIMIT_AS, &saved);
    cdsl_program *p = (cdsl_program *)1, *small = NULL;
    FILE *diag = capture();
    if (limit_to((size_t)256 << 20) != 0) {
        printf("[SKIP] RLIMIT_AS cannot be set here\n");
        return 0;
    }
    cdsl_compile_opts o = compile_opts(argv[1], 1);
    o.diag = diag;
    int rc = cdsl_compile(&o, &p);
    setrlimit(RLIMIT_AS, &saved);
    fclose(diag);
    CASE("cdsl_compile out of memory: CDSL_ERR_SYSTEM, no program", rc == CDSL_ERR_SYSTEM && p == NULL);
    CASE("cdsl_compile out of memory: the message says so", strstr(text, "cdsl: error: out of memory") != NULL);
    if (!strstr(text, "out of memory"))
        printf("  diagnostics: %s\n", text);

    small = compile(argv[2], 1);
    CASE("after it, the process compiles a program as before", small != NULL);
    if (!small)
        return 1;
    diag = fopen("/dev/null", "w");
    limit_to((size_t)1 << 20);
    errno = 0;
    const char *cuda = cdsl_emit_cuda(small, CDSL_BACKEND_P2P, CDSL_F32);
    int err = errno;
    int dump = cdsl_program_dump(small, CDSL_DUMP_DOT, diag);
    setrlimit(RLIMIT_AS, &saved);
    CASE("cdsl_emit_cuda out of memory: NULL, errno ENOMEM", cuda == NULL && err == ENOMEM);
    CASE("cdsl_program_dump out of memory: CDSL_ERR_SYSTEM", dump == CDSL_ERR_SYSTEM);
    cuda = cdsl_emit_cuda(small, CDSL_BACKEND_P2P, CDSL_F32);
    CASE("then, with memory, the same program emits CUDA", cuda && strstr(cuda, "__global__"));
    CASE("and dumps its graph", cdsl_program_dump(small, CDSL_DUMP_DOT, diag) == CDSL_OK);
    fclose(diag);
    cdsl_program_destroy(small);
    return test_failures != 0;
}
