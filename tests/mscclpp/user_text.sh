#!/bin/bash
# tests/mscclpp/user_text.sh - a plan's name is user text, whatever it holds. --emit-mscclpp
# writes it as a JSON string (valid JSON, no key of its own making, the same name read back,
# nothing a terminal acts on); --dump-ir, --dump-ce and --emit-dot show it the way diagnostics
# do (escape.c: ESC as \x1b, U+202E as \u202e), never raw.
source "$(dirname "$0")/../lib/common.bash"
PY=/usr/bin/python3

# plan NAME FILE: tests/mscclpp/allgather_put.json (a plan that exports) renamed to NAME.
plan() {
    "$PY" -c 'import json, sys
p = json.load(open("tests/mscclpp/allgather_put.json"))
p["name"] = sys.argv[1]
json.dump(p, open(sys.argv[2], "w"))' "$1" "$2"
}

# exported NAME TEST: the plan named NAME through --emit-mscclpp must be JSON whose keys are
# the original's and whose name is NAME, with no raw control or bidi character, and must
# import back.
exported() {
    local name=$1 test=$2
    plan "$name" "$tmp/in.json"
    if ! "$CDSLC" "$tmp/in.json" --emit-mscclpp >"$tmp/out.json" 2>"$tmp/err"; then
        fail "$test" "export failed: $(head -3 "$tmp/err")"; return
    fi
    if ! "$PY" - "$tmp/in.json" "$tmp/out.json" <<'PY' 2>"$tmp/why"; then
import json, sys
want = json.load(open(sys.argv[1]))
raw = open(sys.argv[2], "rb").read()
got = json.loads(raw)
assert list(got) == list(want), "keys %s" % list(got)
assert got["name"] == want["name"], "name %r" % got["name"]
assert not any(b < 0x20 and b not in b"\n" for b in raw), "a raw control byte"
assert "\u202e".encode() not in raw, "a raw U+202E"
PY
        fail "$test" "$(tail -1 "$tmp/why")"; return
    fi
    if ! "$CDSLC" "$tmp/out.json" >/dev/null 2>"$tmp/err"; then
        fail "$test" "does not import back: $(head -3 "$tmp/err")"; return
    fi
    pass "$test"
}

exported 'a", "injected": "yes' "--emit-mscclpp: a name with a quote adds no key"
exported $'tab\there\x01\x1b[2J\\back\xe2\x80\xaeslash\nline' "--emit-mscclpp: a name with control characters stays valid JSON"

# shown WHAT WANT CMD...: CMD's standard output must hold WANT and no raw ESC or U+202E.
shown() {
    local what=$1 want=$2; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"
    if grep -q $'\x1b\|\xe2\x80\xae' "$tmp/out"; then fail "$what" "raw ESC or U+202E: $(head -3 "$tmp/out" | cat -v)"
    elif ! grep -qF -- "$want" "$tmp/out"; then fail "$what" "no '$want' in: $(head -3 "$tmp/out" | cat -v)"
    else pass "$what"; fi
}

plan $'p\x1b[2Jq\xe2\x80\xaer' "$tmp/esc.json"
shown "--dump-ir escapes the plan's name" 'program p\x1b[2Jq\u202er implements' "$CDSLC" "$tmp/esc.json" --dump-ir
shown "--dump-ce escapes the plan's name" 'p\x1b[2Jq\u202er: no copy-engine plan: p\x1b[2Jq\u202er has' \
    "$CDSLC" "$tmp/esc.json" --dump-ce
shown "--emit-dot escapes the plan's name in the graph's label" 'label="p\\x1b[2Jq\\u202er implements' \
    "$CDSLC" "$tmp/esc.json" --emit-dot
