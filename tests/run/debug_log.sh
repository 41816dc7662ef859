#!/bin/bash
# tests/run/debug_log.sh - CDSL_DEBUG=INFO|TRACE, NCCL's convention: lines
# "host:pid:tid cdsl INFO ..." on stderr (or in CDSL_DEBUG_FILE, %h and %p filled in) that say
# which backend ran, how long each step took (parse, resolve, evaluate, check, warnings, run,
# verify; emit and NVRTC for device code), which NVRTC compiled and which cache entry was used
# (a miss, then a hit on the same path). Nothing without CDSL_DEBUG, nothing of INFO at WARN.
# The placement on GPUs is tested on the stand-in driver (tests/run/gpu_refusals.sh).
source "$(dirname "$0")/../lib/common.bash"
LINE='^[^ :]+:[0-9]+:[0-9]+ cdsl (INFO|TRACE|WARN) '

# has NAME FILE PATTERN...: every pattern (grep -E) is a line of FILE.
has() {
    local name=$1 f=$2 missing=""; shift 2
    for pat in "$@"; do grep -qE -- "$pat" "$f" || missing="$missing [$pat]"; done
    [ -z "$missing" ] && pass "$name" || fail "$name" "missing$missing in: $(grep cdsl "$f" | head -8 | tr '\n' '|')"
}

CDSL_DEBUG=INFO "$CDSLRUN" stdlib/allgather_ring.cdsl -n 4 --backend sim --size 64K --iters 2 >"$tmp/out" 2>"$tmp/info"
has "sim: the backend and each step's time, as NCCL's INFO lines" "$tmp/info" \
    "${LINE}backend sim: 4 ranks as CPU threads, asked for" \
    "${LINE}timing: parse [0-9.]+ ms \(stdlib/allgather_ring.cdsl, 1 file\)" \
    "${LINE}timing: resolve [0-9.]+ ms" "${LINE}timing: evaluate [0-9.]+ ms \(allgather_ring, 4 ranks\)" \
    "${LINE}timing: check [0-9.]+ ms" "${LINE}timing: warnings [0-9.]+ ms" \
    "${LINE}timing: run [0-9.]+ ms \(allgather_ring on sim, 2 runs of 16384-byte chunks" \
    "${LINE}timing: verify [0-9.]+ ms \(allgather_ring, 0 wrong elements\)"
bad=$(grep -vE "$LINE" "$tmp/info" | head -3)
[ -z "$bad" ] && pass "every line of stderr is a log line" || fail "every line of stderr is a log line" "$bad"
grep -q 'verified' "$tmp/out" && pass "standard output is as without CDSL_DEBUG" || fail "standard output is as without CDSL_DEBUG"

CDSL_DEBUG=info "$CDSLRUN" stdlib/allgather_ring.cdsl -n 2 --size 64K >/dev/null 2>"$tmp/auto"
has "the default backend says what it chose" "$tmp/auto" "${LINE}backend sim: 2 ranks as CPU threads, chosen by default"

CDSL_DEBUG=TRACE "$CDSLRUN" stdlib/allgather_ring.cdsl -n 2 --backend sim --size 64K >/dev/null 2>"$tmp/trace"
has "TRACE adds the smaller steps" "$tmp/trace" "cdsl TRACE timing: fill" "cdsl TRACE timing: load" "cdsl INFO timing: run"
for v in "" WARN nonsense; do
    CDSL_DEBUG=$v "$CDSLRUN" stdlib/allgather_ring.cdsl -n 2 --backend sim --size 64K >/dev/null 2>"$tmp/quiet"
    [ ! -s "$tmp/quiet" ] && pass "CDSL_DEBUG='$v': no INFO lines" || fail "CDSL_DEBUG='$v': no INFO lines" "$(head -2 "$tmp/quiet")"
done
mkdir "$tmp/logs"
CDSL_DEBUG=INFO CDSL_DEBUG_FILE="$tmp/logs/cdsl.%h.%p.log" "$CDSLRUN" stdlib/allgather_ring.cdsl -n 2 --backend sim \
    --size 64K >/dev/null 2>"$tmp/err"
f=$(ls "$tmp"/logs/cdsl."$(hostname | cut -d. -f1)".[0-9]*.log 2>/dev/null | head -1)
if [ -n "$f" ] && [ ! -s "$tmp/err" ]; then has "CDSL_DEBUG_FILE: %h and %p filled in, nothing on stderr" "$f" "${LINE}backend sim"
else fail "CDSL_DEBUG_FILE: %h and %p filled in, nothing on stderr" "$(ls "$tmp/logs") / $(head -2 "$tmp/err")"; fi

# cdslc --emit-ptx: emit, NVRTC and the cache (no GPU needed). A cache of the test's own.
export CDSL_CACHE_DIR=$tmp/cache
unset CDSL_NO_CACHE
probe=$("$CDSLC" stdlib/barrier_switch.cdsl -n 2 --emit-ptx -o "$tmp/probe.ptx" 2>&1)
if echo "$probe" | grep -q "NVRTC (libnvrtc.so) was not found"; then
    echo "[SKIP] CDSL_DEBUG with --emit-ptx: libnvrtc not found"
    exit 0
fi
CDSL_DEBUG=INFO "$CDSLC" stdlib/allgather_ring.cdsl -n 4 --emit-ptx -o "$tmp/a.ptx" 2>"$tmp/ptx1"
CDSL_DEBUG=INFO "$CDSLC" stdlib/allgather_ring.cdsl -n 4 --emit-ptx -o "$tmp/b.ptx" 2>"$tmp/ptx2"
has "cdslc --emit-ptx: emit, the NVRTC used, a cache miss and NVRTC's time" "$tmp/ptx1" \
    "${LINE}timing: emit [0-9.]+ ms \(p2p CUDA for allgather_ring, f32, [0-9]+ bytes\)" \
    "${LINE}NVRTC [0-9]+\.[0-9]+: /.*libnvrtc" "${LINE}cache miss: $tmp/cache/[0-9a-f]{64}\.ptx" \
    "${LINE}timing: NVRTC [0-9.]+ ms \(allgather_ring_p2p_f32.cu, --gpu-architecture=compute_90, compiled\)"
miss=$(sed -n 's/.*cache miss: //p' "$tmp/ptx1")
has "the same again: a hit on the same entry, no NVRTC run" "$tmp/ptx2" "${LINE}cache hit: $miss\$"
grep -q "timing: NVRTC" "$tmp/ptx2" && fail "a hit runs no NVRTC" || pass "a hit runs no NVRTC"
