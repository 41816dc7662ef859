/*
 * fixture.h - what every program of tests/api/ shares, as ninja's src/test.h does for its
 * tests: compiling a test program, and the runner's "[PASS] name" / "[FAIL] name: why" lines.
 * One copy, so that a case reads the same in every file and says why it failed the same way.
 * Header-only and static (tests/api/hardening.sh builds each program from its one .c file).
 *
 *     EXPECT(cond)            remember the first failed expectation of the case in hand
 *     EXPECT_GOT(cond, text)  the same, with what a call returned (NULL shows as "(NULL)")
 *     test_case(name)         "[PASS] name" or "[FAIL] name: line N: cond", counted in
 *                             test_failures; the next case starts clean. True when it passed.
 *     CASE(name, cond)        a case of one expectation; CASE_GOT(name, cond, text) likewise
 *     compile(path, nranks)   the program through the checker, or NULL after a [FAIL] line;
 *                             compile_in_place, compile_opts and compile_with for the rest;
 *                             compile_try when failing to compile is what a case expects
 *     log_said(log, text)     whether a temporary log's messages since the last call hold
 *                             text (said on stderr when not); forgets them
 * A test's main returns test_failures != 0.
 */
#ifndef CDSL_TESTS_API_FIXTURE_H
#define CDSL_TESTS_API_FIXTURE_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cdsl.h"

static int test_failures;
static char test_why[512];   /* the first failed expectation of the case in hand */

static inline bool test_expect(bool ok, int line, const char *cond, const char *got, bool show_got)
{
    if (ok || test_why[0])
        return ok;
    if (show_got)
        snprintf(test_why, sizeof test_why, "line %d: %s; got \"%s\"", line, cond, got ? got : "(NULL)");
    else
        snprintf(test_why, sizeof test_why, "line %d: %s", line, cond);
    return false;
}

#define EXPECT(cond) test_expect((cond) != 0, __LINE__, #cond, NULL, false)
#define EXPECT_GOT(cond, got) test_expect((cond) != 0, __LINE__, #cond, (got), true)

static inline bool test_case(const char *name)
{
    bool passed = !test_why[0];
    if (passed)
        printf("[PASS] %s\n", name);
    else
        printf("[FAIL] %s: %s\n", name, test_why);
    test_failures += !passed;
    test_why[0] = '\0';
    return passed;
}

/* Whether the messages written to log (a tmpfile()) since the last call hold text; forgets
 * them, so that the next case reads only its own. */
static inline bool log_said(FILE *log, const char *text)
{
    char buf[4096] = "";
    fflush(log);
    rewind(log);
    size_t n = fread(buf, 1, sizeof buf - 1, log);
    buf[n] = '\0';
    bool found = strstr(buf, text) != NULL;
    if (!found)
        fprintf(stderr, "expected '%s' in: %s\n", text, buf);
    rewind(log);
    return ftruncate(fileno(log), 0) == 0 && found;
}

#define CASE(name, cond) (EXPECT(cond), test_case(name))
#define CASE_GOT(name, cond, got) (EXPECT_GOT(cond, got), test_case(name))

/* How the tests compile: path for nranks ranks, through the checker, without colour. Set more
 * (in_place, diag) before compile_with. */
static inline cdsl_compile_opts compile_opts(const char *path, int nranks)
{
    return (cdsl_compile_opts){.path = path, .nranks = nranks, .stop_after = CDSL_STAGE_CHECK, .color = 0};
}

/* cdsl_compile with o: the program, or NULL (nothing printed: the case decides). */
static inline cdsl_program *compile_try(const cdsl_compile_opts *o)
{
    cdsl_program *p = NULL;
    if (cdsl_compile(o, &p) == CDSL_OK)
        return p;
    cdsl_program_destroy(p);
    return NULL;
}

/* cdsl_compile with o: the program, or NULL after "[FAIL] PATH compiles" (counted). */
static inline cdsl_program *compile_with(const cdsl_compile_opts *o)
{
    cdsl_program *p = NULL;
    if (cdsl_compile(o, &p) == CDSL_OK)
        return p;
    printf("[FAIL] %s compiles\n", o->path);
    test_failures++;
    cdsl_program_destroy(p);
    return NULL;
}

static inline cdsl_program *compile(const char *path, int nranks)
{
    cdsl_compile_opts o = compile_opts(path, nranks);
    return compile_with(&o);
}

/* The same, compiled in place (cdsl_compile_opts.in_place). */
static inline cdsl_program *compile_in_place(const char *path, int nranks)
{
    cdsl_compile_opts o = compile_opts(path, nranks);
    o.in_place = 1;
    return compile_with(&o);
}

#endif
