#!/bin/bash
# bench/gpu_check.sh - every accepted program on the local GPUs (p2p backend), all sizes,
# every result verified; a summary table at the end.
#
#   bench/gpu_check.sh [DIR]        programs from DIR (default: stdlib/, else tests/spec)
#   bench/gpu_check.sh --build      only make sure build/cdslc and build/cdslrun run here
#   CDSLC=... CDSLRUN=...           other binaries (then nothing is rebuilt)
#
# For each program, three placements: -n 2 (one rank per GPU), -n 4 --ranks-per-gpu 2 and
# -n 8 --ranks-per-gpu 4, each over --sizes 1K:1G with --bench (nccl-tests rows, verified)
# and --iters ITERS (default 20: a correctness check; bench/compare.sh times 200).
# Environment: SIZES (default 1K:1G), CONFIGS (default "2:1 4:2 8:4", n:ranks-per-gpu),
# BUDGET_S (default 540: runs that would start later are listed as skipped, so the whole
# check fits in one 10-minute call), OUT (logs go to $OUT/gpu_check when set).
#
# SAFETY: multicast objects are forbidden on the shared GPU hosts: creating one there can take
# the host's GPUs, which others share, out of service for a day or more.
# This script exports every NVLS-off variable and never passes --backend nvls; the nvls
# backend would refuse anyway with these set.
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/.." || exit 2
[ -n "${CDSLC:-}${CDSLRUN:-}" ] && export CDSL_PREBUILT=1
CDSLC=${CDSLC:-build/cdslc} CDSLRUN=${CDSLRUN:-build/cdslrun}

# build/ comes over prebuilt; make brings it up to date with the sources (and rebuilds it when
# its binaries do not run here). The GPU hosts have no re2c/lemon: then the generated lexer
# and parser are made newer than their sources and make is pointed at an existing file for
# lempar.c, so that no regeneration rule can fire. Binaries given through CDSLC/CDSLRUN are
# used as they are.
ensure_build() {
    if [ -n "${CDSL_PREBUILT:-}" ]; then
        "$CDSLC" --version >/dev/null && "$CDSLRUN" --version >/dev/null
        return
    fi
    local extra=() f
    if ! command -v re2c >/dev/null || ! command -v lemon >/dev/null || [ ! -f /usr/share/lemon/lempar.c ]; then
        for f in build/gen/lexer.c build/gen/parser.c build/gen/parser.h; do
            [ -f "$f" ] || { echo "error: no re2c/lemon here and no $f to build from"; return 1; }
        done
        touch build/gen/lexer.c build/gen/parser.c build/gen/parser.h
        extra=(LEMPAR="$PWD/grammar/parser.y" RE2C=false LEMON=false)
    fi
    if ! make -j"$(nproc)" "${extra[@]}" build/cdslc build/cdslrun >/tmp/cdsl_build.log 2>&1; then
        echo "# make failed here (see /tmp/cdsl_build.log):"
        tail -5 /tmp/cdsl_build.log | sed 's/^/#   /'
        if "$CDSLC" --version >/dev/null 2>&1 && "$CDSLRUN" --version >/dev/null 2>&1; then
            echo "# going on with the prebuilt build/cdslc and build/cdslrun"
            return 0
        fi
        return 1
    fi
    "$CDSLC" --version >/dev/null && "$CDSLRUN" --version >/dev/null
}

if [ "${1:-}" = --build ]; then
    ensure_build
    exit
fi
ensure_build || exit 3

DIR=${1:-}
if [ -z "$DIR" ]; then
    if compgen -G 'stdlib/*.cdsl' >/dev/null; then DIR=stdlib; else DIR=tests/spec; fi
fi
SIZES=${SIZES:-1K:1G}
CONFIGS=${CONFIGS:-"2:1 4:2 8:4"}
BUDGET_S=${BUDGET_S:-540}
LOGS=${OUT:+$OUT/gpu_check}
LOGS=${LOGS:-$(mktemp -d /tmp/gpu_check.XXXXXX)}
mkdir -p "$LOGS"
start=$(date +%s)

