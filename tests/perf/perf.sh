#!/bin/bash
# tests/perf/perf.sh - cdsl-perf: nccl-tests' flags and output, read by a parser written for
# nccl-tests' logs (nccl_tests_format.py), which reads a hand-written all_gather_perf log in
# nccl-tests' format (all_gather_perf.log: the format only, not a measurement) the same way.
#
#   1. The issue's command on sim, with the default rank count; rows, counts, types, N/A times
#      (sim), footer; the same parser and the same structure for the nccl-tests log.
#   2. Results files: JSON and CSV with the version, time, devices, driver and the first wrong
#      element (a program run --unchecked that leaves chunks unwritten), exit 7 on wrong values.
#   3. The in-place group: verified for every collective; N/A with the reason in the header for
#      a program that cannot run in place; --no-in-place.
#   4. Options: -d all, -c 0, -g with --ranks-per-gpu, -G and -z, a stdlib program by name, nccl-tests'
#      options cdsl does not have (exit 5 unless at their default), bad usage (exit 6), a
#      program with errors (exit 1), --help naming every option.
#   5. On the stand-in CUDA driver of tests/run/gpu_refusals.sh, where there is no driver: the
#      p2p backend's rows are measurements (numbers the parser reads) and the devices are named;
#      NCCL_TESTS_MIN_BW fails the run as nccl-tests does.
#      The cubins are compiled first, without it (NVRTC itself is not run beside the stand-in).
#   6. The ASan build, once.
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/need.bash
need python3 python3 || exit 0
PERF=${CDSL_PERF:-build/cdsl-perf} ASAN_PERF=build/asan/cdsl-perf
PARSE="python3 tests/perf/nccl_tests_format.py"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: ${2:0:600}}"; }
ok() { if eval "$2"; then pass "$1"; else fail "$1" "${3:-}"; fi; }
# py NAME FILE EXPR: a Python expression over the parsed log `d` is true.
py() {
    local out
    out=$($PARSE "$2" 2>&1 >"$tmp/parsed.json") || { fail "$1" "parse: $out"; return; }
    if python3 -c "import json, sys; d = json.load(open('$tmp/parsed.json')); sys.exit(0 if ($3) else 1)"; then
        pass "$1"
    else
        fail "$1" "$(head -c 600 "$tmp/parsed.json")"
    fi
}

# ---- 1. the issue's command, and the formats agree ---------------------------------------------------
"$PERF" -b 1K -e 64K -f 4 stdlib/allgather_ring.cdsl >"$tmp/ag.log" 2>"$tmp/ag.err"; rc=$?
ok "cdsl-perf -b 1K -e 64K -f 4 stdlib/allgather_ring.cdsl runs on sim: exit 0, nothing on stderr" \
    '[ $rc = 0 ] && [ ! -s "$tmp/ag.err" ]' "exit $rc: $(cat "$tmp/ag.err")"
py "the parser reads it: 4 rows 1K..64K, 8 ranks by default, per-rank counts, float, none, -1" "$tmp/ag.log" \
    "[r['size'] for r in d['rows']] == [1024, 4096, 16384, 65536] and d['settings']['nGpus'] == '8' and
     [r['count'] for r in d['rows']] == [32, 128, 512, 2048] and
     all(r['type'] == 'float' and r['redop'] == 'none' and r['root'] == -1 for r in d['rows'])"
py "every value verified, out of place and in place; footer 0 OK" "$tmp/ag.log" \
    "all(r[p]['wrong'] == 0 for r in d['rows'] for p in ('out_of_place', 'in_place')) and
     d['footer']['out_of_bounds'] == {'value': 0.0, 'verdict': 'OK'}"
py "sim: no time is a measurement: time, algbw, busbw and the average are N/A, and the header says why" \
    "$tmp/ag.log" "all(r[p][f] is None for r in d['rows'] for p in ('out_of_place', 'in_place')
     for f in ('time', 'algbw', 'busbw')) and d['footer']['avg_bus_bandwidth']['value'] is None and
     any(c.startswith('# sim: ') and 'not measurements' in c for c in d['comments'])"
py "the devices, one line per rank, as nccl-tests writes them" "$tmp/ag.log" \
    "[x['rank'] for x in d['devices']] == list(range(8)) and all(x['device'] == -1 and x['name'] == 'sim (CPU threads)' for x in d['devices'])"
py "a hand-written nccl-tests log in its format: the same parser, the same structure" tests/perf/all_gather_perf.log \
    "len(d['rows']) == 4 and d['rows'][3]['out_of_place']['busbw'] == 3.6 and d['footer']['avg_bus_bandwidth']['value'] > 1 and
     len(d['devices']) == 8 and d['devices'][7]['name'] == 'NVIDIA H200'"
