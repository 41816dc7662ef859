/*
 * escape.c - user text made safe to print on a terminal.
 *
 * Text that came from a user (file names, import paths, identifiers, -D values, quoted source
 * lines) may hold bytes that act on a terminal instead of showing: C0 controls such as ESC
 * (colour, cursor moves, title changes, "clear screen"), DEL, C1 controls (U+0080..U+009F, and
 * raw bytes 0x80..0x9F that some terminals read as C1 when they are not part of UTF-8), and
 * invisible format characters that reorder or hide what is shown (the bidi overrides and
 * isolates of "Trojan Source", zero-width characters, tag characters). Every such character is
 * shown escaped: a byte as \x1b, a code point as \u202e (\U000e0041 above U+FFFF). Everything
 * else, printable ASCII and valid UTF-8 alike, passes through unchanged. The diagnostic
 * printer (diag.c) and the runtime's messages (rt_error.c) print every message this way, and
 * cdsl_escape() offers the same to the tools.
 */
#include "escape.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdsl.h"

/* Invisible or reordering code points (Unicode's Cf "format" characters that matter on a
 * terminal, the line and paragraph separators, and the tag block). */
static bool esc_invisible(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0xAD || cp == 0x061C || cp == 0x180E ||
           (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) ||
           (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF || (cp >= 0xFFF9 && cp <= 0xFFFB) ||
           (cp >= 0xE0000 && cp <= 0xE007F);
}

/* The code point of a valid UTF-8 sequence at s (at most len bytes) and its length; 0 when the
 * bytes are not valid UTF-8 (a stray continuation, an overlong form, a surrogate, a cut). */
static size_t esc_utf8(const unsigned char *s, size_t len, uint32_t *cp)
{
    unsigned char b = s[0];
    size_t n = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 && b <= 0xDF ? 2 : 0;
    if (n == 0 || n > len || (n == 3 && b > 0xEF))
        return 0;
    uint32_t v = b & (0x7F >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = v << 6 | (s[i] & 0x3F);
    }
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < least[n] || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return n;
}

size_t esc_char(const char *text, size_t len, bool keep_tab, char out[ESC_MAX + 1], int *width)
{
    const unsigned char *s = (const unsigned char *)text;
    uint32_t cp;
    size_t n;
    *width = 1;
    if (s[0] < 0x80 && ((s[0] >= 0x20 && s[0] != 0x7F) || (keep_tab && s[0] == '\t'))) {
        out[0] = (char)s[0];
        out[1] = 0;
        return 1;
    }
    if (s[0] < 0x80 || !(n = esc_utf8(s, len, &cp))) {
        snprintf(out, ESC_MAX + 1, "\\x%02x", s[0]);
        *width = 4;
        return 1;
    }
    if (esc_invisible(cp)) {
        *width = snprintf(out, ESC_MAX + 1, cp > 0xFFFF ? "\\U%08x" : "\\u%04x", (unsigned)cp);
        return n;
    }
    memcpy(out, s, n);
    out[n] = 0;
    return n;
}

void esc_write(FILE *out, const char *s, size_t len)
{
    char buf[ESC_MAX + 1];
    int width;
    for (size_t i = 0; i < len;) {
        size_t n = esc_char(s + i, len - i, false, buf, &width);
        fputs(buf, out);
        i += n;
    }
}

void esc_puts(FILE *out, const char *s)
{
    esc_write(out, s, strlen(s));
}

void esc_vprint(FILE *out, const char *fmt, va_list ap)
{
    char small[512];
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(small, sizeof small, fmt, copy);
    va_end(copy);
    if (n < 0)
        return;
    char *text = (size_t)n < sizeof small ? small : malloc((size_t)n + 1);
    if (text && text != small)
        vsnprintf(text, (size_t)n + 1, fmt, ap);
    if (!text) {   /* out of memory: the start of the message is better than nothing */
        text = small;
        n = (int)strlen(small);
    }
    esc_write(out, text, (size_t)n);
    if (text != small)
        free(text);
}

size_t cdsl_escape(const char *text, char *out, size_t size)
{
    size_t need = 0, len = text ? strlen(text) : 0;
    char buf[ESC_MAX + 1];
    int width;
    for (size_t i = 0; i < len;) {
        size_t n = esc_char(text + i, len - i, false, buf, &width);
        size_t k = strlen(buf);
        if (out && need + k < size)
            memcpy(out + need, buf, k);
        else if (out && need < size)
            size = need + 1;   /* cut at a whole character */
        need += k;
        i += n;
    }
    if (out && size)
        out[need < size ? need : size - 1] = 0;
    return need;
}
