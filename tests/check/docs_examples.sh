#!/bin/bash
# The worked examples in docs/language.md are what cdslc really prints: for every line
# "`cdslc NAME.cdsl ARGS` prints:", the code block before it is NAME.cdsl and the code block
# after it is the expected output. Keeps the documentation true to the code.
c=${CDSLC:-build/cdslc}
case "$c" in /*) ;; *) c=$PWD/$c ;; esac
doc=docs/language.md
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
grep -n '^`cdslc [A-Za-z0-9_]*\.cdsl .*` prints:$' "$doc" | while IFS=: read -r line rest; do
    cmd=$(echo "$rest" | sed 's/^`cdslc \(.*\)` prints:*$/\1/')
    name=${cmd%% *}; args=${cmd#* }
    # the last fenced block before the line, and the first one after it
    awk -v stop="$line" 'NR >= stop { exit } /^```/ { inb = !inb; if (inb) { n = 0; delete b } next } inb { b[++n] = $0 } END { for (i = 1; i <= n; i++) print b[i] }' "$doc" >"$t/$name"
    awk -v start="$line" 'NR <= start { next } /^```/ { if (inb) exit; inb = 1; next } inb' "$doc" >"$t/want"
    # shellcheck disable=SC2086
    (cd "$t" && "$c" "$name" $args) 2>"$t/got" >/dev/null
    if diff -u "$t/want" "$t/got" >"$t/diff"; then echo "[PASS] docs/language.md: $cmd"
    else echo "[FAIL] docs/language.md: $cmd differs:"; head -20 "$t/diff"; fi
done