$PARSE tests/perf/all_gather_perf.log >"$tmp/nccl.json" && $PARSE "$tmp/ag.log" >"$tmp/cdsl.json"
ok "both logs: the same settings, row fields and footer keys" "python3 - '$tmp/nccl.json' '$tmp/cdsl.json' <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
same = lambda f: f(a) == f(b)
sys.exit(0 if same(lambda d: sorted(d['settings'])) and same(lambda d: sorted(d['rows'][0])) and
         same(lambda d: sorted(d['rows'][0]['in_place'])) and same(lambda d: sorted(d['footer'])) and
         same(lambda d: [r['size'] for r in d['rows']]) and same(lambda d: [r['count'] for r in d['rows']]) else 1)
PY"

# ---- 2. results files ----------------------------------------------------------------------------------
cat >"$tmp/lazy.cdsl" <<'EOF'
program lazy implements allgather {
    copy(output[rank], input[0]);
}
EOF
"$PERF" --nranks 2 -b 1K -e 2K -f 2 -n 2 -w 0 --unchecked -F "$tmp/lazy.json" "$tmp/lazy.cdsl" >"$tmp/lazy.log" 2>"$tmp/lazy.err"; rc=$?
ok "wrong values: exit 7 (nccl-tests' result failure), 'Out of bounds values : 4 FAILED'" \
    '[ $rc = 7 ] && grep -q "^# Out of bounds values : 4 FAILED$" "$tmp/lazy.log"' "exit $rc: $(cat "$tmp/lazy.log" "$tmp/lazy.err")"
ok "the JSON file: version, timestamp, devices, driver, each row's first wrong element" "python3 - '$tmp/lazy.json' <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d['results'][0]['out_of_place']
ok = (d['format'] == 'cdsl-perf results 1' and d['version'] and d['timestamp'].endswith('Z') and
      d['backend'] == 'sim' and d['measured'] is False and 'driver' in d and len(d['devices']) == 2 and
      d['devices'][0]['name'] == 'sim (CPU threads)' and d['program']['collective'] == 'allgather' and
      r['wrong'] == 256 and r['time_us'] is None and r['status'] == 'wrong' and
      r['first_wrong'] == {'rank': 0, 'chunk': 1, 'element': 0, 'expected': '2', 'got': 'nan', 'never_written': True} and
      d['out_of_bounds'] == {'count': 4, 'okay': False} and d['exit'] == 7)
sys.exit(0 if ok else 1)
PY" "$(head -c 600 "$tmp/lazy.json")"
"$PERF" --nranks 2 -b 1K -e 2K -f 2 -n 2 -w 0 --unchecked -F "$tmp/lazy.csv" "$tmp/lazy.cdsl" >/dev/null 2>&1
ok "the CSV file: one line per row and placement, the same facts" "python3 - '$tmp/lazy.csv' <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1], newline='')))
r = rows[0]
sys.exit(0 if len(rows) == 4 and [x['placement'] for x in rows[:2]] == ['out-of-place', 'in-place'] and
         r['size'] == '1024' and r['count'] == '128' and r['wrong'] == '256' and r['first_wrong_rank'] == '0' and
         r['first_wrong_chunk'] == '1' and r['first_wrong_got'] == 'nan (never written)' and r['time_us'] == '' and
         r['device'] == 'sim (CPU threads)' and r['version'] and r['timestamp'] and r['measured'] == 'no' else 1)
PY" "$(head -3 "$tmp/lazy.csv")"
"$PERF" --nranks 2 -b 1K -e 1K -F "$tmp/x.txt" stdlib/allgather_ring.cdsl >/dev/null 2>"$tmp/err"; rc=$?
ok "-F with another extension: bad usage (6)" '[ $rc = 6 ] && grep -q "JSON (.json) or CSV (.csv)" "$tmp/err"' "$rc $(cat "$tmp/err")"
for f in plan.json plan_link.json; do
    rm -f "$tmp/plan.json" "$tmp/plan_link.json"
    cp tests/mscclpp/allgather_put.json "$tmp/plan.json" && ln "$tmp/plan.json" "$tmp/plan_link.json"
    "$PERF" --nranks 2 -b 1K -e 1K -n 1 -F "$tmp/$f" "$tmp/plan.json" >/dev/null 2>"$tmp/err"; rc=$?
    ok "-F naming the program's file ($f, a plan): refused, bad usage (6), the plan as it was" \
        '[ $rc = 6 ] && grep -q "is the program file; refusing to overwrite it" "$tmp/err" && cmp -s tests/mscclpp/allgather_put.json "$tmp/plan.json"' \
        "$rc $(cat "$tmp/err")"
