#!/bin/bash
# Front-end speed: generate a ~1 MB .cdsl program (thousands of defs and statements, all
# resolved) and time `cdslc --dump-ast` (lex + parse + resolve) and a full check on it.
# Prints the times; asserts nothing (the issue's target: well under a second for 1 MB).
set -euo pipefail
cd "$(dirname "$0")/.."
cdslc=${CDSLC:-build/cdslc}
f=$(mktemp --suffix=.cdsl); trap 'rm -f "$f"' EXIT
python3 - "$f" <<'PY'
import sys
out = []
i = 0
while sum(len(l) for l in out) < 1_000_000:
    out.append(f"def step{i}(p, c) {{\n"
               f"    let d = (c + rank * {i % 7 + 1}) % nranks;  // comment {i}\n"
               f"    if p != rank && d >= 0 {{ peer(p).put(output[d], output[d]); }} else {{ let q = d * 2 - 1; }}\n"
               f"    for k in 0 .. 2 {{ let e = (k + d) % nranks; }}\n"
               f"}}\n")
    i += 1
out.append("program big implements custom {\n    input[1];\n    output[nranks];\n    copy(output[rank], input[0]);\n"
           "    for r in 0 .. 64 { let x = (r * 3 + rank) % nranks; }\n}\n")
open(sys.argv[1], "w").write("".join(out))
print(f"generated {sum(len(l) for l in out)} bytes, {i} defs", file=sys.stderr)
PY
t0=$(date +%s.%N); "$cdslc" "$f" -n 8 --dump-ast >/dev/null; t1=$(date +%s.%N)
"$cdslc" "$f" -n 8; t2=$(date +%s.%N)
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "parse+resolve (--dump-ast): %.3f s\nfull check at -n 8:        %.3f s\n", b-a, c-b }'
