#!/bin/bash
# tests/run/sim_spec.sh - every accepted spec and stdlib program verifies on the sim backend at
# -n 2, 4 and 8 in every element type, and the spec programs at -n 8 with 64 MiB.
cd "$(dirname "$0")/../.." || exit 2
CDSLRUN=${CDSLRUN:-$PWD/build/cdslrun}
SPEC=$PWD/tests/spec
failures=0
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; failures=$((failures + 1)); }

# check NAME ARGS...: cdslrun exits 0 and says "verified" (or "completed" for a barrier).
check() {
    local name=$1 out rc; shift
    out=$(timeout 120 "$CDSLRUN" "$@" 2>&1); rc=$?
    if [ $rc = 0 ] && echo "$out" | grep -qE ': (verified|completed) \('; then
        pass "$name"
    else
        fail "$name" "exit $rc: $(echo "$out" | tail -3 | tr '\n' ' ')"
    fi
}

accepted() {
    local f
    for f in "$SPEC"/*.cdsl; do head -1 "$f" | grep -q '^// expect: accept' && echo "$f"; done
}

programs=$(accepted)
[ -n "$programs" ] || fail "spec programs found" "none in $SPEC"
for f in $programs stdlib/*.cdsl; do
    for n in 2 4 8; do
        for t in f32 f16 bf16 u32 s32; do
            check "$(basename "$f") -n $n $t" "$f" -n $n --backend sim --dtype $t --size 64K
        done
    done
done
for f in $programs; do
    check "$(basename "$f") -n 8, 64 MiB" "$f" -n 8 --backend sim --size 64M
done
# Rank counts that are not powers of two, and several chunks per rank.
for n in 3 5 6 7; do
    check "allgather_chunked_ring -n $n, chunks=3" stdlib/allgather_chunked_ring.cdsl -n $n -D chunks=3 \
        --backend sim --size $((n * 3 * 4 * 1000))
    check "reducescatter_nvls -n $n, chunks=2, bf16" stdlib/reducescatter_nvls.cdsl -n $n -D chunks=2 \
        --backend sim --dtype bf16 --size $((n * 2 * 4 * 1000))
done
[ $failures = 0 ]