done

# ---- 3. in place ------------------------------------------------------------------------------------------
for p in allgather_nvls reducescatter_nvls allreduce_twoshot allgather_chunked_ring; do
    "$PERF" --nranks 4 -b 4K -e 16K -f 4 -n 2 "$p" >"$tmp/$p.log" 2>&1
    py "$p: the in-place group runs the program compiled in place, verified" "$tmp/$p.log" \
        "len(d['rows']) == 2 and all(r['in_place']['wrong'] == 0 and r['out_of_place']['wrong'] == 0 for r in d['rows'])"
done
"$PERF" --nranks 4 -b 16K -e 16K -n 2 tests/inplace/race_oneshot_allreduce.cdsl >"$tmp/oneshot.log" 2>&1; rc=$?
py "a program that cannot run in place: its in-place columns N/A, the reason in the header, exit 0" "$tmp/oneshot.log" \
    "$rc == 0 and d['rows'][0]['out_of_place']['wrong'] == 0 and
     all(v is None for v in d['rows'][0]['in_place'].values()) and
     any(c.startswith('# in-place: allreduce_oneshot: data race: rank 0 writes its output[0..4] (its input[0..4] in place)') for c in d['comments'])"
"$PERF" --nranks 2 -b 1K -e 1K -n 2 tests/run/custom_shift.cdsl >"$tmp/custom.log" 2>&1
py "a custom program: no in-place form (its collective's row says so), its in-place columns N/A" "$tmp/custom.log" \
    "all(v is None for v in d['rows'][0]['in_place'].values()) and
     '# in-place: shift: a custom program has no in-place form; its columns are N/A' in d['comments']"
"$PERF" --nranks 2 -b 1K -e 1K -n 2 --no-in-place allgather_ring >"$tmp/nip.log" 2>&1
py "--no-in-place: the in-place columns are N/A" "$tmp/nip.log" "d['rows'][0]['in_place']['wrong'] is None"

# ---- 4. options -------------------------------------------------------------------------------------------
"$PERF" --nranks 3 -b 3K -e 3K -n 2 -d all allreduce_nvls >"$tmp/all.log" 2>&1
py "-d all: one row per type cdsl runs, nccl-tests' names" "$tmp/all.log" \
    "[r['type'] for r in d['rows']] == ['float', 'half', 'bfloat16', 'int32', 'uint32'] and
     [r['count'] for r in d['rows']] == [768, 1536, 1536, 768, 768] and all(r['redop'] == 'sum' for r in d['rows'])"
"$PERF" --nranks 2 -b 1K -e 1K -n 2 -c 0 allgather_ring >"$tmp/c0.log" 2>&1
py "-c 0: not checked, #wrong is N/A as nccl-tests prints it" "$tmp/c0.log" "d['rows'][0]['out_of_place']['wrong'] is None"
ok "-c 0: the row's #wrong reads '    N/A'" 'grep -qE "N/A {4}N/A$" "$tmp/c0.log"' "$(cat "$tmp/c0.log")"
"$PERF" -g 2 --ranks-per-gpu 3 -b 6K -e 6K -n 2 reducescatter_nvls >"$tmp/g.log" 2>&1
py "-g 2 --ranks-per-gpu 3: 6 ranks (nGpus counts ranks), reducescatter counts per rank" "$tmp/g.log" \
    "d['settings']['nGpus'] == '6' and d['rows'][0]['count'] == 256 and len(d['devices']) == 6"
"$PERF" --nranks 3 -b 1K -e 1K -n 2 barrier_switch >"$tmp/bar.log" 2>&1
py "a barrier: one row of size 0, count 0" "$tmp/bar.log" "[(r['size'], r['count']) for r in d['rows']] == [(0, 0)]"
"$PERF" --nranks 3 -b 1000 -e 1000 -n 2 allgather_ring >"$tmp/r.log" 2>"$tmp/r.err"
py "a size that does not split: the nearest size below, with a note" "$tmp/r.log" "d['rows'][0]['size'] == 996"
ok "... the note" 'grep -q "cdsl-perf: note: 1000 bytes does not split into whole chunks" "$tmp/r.err"' "$(cat "$tmp/r.err")"
ok "... the note names the size it runs, in bytes" \
    'grep -qx "cdsl-perf: note: 1000 bytes does not split into whole chunks; running 996 bytes, the nearest size below that allgather_ring at 3 ranks takes (a multiple of 12 bytes)" "$tmp/r.err"' "$(cat "$tmp/r.err")"
