#!/bin/bash
# tests/run/sim_packets.sh - the sim runs packets as the GPUs do (docs/language.md, "Packets"):
# the one-shot LL allgather, allreduce and reduce-scatter verify at several rank counts, sizes,
# element types and seeds over many launches (the slots alternate by parity, the flags count
# launches); a one-way sender
# that the reader answers verifies too; the same sender without the answer, which the checker
# rejects (packets_slot_reused_too_early), forced through with --unchecked, runs ahead of its
# reader, overwrites a slot not read yet, and the reader gives up waiting for its packets.
cd "$(dirname "$0")/../.." || exit 2
CDSLRUN=${CDSLRUN:-$PWD/build/cdslrun}
failures=0
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; failures=$((failures + 1)); }

for n in 2 4 8; do
    for size in 256 4K 1M; do
        bad=""
        for seed in 1 2 3; do
            out=$(timeout 120 "$CDSLRUN" allgather_ll -n $n --backend sim --size $size --seed $seed --iters 40 2>&1) ||
                bad="$bad seed $seed: $(echo "$out" | tail -2 | tr '\n' ' ')"
        done
        if [ -z "$bad" ]; then pass "allgather_ll -n $n --size $size: seeds 1-3, 40 launches each"; else fail "allgather_ll -n $n --size $size" "$bad"; fi
    done
done
for f in allreduce_ll reducescatter_ll; do
    for n in 2 4 8; do
        bad=""
        for seed in 1 2; do
            for size in 1K 256K; do
                out=$(timeout 120 "$CDSLRUN" $f -n $n --backend sim --size $size --seed $seed --iters 20 2>&1) ||
                    bad="$bad seed $seed size $size: $(echo "$out" | tail -2 | tr '\n' ' ')"
            done
        done
        if [ -z "$bad" ]; then pass "$f -n $n: 1K and 256K, seeds 1-2, 20 launches each"; else fail "$f -n $n" "$bad"; fi
    done
    out=$(timeout 60 "$CDSLRUN" $f -n 4 --backend sim --size 4K --in-place --dtype bf16 --seed 5 --iters 20 2>&1) &&
        pass "$f --in-place --dtype bf16" || fail "$f --in-place --dtype bf16" "$(echo "$out" | tail -2 | tr '\n' ' ')"
done
for t in f16 bf16 u32; do
    out=$(timeout 60 "$CDSLRUN" allgather_ll -n 4 --backend sim --size 4K --dtype $t --seed 7 --iters 20 2>&1) &&
        pass "allgather_ll --dtype $t" || fail "allgather_ll --dtype $t" "$(echo "$out" | tail -2 | tr '\n' ' ')"
done
out=$(timeout 60 "$CDSLRUN" allgather_ll -n 4 --backend sim --size 4K --in-place --seed 3 --iters 20 2>&1) &&
    pass "allgather_ll --in-place" || fail "allgather_ll --in-place" "$(echo "$out" | tail -2 | tr '\n' ' ')"

bad=""
for seed in 1 2 3 4 5; do
    out=$(timeout 60 "$CDSLRUN" tests/check/ok_packets_one_way_acked.cdsl -n 2 --backend sim --size 4K --seed $seed \
          --iters 200 2>&1) || bad="$bad seed $seed: $(echo "$out" | tail -2 | tr '\n' ' ')"
done
if [ -z "$bad" ]; then pass "one-way packets, answered: 200 launches, seeds 1-5"; else fail "one-way packets, answered" "$bad"; fi

# Without the answer: some seed of 1..10 shows the reader finding a later launch's flag.
hit="" other=""
for seed in $(seq 1 10); do
    out=$(timeout 60 "$CDSLRUN" tests/check/packets_slot_reused_too_early.cdsl -n 2 --backend sim --unchecked \
          --size 4K --seed $seed --iters 50 --spin-limit 100000 2>&1); rc=$?
    case $rc in
    0) ;;
    *) if echo "$out" | grep -q "cdsl: error: rank 1 gave up waiting at .* for rank 0's packets (a packet's flag reads"; then
           hit=$seed
       else
           other="seed $seed: exit $rc: $(echo "$out" | tail -2 | tr '\n' ' ')"
       fi ;;
    esac
    [ -n "$hit" ] || [ -n "$other" ] && break
done
if [ -n "$other" ]; then fail "one-way packets, unanswered" "$other"
elif [ -n "$hit" ]; then pass "one-way packets, unanswered: the slot is overwritten before it is read (seed $hit)"
else fail "one-way packets, unanswered" "no seed of 10 showed the overwrite"; fi
[ $failures = 0 ]
