#!/bin/bash
# tests/run/ce_fake.sh - the copy-engine path of the p2p backend (runtime/engines/ce.c), end to end on a
# stand-in driver whose streams really run in order on threads (tests/run/fake_streams.c):
# copies, stream write/wait-value operations, events between streams, graph capture and replay.
# Only where no NVIDIA driver exists (the stand-in must never shadow real GPUs); the device code
# for the kernel runs comes from the JIT cache, filled by cdslc first (NVRTC must not meet the
# stand-in).
#
# What it shows: the lowered stdlib allgathers and the programs of tests/ce verify at 2 to 8
# ranks, one or several ranks per "GPU", with graphs and without, with write/wait-value flags
# (every write storing exactly one more than its word held, across graph replays: FAKE_STRICT)
# and with events; under random copy delays (FAKE_JITTER: a copy that lands after the signal
# meant to publish it shows up as a wrong element of tests/ce/forward.cdsl); kernel and copy-engine
# runs mix on one communicator; CDSL_CE=on says why a program with a reduction keeps its kernel,
# and a device without 64-bit stream memory operations keeps the kernels, a driver that refuses
# write-values into another GPU's memory gets events; acquire waits carry
# CU_STREAM_WAIT_VALUE_FLUSH exactly where the device offers it; a lost write (FAKE_DROP_WRITE)
# is reported by the watchdog with the wait's place and the streams drain, for cdslrun and for
# cdsl_run_async (api_example); an enqueue that fails half way leaves nothing in flight; every
# run leaves nothing of the driver allocated; the ASan build is clean.
cd "$(dirname "$0")/../.." || exit 2
CDSLC=${CDSLC:-$PWD/build/cdslc}
CDSLRUN=${CDSLRUN:-$PWD/build/cdslrun}
ASAN_CDSLRUN=${ASAN_CDSLRUN:-$PWD/build/asan/cdslrun}
EXAMPLE=$PWD/build/api_example ASAN_EXAMPLE=$PWD/build/asan/api_example
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1   # p2p only, always
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
CLEAN='alive: mem 0 streams 0 events 0 modules 0 graphs 0 execs 0 contexts 0'

pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; failures=$((failures + 1)); }
skip() { echo "[SKIP] $1"; }

eval "$(sed -n '/^driver_present() {/,/^}/p' tests/run/gpu_refusals.sh)"   # a real driver or devices here

# check NAME WANT_EXIT PATTERN ENV... -- BIN ARGS: api.sh's (exit status, the output joined into
# one line matching PATTERN, no sanitizer report, no stand-in violation).
eval "$(sed -n '/^check() {/,/^}/p' tests/run/api.sh)"

# run: check on the stand-in, which must also report nothing of the driver left alive.
run() {
    local name=$1 want=$2 pat=$3; shift 3
    check "$name" "$want" "$pat.*$CLEAN" LD_LIBRARY_PATH="$tmp/fake" CDSL_CACHE_DIR="$tmp/cache" "$@"
}

VERIFIED='verified'
CE_ONLY='ran 0 kernels, [1-9][0-9]* copies'

setup() {
    mkdir -p "$tmp/fake" && mkdir -p -m 700 "$tmp/cache"
    if ! cc -std=c11 -D_GNU_SOURCE -shared -fPIC -pthread -Iruntime -o "$tmp/fake/libcuda.so.1" \
        tests/run/fake_streams.c 2>"$tmp/cc.log"; then
        fail "the stand-in driver builds" "$(head -3 "$tmp/cc.log" | tr '\n' ' ')"
        return 1
    fi
    local spec f n dtype ok=1
    for spec in stdlib/allgather_nvls.cdsl:2 stdlib/allgather_nvls.cdsl:4 stdlib/allgather_nvls.cdsl:8 \
        stdlib/allgather_ring.cdsl:4 stdlib/allgather_mesh.cdsl:4 stdlib/allgather_chunked_ring.cdsl:4 \
        tests/ce/forward.cdsl:4 tests/ce/pull.cdsl:3 stdlib/allreduce_twoshot.cdsl:2 examples/allgather.cdsl:2:u32; do
        IFS=: read -r f n dtype <<<"$spec"
        CDSL_CACHE_DIR=$tmp/cache "$CDSLC" "$f" -n "$n" --dtype "${dtype:-f32}" --emit-cubin --arch sm_90 \
            -o "$tmp/x.cubin" >"$tmp/nvrtc.log" 2>&1 || ok=0
    done
    if [ $ok = 0 ]; then
        skip "copy-engine runs on the stand-in: no cubin from NVRTC here ($(head -1 "$tmp/nvrtc.log"))"
        return 1
    fi
}