"$PERF" --nranks 8 -b 8 -e 64 -f 2 -n 1 allgather_nvls >"$tmp/small.log" 2>"$tmp/small.err"
py "sizes below the smallest a program takes: one row of size 0, not run (as nccl-tests prints size 0)" "$tmp/small.log" \
    "[(r['size'], r['count']) for r in d['rows']] == [(0, 0), (32, 1), (64, 2)] and d['rows'][0]['out_of_place']['wrong'] is None"
ok "... each said in a whole sentence, the smallest size in bytes" \
    'grep -qx "cdsl-perf: note: 8 bytes is below the smallest size allgather_nvls at 8 ranks takes (32 bytes); its row has size 0" "$tmp/small.err" &&
     [ "$(grep -c "; its row has size 0$" "$tmp/small.err")" = 2 ]' "$(cat "$tmp/small.err")"
"$PERF" --nranks 2 -b 1K -e 4K -f 4 -n 3 -w 0 -G 2 -z 1 allgather_ring >"$tmp/gz.log" 2>&1
py "-G 2 -z 1: the runs replayed twice, each waited for; verified, and said in the header" "$tmp/gz.log" \
    "d['settings']['graph'] == '2' and len(d['rows']) == 2 and all(r['in_place']['wrong'] == 0 for r in d['rows']) and
     '# Blocking Enabled: wait after each run' in d['comments']"
"$PERF" --nranks 2 -b 1K -e 1K -n 2 -t 1 -m 1 -N 1 -a 1 allgather_ring >/dev/null 2>&1; rc=$?
ok "nccl-tests' options cdsl-perf lacks, at their defaults: accepted" '[ $rc = 0 ]' "exit $rc"
expect() {  # expect NAME EXIT PATTERN ARGS...
    local name=$1 want=$2 pat=$3 out rc; shift 3
    out=$("$PERF" "$@" 2>&1); rc=$?
    ok "$name" '[ $rc = $want ] && echo "$out" | grep -qE -- "$pat"' "exit $rc: $out"
}
expect "-t 2: not implemented (5)" 5 "-t \(--nthreads\) 2: an nccl-tests option cdsl-perf has at its default only" -t 2 allgather_ring
expect "-J: not implemented (5), pointing at -F" 5 "-F FILE writes cdsl-perf's JSON or CSV" -J x.json allgather_ring
expect "-o max: not implemented (5)" 5 "-o max: cdsl programs reduce with sum only" -o max allreduce_nvls
expect "-d double: not implemented (5)" 5 "-d double: cdsl runs float, half, bfloat16, int32 and uint32" -d double allreduce_nvls
expect "-d nonsense: bad usage (6)" 6 "-d expects float, half, bfloat16" -d nonsense allreduce_nvls
expect "a bad size: bad usage (6)" 6 "invalid size specified for 'minbytes': '12Q'" -b 12Q allgather_ring
expect "minBytes above maxBytes: bad usage (6)" 6 "invalid sizes for 'minbytes' and 'maxbytes'" -b 2K -e 1K allgather_ring
expect "an unknown option: bad usage (6)" 6 "unknown option '--frobnicate'" --frobnicate allgather_ring
expect "no program: bad usage (6)" 6 "no program to run" -b 1K
expect "-g and --nranks that disagree: bad usage (6)" 6 "the ranks do not spread evenly" -g 2 --nranks 3 allgather_ring
expect "a program with errors: its diagnostics, exit 1" 1 "data race" \
    --nranks 2 tests/check/race_relaxed_publish.cdsl
expect "a -D value the program refuses: bad usage (6)" 6 "chunks must be between 1 and" \
    --nranks 2 --define chunks=0 stdlib/allgather_chunked_ring.cdsl
expect "a name that is no file and no stdlib program: bad usage (6)" 6 "cannot read 'allgather'" --nranks 2 allgather
expect "... and a note names --list, as cdslc's does" 6 "^cdsl-perf: note: 'allgather' is not a stdlib program either \(cdsl-perf --list shows them\)$" \
    --nranks 2 allgather
expect "a path that is not there: bad usage (6)" 6 "cannot read 'no/such.cdsl': No such file or directory" --nranks 2 no/such.cdsl
out=$("$PERF" --list 2>&1); rc=$?
ok "--list: the stdlib's programs, as cdslc --list prints them" \
    '[ $rc = 0 ] && [ "$out" = "$(build/cdslc --list 2>&1)" ] && echo "$out" | grep -qE "^allgather_ring +allgather +"' "exit $rc: $(echo "$out" | head -3)"
