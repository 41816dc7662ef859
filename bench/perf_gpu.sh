#!/bin/bash
# bench/perf_gpu.sh - cdsl-perf on this machine's GPUs for every stdlib program (p2p backend,
# NVLS off): nccl-tests-format logs, JSON results files, and the plots, in one call.
#
#   bench/perf_gpu.sh [PROGRAM...]       default: every stdlib program
#
# Environment:
#   OUT        where everything goes (default /tmp/perf_gpu): PROGRAM.log (cdsl-perf's stdout),
#              PROGRAM.json (its -F file), summary.txt, and plots/ (bench/plot.sh)
#   NRANKS     ranks (default 4); GPUS (-g, default: every GPU here, at most NRANKS); the
#              ranks are spread evenly over them (--ranks-per-gpu NRANKS / GPUS): on one H200,
#              4 ranks share it
#   SIZES      cdsl-perf's size flags (default "-b 1K -e 1G -f 2")
#   ITERS, WARMUP   -n and -w (default 20 and 5)
#   BUDGET_S   programs that would start later than this are skipped, so that one 10-minute
#              call holds it all (default 480)
#   NCCL_TESTS a folder with nccl-tests' binaries (all_gather_perf, ...): with 2 or more GPUs,
#              each collective is also run there at -g GPUS with the same sizes, the NCCL
#              reference of the plots (NCCL refuses two ranks on one GPU)
#
# cdsl-perf needs jansson at run time (Debian's libjansson4). On a host without it, copy
# /usr/lib/x86_64-linux-gnu/libjansson.so.4* into build/lib/ beforehand: this script then finds
# it there.
#
# SAFETY: multicast objects are forbidden on the shared GPU hosts (creating one there can take
# the host's GPUs, which others share, out of service for a day or more): every NVLS-off
# variable is exported and --backend nvls is never used.
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-/tmp/perf_gpu}
NRANKS=${NRANKS:-4} SIZES=${SIZES:--b 1K -e 1G -f 2} ITERS=${ITERS:-20} WARMUP=${WARMUP:-5} BUDGET_S=${BUDGET_S:-480}
PERF=${CDSL_PERF:-build/cdsl-perf}
mkdir -p "$OUT"
[ -x "$PERF" ] || make -j"$(nproc)" build/cdsl-perf >"$OUT/build.log" 2>&1 || { echo "error: no $PERF"; exit 3; }
if ldd "$PERF" | grep -q 'libjansson.*not found'; then
    [ -e build/lib/libjansson.so.4 ] && export LD_LIBRARY_PATH=$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    ldd "$PERF" | grep -q 'libjansson.*not found' && { echo "error: libjansson.so.4 is missing here (see the header)"; exit 3; }
fi

ngpu=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
[ "$ngpu" -ge 1 ] || { echo "error: no GPU here (nvidia-smi lists none)"; exit 3; }
GPUS=${GPUS:-$((ngpu < NRANKS ? ngpu : NRANKS))}
while [ $((NRANKS % GPUS)) != 0 ]; do GPUS=$((GPUS - 1)); done
RPG=$((NRANKS / GPUS))
{
    echo "# perf_gpu: $(date -u +%FT%TZ), $NRANKS ranks on $GPUS GPU(s) ($RPG per GPU), sizes: $SIZES"
    nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | sed 's/^/# /'
} | tee "$OUT/summary.txt"

progs=("$@")
[ ${#progs[@]} -gt 0 ] || for f in stdlib/*.cdsl; do progs+=("$(basename "$f" .cdsl)"); done
start=$SECONDS files=()
for p in "${progs[@]}"; do
    if [ $((SECONDS - start)) -gt "$BUDGET_S" ]; then
        echo "# $p: skipped (past BUDGET_S=$BUDGET_S s)" | tee -a "$OUT/summary.txt"
        continue
    fi
    t0=$SECONDS
    # shellcheck disable=SC2086
    timeout 300 "$PERF" --backend p2p -g "$GPUS" --ranks-per-gpu "$RPG" $SIZES -n "$ITERS" -w "$WARMUP" \
        -F "$OUT/$p.json" "$p" >"$OUT/$p.log" 2>"$OUT/$p.err"
    rc=$?
    echo "# $p: exit $rc in $((SECONDS - t0)) s; $(grep -h -E '^# (Out of bounds|Avg bus)' "$OUT/$p.log" | tr '\n' ' ')" |
        tee -a "$OUT/summary.txt"
    [ -s "$OUT/$p.json" ] && files+=("$OUT/$p.json")
done

# NCCL's own numbers beside them, where nccl-tests is here and there are GPUs enough.
if [ -n "${NCCL_TESTS:-}" ] && [ "$GPUS" -ge 2 ]; then
    for t in all_gather reduce_scatter all_reduce; do
        [ -x "$NCCL_TESTS/${t}_perf" ] || continue
        # shellcheck disable=SC2086
        timeout 300 "$NCCL_TESTS/${t}_perf" -g "$GPUS" $SIZES -n "$ITERS" -w "$WARMUP" >"$OUT/nccl_$t.log" 2>&1
        echo "# nccl-tests ${t}_perf -g $GPUS: exit $?" | tee -a "$OUT/summary.txt"
    done
fi

# One plot per collective: its programs, and NCCL's log of the same collective when there is one.
mkdir -p "$OUT/plots"
for coll in allgather reducescatter allreduce; do
    sel=()
    for f in "${files[@]}"; do grep -q "\"collective\":[[:space:]]*\"$coll\"" "$f" && sel+=("$f"); done
    [ ${#sel[@]} -gt 0 ] || continue
    case $coll in allgather) n=all_gather ;; reducescatter) n=reduce_scatter ;; *) n=all_reduce ;; esac
    [ -s "$OUT/nccl_$n.log" ] && sel+=("$OUT/nccl_$n.log")
    bash bench/plot.sh "$OUT/plots/${coll}_${NRANKS}ranks_${GPUS}gpu" "${sel[@]}" 2>&1 | tee -a "$OUT/summary.txt"
done
echo "# done in $((SECONDS - start)) s; results in $OUT" | tee -a "$OUT/summary.txt"
