#!/bin/bash
# tests/mp/mp.sh - one process per rank on the sim engine (cdsl.h's per-rank API), in real
# processes: tests/mp/mp_probe.c, linked against libcdsl.a like a user's program, forks one
# process per rank (see its header for the cases).
#
# 1. Every stdlib program at 3 ranks (python3 -m cdsl.selftest runs 4): every suitable dtype, three sizes, the caller's
#    buffers (staged) and the symmetric ones, every rank's output checked. Also under
#    ASan/UBSan (with leak checks). Every stdlib program compiled in place, on the caller's
#    in-place buffers and on the symmetric ones. A flipped bit is reported as a wrong result.
# 2. Bad input, each with its message on every rank, naming the rank, within the bound the
#    probe enforces (it kills the processes and says HANG past 3 x CDSL_TIMEOUT + 20 s):
#    another nranks, a rank that never arrives (also rank 0), two processes with one rank,
#    another program, another dtype, a rank killed by SIGKILL in the middle of a run, an
#    output buffer too small, calls in another order, a damaged id, an input that shares the
#    output's memory given to a program compiled out of place.
# 3. Nothing is left behind: every child has as many descriptors after destroy as before
#    init, no abstract socket of ours stays (/proc/net/unix), /dev/shm gains nothing.
cd "$(dirname "$0")/../.." || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CDSL_TIMEOUT=2 PROBE_DIR=$tmp
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1}

pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; }

build() {
    local lib=$1 out=$2; shift 2
    ${CC:-cc} -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -g "$@" -Iruntime -o "$out" tests/mp/mp_probe.c "$lib" \
        -ljansson -ldl -lpthread -lm 2>"$tmp/cc.log"
}
if ! build build/libcdsl.a "$tmp/probe"; then
    fail "mp_probe builds" "$(head -3 "$tmp/cc.log")"
    exit 1
fi
asan=""
if [ -f build/asan/libcdsl.a ] && build build/asan/libcdsl.a "$tmp/probe_asan" -O1 -fsanitize=address,undefined \
        -fno-omit-frame-pointer; then
    asan=$tmp/probe_asan
else
    fail "mp_probe builds under ASan" "no build/asan/libcdsl.a (make asan) or: $(head -3 "$tmp/cc.log")"
fi

sockets() { grep -c '@cdsl-' /proc/net/unix 2>/dev/null || true; }
# Only names of ours count: other programs (Open MPI's vader segments, Python's semaphores) may
# come and go in /dev/shm while the suite runs.
shm_ours() { ls /dev/shm 2>/dev/null | grep -i cdsl | sort; }
shm_before=$(shm_ours)
sock_before=$(sockets)

# probe NAME BIN CASE NRANKS FILE [FILE2]: runs it; OUT holds its output
probe() {
    local name=$1 bin=$2; shift 2
    OUT=$("$bin" "$@" 2>&1); RC=$?
    if [ "$RC" = 99 ] || echo "$OUT" | grep -q '^HANG'; then
        fail "$name" "hang: $(echo "$OUT" | tail -3 | tr '\n' ' ')"; return 1
    fi
    if echo "$OUT" | grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|descriptors leaked'; then
        fail "$name" "$(echo "$OUT" | grep -m1 -E 'Sanitizer|runtime error:|leaked')"; return 1
    fi
    return 0
}

# expect NAME CASE NRANKS STATUS-PATTERN MESSAGE-PATTERN [FILE2]: every rank's status line
# matches STATUS-PATTERN (grep -E on "rank r: ...") and every rank's output has the message.
expect() {
    local name=$1 what=$2 n=$3 st=$4 msg=$5 f2=${6:-stdlib/allgather_mesh.cdsl} r bad=""
    probe "$name" "$tmp/probe" "$what" "$n" stdlib/allgather_ring.cdsl "$f2" || return
    for ((r = 0; r < n; r++)); do
        echo "$OUT" | grep -qE "^rank $r: ($st)\$" || bad="rank $r: $(echo "$OUT" | grep "^rank $r:")"
        [ -n "$bad" ] && break
    done
    if [ -n "$bad" ]; then
        fail "$name" "$bad"
    elif [ "$(echo "$OUT" | grep -cE "^\[rank [0-9]+\] cdsl: error: .*$msg")" -lt "$7" ]; then
        fail "$name" "fewer than $7 ranks say '$msg': $(echo "$OUT" | grep -m2 'error' | tr '\n' ' ')"
    else
        pass "$name"
    fi
}

