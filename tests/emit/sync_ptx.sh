#!/bin/bash
# tests/emit/sync_ptx.sh - what synchronisation costs in the compiled code:
# no launch ends with atomics (the bases are handed over with plain stores, runtime/abi.h), a
# release is one fence then relaxed reductions, and a poll is relaxed (one fence after the
# loop). So the PTX holds exactly one atom (the CAS of the error record, on the give-up path)
# and at most one membar (its __threadfence_system), and no red.release, multimem.red.release
# or ld.acquire. Skipped where NVRTC is missing.
source "$(dirname "$0")/../lib/common.bash"
export CDSL_CACHE_DIR=$tmp/cache
probe=$("$CDSLC" stdlib/allgather_mesh.cdsl -n 2 --emit-ptx 2>&1 >/dev/null)
if echo "$probe" | grep -q "NVRTC (libnvrtc.so) was not found"; then
    echo "[SKIP] sync_ptx: libnvrtc not found"; exit 0
fi
cases=("stdlib/allgather_mesh.cdsl -n 4 --backend p2p"
       "stdlib/allgather_ring.cdsl -n 4 --backend nvls"
       "stdlib/allreduce_nvls.cdsl -n 4 --backend nvls"
       "stdlib/allreduce_twoshot.cdsl -n 8 --backend p2p"
       "tests/mscclpp/allreduce_pairs_cu.json --backend p2p")
for c in "${cases[@]}"; do
    # shellcheck disable=SC2086
    if ! "$CDSLC" $c --emit-ptx -o "$tmp/p.ptx" 2>"$tmp/err" || ! "$CDSLC" $c --emit-cuda -o "$tmp/p.cu" 2>>"$tmp/err"; then
        fail "compiles: $c" "$(head -3 "$tmp/err")"; continue
    fi
    atoms=$(grep -cE '^\s*atom\.' "$tmp/p.ptx")
    membars=$(grep -cE '^\s*membar\.' "$tmp/p.ptx")
    strong=$(grep -cE '^\s*(red\.release|multimem\.red\.release|ld\.acquire)' "$tmp/p.ptx")
    if [ "$atoms" = 1 ] && [ "$membars" -le 1 ] && [ "$strong" = 0 ] && ! grep -q cdsl_last_out "$tmp/p.cu"; then
        pass "no exit atomics, fence-then-relaxed signals, relaxed polls: $c"
    else
        fail "no exit atomics, fence-then-relaxed signals, relaxed polls: $c" \
            "$atoms atom, $membars membar, $strong release/acquire instructions"
    fi
done
exit $((failures > 0))
