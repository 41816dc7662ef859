#!/bin/bash
# tests/perf/root.sh - nccl-tests' -r (the root) in cdsl-perf, and the root on cdslrun's -D:
#   - every stdlib broadcast and reduce at 4 ranks with -r 2: every row verified, out of place
#     and in place, and the root column says 2 (text, which nccl_tests_format.py reads, JSON, CSV);
#   - a program whose root is wrong is caught by the run's check (exit 7), not only by the
#     checker (compiled --unchecked);
#   - -r for a collective without a root is ignored, as nccl-tests does (root -1);
#   - -r that is not a rank of the run: a usage error naming the ranks (exit 6).
source "$(dirname "$0")/../lib/common.bash"
need python3 python3 || exit 0
PERF=${CDSL_PERF:-build/cdsl-perf}
PARSE="python3 tests/perf/nccl_tests_format.py"

for p in broadcast_nvls broadcast_mesh broadcast_ring broadcast_ll reduce_nvls reduce_mesh reduce_ll; do
    "$PERF" -b 16K -e 64K -f 4 -r 2 --nranks 4 -F "$tmp/$p.json" "$p" >"$tmp/$p.log" 2>"$tmp/$p.err"; rc=$?
    why=$($PARSE "$tmp/$p.log" 2>&1 | python3 -c "
import json, sys
d = json.load(sys.stdin)
rows = d['rows']
bad = [r for r in rows if r['root'] != 2 or any(r[k]['wrong'] != 0 for k in ('out_of_place', 'in_place'))]
j = json.load(open('$tmp/$p.json'))
print('ok' if len(rows) == 2 and not bad and all(r['root'] == 2 for r in j['results']) else (bad or rows or j)[:1])" 2>&1)
    if [ $rc = 0 ] && [ "$why" = ok ]; then
        pass "cdsl-perf -r 2 $p: rows at root 2, verified out of place and in place (text and JSON)"
    else
        fail "cdsl-perf -r 2 $p: rows at root 2, verified out of place and in place (text and JSON)" \
            "exit $rc: $why $(head -3 "$tmp/$p.err")"
    fi
done

"$PERF" -b 64K -e 64K -r 3 --nranks 4 -F "$tmp/r.csv" reduce_nvls >/dev/null 2>&1; rc=$?
col=$(python3 -c "import csv; rows = list(csv.DictReader(open('$tmp/r.csv'))); print(sorted(set(r['root'] for r in rows)))")
if [ $rc = 0 ] && [ "$col" = "['3']" ]; then pass "cdsl-perf -r 3: the CSV's root column is 3"
else fail "cdsl-perf -r 3: the CSV's root column is 3" "exit $rc, $col"; fi

cat >"$tmp/from_zero.cdsl" <<'CDSL'
program from_zero implements broadcast {
    switch.signal(relaxed);
    switch.wait(relaxed);
    if rank == 0 { switch.store(output[0], input[0]); }
    switch.signal();
    switch.wait();
}
CDSL
"$PERF" -b 64K -e 64K --nranks 4 --no-in-place "$tmp/from_zero.cdsl" >/dev/null 2>&1; rc0=$?
"$PERF" -b 64K -e 64K -r 1 --nranks 4 --no-in-place --unchecked "$tmp/from_zero.cdsl" >"$tmp/fz.log" 2>"$tmp/fz.err"; rc=$?
if [ $rc0 = 0 ] && [ $rc = 7 ] && grep -q "wrong result on rank 0: output chunk 0, element 0 .* (from the root 1's input chunk 0)" "$tmp/fz.err"; then
    pass "a broadcast from rank 0 run at -r 1 (unchecked) fails verification naming the root (exit 7); at -r 0 it passes"
else
    fail "a broadcast from rank 0 run at -r 1 (unchecked) fails verification naming the root (exit 7); at -r 0 it passes" \
        "exit $rc0 and $rc: $(head -3 "$tmp/fz.err")"
fi

"$PERF" -b 64K -e 64K -r 3 --nranks 4 allgather_ring >"$tmp/ag.log" 2>"$tmp/ag.err"; rc=$?
roots=$($PARSE "$tmp/ag.log" 2>/dev/null | python3 -c "import json, sys; print(sorted(set(r['root'] for r in json.load(sys.stdin)['rows'])))")
if [ $rc = 0 ] && [ "$roots" = "[-1]" ]; then pass "-r 3 on an allgather is ignored, as nccl-tests does: root -1"
else fail "-r 3 on an allgather is ignored, as nccl-tests does: root -1" "exit $rc, $roots: $(head -2 "$tmp/ag.err")"; fi

out=$("$PERF" -b 64K -e 64K -r 4 --nranks 4 broadcast_nvls 2>&1); rc=$?
if [ $rc = 6 ] && echo "$out" | grep -q "define 'root=4': the root must be a rank, 0 to 3"; then
    pass "-r 4 at 4 ranks: a usage error naming the ranks (exit 6)"
else
    fail "-r 4 at 4 ranks: a usage error naming the ranks (exit 6)" "exit $rc: $out"
fi
out=$("$PERF" -r x broadcast_nvls 2>&1); rc=$?
if [ $rc = 6 ] && echo "$out" | grep -q "\-r expects a root rank, not 'x'"; then pass "-r x: a usage error (exit 6)"
else fail "-r x: a usage error (exit 6)" "exit $rc: $out"; fi
exit $((failures != 0))