# ---- 1. every stdlib program --------------------------------------------------------------------
for n in 3; do
    bad=""
    for f in stdlib/*.cdsl; do
        probe "ok $f -n $n" "$tmp/probe" ok $n "$f" || { bad=1; continue; }
        v=$(echo "$OUT" | grep -c "^\[rank [0-9]*\] rank [0-9]*: verified [0-9]* runs")
        [ "$v" = $n ] || { fail "$(basename "$f") on $n processes" "$(echo "$OUT" | grep -m3 -v verified | tr '\n' ' ')"; bad=1; }
    done
    [ -z "$bad" ] && pass "every stdlib program on $n processes: every dtype, 3 sizes, staged and on the symmetric buffers, verified"
done
if [ -n "$asan" ]; then
    bad=""
    for f in stdlib/allgather_ring.cdsl stdlib/allreduce_twoshot.cdsl stdlib/reducescatter_nvls.cdsl stdlib/barrier_switch.cdsl; do
        probe "asan ok $f" "$asan" ok 3 "$f" || { bad=1; continue; }
        [ "$(echo "$OUT" | grep -c 'verified')" = 3 ] || { fail "asan $(basename "$f")" "$(echo "$OUT" | grep -m2 error)"; bad=1; }
    done
    [ -z "$bad" ] && pass "ASan/UBSan: four programs on 3 processes, verified, no leak, no descriptor left"
fi
bad=""
for f in stdlib/*.cdsl; do
    probe "inplace $f" "$tmp/probe" inplace 3 "$f" || { bad=1; continue; }
    [ "$(echo "$OUT" | grep -c "^\[rank [0-9]*\] rank [0-9]*: verified")" = 3 ] ||
        { fail "$(basename "$f") in place on 3 processes" "$(echo "$OUT" | grep -m3 -v verified | tr '\n' ' ')"; bad=1; }
done
[ -z "$bad" ] && pass "every stdlib program compiled in place on 3 processes: the caller's in-place buffers and the symmetric ones, verified"
# A rank that ends its part of the last run and exits while the others still run theirs (a
# reduce's last rank needs nothing from the late rank 1) is no failure: every rank verifies.
for f in stdlib/reduce_mesh.cdsl stdlib/reduce_ll.cdsl; do
    probe "leave $f" "$tmp/probe" leave 3 "$f" || continue
    v=$(echo "$OUT" | grep -c "^\[rank [0-9]*\] rank [0-9]*: verified [0-9]* runs")
    [ "$v" = 3 ] && pass "$(basename "$f") on 3 processes: a rank that exits after its part of the last run, while rank 1 is late, fails no one" ||
        fail "$(basename "$f") on 3 processes: a rank that exits after its part of the last run fails no one" \
            "$(echo "$OUT" | grep -m3 -v verified | tr '\n' ' ')"
done
probe corrupt "$tmp/probe" corrupt 3 stdlib/allgather_ring.cdsl
if echo "$OUT" | grep -q '^rank 1: exit 5$' && echo "$OUT" | grep -q 'wrong result on rank 1'; then
    pass "a flipped bit in rank 1's result is a wrong result"
else
    fail "a flipped bit in rank 1's result is a wrong result" "$(echo "$OUT" | head -4 | tr '\n' ' ')"
fi

# ---- 2. bad input ------------------------------------------------------------------------------------
expect "another nranks: every rank says which" nranks 3 "exit 4" "rank 1 \(pid [0-9]+\) was started with nranks = 4, rank 0 with nranks = 3" "" 3
expect "a rank that never arrives: named, within the timeout" absent 3 "exit 4|exit 0" "rank 2 never arrived at init within 2 s" "" 2
expect "rank 0 never arrives: every other rank says so" absent0 3 "exit 4|exit 0" "rank 0 never arrived at init" "" 2
expect "two processes with one rank" dup 3 "exit 4" "two processes are rank 1 \(pids [0-9]+ and [0-9]+\)" "" 3
expect "another program: both named, with digests" program 3 "exit 2" "rank 1 runs allgather_mesh \(program digest [0-9a-f]{16}\) but rank 0 runs allgather_ring" "" 3
expect "another dtype" dtype 3 "exit 2" "rank 1 runs allgather_ring on u32 with chunks of 64 bytes but rank 0 on f32" "" 3
# A rank that had not reached its wait yet when another found the death stops between
# operations ("rank 2 stopped: ..."), one inside a wait says where: both name the dead rank.
expect "a rank killed mid-run: the others stop, naming it" die 3 "exit 4|killed by signal 9" "stopped( waiting at stdlib/allgather_ring.cdsl:[0-9]+:[0-9]+.*)?: rank 1's process has exited" "" 2
expect "an output buffer too small: that rank says how small, the others name it" small 3 "exit 2" "rank 1: the output given to the run holds 128 bytes, but allgather_ring needs 192 \(3 chunks of 64 bytes\)|rank 1 cannot take part in the run" "" 3
expect "calls in another order" order 3 "exit 4" "rank 1 is at cdsl_rank_alloc while rank 0 is at a run's handshake" "" 3
expect "an out-of-place program on an input that shares the output's memory: refused on every rank" alias 3 "exit 2" \
    "rank [0-2]: the input and output given to the run share memory; allgather_ring was compiled out of place" "" 3
expect "a damaged id" badid 3 "exit 2|exit 4" "this is not a unique id that cdsl_get_unique_id made|rank 1 never arrived at init" "" 3
if [ -n "$asan" ]; then
    probe "asan: a rank killed mid-run" "$asan" die 3 stdlib/allgather_ring.cdsl &&
        echo "$OUT" | grep -q "rank 1's process has exited" && pass "asan: a rank killed mid-run, no leak in the others"
    probe "asan: a rank that never arrives" "$asan" absent 3 stdlib/allgather_ring.cdsl &&
        echo "$OUT" | grep -q "rank 2 never arrived" && pass "asan: a rank that never arrives, no leak in the others"
fi

# ---- 3. nothing left behind --------------------------------------------------------------------------
[ "$(sockets)" = "$sock_before" ] && pass "no abstract socket of ours is left" ||
    fail "no abstract socket of ours is left" "$(grep '@cdsl-' /proc/net/unix | head -2)"
[ "$(shm_ours)" = "$shm_before" ] && pass "/dev/shm gains nothing of ours" ||
    fail "/dev/shm gains nothing of ours" "$(comm -13 <(echo "$shm_before") <(shm_ours) | head -3)"
