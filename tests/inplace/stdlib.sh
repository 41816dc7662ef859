#!/bin/bash
# tests/inplace/stdlib.sh - every stdlib program in NCCL's in-place form (--in-place): it checks
# at several rank counts, and runs verified on sim (with jitter, which rewrites a rank's output
# at its start except the part that holds its input); cdslrun --bench in place checks a fresh
# run after the timed ones (an allreduce's sums would otherwise be summed again); the one-shot
# allreduce that race_oneshot_allreduce.cdsl refuses in place is clean out of place.
cd "$(dirname "$0")/../.." || exit 2
CDSLC=${CDSLC:-build/cdslc} CDSLRUN=${CDSLRUN:-build/cdslrun}
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; }

bad=""
for f in stdlib/*.cdsl; do
    for n in 2 3 4 8; do
        out=$("$CDSLC" "$f" -n $n --in-place 2>&1) || bad="$bad $(basename "$f") -n $n: $(echo "$out" | head -1)"
    done
done
[ -z "$bad" ] && pass "every stdlib program checks in place at -n 2, 3, 4, 8" || fail "every stdlib program checks in place" "$bad"

bad=""
for f in stdlib/*.cdsl; do
    for n in 3 4; do
        out=$("$CDSLRUN" "$f" -n $n --backend sim --in-place --size 96K --seed 7 --dtype bf16 2>&1)
        echo "$out" | grep -qE ": (verified|completed)" || bad="$bad $(basename "$f") -n $n: $(echo "$out" | tail -1)"
    done
done
[ -z "$bad" ] && pass "every stdlib program runs verified in place on sim, with jitter" || fail "in place on sim" "$bad"

out=$("$CDSLRUN" stdlib/allreduce_twoshot.cdsl -n 4 --backend sim --in-place --bench --sizes 4K:8K --iters 3 --warmup 1 2>&1)
rows=$(echo "$out" | grep -cE '^ +[0-9]+ +[0-9]+ +f32 .* 0$')
[ "$rows" = 2 ] && pass "--bench in place: a fresh run is checked after the timed ones (0 wrong)" ||
    fail "--bench in place" "$out"

"$CDSLC" tests/inplace/race_oneshot_allreduce.cdsl -n 4 2>/dev/null &&
    pass "the one-shot allreduce refused in place is clean out of place" ||
    fail "the one-shot allreduce refused in place is clean out of place"

"$CDSLC" --help | grep -q -- "--in-place" && "$CDSLRUN" --help | grep -q -- "--in-place" &&
    pass "cdslc --help and cdslrun --help name --in-place" || fail "cdslc --help and cdslrun --help name --in-place"
