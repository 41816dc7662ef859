#!/bin/bash
# bench/mscclpp_gpu.sh - MSCCL++ execution plans on a GPU: imported plans and
# exported stdlib programs run on the p2p backend, every run verified, in one bounded call.
#
#   bash bench/mscclpp_gpu.sh --prepare     on the development machine, before the call: copies
#                                           libjansson.so.4 into build/jansson/ (carry build/),
#                                           for GPU hosts without Debian's libjansson4
#   OUT=... bash bench/mscclpp_gpu.sh       on the GPU host: one H200 is enough (every rank
#                                           shares GPU 0 with --ranks-per-gpu); < 5 minutes
#
# What runs, each with --backend p2p --sizes 4K:64M --check (f32, and bf16 for the reductions):
#   1. the plans of tests/mscclpp that check clean (allreduce of 2 ranks x 2 blocks, one-block
#      reduce, out-of-place allgather of puts, thread-block groups, a barrier between blocks,
#      the old format, and the switch plans in the p2p flavour's emulation);
#   2. MSCCL++'s own accepted plans, when a folder of them is there ($MSCCLPP_PLANS, else
#      ../shared/mscclpp/plans): those tests/mscclpp/plans/VERDICTS records as accepted; and
#      every plan of MSCCL++'s DSL corpus that cdslc accepts ($MSCCLPP_DSL, else
#      ../shared/mscclpp/dsl); a plan the GPU backends refuse by design is skipped, named;
#   3. every stdlib program exported with --emit-mscclpp at -n 2, then run from the plan;
#   4. --bench rows of allreduce.json (or allreduce_pairs.json) from 1 MiB to 256 MiB.
# PLANS_ONLY=REGEX runs only the runs whose name matches (what a budget left for a later call),
# SWEEP the sizes (default 4K:64M:4).
# Results: $OUT/mscclpp_gpu.txt (every line) and a summary on standard output.
# SAFETY: the NVLS-off variables are exported first; nothing here uses the nvls backend.
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/.." || exit 2

if [ "${1:-}" = --prepare ]; then
    lib=$(ldconfig -p 2>/dev/null | sed -n 's/.*libjansson\.so\.4 .*=> //p' | head -1)
    [ -n "$lib" ] || { echo "no libjansson.so.4 here (apt-get install libjansson4)"; exit 1; }
    mkdir -p build/jansson && cp -L "$lib" build/jansson/libjansson.so.4 && echo "build/jansson/libjansson.so.4 from $lib"
    exit 0
fi

