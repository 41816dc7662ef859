#!/bin/bash
# tests/mp/perf_mpirun.sh - cdsl-perf launched as nccl-tests users launch it, one process per
# rank: `mpirun -n 2 cdsl-perf -g 1 ...` and torchrun's environment (WORLD_SIZE, RANK,
# LOCAL_RANK, MASTER_ADDR/PORT), on the sim engine.
#
# 1. mpirun -n 2 ... --backend sim allgather_ring: exit 0; one header, one table with a row per
#    size (printed by rank 0 only: not twice), both ranks in the device list (two processes),
#    every row verified (#wrong 0 out of place and in place), the footer once.
# 2. A program that does not exist: the exit status of a usage error (6) and its message once,
#    not once per process.
# 3. torchrun's environment, two processes: the same table from rank 0, nothing on rank 1's
#    standard output.
# 4. -T is honoured: rank 0 of 2 whose peer never starts fails within the bound (exit 4,
#    naming rank 1); rank 1 of 2 without rank 0 says it waited for rank 0's id.
source "$(dirname "$0")/../lib/common.bash"
PERF=${CDSL_PERF:-$PWD/build/cdsl-perf}
PARSE="python3 $PWD/tests/perf/nccl_tests_format.py"
need python3 python3 || exit 0
[ -x "$PERF" ] || { fail "build/cdsl-perf exists" "make first"; exit 1; }
cd "$tmp" || exit 2     # the id file and anything else a run leaves are the test's own

# py NAME FILE EXPR: a Python expression over the parsed log d (and its text, t) is true.
py() {
    local out
    out=$($PARSE "$2" 2>&1 >"$tmp/parsed.json") || { fail "$1" "parse: $out"; return; }
    if python3 -c "import json, sys; d = json.load(open('$tmp/parsed.json')); t = open('$2').read(); sys.exit(0 if ($3) else 1)"; then
        pass "$1"
    else
        fail "$1" "$(head -c 600 "$2")"
    fi
}

if need mpirun openmpi-bin "$test_name: mpirun"; then
    MPI=(mpirun -n 2 --oversubscribe)
    [ "$(id -u)" = 0 ] && MPI+=(--allow-run-as-root)
    # 1.
    timeout 120 "${MPI[@]}" "$PERF" -b 1K -e 64K -f 2 -g 1 --backend sim allgather_ring >out.log 2>err.log; rc=$?
    [ $rc = 0 ] && pass "mpirun -n 2 cdsl-perf -g 1 --backend sim allgather_ring: exit 0" ||
        fail "mpirun -n 2 cdsl-perf -g 1 --backend sim allgather_ring: exit 0" "exit $rc: $(head -5 err.log)"
    py "... one header, one table: 7 rows (1K to 64K), printed once" out.log \
        "len(d['rows']) == 7 and [r['size'] for r in d['rows']] == [1024 << i for i in range(7)] and
         t.count('# Collective test starting') == 1 and t.count('#       size') == 1 and t.count('Out of bounds values') == 1"
    py "... every row verified, out of place and in place" out.log \
        "all(r['out_of_place']['wrong'] == 0 and r['in_place']['wrong'] == 0 for r in d['rows']) and
         '# Out of bounds values : 0 OK' in t"
    py "... both ranks in the device list, each its own process" out.log \
        "len(d['devices']) == 2 and len({l.split()[6] for l in t.splitlines() if l.startswith('#  Rank')}) == 2 and
         'one process each (mpirun' in t"
    # 2.
    timeout 120 "${MPI[@]}" "$PERF" -b 1K -e 1K -g 1 --backend sim allgather_nosuch >bad.log 2>bad.err; rc=$?
    n=$(grep -c "cannot read 'allgather_nosuch'" bad.err)
    [ $rc = 6 ] && [ "$n" = 1 ] && [ ! -s bad.log ] && pass "mpirun: a program that does not exist: exit 6, said once" ||
        fail "mpirun: a program that does not exist: exit 6, said once" "exit $rc, said $n times: $(head -3 bad.err)"
fi

# 3.
torch_env() { env WORLD_SIZE=2 RANK=$1 LOCAL_RANK=$1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$2 TORCHELASTIC_RUN_ID=test "${@:3}"; }
torch_env 0 29517 timeout 60 "$PERF" -b 1K -e 4K -f 4 -g 1 --backend sim reducescatter_ll >t0.log 2>t0.err &
torch_env 1 29517 timeout 60 "$PERF" -b 1K -e 4K -f 4 -g 1 --backend sim reducescatter_ll >t1.log 2>t1.err
rc1=$?; wait $!; rc0=$?
[ $rc0 = 0 ] && [ $rc1 = 0 ] && [ ! -s t1.log ] && pass "torchrun's environment, 2 processes: exit 0, rank 1 prints nothing" ||
    fail "torchrun's environment, 2 processes: exit 0, rank 1 prints nothing" "exit $rc0/$rc1: $(cat t0.err t1.err | head -4)"
py "... rank 0 prints the table, verified" t0.log \
    "[r['size'] for r in d['rows']] == [1024, 4096] and all(r['out_of_place']['wrong'] == 0 for r in d['rows'])"

# 4.
start=$SECONDS
torch_env 0 29518 timeout 60 "$PERF" -b 1K -e 1K -g 1 -T 2 --backend sim allgather_ring >lone0.log 2>lone0.err; rc=$?
took=$((SECONDS - start))
[ $rc = 4 ] && [ $took -lt 15 ] && grep -q "rank 1 never arrived" lone0.err && pass "-T 2: rank 0 alone fails in ${took}s, naming rank 1" ||
    fail "-T 2: rank 0 alone fails within the bound, naming rank 1" "exit $rc after ${took}s: $(head -3 lone0.err)"
start=$SECONDS
torch_env 1 29519 timeout 60 "$PERF" -b 1K -e 1K -g 1 -T 2 --backend sim allgather_ring >lone1.log 2>lone1.err; rc=$?
took=$((SECONDS - start))
[ $rc = 2 ] && [ $took -lt 15 ] && grep -q "rank 1 waited 2 s for rank 0's unique id" lone1.err &&
    pass "-T 2: rank 1 without rank 0 fails in ${took}s, waiting for the id" ||
    fail "-T 2: rank 1 without rank 0 fails within the bound" "exit $rc after ${took}s: $(head -3 lone1.err)"
torch_env 0 29520 "$PERF" -b 1K -e 1K -g 2 --backend sim allgather_ring >g2.log 2>g2.err; rc=$?
[ $rc = 6 ] && grep -q "each process runs one rank on one GPU; give -g 1" g2.err && pass "-g 2 under a launcher: refused as usage" ||
    fail "-g 2 under a launcher: refused as usage" "exit $rc: $(head -2 g2.err)"
exit $((failures > 0))