expect "--list with a program: bad usage (6)" 6 "--list takes no program" --list allgather_ring
out=$("$PERF" --help); rc=$?
ok "--help exits 0 and names every option" '[ $rc = 0 ] && (for o in -b -e -i -f -n -w -c -g -d -o -G -z -h -F --nranks --backend --ranks-per-gpu --program --define --include --no-in-place --output-file --seed --jitter --spin-limit --version --unchecked --list NCCL_TESTS_MIN_BW NCCL_TESTS_DEVICE; do echo "$out" | grep -q -- "$o" || exit 1; done)' "$out"

# ---- 5. the stand-in CUDA driver: measured rows ------------------------------------------------------------
driver_present() { ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' || compgen -G '/dev/nvidia*' >/dev/null; }
sed -n "/^    cat >\"\$tmp\/fake.c\" <<'EOF'\$/,/^EOF\$/p" tests/run/gpu_refusals.sh | sed '1d;$d' >"$tmp/fake.c"
mkdir -p "$tmp/fake" "$tmp/cache"
if driver_present; then
    echo "[SKIP] the stand-in driver: an NVIDIA driver is present"
elif ! cc -std=c11 -D_GNU_SOURCE -shared -fPIC -Iruntime -o "$tmp/fake/libcuda.so.1" "$tmp/fake.c" 2>/dev/null ||
        ! CDSL_CACHE_DIR=$tmp/cache build/cdslc stdlib/allgather_ring.cdsl -n 2 --emit-cubin -o "$tmp/x.cubin" >/dev/null 2>&1 ||
        ! CDSL_CACHE_DIR=$tmp/cache build/cdslc stdlib/allgather_ring.cdsl -n 2 --in-place --emit-cubin -o "$tmp/x.cubin" >/dev/null 2>&1; then
    echo "[SKIP] the stand-in driver: it does not build, or NVRTC is not here"
else
    CDSL_CACHE_DIR=$tmp/cache LD_LIBRARY_PATH="$tmp/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CDSL_NVLS=0 \
        "$PERF" --backend p2p --nranks 2 -b 1K -e 4K -f 4 -n 2 -c 0 -F "$tmp/fake.json" allgather_ring >"$tmp/fake.log" 2>"$tmp/fake.err"
    py "p2p (stand-in driver): rows are measurements the parser reads as numbers, the devices named" "$tmp/fake.log" \
        "all(isinstance(r[p][f], (int, float)) for r in d['rows'] for p in ('out_of_place', 'in_place')
         for f in ('time', 'algbw', 'busbw')) and d['footer']['avg_bus_bandwidth']['value'] is not None and
         [x['name'] for x in d['devices']] == ['Fake GPU 0', 'Fake GPU 1'] and
         not any(c.startswith('# sim') for c in d['comments'])"
    ok "p2p (stand-in driver): the JSON file has the driver's version and measured times" "python3 -c \"
import json, sys; d = json.load(open('$tmp/fake.json'))
sys.exit(0 if d['measured'] and d['driver'] == '13.0' and d['results'][0]['out_of_place']['time_us'] > 0 else 1)\"" \
        "$(head -c 400 "$tmp/fake.json")"
    CDSL_CACHE_DIR=$tmp/cache LD_LIBRARY_PATH="$tmp/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" CDSL_NVLS=0 NCCL_TESTS_MIN_BW=1e9 \
        "$PERF" --backend p2p --nranks 2 -b 1K -e 1K -n 2 -c 0 allgather_ring >"$tmp/min.log" 2>/dev/null; rc=$?
    ok "NCCL_TESTS_MIN_BW above the average: 'FAILED' in the footer, exit 7, as nccl-tests" \
        '[ $rc = 7 ] && grep -qE "^# Avg bus bandwidth    : [0-9.e+-]+ FAILED$" "$tmp/min.log"' "exit $rc: $(tail -5 "$tmp/min.log")"
fi

# ---- 6. ASan ---------------------------------------------------------------------------------------------------
if [ -x "$ASAN_PERF" ]; then
    out=$("$ASAN_PERF" --nranks 3 -b 3K -e 12K -f 4 -n 2 --unchecked -F "$tmp/a.json" "$tmp/lazy.cdsl" 2>&1); rc=$?
    ok "ASan/UBSan: a run with wrong values and a results file, no report" \
        '[ $rc = 7 ] && ! echo "$out" | grep -qE "Sanitizer|runtime error:"' "exit $rc: $(echo "$out" | grep -m3 -E 'Sanitizer|runtime error|error')"
else
    fail "the ASan build of cdsl-perf exists" "no $ASAN_PERF (make asan)"
fi
