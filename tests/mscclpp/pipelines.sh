#!/bin/bash
# tests/mscclpp/pipelines.sh - plans whose meaning depends on the size (pipelines,
# reuse_resources), read for one size class at a time (-D pipeline_iterations=N):
#   1. the clean ones of tests/mscclpp run verified on sim in the classes of 1, 2, 3 and 8
#      iterations, at a size of each class, with jitter and three runs in a row;
#   2. a size outside the class -D chose is refused; without -D, a sweep reads the plan again for
#      each size's class;
#   3. pipeline_signal_once.json (one wait after a pipeline that signals every iteration) is
#      clean in the class of 1 iteration and goes wrong on sim under jitter in the class of 2,
#      where the checker reports it (pipeline_signal_once.err);
#   4. MSCCL++'s own pipelined plans, where the corpus is ($SHARED/mscclpp/dsl, else
#      ../shared/mscclpp/dsl): each runs verified on sim in the classes of 1, 2 and 3. [SKIP] without it.
cd "$(dirname "$0")/../.." || exit 2
CDSLRUN=${CDSLRUN:-build/cdslrun}
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; }

# run_class NAME FILE UNIT CHUNKS N: verified on sim at chunks of N units (CHUNKS: the plan's
# largest buffer in chunks, which --size divides by)
run_class() {
    local size=$(($3 * $4 * $5)) out
    out=$("$CDSLRUN" "$2" -D pipeline_iterations="$5" --backend sim --size "$size" --seed 7 --iters 3 2>&1)
    case "$out" in
    *"verified"* | *"ran (test"* | *"ran (custom"*) pass "$1 in the class of $5 iteration(s) runs verified on sim" ;;
    *) fail "$1 in the class of $5 iteration(s) runs verified on sim" "$(echo "$out" | grep -v note | head -2 | tr '\n' ' ')" ;;
    esac
}

for n in 1 2 3 8; do
    run_class pipeline_allgather.json tests/mscclpp/pipeline_allgather.json 65536 2 $n
    run_class reuse_resources_capacity.json tests/mscclpp/reuse_resources_capacity.json 65536 2 $n
done

out=$("$CDSLRUN" tests/mscclpp/pipeline_allgather.json -D pipeline_iterations=2 --backend sim --size 1M 2>&1); rc=$?
if [ $rc = 2 ] && echo "$out" | grep -q "compile it with -D pipeline_iterations=8"; then
    pass "a size outside the class -D chose is refused, naming its class"
else
    fail "a size outside the class -D chose is refused, naming its class" "exit $rc: $(echo "$out" | tail -1)"
fi
# Without -D, cdslrun reads the plan again for each size's class.
out=$("$CDSLRUN" tests/mscclpp/pipeline_allgather.json --backend sim --sizes 64K:4M --seed 5 2>&1)
n=$(echo "$out" | grep -c verified)
[ "$n" = 7 ] && pass "a sweep over 7 sizes of 1 to 32 iterations runs verified, each in its class" ||
    fail "a sweep over 7 sizes of 1 to 32 iterations runs verified, each in its class" "$n verified: $(echo "$out" | grep -v note | tail -2 | tr '\n' ' ')"

f=tests/mscclpp/pipeline_signal_once.json
out=$("$CDSLRUN" "$f" -D pipeline_iterations=1 --backend sim --size 128K --seed 7 --iters 3 2>&1)
echo "$out" | grep -q verified && pass "pipeline_signal_once runs verified in the class of 1 iteration" ||
    fail "pipeline_signal_once runs verified in the class of 1 iteration" "$(echo "$out" | tail -1)"
wrong=0
for seed in 1 2 3 4 5 6 7 8; do
    "$CDSLRUN" "$f" -D pipeline_iterations=2 --unchecked --backend sim --size 256K --seed $seed --jitter 50000 \
        --iters 3 2>&1 | grep -q "output elements wrong" && wrong=$((wrong + 1))
done
[ $wrong -gt 0 ] && pass "pipeline_signal_once goes wrong on sim in the class of 2 iterations ($wrong of 8 seeds)" ||
    fail "pipeline_signal_once goes wrong on sim in the class of 2 iterations" "verified with every seed"

dsl=${SHARED:-../shared}/mscclpp/dsl
if [ ! -d "$dsl" ]; then
    echo "[SKIP] MSCCL++'s pipelined plans: no folder $dsl (set SHARED)"
    exit 0
fi
for n in 1 2 3; do
    run_class unit_tests_pipeline_test_g2 "$dsl/unit_tests_pipeline_test_g2.json" 1048576 1 $n
    run_class single_node_allreduce_pipeline_g2 "$dsl/single_node_allreduce_pipeline_g2.json" 1048576 2 $n
done
