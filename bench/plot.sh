#!/bin/bash
# bench/plot.sh - results files as PNGs, with gnuplot (Debian: gnuplot-nox).
#
#   bench/plot.sh [--title TEXT] OUT FILE...
#
# FILEs: bench/compare.sh tables (bench/results/*_compare_allgather.txt), cdsl-perf's output
# (its stdout, or -F x.json / x.csv) and nccl-tests' own logs (all_gather_perf: the NCCL
# reference), in any mix (bench/plot_data.py reads them). Writes two plots, one line per
# program and NCCL's beside them:
#   OUT_busbw.png   bus bandwidth (GB/s) against size (bytes of one rank's larger buffer)
#   OUT_ratio.png   NCCL's time / the program's, against size: above 1, faster than NCCL
#                   (only when a file gives NCCL's times)
# Only measurements are plotted: cdsl-perf's rows on sim say N/A and are left out. Paths are
# the caller's: relative ones are read and written from the folder plot.sh is called from.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
title=""
if [ "${1:-}" = --title ]; then title=$2; shift 2; fi
if [ $# -lt 2 ]; then
    echo "usage: bench/plot.sh [--title TEXT] OUT FILE..." >&2
    exit 2
fi
out=$1; shift
for f in "$@"; do
    [ -r "$f" ] && [ -f "$f" ] && continue
    why="No such file or directory"
    [ -e "$f" ] && why="not a readable file"
    echo "plot.sh: cannot read '$f': $why" >&2
    exit 2
done
dir=.
case $out in */*) dir=${out%/*}; dir=${dir:-/} ;; esac
[ -d "$dir" ] || { echo "plot.sh: no folder '$dir' for the PNGs" >&2; exit 2; }
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot is not installed (Debian: apt-get install gnuplot-nox)" >&2; exit 3; }
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
python3 "$here/plot_data.py" "$data" "$@"
[ -n "$title" ] || title=$(sed -n 's/^title\t//p' "$data/series.txt")
if ! grep -qv '^title' "$data/series.txt"; then
    echo "plot.sh: no measured rows in $*" >&2
    exit 1
fi

# One gnuplot "plot" clause per series: NCCL dashed and black, the programs in colour.
clauses() {   # clauses EXT USING
    local ext=$1 using=$2 sep="" name label kind
    while IFS=$'\t' read -r name label kind; do
        [ "$name" = title ] && continue
        [ -f "$data/$name.$ext" ] || continue
        if [ "$kind" = nccl ]; then
            printf '%s"%s" using %s with linespoints lw 2 dt 2 pt 7 ps 0.6 lc rgb "black" title "%s"' \
                "$sep" "$data/$name.$ext" "$using" "$label"
        else
            printf '%s"%s" using %s with linespoints lw 2 pt 7 ps 0.6 title "%s"' "$sep" "$data/$name.$ext" "$using" "$label"
        fi
        sep=", "
    done <"$data/series.txt"
}

# Sizes as nccl-tests users write them: 1K, 4K, ... 1G, at every power of 4.
tics=""
for ((e = 0; e <= 36; e += 2)); do
    v=$((1 << e)); u=""; n=$v
    if [ $e -ge 30 ]; then n=$((v >> 30)); u=G; elif [ $e -ge 20 ]; then n=$((v >> 20)); u=M; elif [ $e -ge 10 ]; then n=$((v >> 10)); u=K; fi
    tics="$tics${tics:+, }\"$n$u\" $v"
done
common="set terminal pngcairo size 1000,600 font \"sans,11\" noenhanced
set logscale x 2
set grid xtics ytics
set key left top box opaque
set xtics ($tics)
set offsets graph 0.02, graph 0.02, 0, 0
set xlabel \"size (bytes of one rank's larger buffer)\"
set datafile separator whitespace"

gnuplot <<GP
$common
set output "${out//\"/\\\"}_busbw.png"
set title "bus bandwidth: ${title//\"/\\\"}"
set ylabel "busbw (GB/s)"
plot $(clauses dat 1:3)
GP
echo "plot.sh: ${out}_busbw.png"

ratios=$(clauses ratio 1:2)
if [ -n "$ratios" ]; then
    gnuplot <<GP
$common
set output "${out//\"/\\\"}_ratio.png"
set title "NCCL's time / cdsl's (above 1: cdsl faster): ${title//\"/\\\"}"
set ylabel "NCCL time / cdsl time"
set yrange [0:*]
plot 1 with lines lc rgb "black" dt 2 lw 2 title "NCCL (= 1)", $ratios
GP
    echo "plot.sh: ${out}_ratio.png"
fi
