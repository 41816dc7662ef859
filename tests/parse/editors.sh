#!/bin/bash
# tests/parse/editors.sh - the editor files in editors/ are well-formed and know the
# language: the TextMate grammar and the VS Code package are valid JSON that point at each
# other; every keyword of grammar/lexer.re, every collective, channel operation, memory order
# and local operation resolve.c knows gets a scope from the grammar (its patterns run with
# Python's re, which reads these as Oniguruma does); and the Vim syntax file names every
# keyword, with a file-type rule for *.cdsl. Vim itself, when installed, loads the file clean.
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/need.bash
need python3 python3 || exit 0
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: ${2:0:500}}"; }

out=$(python3 - <<'PY'
import json, os, re
ok = lambda name: print("[PASS] " + name)
bad = lambda name, why: print("[FAIL] %s: %s" % (name, why))
vs = "editors/vscode"
try:
    grammar = json.load(open(vs + "/cdsl.tmLanguage.json"))
    package = json.load(open(vs + "/package.json"))
    json.load(open(vs + "/language-configuration.json"))
    ok("the grammar, package.json and language-configuration.json are valid JSON")
except Exception as e:
    bad("the grammar, package.json and language-configuration.json are valid JSON", e)
    raise SystemExit
g = package["contributes"]["grammars"][0]
lang = package["contributes"]["languages"][0]
if g["scopeName"] == grammar["scopeName"] == "source.cdsl" and os.path.isfile(os.path.join(vs, g["path"])) \
        and ".cdsl" in lang["extensions"] and g["language"] == lang["id"] \
        and os.path.isfile(os.path.join(vs, lang["configuration"])):
    ok("package.json names the grammar, its scope and the .cdsl extension")
else:
    bad("package.json names the grammar, its scope and the .cdsl extension", g)

def patterns(node):
    for p in node.get("patterns", []):
        yield from patterns(p)
        if "include" in p and p["include"].startswith("#"):
            yield from patterns(grammar["repository"][p["include"][1:]])
    if "match" in node:
        yield node
rules = list(patterns(grammar))

def scope_of(text, word):
    """The scope the grammar gives `word` where it stands in text."""
    at = text.index(word)
    for r in rules:
        for m in re.finditer(r["match"], text):
            for gi in range(0, (m.lastindex or 0) + 1):
                if m.start(gi) == at and m.end(gi) == at + len(word):
                    if gi == 0 and "name" in r:
                        return r["name"]
                    if gi > 0 and str(gi) in r.get("captures", {}):
                        return r["captures"][str(gi)]["name"]
    return None

lexer = open("grammar/lexer.re").read()
keywords = re.findall(r'^\s*"([a-z]+)"\s*\{\s*return token\(l, t, TK_', lexer, re.M)
# The channels' keywords are rows of their table, which the lexer reads.
channels = re.findall(r'^CHAN\((\w+),\s*"(\w+)"', open("compiler/ir/chans.def").read(), re.M)
keywords += [k for _, k in channels]
# The collectives and the channels' methods, from the tables resolve.c reads them from.
collectives = re.findall(r'^COLL\(\w+,\s*"(\w+)"', open("compiler/ir/colls.def").read(), re.M)
ops = sorted(set(re.findall(r'^IR_OP\(\w+,\s*"[\w.]+",\s*(?:%s),\s*"(\w+)"' % "|".join(c for c, _ in channels),
                            open("compiler/ir/ops.def").read(), re.M)))
orders = ["relaxed", "release", "acquire"]
cases = [("%s x" % k, k) for k in keywords] + [("program p implements %s {" % c, c) for c in collectives] \
      + [("peer(1).%s(a, b);" % o, o) for o in ops] + [("switch.signal(%s);" % o, o) for o in orders] \
      + [("copy(a, b);", "copy"), ("reduce(a, b, c);", "reduce")]
missing = ["%s (in '%s')" % (w, t) for t, w in cases if not scope_of(t, w)]
if len(keywords) >= 12 and len(collectives) >= 6 and len(ops) >= 7 and not missing:
    ok("the grammar scopes the lexer's %d keywords, the collectives, operations and orders" % len(keywords))
else:
    bad("the grammar scopes the lexer's keywords, the collectives, operations and orders",
        "keywords %s; unscoped: %s" % (keywords, missing))
vim = open("editors/vim/syntax/cdsl.vim").read()
named = set(w for line in vim.splitlines() if line.startswith("syn keyword") for w in line.split()[3:])
missing = [w for w in keywords + collectives + orders if w not in named]
if not missing:
    ok("the Vim syntax file names every keyword, collective and order")
else:
    bad("the Vim syntax file names every keyword, collective and order", missing)
if re.search(r"BufRead,BufNewFile \*\.cdsl setfiletype cdsl", open("editors/vim/ftdetect/cdsl.vim").read()):
    ok("the Vim file-type rule takes *.cdsl")
else:
    bad("the Vim file-type rule takes *.cdsl", "")
PY
)
echo "$out"
if command -v vim >/dev/null; then
    msg=$(vim -Nu NONE -es -c 'set runtimepath+=editors/vim' -c 'syntax on' -c 'edit stdlib/allgather_ring.cdsl' \
        -c 'if &filetype != "cdsl" | cquit | endif' -c 'qall!' 2>&1)
    [ $? = 0 ] && pass "vim loads the syntax for a .cdsl file" || fail "vim loads the syntax for a .cdsl file" "$msg"
fi
echo "$out" | grep -q '^\[FAIL\]' && exit 1
exit 0
