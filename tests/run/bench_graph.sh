#!/bin/bash
# tests/run/bench_graph.sh - no CUDA graph capture between the warm-up and the timed runs,
# shown on the stand-in driver (tests/run/fake_streams.c) with CDSL_DEBUG=TRACE.
#
# The GPU backends capture one graph per chain length (runtime/engines/gpu_common.c), so a warm-up of
# another length than the timed call left the timed call to capture a fresh graph. The tools
# now warm up in calls of exactly the timed call's length. For each size the TRACE log must read:
# one capture during the warm-up, then, for the timed run, "replaying the kept graph" and no
# capture before its "timing: run" line. Checked for cdslrun --bench (default iterations, and
# --iters/--warmup given), cdsl-perf (-n/-w, and -G), and a chain longer than the graph's limit
# split into equal replays. Only where no NVIDIA driver exists (the stand-in must never shadow
# real GPUs); the cubin comes from the JIT cache, filled by cdslc first.
cd "$(dirname "$0")/../.." || exit 2
CDSLC=${CDSLC:-$PWD/build/cdslc}
CDSLRUN=${CDSLRUN:-$PWD/build/cdslrun}
CDSLPERF=${CDSLPERF:-$PWD/build/cdsl-perf}
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1   # p2p only
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; failures=$((failures + 1)); }
skip() { echo "[SKIP] $1"; }

eval "$(sed -n '/^driver_present() {/,/^}/p' tests/run/gpu_refusals.sh)"

# Per size (a "placement"/fill starts it), the graph events and runs in order, as one word each:
# C<chain> a capture, K<chain> the kept graph replayed, R<runs> a run's timing line.
events() {
    sed -nE -e 's/.*cdsl TRACE timing: fill .*/|/p' \
        -e 's/.*graph: captured a chain of ([0-9]+) .*/C\1/p' \
        -e 's/.*graph: replaying the kept graph \(chain of ([0-9]+) .*/K\1/p' \
        -e 's/.*graph: ([0-9]+) replays? of ([0-9]+) launches per rank, ([0-9]+) runs? launched directly.*/G\1x\2+\3/p' \
        -e 's/.*cdsl INFO timing: run .*, ([0-9]+) runs? of .*/R\1/p' "$1" | tr '\n' ' '
}

# expect NAME WANT LOG: the event words of LOG, joined, must be WANT exactly.
expect() {
    local got
    got=$(events "$3")
    if [ "$got" = "$2" ]; then pass "$1"; else fail "$1" "want '$2', got '$got'"; fi
}

stand_in() { env CDSL_DEBUG=TRACE LD_LIBRARY_PATH="$tmp/fake" CDSL_CACHE_DIR="$tmp/cache" "$@"; }

if [ ! -x "$CDSLRUN" ] || [ ! -x "$CDSLC" ] || [ ! -x "$CDSLPERF" ]; then
    fail "cdslc, cdslrun and cdsl-perf are built"
    exit 1
fi
if driver_present; then
    skip "an NVIDIA driver is present: no stand-in driver here (bench/compare.sh is the GPU run)"
    exit 0
fi
mkdir -p "$tmp/fake" && mkdir -p -m 700 "$tmp/cache"
if ! cc -std=c11 -D_GNU_SOURCE -shared -fPIC -pthread -Iruntime -o "$tmp/fake/libcuda.so.1" \
    tests/run/fake_streams.c 2>"$tmp/cc.log"; then
    fail "the stand-in driver builds" "$(head -3 "$tmp/cc.log" | tr '\n' ' ')"
    exit 1
fi
if ! CDSL_CACHE_DIR=$tmp/cache "$CDSLC" stdlib/allgather_nvls.cdsl -n 2 --emit-cubin --arch sm_90 \
    -o "$tmp/x.cubin" >"$tmp/nvrtc.log" 2>&1; then
    skip "graph capture on the stand-in: no cubin from NVRTC here ($(head -1 "$tmp/nvrtc.log"))"
    exit 0
fi
P=(stdlib/allgather_nvls.cdsl -n 2 --backend p2p)

