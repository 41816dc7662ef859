#!/bin/bash
# Every plan of tests/mscclpp that checks clean, for both flavours and two element types: the
# CUDA emits (one code path per thread block, compiler/emit/emit_cuda.c and emit_plan.c), NVRTC
# compiles it to an sm_90 cubin, and the nvls PTX has multimem instructions exactly when the
# plan uses the switch while the p2p PTX has none, and a plan with port channels makes its
# requests (a system-scope store to the host's words); --rank 1 emits one rank's code. [SKIP] without NVRTC.
cd "$(dirname "$0")/../.." || exit 1
cdslc=${CDSLC:-./build/cdslc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export CDSL_CACHE_DIR=$tmp/cache
unset CDSL_NO_CACHE
if "$cdslc" tests/mscclpp/blocks_barrier.json --emit-ptx 2>&1 >/dev/null | grep -q "NVRTC (libnvrtc.so) was not found"; then
    echo "[SKIP] nvrtc_plans: libnvrtc not found (set CUDA_HOME or LD_LIBRARY_PATH to run these)"
    exit 0
fi
for f in tests/mscclpp/*.json; do
    [ -f "${f%.json}.err" ] || [ -f "${f%.json}.args" ] && continue
    for b in p2p nvls; do
        for t in f32 bf16; do
            name="nvrtc $(basename "$f") $b $t" out=$tmp/x
            if ! "$cdslc" "$f" --emit-cubin --arch sm_90 --backend "$b" --dtype "$t" -o "$out.cubin" 2>"$out.err" ||
                ! "$cdslc" "$f" --emit-ptx --backend "$b" --dtype "$t" -o "$out.ptx" 2>>"$out.err"; then
                if grep -q "not supported on the GPU backends: packets through a port channel" "$out.err"; then
                    echo "[SKIP] $name: packets through a port channel (the host's proxy copies bytes)"
                else
                    echo "[FAIL] $name: $(head -5 "$out.err" | tr '\n' ' ')"
                fi
                continue
            fi
            mm=$(grep -c 'multimem\.' "$out.ptx")
            sw=$("$cdslc" "$f" --dump-ir | grep -c ' switch\.')
            if [ "$b" = nvls ] && [ "$sw" -gt 0 ] && [ "$mm" -eq 0 ]; then
                echo "[FAIL] $name: the nvls PTX has no multimem instruction"
            elif [ "$b" = p2p ] && [ "$mm" -ne 0 ]; then
                echo "[FAIL] $name: the p2p PTX has $mm multimem instructions"
            elif "$cdslc" "$f" --dump-ir | grep -q 'port proxy' && ! grep -q 'st\.relaxed\.sys\.global\.u64' "$out.ptx"; then
                echo "[FAIL] $name: port channels, but no request (st.relaxed.sys.global.u64) in the PTX"
            elif [ ! -s "$out.cubin" ]; then
                echo "[FAIL] $name: empty cubin"
            else
                echo "[PASS] $name"
            fi
        done
    done
done
if "$cdslc" tests/mscclpp/allreduce_pairs.json --rank 1 --emit-cuda -o "$tmp/r1.cu" 2>"$tmp/r1.err" &&
    grep -q 'case 1: plan_1(a)' "$tmp/r1.cu" && ! grep -q 'plan_0' "$tmp/r1.cu"; then
    echo "[PASS] nvrtc --rank 1 emits rank 1's blocks only"
else
    echo "[FAIL] nvrtc --rank 1 emits rank 1's blocks only: $(head -3 "$tmp/r1.err" | tr '\n' ' ')"
fi