OUT=${OUT:-bench/results/mscclpp-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
LOG=$OUT/mscclpp_gpu.txt
[ -d build/jansson ] && export LD_LIBRARY_PATH=$PWD/build/jansson${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
start=$(date +%s)
BUDGET_S=${BUDGET_S:-270}
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
{
    echo "# $(date -u +%FT%TZ) $(hostname): $NGPU GPU(s)"
    nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>&1
} | tee "$LOG"
bash bench/gpu_check.sh --build >>"$LOG" 2>&1 || { echo "# no working build/cdslc, build/cdslrun here" | tee -a "$LOG"; exit 3; }
CDSLC=build/cdslc CDSLRUN=build/cdslrun
pass=0 fail=0 skipped=0

# run NAME PLAN DTYPE [EXTRA...]: verified on p2p, ranks sharing the GPUs as they must; a plan
# the GPU backends refuse by design (packets through a port channel) is skipped, named
run() {
    local name=$1 plan=$2 t=$3 n rpg; shift 3
    [ -n "${PLANS_ONLY:-}" ] && ! [[ $name =~ $PLANS_ONLY ]] && return   # a later call's remainder
    if [ $(( $(date +%s) - start )) -gt "$BUDGET_S" ]; then
        echo "[SKIP] $name $t: past the time budget" | tee -a "$LOG"; skipped=$((skipped + 1)); return
    fi
    if ! "$CDSLC" "$plan" --emit-cuda --backend p2p -o /dev/null 2>"$LOG.emit" &&
       grep -q "not supported on the GPU backends" "$LOG.emit"; then
        echo "[SKIP] $name: $(grep -m1 -o 'not supported on the GPU backends: [a-z ]*' "$LOG.emit")" | tee -a "$LOG"
        skipped=$((skipped + 1)); return
    fi
    n=$("$CDSLC" "$plan" --dump-ir 2>/dev/null | sed -n 's/.*nranks=\([0-9]*\).*/\1/p')
    [ -n "$n" ] || { echo "[FAIL] $name: does not import" | tee -a "$LOG"; fail=$((fail + 1)); return; }
    rpg=$(( (n + (NGPU > 0 ? NGPU : 1) - 1) / (NGPU > 0 ? NGPU : 1) ))
    echo "## $name $t: $CDSLRUN $plan --backend p2p --ranks-per-gpu $rpg --dtype $t $*" >>"$LOG"
    if timeout 120 "$CDSLRUN" "$plan" --backend p2p --ranks-per-gpu "$rpg" --dtype "$t" "$@" >>"$LOG" 2>&1; then
        echo "[PASS] $name $t (n=$n, $rpg per GPU)" | tee -a "$LOG"; pass=$((pass + 1))
    else
        echo "[FAIL] $name $t (n=$n, $rpg per GPU): exit $?" | tee -a "$LOG"; fail=$((fail + 1))
    fi
}

sweep=(--sizes "${SWEEP:-4K:64M:4}")
for f in tests/mscclpp/*.json; do
    [ -f "${f%.json}.err" ] || [ -f "${f%.json}.args" ] && continue
    run "$(basename "$f")" "$f" f32 "${sweep[@]}"
    case "$(basename "$f")" in allreduce_pairs.json | reduce_one_block.json | allreduce_switch.json)
        run "$(basename "$f")" "$f" bf16 "${sweep[@]}" ;;
    esac
done

# MSCCL++'s checked-in plans: every one tests/mscclpp/plans/VERDICTS records as accepted
dir=${MSCCLPP_PLANS:-../shared/mscclpp/plans}
theirs=""
for p in $(sed -n 's/^\([^#][^ ]*\) | accepted |.*/\1/p' tests/mscclpp/plans/VERDICTS); do
    if [ -f "$dir/$p" ]; then
        run "mscclpp:$p" "$dir/$p" f32 "${sweep[@]}"
        [ -z "$theirs" ] && theirs=$dir/$p
    else
        echo "[SKIP] mscclpp:$p: not in $dir" | tee -a "$LOG"; skipped=$((skipped + 1))
    fi
done
# The plans MSCCL++'s DSL writes ($MSCCLPP_DSL, else ../shared/mscclpp/dsl): every one cdslc accepts
dsl=${MSCCLPP_DSL:-../shared/mscclpp/dsl}
for p in "$dsl"/*.json; do
    [ -f "$p" ] || { echo "[SKIP] dsl: no plans in $dsl" | tee -a "$LOG"; skipped=$((skipped + 1)); break; }
    "$CDSLC" "$p" >/dev/null 2>&1 || continue
    run "dsl:$(basename "$p")" "$p" f32 "${sweep[@]}"
done

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for f in stdlib/*.cdsl; do
    b=$(basename "$f" .cdsl)
    if ! "$CDSLC" "$f" -n 2 --emit-cuda --backend p2p -o /dev/null 2>"$tmp/emit.log" &&
       grep -q "not supported on the GPU backends" "$tmp/emit.log"; then   # packets through a port channel
        echo "[SKIP] exported:$b: $(grep -m1 -o 'not supported on the GPU backends: [a-z ]*' "$tmp/emit.log")" | tee -a "$LOG"
        skipped=$((skipped + 1))
    elif "$CDSLC" "$f" -n 2 --emit-mscclpp -o "$tmp/$b.json" >"$tmp/export.log" 2>&1; then
        cat "$tmp/export.log" >>"$LOG"
        run "exported:$b" "$tmp/$b.json" f32 "${sweep[@]}"
    elif cat "$tmp/export.log" >>"$LOG" && grep -qE "is not written to MSCCL\+\+ plans|MSCCL\+\+ has no" "$tmp/export.log"; then
        # packets, a reduce: refused by design (docs/mscclpp.md), not a failure
        echo "[SKIP] exported:$b: $(grep -m1 -oE '[a-z_]* is not written to MSCCL\+\+ plans|MSCCL\+\+ has no [a-z]* collective' "$tmp/export.log")" | tee -a "$LOG"
        skipped=$((skipped + 1))
    else
        echo "[FAIL] exported:$b: does not export" | tee -a "$LOG"; fail=$((fail + 1))
    fi
done

bench=${theirs:-tests/mscclpp/allreduce_pairs.json}
run "bench:$(basename "$bench")" "$bench" f32 --sizes 1M:256M --bench

echo "# $pass passed, $fail failed, $skipped skipped in $(( $(date +%s) - start )) s; log: $LOG" | tee -a "$LOG"
grep -E "^\{|^ *[0-9]+ +[0-9]" "$LOG" | tail -12
[ "$fail" = 0 ]