runs() {
    local bin=$1 l=$2 s
    local STRICT=(CDSL_CE=on FAKE_STRICT=1)
    run "${l}allgather_nvls -n 2, memops, graphs: verified, counters grow by one" 0 "$VERIFIED.*$CE_ONLY" \
        "${STRICT[@]}" -- "$bin" stdlib/allgather_nvls.cdsl -n 2 --backend p2p --sizes 4K:1M:4 --bench
    run "${l}allgather_nvls -n 8, 4 ranks per GPU, memops: verified" 0 "verified .*30 runs.*$CE_ONLY" \
        "${STRICT[@]}" -- "$bin" stdlib/allgather_nvls.cdsl -n 8 --ranks-per-gpu 4 --backend p2p --size 64K --iters 30
    [ -n "$l" ] && return
    for s in allgather_ring allgather_mesh allgather_chunked_ring; do
        run "$s -n 4, 2 ranks per GPU, memops, graphs: verified" 0 "verified .*3 runs.*$CE_ONLY" \
            "${STRICT[@]}" -- "$bin" "stdlib/$s.cdsl" -n 4 --ranks-per-gpu 2 --backend p2p --sizes 4K:64K:4 --iters 3
        run "$s -n 4, events: verified" 0 "verified .*3 runs.*, 0 write-values, 0 wait-values" \
            CDSL_CE=on CDSL_CE_SYNC=events -- "$bin" "stdlib/$s.cdsl" -n 4 --ranks-per-gpu 2 --backend p2p \
            --sizes 4K:64K:4 --iters 3
    done
    run "pull -n 3 (gets), without graphs: verified" 0 "verified .*4 runs.*$CE_ONLY" "${STRICT[@]}" CDSL_NO_GRAPH=1 -- \
        "$bin" tests/ce/pull.cdsl -n 3 --ranks-per-gpu 2 --backend p2p --sizes 4K:64K:4 --iters 4
    run "one lane per rank (CDSL_CE_LANES=1): verified" 0 "verified .*$CE_ONLY" "${STRICT[@]}" CDSL_CE_LANES=1 -- \
        "$bin" stdlib/allgather_nvls.cdsl -n 4 --ranks-per-gpu 2 --backend p2p --size 64K --iters 3
    for s in 1 2 3 4; do
        run "forward -n 4 under random copy delays (seed $s), memops: verified" 0 "$VERIFIED.*$CE_ONLY" \
            CDSL_CE=on FAKE_JITTER=3000 FAKE_SEED=$s -- "$bin" tests/ce/forward.cdsl -n 4 --ranks-per-gpu 2 \
            --backend p2p --sizes 16K:64K:4
        run "forward -n 4 under random copy delays (seed $s), events: verified" 0 "$VERIFIED.*$CE_ONLY" \
            CDSL_CE=on CDSL_CE_SYNC=events FAKE_JITTER=3000 FAKE_SEED=$s -- "$bin" tests/ce/forward.cdsl -n 4 \
            --ranks-per-gpu 2 --backend p2p --sizes 16K:64K:4
    done
    run "kernels below CDSL_CE_MIN_BYTES, copies above, one communicator: verified" 0 \
        "verified.*ran [1-9][0-9]* kernels, [1-9][0-9]* copies" CDSL_CE_MIN_BYTES=65536 FAKE_JITTER=500 -- \
        "$bin" stdlib/allgather_nvls.cdsl -n 4 --ranks-per-gpu 2 --backend p2p --sizes 16K:1M:4 --iters 3
    run "by default (8 MiB chunks and up) small sizes keep the kernels" 0 "verified.*ran [1-9][0-9]* kernels, 0 copies" -- \
        "$bin" stdlib/allgather_nvls.cdsl -n 2 --backend p2p --sizes 4K:1M:16
    run "CDSL_CE=off keeps the kernels" 0 "verified.*ran [1-9][0-9]* kernels, 0 copies" CDSL_CE=off CDSL_CE_MIN_BYTES=4 -- \
        "$bin" stdlib/allgather_nvls.cdsl -n 2 --backend p2p --size 64K
    run "CDSL_CE=on says why a program with a reduction keeps its kernel" 0 \
        "warning: CDSL_CE=on, but allreduce_twoshot runs on the SMs: rank 0's switch.reduce at stdlib/allreduce_twoshot.cdsl:7:12 is a reduction.*ran [1-9][0-9]* kernels, 0 copies" \
        CDSL_CE=on -- "$bin" stdlib/allreduce_twoshot.cdsl -n 2 --backend p2p --size 64K --no-check
    run "a device without 64-bit stream memory operations keeps the kernels" 0 \
        "warning: GPU 0 \(Fake GPU 0\) has no 64-bit stream memory operations.*verified.*ran [1-9][0-9]* kernels, 0 copies" \
        CDSL_CE=on FAKE_NO_MEMOPS=1 -- "$bin" stdlib/allgather_nvls.cdsl -n 2 --backend p2p --size 64K
    run "a driver that refuses write-values into peer memory: events instead, verified" 0 \
        "warning: GPU 0's stream write-value into GPU 1's memory failed .*: the copy engine's signals and waits use events.*verified.*, 0 write-values" \
        CDSL_CE=on FAKE_NO_PEER_WRITE=1 -- "$bin" stdlib/allgather_mesh.cdsl -n 4 --ranks-per-gpu 2 --backend p2p --size 64K --iters 3
    run "acquire waits carry FLUSH where the device offers it" 0 "verified.*wait-values \([1-9][0-9]* with FLUSH\)" \
        "${STRICT[@]}" FAKE_FLUSH=1 -- "$bin" stdlib/allgather_ring.cdsl -n 4 --ranks-per-gpu 2 --backend p2p --size 64K
}

