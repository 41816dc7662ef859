#!/bin/bash
# bench/compare.sh - cdsl's programs against NCCL and against the physical anchors, all in one
# call on the same GPUs, then bench/targets.py's targets with the measured ratio and PASS/FAIL/n/a.
#
#   bench/compare.sh [PROGRAM ...]
#
# PROGRAM: a stdlib name, a .cdsl path, or a folder (its .cdsl files, but those marked
# "// expect: reject"). Default: allgather_nvls, barrier_switch, every stdlib
# allreduce_* and reducescatter_*, and every stdlib/*_ll*.cdsl there is. Environment: SIZES
# (default 1K:1G), OUT (raw outputs go to $OUT/compare, else a fresh /tmp folder), BUDGET_S
# (programs that would start later than this many seconds after the script began are skipped,
# default 420; each program has at most 100 s, each NCCL run 90 s), PYTHON, NVCC, ANCHOR_ARCH (nvcc's -arch,
# default native, then sm_90).
#
# In order, one thing at a time so that nothing competes:
#   1. bench/anchors.cu (built here with nvcc): cudaMemcpyPeer, a peer-write kernel, an empty
#      kernel in a CUDA graph, a bare barrier round (anchors.txt);
#   2. NCCL through PyTorch (bench/nccl_allgather.py): allgather call by call and as one CUDA
#      graph, reduce-scatter and allreduce as one graph, 200 calls each (nccl_*.txt);
#   3. every PROGRAM with `cdslrun --backend p2p -n 2 --bench` (200 timed runs per size, within
#      cdslrun's time budget, replaying the graph its warm-up captured) (cdsl_*.txt);
#   4. the allgather table (time per size, NCCL's better time / ours) and bench/targets.py's
#      table of every target (targets.txt).
# Two GPUs: one rank per GPU, as the targets are stated. One GPU: both ranks share it
# (--ranks-per-gpu 2), NCCL cannot run (its rows say n/a), the anchors are copies within the
# GPU, and every verdict is n/a-1gpu: such figures are NOT comparable with the targets.
# Figures move between machine sessions (about +-0.3 us at small sizes on 2 x H200): compare only
# figures from the same call.
#
# SAFETY: the NVLS-off variables are exported and --backend nvls is never used.
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/.." || exit 2
bash bench/gpu_check.sh --build || exit 3    # make, unless CDSLC/CDSLRUN name other binaries
CDSLRUN=${CDSLRUN:-build/cdslrun}
SIZES=${SIZES:-1K:1G}
PYTHON=${PYTHON:-python3}
BUDGET_S=${BUDGET_S:-420}
ITERS=200
LOGS=${OUT:+$OUT/compare}
LOGS=${LOGS:-$(mktemp -d /tmp/compare.XXXXXX)}
mkdir -p "$LOGS"
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$NGPU" -ge 2 ]; then PLACE=(-n 2); else PLACE=(-n 2 --ranks-per-gpu 2); fi
echo "$NGPU" >"$LOGS/gpus.txt"     # bench/targets.py: one GPU makes every verdict n/a-1gpu
echo "# compare: $(date -u +%FT%TZ), $NGPU GPU(s), sizes $SIZES, raw outputs in $LOGS"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>&1 | sed 's/^/# /'
[ "$NGPU" -ge 2 ] || echo "# ONE GPU: both ranks share it; no figure here is comparable with the 2-GPU targets"

# ---- 1. anchors ---------------------------------------------------------------------------------
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
echo "# anchors (bench/anchors.cu)"
build_anchors() { "$NVCC" -O2 -arch="$1" -o build/anchors bench/anchors.cu >>"$LOGS/anchors_build.txt" 2>&1; }
if build_anchors "${ANCHOR_ARCH:-native}" || { [ -z "${ANCHOR_ARCH:-}" ] && build_anchors sm_90; }; then
    timeout 60 build/anchors "$ITERS" >"$LOGS/anchors.txt" 2>&1 || echo "# anchors: exit $?"
    cat "$LOGS/anchors.txt"
else
    echo "# anchors: nvcc failed: $(tail -2 "$LOGS/anchors_build.txt" | tr '\n' ' ')" | tee "$LOGS/anchors.txt"
fi