echo "# GPU check: $(date -u +%FT%TZ), programs from $DIR, sizes $SIZES, logs in $LOGS"
nvidia-smi -L 2>&1 | sed 's/^/# /'
nvidia-smi --query-gpu=index,name,driver_version,memory.used,memory.total --format=csv 2>&1 | sed 's/^/# /'
echo "# nvidia-smi topo -m:"
nvidia-smi topo -m 2>&1 | sed 's/^/#   /'

# Accepted at n? A spec file says so in its first line; otherwise ask the checker.
accepted() {
    local f=$1 n=$2 head
    head=$(head -1 "$f")
    case "$head" in
    "// expect: reject"*) return 1 ;;
    "// expect: accept"*) echo "$head" | grep -qE "n=([0-9,]*,)?$n(,|$| )" ;;
    *) "$CDSLC" "$f" -n "$n" >/dev/null 2>&1 ;;
    esac
}

# One row of the summary from a cdslrun --bench log.
summarize() {
    local name=$1 n=$2 rpg=$3 rc=$4 log=$5 result rows first last
    rows=$(grep -cE '^ +[0-9]+ ' "$log")
    first=$(grep -E '^ +[0-9]+ ' "$log" | head -1 | awk '{print $4}')
    last=$(grep -E '^ +[0-9]+ ' "$log" | tail -1 | awk '{printf "%s %s %s", $1, $4, $6}')
    if [ "$rc" = 0 ] && grep -q '(verified)' "$log"; then result=verified
    elif [ "$rc" = 0 ]; then result=ran
    elif [ "$rc" = 124 ]; then result=timeout
    else result="exit $rc"
    fi
    # shellcheck disable=SC2086
    printf "%-28s %2d %4d  %-9s %5s  %12s  %12s  %12s %12s\n" "$name" "$n" "$rpg" "$result" "$rows" \
        "${first:--}" $last
}

table=$LOGS/summary.txt
printf "%-28s %2s %4s  %-9s %5s  %12s  %12s  %12s %12s\n" program n rpg result sizes "t(min) us" \
    "max size" "t(max) us" "busbw GB/s" >"$table"
fails=0
for f in "$DIR"/*.cdsl; do
    name=$(basename "$f" .cdsl)
    for cfg in $CONFIGS; do
        n=${cfg%%:*} rpg=${cfg##*:}
        accepted "$f" "$n" || continue
        log=$LOGS/${name}_n${n}.log
        if ! "$CDSLC" "$f" -n "$n" --emit-cuda --backend p2p -o /dev/null 2>"$log" &&
           grep -q "not supported on the GPU backends" "$log"; then   # packets through a port channel
            printf "%-28s %2d %4d  %-9s\n" "$name" "$n" "$rpg" "not on GPU: $(grep -o 'not supported on the GPU backends: [a-z ]*' "$log" | head -1 | cut -c36-)" >>"$table"
            continue
        fi
        left=$((BUDGET_S - ($(date +%s) - start)))
        if [ $left -lt 20 ]; then
            printf "%-28s %2d %4d  %-9s\n" "$name" "$n" "$rpg" "skipped (time budget)" >>"$table"
            continue
        fi
        limit=$((left < 300 ? left : 300))
        echo "# $name -n $n --ranks-per-gpu $rpg --sizes $SIZES"
        timeout "$limit" "$CDSLRUN" "$f" -n "$n" --backend p2p --ranks-per-gpu "$rpg" \
            --sizes "$SIZES" --bench --iters "${ITERS:-20}" >"$log" 2>&1
        rc=$?
        grep -E '^#|^ +[0-9]+ |error' "$log" | sed 's/^/    /' | head -40
        [ $rc = 0 ] || fails=$((fails + 1))
        summarize "$name" "$n" "$rpg" "$rc" "$log" >>"$table"
    done
done
echo
echo "# summary (t = mean time of one run; busbw as nccl-tests computes it)"
cat "$table"
echo "# $fails failed runs; $(($(date +%s) - start)) s"
[ $fails = 0 ]
