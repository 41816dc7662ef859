#!/bin/bash
# tests/run/sim_jitter.sh - schedules shaken by --seed/--jitter: correct programs verify under
# every seed and over several iterations; the spec's two broken programs, forced through the
# checker with --unchecked, are caught at run time as a wrong result by some seed, and no run
# ever hangs or ends any other way.
cd "$(dirname "$0")/../.." || exit 2
CDSLRUN=${CDSLRUN:-$PWD/build/cdslrun}
SPEC=$PWD/tests/spec
failures=0
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; failures=$((failures + 1)); }

for f in stdlib/*.cdsl; do
    for n in 2 4 8; do
        bad=""
        for seed in 1 2 3 4 5; do
            out=$(timeout 60 "$CDSLRUN" "$f" -n $n --backend sim --size 32K --seed $seed --jitter 30 --iters 3 2>&1) ||
                bad="$bad seed $seed: $(echo "$out" | tail -2 | tr '\n' ' ')"
        done
        if [ -z "$bad" ]; then pass "$(basename "$f") -n $n: seeds 1-5 verify"; else fail "$(basename "$f") -n $n" "$bad"; fi
    done
done

# caught NAME FILE N: with --unchecked, some seed of 1..20 gives exit 5 naming a wrong element.
caught() {
    local name=$1 f=$2 n=$3 seed out rc hit="" other=""
    for seed in $(seq 1 20); do
        out=$(timeout 60 "$CDSLRUN" "$f" -n "$n" --unchecked --size 16K --seed $seed 2>&1); rc=$?
        case $rc in
        5) echo "$out" | grep -q 'cdsl: error: wrong result on rank [0-9]*: output chunk [0-9]*, element [0-9]*' && hit=$seed ;;
        0) ;;
        *) other="seed $seed: exit $rc: $(echo "$out" | tail -2 | tr '\n' ' ')" ;;
        esac
        [ -n "$hit" ] || [ -n "$other" ] && break
    done
    if [ -n "$other" ]; then fail "$name" "$other"
    elif [ -n "$hit" ]; then pass "$name (seed $hit)"
    else fail "$name" "no seed of 20 showed the race"; fi
}
if [ -f "$SPEC/bad_allgather_nvls_no_final_wait.cdsl" ]; then
    caught "leaving before the peers' stores land is a wrong result at run time" \
        "$SPEC/bad_allgather_nvls_no_final_wait.cdsl" 4
    caught "writing into a rank before it has entered is a wrong result at run time" \
        "$SPEC/bad_allgather_ring_no_handshake.cdsl" 4
else
    fail "spec programs found" "no $SPEC"
fi
[ $failures = 0 ]
