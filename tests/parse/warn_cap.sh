#!/bin/bash
# tests/parse/warn_cap.sh - warnings of one kind stop after 20 on a terminal's text, as a
# compiler's errors do: a program with thousands of unused names gives the first 20 warnings
# of -Wunused, in source order, then one note with how many more there are, and it does so
# quickly. Exactly 20 gives no note; -fdiagnostics-format=json, for tools, keeps every one;
# -Werror makes them errors, which stop after 20 as errors do.
source "$(dirname "$0")/../lib/common.bash"

# lets N FILE: a program with N unused lets, one a line (line 3 holds the first).
lets() {
    { echo "program many implements barrier {"
      echo "    switch.signal(relaxed); switch.wait(relaxed);"
      for ((i = 0; i < $1; i++)); do echo "    let v$i = $i;"; done
      echo "}"; } >"$2"
}
lets 100000 "$tmp/many.cdsl"
start=$SECONDS
timeout 120 "$CDSLC" "$tmp/many.cdsl" -n 2 >"$tmp/out" 2>"$tmp/err"; rc=$?
took=$((SECONDS - start))
warnings=$(grep -c ': warning: ' "$tmp/err")
[ $rc = 0 ] && [ "$warnings" = 20 ] && grep -q "^$tmp/many.cdsl:22:9: warning: let 'v19' is never used \[-Wunused\]$" "$tmp/err" &&
    pass "100000 unused lets: the first 20 warnings, in source order, exit 0" ||
    fail "100000 unused lets: the first 20 warnings, in source order, exit 0" "exit $rc, $warnings warnings: $(tail -4 "$tmp/err")"
[ "$(tail -1 "$tmp/err")" = "cdsl: note: 99980 more -Wunused warnings (only the first 20 of each kind are shown)" ] &&
    [ "$(wc -l <"$tmp/err")" = 61 ] &&
    pass "... then one note: 99980 more -Wunused warnings" || fail "... then one note: 99980 more -Wunused warnings" "$(tail -2 "$tmp/err")"
[ $took -le 10 ] && pass "... in ${took}s (at most 10)" || fail "... in ${took}s (at most 10)"

lets 20 "$tmp/twenty.cdsl"
"$CDSLC" "$tmp/twenty.cdsl" -n 2 2>"$tmp/err"; rc=$?
[ $rc = 0 ] && [ "$(grep -c ': warning: ' "$tmp/err")" = 20 ] && ! grep -q "more -Wunused" "$tmp/err" &&
    pass "exactly 20 unused lets: 20 warnings, no note" || fail "exactly 20 unused lets: 20 warnings, no note" "$(tail -2 "$tmp/err")"

lets 50 "$tmp/fifty.cdsl"
"$CDSLC" "$tmp/fifty.cdsl" -n 2 -fdiagnostics-format=json 2>"$tmp/json"; rc=$?
n=$(python3 -c "import json, sys; print(len(json.load(open(sys.argv[1]))))" "$tmp/json" 2>&1)
[ $rc = 0 ] && [ "$n" = 50 ] && pass "-fdiagnostics-format=json: every one of 50 warnings, for tools" ||
    fail "-fdiagnostics-format=json: every one of 50 warnings, for tools" "exit $rc: $n"

"$CDSLC" "$tmp/fifty.cdsl" -n 2 -Werror 2>"$tmp/err"; rc=$?
[ $rc = 1 ] && [ "$(grep -c ': error: ' "$tmp/err")" = 20 ] && grep -q "^cdsl: too many errors; stopping after 20$" "$tmp/err" &&
    pass "-Werror: errors, which stop after 20 as errors do" || fail "-Werror: errors, which stop after 20 as errors do" "exit $rc: $(tail -2 "$tmp/err")"
exit $((failures > 0))
