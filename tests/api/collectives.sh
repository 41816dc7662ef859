#!/bin/bash
# tests/api/collectives.sh - what a collective means, asked through the API, agrees with what the
# compiler and the checker do (the one table, compiler/ir/colls.def):
#   - collectives.c: cdsl_collective_* against every stdlib program and a custom one at 2, 3 and 4 ranks (chunk
#     counts are its buffers, no in-place form means in place is refused, a gather's, a sum's, a
#     broadcast's or a reduce's outputs verify after a sim run and a changed element does not;
#     a broadcast or reduce is compiled for the last rank as root, and a reduce's other ranks'
#     outputs are not compared), names and indices both ways, bad arguments; against
#     build/libcdsl.a and, where it exists, the ASan build;
#   - the Python package reads the same facts (cdsl.collectives, collective_chunks,
#     collective_busbw_factor, collective_postcondition) and has no list of its own: its chunk
#     counts are each stdlib program's buffers, and its factors are the ones cdslrun --json
#     prints (busbw / algbw).
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/common.bash
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1}
CFLAGS="-std=c11 -Wall -Wextra -Wpedantic -Werror -g -O1 -pthread -D_GNU_SOURCE -Iruntime"
ASAN_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"

for label in "" asan; do
    lib=build/libcdsl.a flags=""
    [ "$label" = asan ] && lib=build/asan/libcdsl.a flags=$ASAN_FLAGS
    if [ ! -f "$lib" ]; then echo "[SKIP] collectives ($label): no $lib"; continue; fi
    # shellcheck disable=SC2086
    if ! cc $CFLAGS $flags -o "$tmp/collectives$label" tests/api/collectives.c "$lib" -ljansson -ldl -lm 2>"$tmp/cc.log"; then
        fail "tests/api/collectives.c builds ($label)" "$(head -3 "$tmp/cc.log" | tr '\n' ' ')"
        continue
    fi
    out=$(timeout 300 "$tmp/collectives$label" stdlib/*.cdsl tests/run/custom_shift.cdsl 2>&1); rc=$?
    echo "$out" | sed -n "s/^\[\(PASS\|FAIL\)\] /[\1] ${label:+$label }collectives: /p"
    if echo "$out" | grep -qE 'Sanitizer|runtime error:'; then
        fail "${label:+$label }collectives: no sanitizer report" "$(echo "$out" | grep -m1 -E 'Sanitizer|runtime error:')"
    elif [ $rc != 0 ] && ! echo "$out" | grep -q '^\[FAIL\]'; then
        fail "${label:+$label }collectives: exit $rc" "$(echo "$out" | tail -3 | tr '\n' ' ')"
    fi
done

PY=${PYTHON:-/usr/bin/python3}
if ! [ -x "$PY" ]; then echo "[SKIP] collectives (Python): needs python3"; exit 0; fi
export PYTHONPATH=$PWD/python CDSL_LIB=$PWD/build/libcdsl.so CDSL_STDLIB=$PWD/stdlib
# The factor cdslrun applies to each data collective at 4 ranks, from its --json (busbw / algbw).
factors=$(for p in allgather_ring reducescatter_nvls allreduce_nvls alltoall_mesh broadcast_nvls reduce_nvls; do
    build/cdslrun "stdlib/$p.cdsl" -n 4 --backend sim --size 64K --json 2>/dev/null |
        "$PY" -c 'import json, sys; d = json.load(sys.stdin); r = d["results"][0]; print(d["collective"], r["busbw_gbs"] / r["algbw_gbs"])' 2>/dev/null
done)
out=$("$PY" - "$factors" stdlib/*.cdsl 2>&1 <<'PY'
import sys, cdsl
factors, paths = sys.argv[1], sys.argv[2:]
names = cdsl.collectives()
print("names", names == [cdsl._lib.collective_name(i).decode() for i in range(cdsl._lib.collective_count())] and len(names) > 0)
bad = []
for path in paths:
    for n in (2, 4):
        p = cdsl.Program(path, n)
        want = cdsl.collective_chunks(p.collective, n, p.chunks)
        have = (p.buf_chunks(0), p.buf_chunks(1))
        if any(w is not None and w != h for w, h in zip(want, have)):
            bad.append("%s at %d: %s vs %s" % (path, n, want, have))
        p.close()
print("chunks", not bad, bad[:3])
lines = [l.split() for l in factors.splitlines() if l.strip()]
print("factors", len(lines) == 6 and all(abs(cdsl.collective_busbw_factor(c, 4) - float(f)) < 1e-3 for c, f in lines), lines)
try:
    cdsl.collective_chunks("no_such_collective", 2)
    print("unknown", False)
except ValueError as e:
    print("unknown", all(n in str(e) for n in names))
print("postconditions", sorted(set(cdsl.collective_postcondition(c) for c in names)) == ["barrier", "broadcast", "gather", "none", "reduce", "sum"])
roots = [n for n in names if cdsl.collective_has_root(n)]
b = cdsl.Program("stdlib/broadcast_ring.cdsl", 4, defines={"root": 3})
a = cdsl.Program("stdlib/allgather_ring.cdsl", 2)
print("root", roots == ["broadcast", "reduce"] and b.root == 3 and a.root is None, roots, b.root, a.root)
b.close(); a.close()
PY
)
check() { if echo "$out" | grep -q "^$1 True"; then pass "$2"; else fail "$2" "$(echo "$out" | grep "^$1" || echo "$out" | tail -3)"; fi; }
check names "Python: cdsl.collectives() is the library's list"
check chunks "Python: collective_chunks are every stdlib program's input and output chunks (2 and 4 ranks)"
check factors "Python: collective_busbw_factor is the factor cdslrun --json applies (4 ranks)"
check unknown "Python: an unknown collective is a ValueError that names the known ones"
check postconditions "Python: collective_postcondition names the six kinds"
check root "Python: collective_has_root names broadcast and reduce; Program.root is the define root=R (None without a root)"
