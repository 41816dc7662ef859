#!/bin/bash
# bench/compare.sh - our allgather programs against NCCL on the same two GPUs, in one call.
#
#   bench/compare.sh [DIR]     allgather programs from DIR (default: stdlib/, else
#                              tests/spec); SIZES (default 1K:1G), OUT as in
#                              gpu_check.sh
#
# Runs, one after the other so that nothing competes: NCCL through PyTorch (nccl_allgather.py,
# launched call by call and again as one CUDA graph), then every accepted allgather program
# with `cdslrun --backend p2p -n $NRANKS --bench` (NRANKS: default 2, one rank per GPU) (which replays a CUDA graph when --iters > 1).
# Prints one table: per size NCCL's time and busbw, then for each program its time and the
# speedup over the better of NCCL's two figures (above 1: faster than NCCL). Figures move
# about 10% between runs (NVLS.md), so only compare numbers from the same call.
#
# SAFETY: the NVLS-off variables are exported and --backend nvls is never used.
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/.." || exit 2
bash bench/gpu_check.sh --build || exit 3    # make, unless CDSLC/CDSLRUN name other binaries
CDSLC=${CDSLC:-build/cdslc} CDSLRUN=${CDSLRUN:-build/cdslrun}

DIR=${1:-}
if [ -z "$DIR" ]; then
    if compgen -G 'stdlib/*.cdsl' >/dev/null; then DIR=stdlib; else DIR=tests/spec; fi
fi
SIZES=${SIZES:-1K:1G}
NRANKS=${NRANKS:-2}
PYTHON=${PYTHON:-python3}
LOGS=${OUT:+$OUT/compare}
LOGS=${LOGS:-$(mktemp -d /tmp/compare.XXXXXX)}
mkdir -p "$LOGS"
echo "# compare: $(date -u +%FT%TZ), sizes $SIZES, logs in $LOGS"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader 2>&1 | sed 's/^/# /'

# ---- NCCL ----------------------------------------------------------------------------------------
echo "# NCCL, call by call"
timeout 240 "$PYTHON" bench/nccl_allgather.py --nranks "$NRANKS" --sizes "$SIZES" >"$LOGS/nccl.txt" 2>"$LOGS/nccl.err" ||
    echo "# nccl_allgather.py failed: $(tail -2 "$LOGS/nccl.err" | tr '\n' ' ')"
echo "# NCCL, one CUDA graph"
timeout 240 "$PYTHON" bench/nccl_allgather.py --nranks "$NRANKS" --sizes "$SIZES" --graph >"$LOGS/nccl_graph.txt" 2>"$LOGS/nccl_graph.err" ||
    echo "# nccl_allgather.py --graph failed: $(tail -2 "$LOGS/nccl_graph.err" | tr '\n' ' ')"

# ---- ours ------------------------------------------------------------------------------------------
progs=()
for f in "$DIR"/*.cdsl; do
    grep -qE 'implements +allgather' "$f" || continue
    case "$(head -1 "$f")" in "// expect: reject"*) continue ;; esac
    "$CDSLC" "$f" -n "$NRANKS" >/dev/null 2>&1 || continue
    name=$(basename "$f" .cdsl)
    echo "# $name"
    timeout 240 "$CDSLRUN" "$f" -n "$NRANKS" --backend p2p --sizes "$SIZES" --bench >"$LOGS/$name.txt" 2>&1 ||
        echo "# $name failed: $(grep -m2 error "$LOGS/$name.txt" | tr '\n' ' ')"
    progs+=("$name")
done

# ---- the table ---------------------------------------------------------------------------------------
# Rows are "size count type time algbw busbw wrong"; sizes agree between the tools (bytes of
# one rank's output), so rows are joined on the size.
files=("$LOGS/nccl.txt" "$LOGS/nccl_graph.txt")
for p in "${progs[@]}"; do files+=("$LOGS/$p.txt"); done
echo
echo "# time in us per allgather ($NRANKS GPUs); x = NCCL's best time / ours"
touch "${files[@]}"
awk -v names="${progs[*]}" '
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
    }' "${files[@]}" | tee "$LOGS/table.txt"
grep -h 'wrong elements' "${files[@]}" 2>/dev/null | sort | uniq -c | sed 's/^/# /'