# ---- 2. NCCL ------------------------------------------------------------------------------------
nccl() {   # nccl COLL SUFFIX [--graph]
    local f=$LOGS/nccl_$1$2.txt
    if [ "$NGPU" -lt 2 ]; then
        echo "# n/a: NCCL cannot run two ranks on one GPU" >"$f"
        return
    fi
    echo "# NCCL $1${3:+, one CUDA graph}"
    timeout 90 "$PYTHON" bench/nccl_allgather.py --coll "$1" --nranks 2 --sizes "$SIZES" --iters "$ITERS" ${3:+"$3"} \
        >"$f" 2>"$LOGS/nccl_$1$2.err" || echo "# nccl_allgather.py --coll $1 $3 failed: $(tail -2 "$LOGS/nccl_$1$2.err" | tr '\n' ' ')"
}
nccl allgather ""
nccl allgather _graph --graph
nccl reducescatter _graph --graph
nccl allreduce _graph --graph
[ "$NGPU" -ge 2 ] || echo "# NCCL: n/a (one GPU)"

# ---- 3. cdsl ------------------------------------------------------------------------------------
progs=()
for a in "$@"; do
    if [ -d "$a" ]; then
        for f in "$a"/*.cdsl; do
            case "$(head -1 "$f")" in "// expect: reject"*) ;; *) progs+=("$f") ;; esac
        done
    else
        progs+=("$a")
    fi
done
if [ ${#progs[@]} = 0 ]; then
    progs=(allgather_nvls barrier_switch)
    for f in stdlib/allreduce_*.cdsl stdlib/reducescatter_*.cdsl stdlib/*_ll*.cdsl; do
        [ -f "$f" ] && progs+=("$(basename "$f" .cdsl)")
    done
fi
names=()
for p in "${progs[@]}"; do
    f=$p; [ -f "$f" ] || f=stdlib/$p.cdsl
    name=$(basename "$f" .cdsl)
    if [ "$SECONDS" -gt "$BUDGET_S" ]; then
        echo "# $name: skipped (past BUDGET_S=$BUDGET_S s)"
        continue
    fi
    echo "# cdsl $name"
    timeout 100 "$CDSLRUN" "$f" "${PLACE[@]}" --backend p2p --sizes "$SIZES" --bench >"$LOGS/cdsl_$name.txt" 2>&1 ||
        echo "# $name: exit $?: $(grep -m2 -E 'error|gave up' "$LOGS/cdsl_$name.txt" | tr '\n' ' ')"
    grep -q '^# [^ ]*: allgather,' "$LOGS/cdsl_$name.txt" && names+=("$name")
done

# ---- 4. the tables ------------------------------------------------------------------------------
# Rows are "size count type time algbw busbw wrong"; sizes agree between the tools (the larger of
# one rank's input and output), so rows are joined on the size.
files=("$LOGS/nccl_allgather.txt" "$LOGS/nccl_allgather_graph.txt")
for p in "${names[@]}"; do files+=("$LOGS/cdsl_$p.txt"); done
echo
echo "# allgather: time in us per call (2 ranks); x = NCCL's better time / ours"
touch "${files[@]}"
awk -v names="${names[*]}" '
    BEGIN { for (i = 1; i < ARGC; i++) idx[ARGV[i]] = i }
    { file = idx[FILENAME] }
    /^ +[0-9]+ / { t[file, $1] = $4; bw[file, $1] = $6; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
    END {
        np = split(names, prog, " ")
        printf "%12s %10s %10s %10s", "size", "nccl", "nccl-graph", "nccl busbw"
        for (i = 1; i <= np; i++) printf " %22s", prog[i] "  (x)"
        printf "\n"
        for (k = 0; k < n; k++) {
            s = order[k]; best = 0
            if ((1, s) in t) best = t[1, s]
            if ((2, s) in t && (best == 0 || t[2, s] < best)) best = t[2, s]
            printf "%12d %10s %10s %10s", s, ((1, s) in t) ? t[1, s] : "-", ((2, s) in t) ? t[2, s] : "-",
                   ((1, s) in bw) ? bw[1, s] : "-"
            for (i = 1; i <= np; i++) {
                f = i + 2
                if ((f, s) in t && t[f, s] > 0 && best > 0) printf " %14s (%5.2fx)", t[f, s], best / t[f, s]
                else printf " %22s", ((f, s) in t) ? t[f, s] : "-"
            }
            printf "\n"
        }
    }' "${files[@]}" 2>/dev/null | tee "$LOGS/table.txt"
grep -h 'wrong elements' "$LOGS"/cdsl_*.txt 2>/dev/null | sort | uniq -c | sed 's/^/# /'
echo
"$PYTHON" bench/targets.py "$LOGS" | tee "$LOGS/targets.txt"