# cdslrun --bench, default iterations: a probe run (no graph), a warm-up of 200 that captures,
# then the timed 200 replay what the warm-up captured.
stand_in "$CDSLRUN" "${P[@]}" --bench --sizes 4K:16K:4 >"$tmp/out" 2>"$tmp/log"
expect "cdslrun --bench: each size captures in its warm-up only; the timed 200 replay the kept graph" \
    "| R1 C200 G1x200+0 R200 K200 G1x200+0 R200 | R1 C200 G1x200+0 R200 K200 G1x200+0 R200 " "$tmp/log"
grep -q "up to 200 timed runs per size" "$tmp/out" && grep -q "^# wrong elements: 0 (verified)" "$tmp/out" &&
    ! grep -q "timed runs at" "$tmp/out" &&
    pass "cdslrun --bench: the header says up to 200 timed runs; every size ran 200, verified" ||
    fail "cdslrun --bench header and result" "$(cat "$tmp/out")"

# --iters 30 --warmup 5: the warm-up is one call of 30 runs, said so in the header.
stand_in "$CDSLRUN" "${P[@]}" --bench --size 64K --iters 30 --warmup 5 >"$tmp/out" 2>"$tmp/log"
expect "cdslrun --iters 30 --warmup 5: a warm-up of one 30-run call, then the kept graph" \
    "| C30 G1x30+0 R30 K30 G1x30+0 R30 " "$tmp/log"
grep -q "30 warmup + 30 timed runs per size" "$tmp/out" && pass "cdslrun: the header counts the rounded warm-up" ||
    fail "cdslrun: the header counts the rounded warm-up" "$(head -1 "$tmp/out")"

# --warmup 70 --iters 30: three warm-up calls of 30 (the first captures), then the timed one.
stand_in "$CDSLRUN" "${P[@]}" --size 64K --iters 30 --warmup 70 >"$tmp/out" 2>"$tmp/log"
expect "cdslrun --iters 30 --warmup 70: three warm-up calls of 30, one capture in all" \
    "| C30 G1x30+0 R30 K30 G1x30+0 R30 K30 G1x30+0 R30 K30 G1x30+0 R30 " "$tmp/log"

# More runs than one graph holds (256 per rank): equal replays, none launched directly.
stand_in "$CDSLRUN" "${P[@]}" --size 64K --iters 1000 --warmup 1 >"$tmp/out" 2>"$tmp/log"
expect "cdslrun --iters 1000: four replays of 250, in the warm-up and the timed run alike" \
    "| C250 G4x250+0 R1000 K250 G4x250+0 R1000 " "$tmp/log"

# cdsl-perf -n 20 -w 5, and -G 3 (three timed calls). Out of place only: the stand-in's kernel
# knows allgather_nvls's out-of-place buffers only. The check run after timing (-c 1) is one
# run on fresh inputs, without a graph.
PERF=(--backend p2p -g 2 -b 64K -e 64K --no-in-place stdlib/allgather_nvls.cdsl)
stand_in "$CDSLPERF" -n 20 -w 5 "${PERF[@]}" >"$tmp/out" 2>"$tmp/log"
expect "cdsl-perf -n 20 -w 5: the timed call replays the warm-up's graph" \
    "C20 G1x20+0 R20 K20 G1x20+0 R20 | R1 " "$tmp/log"
grep -q "warmup iters: 5 iters: 20" "$tmp/out" && grep -qx "# cdsl: -w 5 warms up with 20 runs: whole calls of 20 runs, as the timed ones" "$tmp/out" &&
    pass "cdsl-perf: the header gives -w as asked, and the rounded warm-up on a line of its own" ||
    fail "cdsl-perf: the header gives -w as asked, and the rounded warm-up on a line of its own" "$(grep "nThread\|warms up" "$tmp/out")"
stand_in "$CDSLPERF" -n 20 -w 1 -G 3 -c 0 "${PERF[@]}" >"$tmp/out" 2>"$tmp/log"
expect "cdsl-perf -G 3: one capture, in the warm-up" \
    "C20 G1x20+0 R20 K20 G1x20+0 R20 K20 G1x20+0 R20 K20 G1x20+0 R20 " "$tmp/log"
[ $failures = 0 ]
