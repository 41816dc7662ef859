#!/bin/bash
# tests/perf/results_text.sh - cdsl-perf's JSON results file (-F x.json) shows text from the user
# (the program's path, the command line) as every message does (escape.c's form: ESC as \x1b, a
# byte that is not UTF-8 as \xff), so the file is valid UTF-8 JSON that python reads, with no
# raw control byte, whatever the path holds.
source "$(dirname "$0")/../lib/common.bash"
PERF=${PERF:-$PWD/build/cdsl-perf}

name=$'lazy\x1b[2J\xff.cdsl'
printf 'program lazy implements allgather {\n}\n' >"$tmp/$name"
"$PERF" --nranks 2 -b 1K -e 1K -n 1 -w 0 --unchecked -F "$tmp/r.json" "$tmp/$name" >/dev/null 2>&1
if /usr/bin/python3 - "$tmp/r.json" <<'PY' 2>"$tmp/why"; then
import json, sys
raw = open(sys.argv[1], "rb").read()
d = json.loads(raw.decode("utf-8"))
want = "lazy\\x1b[2J\\xff.cdsl"
assert d["program"]["file"].endswith("/" + want), d["program"]["file"]
assert d["command"][-1].endswith("/" + want), d["command"][-1]
assert not any(b < 0x20 and b not in b"\n" for b in raw), "a raw control byte"
PY
    pass "a path with ESC and a byte that is not UTF-8: valid JSON, shown escaped"
else
    fail "a path with ESC and a byte that is not UTF-8: valid JSON, shown escaped" "$(tail -1 "$tmp/why")"
fi
