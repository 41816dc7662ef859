#!/bin/bash
# tests/parse/packages.sh - packages.txt names every Debian package the build and the tests
# use, so that ./run.sh (which installs its build and test groups) is enough on a fresh
# machine. It fails when:
#   - a link line of `make all` uses a library (-lX) from a package the list does not name
#     (the library file the compiler would link, looked up with dpkg -S);
#   - a test's need names a package the list does not (packages every Debian system has,
#     Essential: yes, need not be listed);
#   - a line of the list is not "PACKAGE build|test|optional what it is for";
#   - ./run.sh or .ci/run installs otherwise than through .ci/packages and the list, or the
#     README's copy of the list differs from it.
source "$(dirname "$0")/../lib/common.bash"
need dpkg-query dpkg || exit 0

awk '!/^#/ && NF' packages.txt >"$tmp/list"
awk '{print $1}' "$tmp/list" | sort -u >"$tmp/listed"
bad=$(awk '$2 !~ /^(build|test|optional)$/ || NF < 3 {print NR ": " $0}' "$tmp/list" | head -3 | tr '\n' ' ')
[ -z "$bad" ] && pass "every line of packages.txt is PACKAGE GROUP PURPOSE" || fail "every line of packages.txt is PACKAGE GROUP PURPOSE" "$bad"

listed_or_essential() {
    grep -qx "$1" "$tmp/listed" || [ "$(dpkg-query -W -f='${Essential}' "$1" 2>/dev/null)" = yes ]
}

# owner FILE: the package that installed FILE ("" when none did). dpkg records each path as
# the package shipped it, /lib or /usr/lib, so both spellings are asked.
owner() {
    local f p
    f=$(realpath -s "$1")
    for p in "$f" "${f#/usr}" "/usr$f"; do
        dpkg-query -S "$p" 2>/dev/null | sed -n '1s/:.*//p' | grep . && return
    done
}

# The libraries of every link line of `make all`, as the compiler would find them.
cc=$(sed -n 's/^CC *?= *//p' Makefile); cc=${CC:-${cc:-cc}}
make -n -B all 2>"$tmp/make.err" | grep -v -- ' -c ' | grep -oE '(^| )-l[A-Za-z0-9_.+-]+' | sed 's/^ *-l//' | sort -u >"$tmp/libs"
if [ ! -s "$tmp/libs" ]; then
    fail "make -n -B all shows link lines with libraries" "$(head -3 "$tmp/make.err" | tr '\n' ' ')"
fi
while read -r lib; do
    file=$("$cc" -print-file-name="lib$lib.so")
    [ "$file" = "lib$lib.so" ] && file=$("$cc" -print-file-name="lib$lib.a")
    if [ "$file" = "lib$lib.a" ]; then
        fail "make all links -l$lib: its package is listed" "$cc finds no lib$lib.so or lib$lib.a here"
        continue
    fi
    pkg=$(owner "$file")
    if [ -z "$pkg" ]; then fail "make all links -l$lib: its package is listed" "no package installed $file"
    elif listed_or_essential "$pkg"; then pass "make all links -l$lib: $pkg is in packages.txt"
    else fail "make all links -l$lib from $pkg, which packages.txt does not name" "$file"; fi
done <"$tmp/libs"

# Every package a test's need, need_modules or needs line names.
code() { grep -hv '^ *#' tests/*/*.sh tests/fuzz/*.run tests/lib/*.bash; }
code | grep -oE '\bneed +("[^"]*"|[^ "]+) +[a-z0-9][a-z0-9.+-]+' | awk '{print $NF}' >"$tmp/needed"
code | grep -E '\bneed_modules ' | grep -oE '[a-z0-9_.]+:[a-z0-9][a-z0-9.+-]+' | sed 's/.*://' >>"$tmp/needed"
unlisted=""
for p in $(sort -u "$tmp/needed"); do listed_or_essential "$p" || unlisted="$unlisted $p"; done
if [ -s "$tmp/needed" ] && [ -z "$unlisted" ]; then pass "every package a test needs is in packages.txt ($(sort -u "$tmp/needed" | wc -l))"
else fail "every package a test needs is in packages.txt" "not listed:$unlisted"; fi

# One list: run.sh and .ci/run install through .ci/packages, and name no package themselves.
grep -q '^bash \.ci/packages build test$' run.sh && ! grep -v '^ *#' run.sh | grep -q 'apt-get' &&
    pass "run.sh installs the build and test groups of packages.txt" ||
    fail "run.sh installs the build and test groups of packages.txt" "$(grep -n 'apt\|packages' run.sh | head -3 | tr '\n' ' ')"
grep -q 'bash \.ci/packages build test optional' .ci/run && ! grep -v '^ *#' .ci/run | grep -q 'apt-get' &&
    pass ".ci/run installs every group of packages.txt" ||
    fail ".ci/run installs every group of packages.txt" "$(grep -n 'apt\|packages' .ci/run | head -3 | tr '\n' ' ')"
# The README's copy: the fenced block after the line "<!-- packages.txt -->".
awk '/^<!-- packages.txt -->$/ {on = 1; next} on && /^```/ {if (seen) exit; seen = 1; next} on && seen' README.md >"$tmp/readme"
diff -u "$tmp/list" "$tmp/readme" >"$tmp/readme.diff"
if [ -s "$tmp/readme" ] && [ ! -s "$tmp/readme.diff" ]; then
    pass "README.md quotes packages.txt as it is"
else
    fail "README.md quotes packages.txt as it is" "$(head -8 "$tmp/readme.diff" | tr '\n' ' ')"
fi
exit $((failures > 0))
