#!/bin/bash
# tests/run/sim_waits.sh - bounded waits on the sim: a wait nobody satisfies ends the run with
# exit 4 and one line per stuck rank (rank, file:line:col, which counter, arrivals seen and
# needed), within the bound, never a hang; the default bound is about 5 s without progress;
# a tiny bound under heavy jitter may give up on a correct program but never hangs or lies.
cd "$(dirname "$0")/../.." || exit 2
CDSLRUN=${CDSLRUN:-$PWD/build/cdslrun}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; failures=$((failures + 1)); }

cat >"$tmp/cycle.cdsl" <<'EOS'
// Every rank waits for the next one before signalling it: a cycle of waits.
program cycle implements barrier {
    let next = peer((rank + 1) % nranks);
    let prev = peer((rank + nranks - 1) % nranks);
    next.wait();
    prev.signal();
}
EOS
cat >"$tmp/late.cdsl" <<'EOS'
// The last rank never arrives at the switch barrier.
program late implements barrier {
    if rank != nranks - 1 { switch.signal(); }
    switch.wait();
}
EOS

# expect NAME WANT_EXIT PATTERN TIMEOUT ARGS...
expect() {
    local name=$1 want=$2 pat=$3 limit=$4 out rc; shift 4
    out=$(timeout "$limit" "$CDSLRUN" "$@" 2>&1); rc=$?
    if [ $rc = 124 ]; then fail "$name" "still running after ${limit}s"
    elif [ $rc != "$want" ]; then fail "$name" "exit $rc, wanted $want: $(echo "$out" | tail -3 | tr '\n' ' ')"
    elif ! echo "$out" | grep -qE -- "$pat"; then fail "$name" "no '$pat' in: $(echo "$out" | tr '\n' ' ')"
    else pass "$name"; fi
    LAST=$out
}

expect "a cycle of waits: every rank reported" 4 \
    "rank 3 gave up waiting at $tmp/cycle.cdsl:5:10 for rank 0's signal \(counter peer 0: 0 of 1 arrivals\)" 30 \
    "$tmp/cycle.cdsl" -n 4 --unchecked --spin-limit 20000
[ "$(echo "$LAST" | grep -c 'gave up waiting')" = 4 ] || fail "a cycle of waits: four reports" "$LAST"
expect "a missing switch arrival names the rank behind" 4 \
    "rank 0 gave up waiting at $tmp/late.cdsl:4:12 for rank 7's switch arrival \(counter switch: 7 of 8 arrivals\)" 30 \
    "$tmp/late.cdsl" -n 8 --unchecked --spin-limit 20000
expect "a stuck wait inside a loop of iterations names the iteration" 4 "in iteration 1 for rank 0" 30 \
    "$tmp/cycle.cdsl" -n 2 --unchecked --spin-limit 20000 --iters 3
start=$(date +%s)
expect "the default bound: about 5 s without progress" 4 "no rank made progress for 5 seconds" 60 \
    "$tmp/late.cdsl" -n 2 --unchecked
took=$(($(date +%s) - start))
[ $took -ge 4 ] && [ $took -le 30 ] || fail "the default bound took ${took}s"
expect "a stuck run under jitter still ends" 4 "gave up waiting" 60 \
    "$tmp/cycle.cdsl" -n 8 --unchecked --seed 5 --jitter 200 --spin-limit 20000

# A correct program with a bound of 1 poll and heavy jitter: either it verifies or it stops
# with exit 4 and a report; never a hang, a crash, a wrong result or a silent failure.
odd=""
for seed in 1 2 3 4 5 6; do
    out=$(timeout 60 "$CDSLRUN" stdlib/allgather_ring.cdsl -n 8 --backend sim --size 64K --seed $seed \
        --jitter 500 --spin-limit 1 2>&1); rc=$?
    case $rc in
    0) echo "$out" | grep -q verified || odd="$odd seed $seed: exit 0 without verified" ;;
    4) echo "$out" | grep -q 'gave up waiting\|a wait ran out' || odd="$odd seed $seed: exit 4 without a report" ;;
    *) odd="$odd seed $seed: exit $rc $(echo "$out" | tail -2 | tr '\n' ' ')" ;;
    esac
done
if [ -z "$odd" ]; then pass "a one-poll bound under jitter verifies or stops cleanly"; else fail "one-poll bound" "$odd"; fi
[ $failures = 0 ]
