#!/bin/bash
# tests/mscclpp/json_bytes.sh - bytes that JSON never allows raw (NUL anywhere, other control
# bytes outside strings, control bytes inside strings) are a named error at their line:col and
# exit 1, with bounded time and memory: a NUL between tokens, which jansson passes over, must
# not send the scan for value positions into a loop. Script, not goldens: goldens cannot hold NUL.
source "$(dirname "$0")/../lib/common.bash"

# ASan reserves terabytes of address space for its shadow, so an ASan build gets the time
# bound only (and its own allocator's limits).
vlimit=1000000
grep -q __asan_init "$CDSLC" && vlimit=unlimited

# check NAME BYTES WANT: the plan printf BYTES must fail with exit 1 and the first line WANT
# (the file's name is $tmp/p.json, shown as p.json after a cd).
check() {
    local name=$1 bytes=$2 want=$3 rc
    printf "$bytes" >"$tmp/p.json"
    (cd "$tmp" && ulimit -v $vlimit && timeout 10 "$CDSLC" p.json) >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ $rc = 1 ] && [ "$(head -1 "$tmp/err")" = "$want" ]; then pass "$name"
    else fail "$name" "exit $rc: $(head -3 "$tmp/err" | cat -v)"; fi
}

check "NUL byte in JSON: after a number" '[0\0]' "p.json:1:3: error: NUL byte in JSON"
check "NUL byte in JSON: after a key's value, on line 2" '{"a": 1,\n "b": 2\0}' "p.json:2:8: error: NUL byte in JSON"
check "NUL byte in JSON: alone" '\0' "p.json:1:1: error: NUL byte in JSON"
check "NUL byte in JSON: inside a string" '["a\0b"]' "p.json:1:4: error: NUL byte in JSON"
check "NUL byte in JSON: before a valid plan's end" '{"name": "x"}\0' "p.json:1:14: error: NUL byte in JSON"
check "unexpected byte in JSON: 0x01 after a number" '[0\001]' "p.json:1:3: error: unexpected byte 0x01 in JSON"
check "unexpected byte in JSON: 0x1f between values" '[0,\037 1]' "p.json:1:4: error: unexpected byte 0x1f in JSON"
check "control byte in a JSON string: a raw tab" '[\n 0,\n "a\tb"]' \
    "p.json:3:4: error: control byte 0x09 in a JSON string (write it escaped, as \\u0009)"
check "control byte in a JSON string: ESC" '{"name": "a\033[2Jb"}' \
    "p.json:1:12: error: control byte 0x1b in a JSON string (write it escaped, as \\u001b)"
