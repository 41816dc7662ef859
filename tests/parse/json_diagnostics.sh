#!/bin/bash
# tests/parse/json_diagnostics.sh - -fdiagnostics-format=json writes gcc's JSON
# shape, valid for python's json module: one array per library call that reported, each
# diagnostic with kind, message, locations (file, line, column; none for a message without a
# place) and its notes as children; "[]" for a clean program; user text (a path with a quote,
# a backslash and an escape character) kept valid; nothing else on the stream.
source "$(dirname "$0")/../lib/common.bash"
need python3 python3 || exit 0

# check NAME PYTHON CMD...: CMD's stderr parsed as JSON arrays (one a line) into `arrays`,
# then the Python expression(s) must hold.
check() {
    local name=$1 py=$2; shift 2
    "$@" 2>"$tmp/err" >/dev/null
    echo "rc=$?" >"$tmp/rc"
    if python3 - "$tmp/err" "$(cat "$tmp/rc")" "$py" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
arrays = [json.loads(l) for l in lines]
rc = int(sys.argv[2].split("=")[1])
diags = [d for a in arrays for d in a]
def caret(d, i=0):
    return d["locations"][i]["caret"]
exec(sys.argv[3])
PY
    then pass "$name"; else fail "$name" "$(head -c 400 "$tmp/err")"; fi
}

check "a clean program: [] and exit 0" 'assert arrays == [[]] and rc == 0' "$CDSLC" stdlib/allgather_ring.cdsl -n 4 -fdiagnostics-format=json
check "a race: the error, its place and its notes as children" '
assert rc == 1 and len(arrays) == 1
d = diags[0]
assert d["kind"] == "error" and d["message"].startswith("data race: ")
c = caret(d)
assert c["file"] == "tests/check/race_relaxed_publish.cdsl" and c["line"] == 13 and c["column"] == 5
assert [k["kind"] for k in d["children"]] == ["note", "note"] and caret(d["children"][0])["line"] == 9
assert "option" not in d and d["column-origin"] == 1
' "$CDSLC" tests/check/race_relaxed_publish.cdsl -n 2 -fdiagnostics-format=json
check "a syntax error" '
assert rc == 1 and diags[0]["message"] == "expected '"';'"' after '"')'"'" and caret(diags[0])["line"] == 3 and caret(diags[0])["column"] == 33
' "$CDSLC" tests/parse/syntax_missing_semicolon.cdsl -n 2 -fdiagnostics-format=json
check "a message without a place: no locations" '
assert rc == 2 and diags[0]["locations"] == [] and "cannot read" in diags[0]["message"]
' "$CDSLC" "$tmp/none.cdsl" -n 2 -fdiagnostics-format=json
check "a deadlock: one note per rank" '
d = diags[0]
assert rc == 1 and d["message"].startswith("deadlock") and len(d["children"]) == 3
' "$CDSLC" tests/check/sync_deadlock_cycle3.cdsl -n 3 -fdiagnostics-format=json
check "warnings name their option" '
assert rc == 0 and {d["option"] for d in diags} == {"-Wunused"} and all(d["kind"] == "warning" for d in diags)
' "$CDSLC" tests/parse/warn_unused_let.cdsl -n 2 -fdiagnostics-format=json
check "an error at code generation: an array of its own, after the compile's" '
assert rc == 2 and arrays[0] == [] and len(arrays) == 2 and "multimem" in arrays[1][0]["message"]
' "$CDSLC" tests/emit/nvls_old_arch.cdsl -n 2 --emit-cubin --backend nvls --arch sm_80 -o "$tmp/x.cubin" -fdiagnostics-format=json
mkdir -p "$tmp/a\"b\\c"
printf '\033' >"$tmp/esc"
d="$tmp/a\"b\\c/x$(cat "$tmp/esc")y.cdsl"
printf 'program p implements allgather {\n    copy(output[9], input[0]);\n}\n' >"$d"
check "a path with a quote, a backslash and ESC stays valid JSON, shown escaped" '
f = caret(diags[0])["file"]
assert rc == 1 and f.endswith("/a\"b\\c/x\\x1by.cdsl"), f
' "$CDSLC" "$d" -n 2 -fdiagnostics-format=json
check "cdslrun too" 'assert rc == 1 and diags[0]["kind"] == "error"' "$CDSLRUN" tests/check/race_relaxed_publish.cdsl -n 2 -fdiagnostics-format=json --backend sim
"$CDSLC" stdlib/allgather_ring.cdsl -n 2 -fdiagnostics-format=xml 2>"$tmp/e"; rc=$?
[ $rc = 2 ] && grep -q "^cdslc: error: -fdiagnostics-format is text or json, not 'xml'" "$tmp/e" && pass "an unknown format is a usage error" ||
    fail "an unknown format is a usage error" "exit $rc: $(cat "$tmp/e")"
