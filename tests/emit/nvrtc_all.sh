#!/bin/bash
# Every accepted spec program, at -n 2, 4 and 8, for both flavours and every element type: the
# CUDA emits, NVRTC compiles it to an sm_90 cubin, and the PTX of the nvls flavour contains
# multimem instructions (when the program uses the switch at all: allgather_ring has nothing
# to put through it) while the p2p flavour's contains none; the same for the programs with
# packets (docs/language.md section 8: PACKET_PROGRAMS), whose PTX has the packets' 64-bit
# relaxed stores in both flavours. Two compiles at a time, in a
# temporary cache. One [PASS]/[FAIL] line per combination; [SKIP] when NVRTC is missing.
cd "$(dirname "$0")/../.." || exit 1
cdslc=${CDSLC:-./build/cdslc}
spec=${SPEC_DIR:-tests/spec}
[ -x "$cdslc" ] || { echo "[FAIL] nvrtc_all: no cdslc at $cdslc"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export CDSL_CACHE_DIR=$tmp/cache
unset CDSL_NO_CACHE

probe=$("$cdslc" "$spec/barrier_switch.cdsl" -n 2 --emit-ptx --backend p2p 2>&1 >/dev/null)
if echo "$probe" | grep -q "NVRTC (libnvrtc.so) was not found"; then
    echo "[SKIP] nvrtc_all: libnvrtc not found (set CUDA_HOME or LD_LIBRARY_PATH to run these)"
    exit 0
fi

# One combination: prints its [PASS]/[FAIL] line.
one() {
    local f=$1 n=$2 b=$3 t=$4 name out ptx
    name="nvrtc $(basename "$f" .cdsl) -n $n $b $t"
    out=$tmp/$(basename "$f" .cdsl).$n.$b.$t
    if ! "$cdslc" "$f" -n "$n" --emit-cuda --backend "$b" --dtype "$t" -o "$out.cu" 2>"$out.err"; then
        echo "[FAIL] $name: --emit-cuda: $(head -3 "$out.err" | tr '\n' ' ')"; return
    fi
    if ! "$cdslc" "$f" -n "$n" --emit-cubin --arch sm_90 --backend "$b" --dtype "$t" -o "$out.cubin" 2>"$out.err"; then
        echo "[FAIL] $name: --emit-cubin: $(head -5 "$out.err" | tr '\n' ' ')"; return
    fi
    if ! "$cdslc" "$f" -n "$n" --emit-ptx --backend "$b" --dtype "$t" -o "$out.ptx" 2>"$out.err"; then
        echo "[FAIL] $name: --emit-ptx: $(head -5 "$out.err" | tr '\n' ' ')"; return
    fi
    local mm sw; mm=$(grep -c 'multimem\.' "$out.ptx")
    sw=$("$cdslc" "$f" -n "$n" --dump-ir 2>/dev/null | grep -c ' switch\.')
    if [ "$b" = nvls ] && [ "$sw" -gt 0 ] && [ "$mm" -eq 0 ]; then
        echo "[FAIL] $name: the nvls PTX has no multimem instruction"; return
    fi
    if [ "$b" = p2p ] && [ "$mm" -ne 0 ]; then
        echo "[FAIL] $name: the p2p PTX has $mm multimem instructions"; return
    fi
    if "$cdslc" "$f" -n "$n" --dump-ir 2>/dev/null | grep -q ' send_packets ' &&
        ! grep -q 'st\.relaxed\.sys\.global\.u64' "$out.ptx"; then
        echo "[FAIL] $name: a program with packets, but no st.relaxed.sys.global.u64 in its PTX"; return
    fi
    if [ ! -s "$out.cubin" ]; then
        echo "[FAIL] $name: empty cubin"; return
    fi
    echo "[PASS] $name"
}
export -f one
export cdslc tmp

PACKET_PROGRAMS=${PACKET_PROGRAMS:-"stdlib/allgather_ll.cdsl stdlib/allreduce_ll.cdsl stdlib/reducescatter_ll.cdsl stdlib/allgather_port.cdsl"}
for f in "$spec"/*.cdsl $PACKET_PROGRAMS; do
    case $f in "$spec"/*) head -1 "$f" | grep -q '^// expect: accept' || continue ;; esac
    for n in 2 4 8; do for b in p2p nvls; do for t in f32 f16 bf16 u32 s32; do
        echo "$f $n $b $t"
    done; done; done
done | xargs -P 2 -L 1 bash -c 'one "$@"' _ > "$tmp/results"
cat "$tmp/results"
pass=$(grep -c '^\[PASS\]' "$tmp/results")
fail=$(grep -c '^\[FAIL\]' "$tmp/results")
echo "nvrtc_all: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
