/*
 * escape_unit.c - cdsl_escape (compiler/util/escape.c), what every message prints user text with:
 * which characters are shown escaped and how, what passes through unchanged, and the
 * snprintf-like cutting. Prints "[PASS] name" / "[FAIL] name".
 */
#include <stdio.h>
#include <string.h>

#include "cdsl.h"

static int failures;

static void expect(const char *name, const char *in, const char *want)
{
    char out[256];
    size_t n = cdsl_escape(in, out, sizeof out);
    int ok = !strcmp(out, want) && n == strlen(want);
    printf("[%s] %s\n", ok ? "PASS" : "FAIL", name);
    if (!ok)
        printf("  got '%s' (%zu), wanted '%s'\n", out, n, want);
    failures += !ok;
}

static void result(const char *name, int ok)
{
    printf("[%s] %s\n", ok ? "PASS" : "FAIL", name);
    failures += !ok;
}

int main(void)
{
    expect("plain text passes", "tests/x y.cdsl", "tests/x y.cdsl");
    expect("ESC and BEL (C0)", "a\x1b]0;t\x07z", "a\\x1b]0;t\\x07z");
    expect("newline, tab and carriage return", "a\nb\tc\r", "a\\x0ab\\x09c\\x0d");
    expect("DEL", "a\x7f", "a\\x7f");
    expect("C1 control as UTF-8 (U+009B, CSI)", "a\xc2\x9b" "31m", "a\\u009b31m");
    expect("a raw C1 byte that is not UTF-8", "a\x9b" "31m", "a\\x9b31m");
    expect("bidi overrides U+202A..U+202E", "\xe2\x80\xaa\xe2\x80\xae", "\\u202a\\u202e");
    expect("bidi isolates U+2066..U+2069", "\xe2\x81\xa6\xe2\x81\xa9", "\\u2066\\u2069");
    expect("zero-width space, marks, BOM, ALM", "\xe2\x80\x8b\xe2\x80\x8f\xef\xbb\xbf\xd8\x9c",
           "\\u200b\\u200f\\ufeff\\u061c");
    expect("line and paragraph separators", "\xe2\x80\xa8\xe2\x80\xa9", "\\u2028\\u2029");
    expect("tag characters", "\xf3\xa0\x80\x81", "\\U000e0001");
    expect("printable UTF-8 passes", "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
    expect("an overlong form is not UTF-8", "\xc0\xaf", "\\xc0\\xaf");
    expect("a surrogate is not UTF-8", "\xed\xa0\x80", "\\xed\\xa0\\x80");
    expect("a cut sequence is not UTF-8", "\xe2\x80", "\\xe2\\x80");
    expect("NULL is the empty text", NULL, "");
    char small[8];
    size_t n = cdsl_escape("ab\x1b" "cd", small, sizeof small);
    result("cut: the whole length returned, the text cut at a whole form",
           n == 8 && !strcmp(small, "ab\\x1bc"));
    n = cdsl_escape("abc\x1b", small, 5);
    result("cut: never inside an escape", n == 7 && !strcmp(small, "abc"));
    result("size 0 and no buffer: the length only", cdsl_escape("\xe2\x80\xae", NULL, 0) == 6);
    return failures != 0;
}
