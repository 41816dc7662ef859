#!/bin/bash
# tests/api/exports.sh - libcdsl.so is a shared library people can link: it has a
# SONAME and a version (libcdsl.so -> libcdsl.so.0 -> libcdsl.so.0.1.0), it exports exactly
# the functions cdsl.h declares, each under libcdsl.map's version node (CDSL_0.1), and a
# program linked with -lcdsl runs against it by its SONAME.
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

# The exports are exactly the functions cdsl.h declares, as the compiler reads the header
# (gcc -aux-info: comments and examples in it do not count), nothing more and nothing less,
# and each carries a version node of libcdsl.map (CDSL_0.1; a later release adds a node).
nodes=$(sed -n 's/^\(CDSL_[0-9.]*\) *{.*/\1/p' libcdsl.map | paste -sd' ')
nm -D --defined-only "$so" | awk '$2 != "A" {print $NF}' |
    sort -u >"$tmp/exported_versioned"
sed 's/@.*//' "$tmp/exported_versioned" | sort -u >"$tmp/exported"
if gcc -std=c11 -fsyntax-only -aux-info "$tmp/aux" -x c runtime/cdsl.h 2>"$tmp/aux.err"; then
    grep '^/\* runtime/cdsl\.h:' "$tmp/aux" | sed -E 's/ *\(.*//; s/.*[ *]//' | sort -u >"$tmp/declared"
else
    fail "gcc -aux-info reads runtime/cdsl.h" "$(head -3 "$tmp/aux.err" | tr '\n' ' ')"
fi
extra=$(comm -13 "$tmp/declared" "$tmp/exported" | tr '\n' ' ')
missing=$(comm -23 "$tmp/declared" "$tmp/exported" | tr '\n' ' ')
if [ -s "$tmp/declared" ] && [ -z "$extra" ]; then pass "exports nothing cdsl.h does not declare ($(wc -l <"$tmp/exported") symbols)"
else fail "exports nothing cdsl.h does not declare" "also: $extra"; fi
if [ -s "$tmp/declared" ] && [ -z "$missing" ]; then pass "exports every function cdsl.h declares ($(wc -l <"$tmp/declared"))"
else fail "exports every function cdsl.h declares" "missing (add them to libcdsl.map): $missing"; fi
pattern=$(for n in $nodes; do printf '@@%s$\n' "$n"; done)
unversioned=$(grep -v -e "${pattern:-@@CDSL_}" "$tmp/exported_versioned" | head -10 | tr '\n' ' ')
if [ -n "$nodes" ] && [ -s "$tmp/exported_versioned" ] && [ -z "$unversioned" ]; then pass "every export has a version of libcdsl.map ($nodes)"
else fail "every export has a version of libcdsl.map (${nodes:-it names none})" "$unversioned"; fi

# A user's program linked with -lcdsl records the SONAME and runs against it.
printf '#include <cdsl.h>\n#include <stdio.h>\nint main(void) { puts(cdsl_version()); return 0; }\n' >"$tmp/v.c"
if cc -std=c11 -Iruntime -o "$tmp/v" "$tmp/v.c" -Lbuild -lcdsl 2>"$tmp/cc.log" &&
    readelf -d "$tmp/v" | grep -q "NEEDED.*\[libcdsl.so.$major\]" &&
    [ "$(LD_LIBRARY_PATH=build "$tmp/v")" = "$version" ]; then
    pass "a program linked with -lcdsl needs libcdsl.so.$major and runs"
else
    fail "a program linked with -lcdsl needs libcdsl.so.$major and runs" "$(head -3 "$tmp/cc.log" | tr '\n' ' ')"
fi
