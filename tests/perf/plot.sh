#!/bin/bash
# tests/perf/plot.sh - bench/plot.sh renders results files as PNGs (gnuplot; skipped where it is
# not installed), and bench/plot_data.py reads each kind of results file:
#   - a committed bench/compare.sh table (bench/results/h200x2_compare_allgather.txt): two
#     PNGs, busbw and the ratio to NCCL, one series per program beside NCCL's;
#   - the hand-written nccl-tests log: NCCL's series alone, so no ratio plot;
#   - cdsl-perf on sim: no measured rows, so nothing to plot (exit 1, said);
#   - paths relative to the caller's folder, input and output; a file or a folder that is not
#     there said as such (exit 2), not with a Python traceback.
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/need.bash
need python3 python3 || exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: ${2:0:400}}"; }
ok() { if eval "$2"; then pass "$1"; else fail "$1" "${3:-}"; fi; }
is_png() { [ -s "$1" ] && [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }

TABLE=bench/results/h200x2_compare_allgather.txt
python3 bench/plot_data.py "$tmp/data" "$TABLE" 2>"$tmp/err"
ok "plot_data.py reads a compare.sh table: NCCL and four programs, 21 sizes each" \
    '[ "$(cut -f1 "$tmp/data/series.txt" | tr "\n" " ")" = "nccl allgather_chunked_ring allgather_mesh allgather_nvls allgather_ring title " ] &&
     [ "$(wc -l <"$tmp/data/allgather_nvls.dat")" = 21 ]' "$(cat "$tmp/data/series.txt" "$tmp/err")"
ok "... allgather_nvls at 1 GiB: 1650.44 us, busbw 325.29 GB/s, 1.20x NCCL's best" \
    'grep -q "^1073741824 1650.44 325.29 *$" "$tmp/data/allgather_nvls.dat" && grep -q "^1073741824 1.20" "$tmp/data/allgather_nvls.ratio"' \
    "$(tail -1 "$tmp/data/allgather_nvls.dat") $(tail -1 "$tmp/data/allgather_nvls.ratio")"
python3 bench/plot_data.py "$tmp/nccl" tests/perf/all_gather_perf.log
ok "plot_data.py reads an nccl-tests log as the NCCL reference" \
    'grep -q "^nccl	NCCL (all_gather_perf)	nccl$" "$tmp/nccl/series.txt" && grep -q "^65536 15.92 3.6$" "$tmp/nccl/nccl.dat"' \
    "$(cat "$tmp/nccl/series.txt")"

build/cdsl-perf --nranks 2 -b 1K -e 4K -f 4 -n 2 allgather_ring >"$tmp/sim.log" 2>/dev/null
# A file that is not there: said by plot.sh, relative to where it was called from, before
# anything else (also without gnuplot); no Python traceback.
mkdir "$tmp/work"
out=$(cd "$tmp/work" && bash "$OLDPWD/bench/plot.sh" rel no_such_results.txt 2>&1); rc=$?
ok "plot.sh with a results file that is not there: exit 2, said, no traceback" \
    '[ $rc = 2 ] && [ "$out" = "plot.sh: cannot read '"'"'no_such_results.txt'"'"': No such file or directory" ]' "exit $rc: $out"
need gnuplot gnuplot-nox "bench/plot.sh" || exit 0
bash bench/plot.sh "$tmp/x2" "$TABLE" >"$tmp/out" 2>&1; rc=$?
ok "plot.sh renders a compare table: busbw and ratio PNGs" '[ $rc = 0 ] && is_png "$tmp/x2_busbw.png" && is_png "$tmp/x2_ratio.png"' \
    "exit $rc: $(cat "$tmp/out")"
bash bench/plot.sh --title "NCCL alone" "$tmp/nccl" tests/perf/all_gather_perf.log >"$tmp/out" 2>&1; rc=$?
ok "plot.sh on NCCL's log alone: the busbw PNG, no ratio" '[ $rc = 0 ] && is_png "$tmp/nccl_busbw.png" && [ ! -e "$tmp/nccl_ratio.png" ]' \
    "exit $rc: $(cat "$tmp/out")"
bash bench/plot.sh "$tmp/sim" "$tmp/sim.log" >"$tmp/out" 2>&1; rc=$?
ok "plot.sh on sim output: nothing measured, nothing plotted, said" \
    '[ $rc = 1 ] && grep -q "no measured rows" "$tmp/out" && [ ! -e "$tmp/sim_busbw.png" ]' "exit $rc: $(cat "$tmp/out")"
# Relative paths are the caller's: the input read from, and the PNGs written to, the folder
# plot.sh was called from, not the repository's.
cp "$TABLE" "$tmp/work/table.txt"
out=$(cd "$tmp/work" && bash "$OLDPWD/bench/plot.sh" rel table.txt 2>&1); rc=$?
ok "plot.sh called from another folder: a relative input read there, relative PNGs written there" \
    '[ $rc = 0 ] && is_png "$tmp/work/rel_busbw.png" && is_png "$tmp/work/rel_ratio.png" && [ ! -e rel_busbw.png ] && [ ! -e bench/rel_busbw.png ]' \
    "exit $rc: $out"
rm -f rel_busbw.png rel_ratio.png
mkdir "$tmp/work/sub"
out=$(cd "$tmp/work/sub" && bash "$OLDPWD/bench/plot.sh" ../up ../table.txt 2>&1); rc=$?
ok "... and ../ paths likewise" '[ $rc = 0 ] && is_png "$tmp/work/up_busbw.png"' "exit $rc: $out"
out=$(cd "$tmp/work" && bash "$OLDPWD/bench/plot.sh" no_such_folder/x table.txt 2>&1); rc=$?
ok "an output folder that is not there: exit 2, said" \
    '[ $rc = 2 ] && echo "$out" | grep -q "^plot.sh: no folder '"'"'no_such_folder'"'"' for the PNGs$"' "exit $rc: $out"
