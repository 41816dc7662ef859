#!/bin/bash
# tests/api/exports.sh - libcdsl.so is a shared library people can link (issue 13): it has a
# SONAME and a version (libcdsl.so -> libcdsl.so.0 -> libcdsl.so.0.1.0), it exports the
# functions of cdsl.h (cdsl_*) and nothing else (libcdsl.map), every function the header
# declares is among them, and a program linked with -lcdsl runs against it by its SONAME.
source "$(dirname "$0")/../lib/common.bash"

version=$(sed -n 's/^VERSION *= *//p' Makefile)
major=${version%%.*}
so=build/libcdsl.so
if [ -L $so ] && [ "$(readlink $so)" = "libcdsl.so.$major" ] && [ -L "$so.$major" ] &&
    [ "$(readlink "$so.$major")" = "libcdsl.so.$version" ] && [ -f "$so.$version" ] && [ ! -L "$so.$version" ]; then
    pass "libcdsl.so -> libcdsl.so.$major -> libcdsl.so.$version"
else
    fail "libcdsl.so -> libcdsl.so.$major -> libcdsl.so.$version" "$(ls -l build/libcdsl.so* 2>&1 | tr '\n' ' ')"
fi
soname=$(readelf -d "$so" 2>&1 | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libcdsl.so.$major" ] && pass "SONAME is libcdsl.so.$major" || fail "SONAME is libcdsl.so.$major" "'$soname'"

nm -D --defined-only "$so" | awk '{print $NF}' | sed 's/@.*//' | sort -u >"$tmp/exported"
others=$(grep -v '^cdsl_' "$tmp/exported" | head -20 | tr '\n' ' ')
if [ -s "$tmp/exported" ] && [ -z "$others" ]; then pass "exports cdsl_* only ($(wc -l <"$tmp/exported") symbols)"
else fail "exports cdsl_* only" "also: $others"; fi

# Every function cdsl.h declares is exported (a declaration the map forgot would not link).
grep -oE '\bcdsl_[a-z0-9_]+ *\(' runtime/cdsl.h | sed 's/ *($//' | sort -u >"$tmp/declared"
missing=$(comm -23 "$tmp/declared" "$tmp/exported" | tr '\n' ' ')
[ -z "$missing" ] && pass "every function of cdsl.h is exported" || fail "every function of cdsl.h is exported" "$missing"

# A user's program linked with -lcdsl records the SONAME and runs against it.
printf '#include <cdsl.h>\n#include <stdio.h>\nint main(void) { puts(cdsl_version()); return 0; }\n' >"$tmp/v.c"
if cc -std=c11 -Iruntime -o "$tmp/v" "$tmp/v.c" -Lbuild -lcdsl 2>"$tmp/cc.log" &&
    readelf -d "$tmp/v" | grep -q "NEEDED.*\[libcdsl.so.$major\]" &&
    [ "$(LD_LIBRARY_PATH=build "$tmp/v")" = "$version" ]; then
    pass "a program linked with -lcdsl needs libcdsl.so.$major and runs"
else
    fail "a program linked with -lcdsl needs libcdsl.so.$major and runs" "$(head -3 "$tmp/cc.log" | tr '\n' ' ')"
fi
