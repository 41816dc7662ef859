#!/bin/bash
# tests/check/warnings.sh - the checker's warnings are never wrong. For every program
# here that checks clean (the warn_* goldens, tests/check/ok_*, the stdlib and the spec's
# programs, at -n 2, 4 and 8), every -Wredundant-barrier and -Wstronger-order warning is taken
# at its word, all of them at once: the statements of each redundant barrier deleted, each
# signal named relaxed. The program that results must check clean with no such warning left,
# and run verified on the sim backend under three jitter seeds. Also: warnings never change
# the exit status (0), -Werror makes them errors (1), -w and -Wno-... silence them, and JSON
# diagnostics name each warning's option.
source "$(dirname "$0")/../lib/common.bash"
need python3 python3 || exit 0

# apply JSON FILE OUT: every barrier and order warning of JSON applied to FILE's text.
apply() {
    python3 - "$1" "$2" "$3" <<'PY'
import json, re, sys
diags, path, out = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
lines = open(path).read().split("\n")
edits = []   # (line, col, what)
for d in diags:
    opt = d.get("option")
    at = d["locations"][0]["caret"] if d["locations"] else None
    if opt == "-Wredundant-barrier":
        edits.append((at["line"], at["column"], "delete"))
        w = d["children"][0]["locations"][0]["caret"]
        edits.append((w["line"], w["column"], "delete"))
    elif opt == "-Wstronger-order":
        edits.append((at["line"], at["column"], "relax"))
for line, col, what in sorted(edits, reverse=True):   # right to left: columns stay valid
    text = lines[line - 1]
    i = col - 1
    if what == "relax":
        m = re.compile(r"signal\((release)?\)").match(text, i)
        assert m, (line, text)
        lines[line - 1] = text[:i] + "signal(relaxed)" + text[m.end():]
    else:
        start = max(text.rfind(";", 0, i), text.rfind("{", 0, i), text.rfind("}", 0, i)) + 1
        end = text.index(";", i) + 1
        lines[line - 1] = text[:start] + text[end:]
open(out, "w").write("\n".join(lines))
print(len(edits))
PY
}

programs=(tests/check/warn_*.cdsl tests/check/ok_*.cdsl stdlib/*.cdsl)
for f in tests/spec/*.cdsl; do head -1 "$f" | grep -q 'accept' && programs+=("$f"); done
applied=0 bad=""
for f in "${programs[@]}"; do
    for n in 2 4 8; do
        "$CDSLC" "$f" -n $n -fdiagnostics-format=json 2>"$tmp/diag.json" >/dev/null || continue
        grep -q '"-W\(redundant-barrier\|stronger-order\)"' "$tmp/diag.json" || continue
        cp "$f" "$tmp/changed.cdsl"
        edits=$(apply "$tmp/diag.json" "$f" "$tmp/changed.cdsl" 2>&1) || { bad="$bad; $f -n $n: $edits"; continue; }
        applied=$((applied + 1))
        if ! out=$("$CDSLC" "$tmp/changed.cdsl" -n $n 2>&1) || echo "$out" | grep -q 'Wredundant-barrier\|Wstronger-order'; then
            bad="$bad; $f -n $n with its $edits edits: $(echo "$out" | head -2 | tr '\n' ' ')"
            continue
        fi
        for seed in 1 2 3; do
            "$CDSLRUN" "$tmp/changed.cdsl" -n $n --backend sim --size 16K --seed $seed --jitter 30 --iters 2 >"$tmp/run" 2>&1 ||
                { bad="$bad; $f -n $n, seed $seed: $(tail -2 "$tmp/run" | tr '\n' ' ')"; break; }
        done
    done
done
if [ -z "$bad" ] && [ $applied -ge 3 ]; then pass "every barrier and order warning applied at once ($applied programs): checks clean, runs verified"
else fail "every barrier and order warning applied at once" "$applied applied$bad"; fi

# Exit status and switches.
W=tests/check/warn_redundant_barrier.cdsl
"$CDSLC" $W -n 4 2>"$tmp/e"; rc=$?
[ $rc = 0 ] && grep -q 'warning: redundant barrier' "$tmp/e" && pass "a warning leaves the exit status 0" || fail "a warning leaves the exit status 0" "exit $rc"
"$CDSLC" $W -n 4 -Werror 2>"$tmp/e"; rc=$?
[ $rc = 1 ] && grep -q 'error: redundant barrier.*\[-Werror=redundant-barrier\]' "$tmp/e" && pass "-Werror: exit 1, [-Werror=...]" || fail "-Werror: exit 1" "exit $rc: $(head -1 "$tmp/e")"
"$CDSLRUN" $W -n 4 -Werror --backend sim --size 16K >/dev/null 2>&1; rc=$?
[ $rc = 1 ] && pass "cdslrun -Werror: exit 1, nothing runs" || fail "cdslrun -Werror: exit 1" "exit $rc"
for off in -w -Wno-redundant-barrier "-Wno-redundant-barrier -Werror"; do
    # shellcheck disable=SC2086
    out=$("$CDSLC" $W -n 4 $off 2>&1); rc=$?
    [ $rc = 0 ] && [ -z "$out" ] && pass "$off: silent, exit 0" || fail "$off: silent, exit 0" "exit $rc: $out"
done
"$CDSLC" $W -n 4 -Wredundant-barriers 2>"$tmp/e"; rc=$?
[ $rc = 2 ] && grep -q "^cdslc: error: unknown warning option '-Wredundant-barriers'" "$tmp/e" && pass "an unknown -W option is a usage error" ||
    fail "an unknown -W option is a usage error" "exit $rc: $(head -1 "$tmp/e")"
"$CDSLC" $W -n 4 -fdiagnostics-format=json 2>"$tmp/j"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d) == 1 and d[0]["kind"] == "warning" and d[0]["option"] == "-Wredundant-barrier", d
assert d[0]["children"][0]["kind"] == "note" and d[0]["children"][0]["locations"][0]["caret"]["line"] == 13
' "$tmp/j" && pass "JSON: a warning with its option and its note" || fail "JSON: a warning with its option and its note" "$(head -c 300 "$tmp/j")"
