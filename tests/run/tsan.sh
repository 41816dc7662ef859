#!/bin/bash
# tests/run/tsan.sh - the sim backend under ThreadSanitizer (make tsan: build/tsan/cdslrun):
# every accepted spec program and every stdlib program at -n 2, 4 and 8, with and without
# jitter and over several iterations, must verify without a report; the sim's unit test runs
# under it too; and, as a control, a racy program forced through with --unchecked must make
# TSan speak (so a silent TSan means no race, not a blind one). Skips when the build is missing.
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/includes.bash
TSAN_CDSLRUN=${TSAN_CDSLRUN:-$PWD/build/tsan/cdslrun}
TSAN_LIB=${TSAN_LIB:-$(dirname "$TSAN_CDSLRUN")/libcdsl.a}
SPEC=$PWD/tests/spec
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:exitcode=66:second_deadlock_stack=1}
failures=0
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; failures=$((failures + 1)); }

if [ ! -x "$TSAN_CDSLRUN" ]; then
    echo "[SKIP] tsan: no $TSAN_CDSLRUN (make tsan)"
    exit 0
fi
# TSan needs a memory layout some kernels refuse (high-entropy ASLR); say so instead of failing.
if ! probe=$("$TSAN_CDSLRUN" --version 2>&1) || echo "$probe" | grep -q 'ThreadSanitizer'; then
    echo "[SKIP] tsan: the TSan build cannot start here: $(echo "$probe" | head -1)"
    exit 0
fi

clean() {
    local name=$1 out rc; shift
    out=$(timeout 300 "$TSAN_CDSLRUN" "$@" 2>&1); rc=$?
    if [ $rc = 0 ] && ! echo "$out" | grep -q ThreadSanitizer; then pass "tsan: $name"
    else fail "tsan: $name" "exit $rc: $(echo "$out" | grep -m3 -E 'ThreadSanitizer|WARNING|error' | tr '\n' ' ')"; fi
}

programs=""
for f in "$SPEC"/*.cdsl; do head -1 "$f" | grep -q '^// expect: accept' && programs="$programs $f"; done
for f in $programs stdlib/*.cdsl; do
    for n in 2 4 8; do
        clean "$(basename "$f") -n $n" "$f" -n $n --backend sim --size 64K
        clean "$(basename "$f") -n $n, seed, 3 iterations" "$f" -n $n --backend sim --size 16K --seed $n --iters 3
    done
done
clean "allreduce_twoshot -n 8 f16, 2 MiB" stdlib/allreduce_twoshot.cdsl -n 8 --backend sim --dtype f16 --size 2M

if [ -f "$TSAN_LIB" ]; then
    tmp=$(mktemp -d)
    if cc -std=c11 -g -O1 -fsanitize=thread -pthread -D_GNU_SOURCE $CDSL_INCLUDES -o "$tmp/sim_unit" \
        tests/unit/sim_unit.c "$TSAN_LIB" -ljansson -ldl -lm 2>"$tmp/cc.log"; then
        out=$("$tmp/sim_unit" 2>&1); rc=$?
        if [ $rc = 0 ] && ! echo "$out" | grep -q ThreadSanitizer; then pass "tsan: sim_unit"
        else fail "tsan: sim_unit" "exit $rc: $(echo "$out" | grep -m3 -E 'ThreadSanitizer|FAIL' | tr '\n' ' ')"; fi
    else
        fail "tsan: sim_unit builds" "$(head -3 "$tmp/cc.log" | tr '\n' ' ')"
    fi
    rm -rf "$tmp"
fi

# The control: rank 0 copies its output aside at its end while its peers may still be storing
# into it. TSan must see that.
if [ -f "$SPEC/bad_allgather_nvls_no_final_wait.cdsl" ]; then
    out=$(TSAN_OPTIONS=exitcode=66 timeout 120 "$TSAN_CDSLRUN" "$SPEC/bad_allgather_nvls_no_final_wait.cdsl" -n 4 \
        --unchecked --size 16K 2>&1)
    if echo "$out" | grep -q 'WARNING: ThreadSanitizer: data race'; then pass "tsan: sees the race of an unchecked racy program"
    else fail "tsan: sees the race of an unchecked racy program" "$(echo "$out" | tail -3 | tr '\n' ' ')"; fi
fi
[ $failures = 0 ]
