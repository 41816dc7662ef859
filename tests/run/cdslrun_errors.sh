#!/bin/bash
# tests/run/cdslrun_errors.sh - the errors users hit, each with a clear message and its exit
# status (1 program, 2 usage, 3 system, 4 runtime, 5 wrong result), under the normal build and
# the ASan/UBSan build (which also proves that no error path leaks).
cd "$(dirname "$0")/../.." || exit 2
CDSLRUN=${CDSLRUN:-$PWD/build/cdslrun}
ASAN_CDSLRUN=${ASAN_CDSLRUN:-$PWD/build/asan/cdslrun}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; failures=$((failures + 1)); }

driver_present() {
    ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' || compgen -G '/dev/nvidia*' >/dev/null
}

cat >"$tmp/racy.cdsl" <<'EOS'
program racy implements allgather {
    copy(output[rank], input[0]);
    peer((rank + 1) % nranks).put(output[rank], input[0]);
}
EOS
echo 'program lost implements barrier { if rank == 1 { peer(0).wait(); } }' >"$tmp/lost.cdsl"
echo 'program lazy implements allgather { copy(output[rank], input[0]); }' >"$tmp/lazy.cdsl"
ring=stdlib/allgather_ring.cdsl

# expect LABEL NAME WANT_EXIT PATTERN BIN ARGS...: exit status, message, and no sanitizer report.
expect() {
    local label=$1 name=$2 want=$3 pat=$4 bin=$5 out rc; shift 5
    out=$(timeout 120 "$bin" "$@" 2>&1); rc=$?
    if [ "$rc" != "$want" ]; then fail "$label$name" "exit $rc, wanted $want: $(echo "$out" | tail -3 | tr '\n' ' ')"
    elif ! echo "$out" | grep -qE -- "$pat"; then fail "$label$name" "no '$pat' in: $(echo "$out" | head -3 | tr '\n' ' ')"
    elif echo "$out" | grep -qE 'Sanitizer|runtime error:'; then fail "$label$name" "$(echo "$out" | grep -m1 -E 'Sanitizer|runtime error:')"
    else pass "$label$name"; fi
}

errors() {
    local bin=$1 l=$2
    expect "$l" "unknown option" 2 "cdslrun: error: unknown option '--frobnicate'" "$bin" $ring -n 2 --frobnicate
    expect "$l" "missing -n" 2 "missing -n NRANKS" "$bin" $ring
    expect "$l" "no input file" 2 "no input file" "$bin" -n 2
    expect "$l" "two input files" 2 "more than one input file" "$bin" $ring $ring -n 2
    expect "$l" "-n out of range" 2 "-n expects a number of ranks \(1 .. 1024\), not '0'" "$bin" $ring -n 0
    expect "$l" "bad --size" 2 "--size expects a positive size like 65536, 64K or 1G, not '12Q'" "$bin" $ring -n 2 --size 12Q
    expect "$l" "bad --sizes" 2 "--sizes expects MIN:MAX or MIN:MAX:FACTOR" "$bin" $ring -n 2 --sizes 1K
    expect "$l" "--sizes MIN above MAX" 2 "MIN must be positive and at most MAX" "$bin" $ring -n 2 --sizes 2K:1K
    expect "$l" "--sizes all too small" 2 \
        "--sizes 4:16: every size is below the smallest size allgather_ring at -n 8 takes \(32 bytes\)" \
        "$bin" $ring -n 8 --sizes 4:16
    expect "$l" "bad --dtype" 2 "--dtype is f32, f16, bf16, u32 or s32, not 'f64'" "$bin" $ring -n 2 --dtype f64
    expect "$l" "bad --backend" 2 "--backend is sim, p2p or nvls, not 'cpu'" "$bin" $ring -n 2 --backend cpu
    expect "$l" "--iters 0" 2 "--iters expects a number of runs \(1 or more\)" "$bin" $ring -n 2 --iters 0
    expect "$l" "--spin-limit 0" 2 "--spin-limit expects a positive number of polls" "$bin" $ring -n 2 --spin-limit 0
    expect "$l" "a value missing" 2 "--dtype needs a value" "$bin" $ring -n 2 --dtype
    expect "$l" "--unchecked on a GPU backend" 2 "--unchecked runs on the sim backend only" "$bin" $ring -n 2 --unchecked --backend nvls
    expect "$l" "a size that does not split: rounded down, with a note" 0 \
        "note: --size: 1000 bytes does not split into 3 output chunks of whole 4-byte words; running 996, the nearest size below that allgather_ring at -n 3 takes \(a multiple of 12 bytes\)" \
        "$bin" $ring -n 3 --backend sim --size 1000
    expect "$l" "a size with a unit that does not split: rounded down" 0 "--size: 1024 bytes does not split.*running 1020" \
        "$bin" $ring -n 3 --backend sim --size 1K
    expect "$l" "--sizes: each size that does not split has its note, as --size" 0 \
        "--sizes: 2048 bytes does not split.*running 2040" \
        "$bin" $ring -n 3 --backend sim --sizes 1K:2K
    expect "$l" "a size below the smallest chunk" 2 "--size 16: it is below the smallest size allgather_ring at -n 8 takes \(32 bytes\)" \
        "$bin" $ring -n 8 --backend sim --size 16
    expect "$l" "a program with errors: the checker's diagnostics, exit 1" 1 "racy.cdsl:3:[0-9]+: error: data race" \
        "$bin" "$tmp/racy.cdsl" -n 2 --backend sim
    expect "$l" "a missing file: bad usage" 2 "cannot read" "$bin" "$tmp/missing.cdsl" -n 2
    expect "$l" "out of memory" 3 "cdsl: error: out of memory: the sim's buffers for 8 ranks need [0-9.]+ TiB" \
        "$bin" $ring -n 8 --backend sim --size 1T
    expect "$l" "a wait that runs out" 4 \
        "rank 1 gave up waiting at .*lost.cdsl:1:58 for rank 0's signal \(counter peer 0: 0 of 1 arrivals\)" \
        "$bin" "$tmp/lost.cdsl" -n 2 --unchecked --spin-limit 20000
    expect "$l" "a wrong result" 5 "wrong result on rank 0: output chunk 1, element 0 is nan \(never written\)" \
        "$bin" "$tmp/lazy.cdsl" -n 2 --unchecked --size 64K
    if ! driver_present; then
        expect "$l" "p2p without a GPU" 3 "cdsl: error: no CUDA driver" "$bin" $ring -n 2 --backend p2p
        expect "$l" "the default backend is sim without a GPU, quietly" 0 \
            "^allgather_ring: 2 ranks, sim, f32, 64 KiB: verified \(2 ranks x 2 chunks\)$" "$bin" $ring -n 2 --size 64K
    fi
}

errors "$CDSLRUN" ""
if [ -x "$ASAN_CDSLRUN" ]; then errors "$ASAN_CDSLRUN" "asan: "; else echo "[SKIP] asan: no $ASAN_CDSLRUN (make asan)"; fi
[ $failures = 0 ]
