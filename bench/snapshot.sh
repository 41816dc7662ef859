#!/bin/bash
# bench/snapshot.sh OUTDIR [--ptx] - every output of this tree's build/cdslc that a change of
# shape must leave alone, in one folder per tree, so that two trees compare with
# bench/snapshot_diff.sh: for each stdlib program at -n 2, 4 and 8, --dump-ir (also in place),
# --emit-dot, --emit-mscclpp, --dump-ce and --emit-cuda for both flavours and every element
# type, --standalone once; for MSCCL++'s plans where a corpus is beside the checkout
# ($SHARED/mscclpp, default ../shared), cdslc's verdict, --dump-ir and --emit-cuda. With --ptx,
# also the PTX (NVRTC) of every stdlib program x rank count x flavour x type and of every plan in
# tests/mscclpp: identical instructions there mean identical SASS (the same ptxas).
out=${1:?usage: bench/snapshot.sh OUTDIR [--ptx]}
mkdir -p "$out" && out=$(cd "$out" && pwd)
cd "$(dirname "$0")/.." || exit 2
export CDSL_NVLS=0
C=$PWD/build/cdslc SHARED=${SHARED:-$(cd .. && pwd)/shared}
for f in stdlib/*.cdsl; do
    b=$(basename "$f" .cdsl)
    for n in 2 4 8; do
        o=$out/$b.n$n
        $C "$f" -n $n --dump-ir >"$o.ir" 2>&1
        $C "$f" -n $n --emit-dot >"$o.dot" 2>&1
        $C "$f" -n $n --emit-mscclpp >"$o.mscclpp.json" 2>&1
        $C "$f" -n $n --dump-ce >"$o.ce" 2>&1
        $C "$f" -n $n --in-place --dump-ir >"$o.inplace.ir" 2>&1
        for be in p2p nvls; do for t in f32 f16 bf16 u32 s32; do
            $C "$f" -n $n --emit-cuda --backend $be --dtype $t >"$o.$be.$t.cu" 2>&1
            [ "${2:-}" = --ptx ] && $C "$f" -n $n --emit-ptx --backend $be --dtype $t >"$o.$be.$t.ptx" 2>&1
        done; done
    done
    $C "$f" -n 4 --emit-cuda --standalone >"$out/$b.standalone.cu" 2>&1
done
if [ "${2:-}" = --ptx ]; then
    for p in tests/mscclpp/*.json; do $C "$p" --emit-ptx >"$out/plan_$(basename "$p" .json).ptx" 2>&1; done
fi
[ -d "$SHARED/mscclpp" ] || echo "note: no MSCCL++ corpus at $SHARED/mscclpp (set SHARED): plans left out" >&2
for d in "$SHARED/mscclpp/plans" "$SHARED/mscclpp/dsl"; do
    [ -d "$d" ] || continue
    find "$d" -name '*.json' | sort | while read -r p; do
        k=$(echo "${p#"$SHARED"/mscclpp/}" | tr '/' '_')
        timeout 60 $C "$p" >"$out/plan_$k.diag" 2>&1; echo "exit $?" >>"$out/plan_$k.diag"
        timeout 60 $C "$p" --dump-ir >"$out/plan_$k.ir" 2>/dev/null
        timeout 60 $C "$p" --emit-cuda >"$out/plan_$k.cu" 2>/dev/null
    done
done
echo "snapshot in $out: $(ls "$out" | wc -l) files"