watchdog() {
    local bin=$1 ex=$2 l=$3
    run "${l}a lost switch arrival: the watchdog names the wait, the streams drain" 4 \
        "rank [01] gave up waiting at stdlib/allgather_nvls\.cdsl:[58]:12 \(the switch barrier\): no arrival in 0\.10 s \(copy engine" \
        CDSL_CE=on FAKE_DROP_WRITE=1 -- "$bin" stdlib/allgather_nvls.cdsl -n 2 --backend p2p --size 64K --spin-limit 100000
    run "${l}a lost peer signal in a graph replay: named, drained" 4 \
        "rank [0-3] gave up waiting at stdlib/allgather_ring\.cdsl:[0-9]+:[0-9]+ \(peer [0-3]'s semaphore\)" \
        CDSL_CE=on FAKE_DROP_WRITE=40 -- "$bin" stdlib/allgather_ring.cdsl -n 4 --ranks-per-gpu 2 --backend p2p \
        --size 64K --iters 5 --spin-limit 100000
    run "${l}an enqueue that fails half way: reported, and the ranks it reached are released" 3 \
        "enqueueing rank [0-3]'s wait failed" CDSL_CE=on FAKE_FAIL_WAIT=5 -- "$bin" stdlib/allgather_ring.cdsl -n 4 \
        --ranks-per-gpu 2 --backend p2p --size 64K
    [ -x "$ex" ] || { fail "${l}api_example is built" "no $ex"; return; }
    run "${l}cdsl_run_async on the copy engine (api_example): verified" 0 "api_example: verified \(p2p, 2 ranks\).*$CE_ONLY" \
        CDSL_CE=on FAKE_STRICT=1 -- "$ex" p2p 2
    [ -n "$l" ] && return
    run "cdsl_run_async with events: verified" 0 "api_example: verified \(p2p, 2 ranks\).*, 0 write-values" \
        CDSL_CE=on CDSL_CE_SYNC=events -- "$ex" p2p 2
    run "cdsl_run_async, a lost arrival: the watchdog thread's report comes from cdsl_comm_status" 4 \
        "rank [01] gave up waiting at examples/allgather\.cdsl:(8|11):12 \(the switch barrier\)" \
        CDSL_CE=on FAKE_DROP_WRITE=11 -- "$ex" p2p 2
}

if [ ! -x "$CDSLRUN" ] || [ ! -x "$CDSLC" ]; then
    fail "cdslc and cdslrun are built"
    exit 1
fi
if driver_present; then
    skip "an NVIDIA driver is present: no stand-in driver here (bench/ce_gpu.sh is the GPU run)"
    exit 0
fi
setup || exit $((failures > 0))
runs "$CDSLRUN" ""
watchdog "$CDSLRUN" "$EXAMPLE" ""
if [ -x "$ASAN_CDSLRUN" ]; then
    runs "$ASAN_CDSLRUN" "asan: "
    watchdog "$ASAN_CDSLRUN" "$ASAN_EXAMPLE" "asan: "
else
    fail "the ASan build exists" "no $ASAN_CDSLRUN (make asan)"
fi
[ $failures = 0 ]
