#!/bin/bash
# tests/mp/examples.sh - the per-rank examples run as documented, on the sim engine.
#
# 1. examples/rank_example.c started by examples/rank_launch.sh (3 processes, the id through a
#    file): every rank verifies its runs; the id file is mode 0600 whatever the umask; a
#    program that cannot be read fails every rank, and the launcher returns that failure.
# 2. The same example built with MPI (make rank_example_mpi) under mpirun, where mpicc and
#    mpirun are installed (Debian: libopenmpi-dev openmpi-bin); [SKIP] otherwise.
# 3. examples/torch_collectives.py on CPU tensors (--device cpu: gloo and the sim engine) in two
#    processes started the way torchrun starts them (RANK, WORLD_SIZE, MASTER_ADDR, ...), with a
#    python that has torch; [SKIP] otherwise.
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/need.bash
export CDSL_ENGINE=sim CDSL_TIMEOUT=20 CDSL_LIB=$PWD/build/libcdsl.so
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1.
out=$(timeout 120 examples/rank_launch.sh 3 build/rank_example 2>&1); rc=$?
if [ $rc = 0 ] && [ "$(echo "$out" | grep -c 'rank_example: rank [0-2] verified 4 runs (engine sim)')" = 3 ]; then
    pass "rank_example under rank_launch.sh: 3 processes verified"
else
    fail "rank_example under rank_launch.sh" "exit $rc: $(echo "$out" | head -3 | tr '\n' ' ')"
fi
# The id file holds the control plane's nonce: mode 0600 even under umask 000.
mode=$(umask 000 && CDSL_RANK=0 CDSL_NRANKS=1 CDSL_ID_FILE=$tmp/id timeout 60 "${RANK_EXAMPLE:-build/rank_example}" \
    >"$tmp/id.log" 2>&1 && stat -c %a "$tmp/id")
if [ "$mode" = 600 ] && grep -q "verified 4 runs" "$tmp/id.log"; then
    pass "rank_example writes the id file with mode 0600 (under umask 000)"
else
    fail "rank_example writes the id file with mode 0600 (under umask 000)" "mode '$mode': $(head -2 "$tmp/id.log")"
fi
out=$(timeout 120 examples/rank_launch.sh 2 build/rank_example "$tmp/none.cdsl" 2>&1); rc=$?
if [ $rc != 0 ] && echo "$out" | grep -q "cannot read"; then
    pass "rank_launch.sh returns a rank's failure"
else
    fail "rank_launch.sh returns a rank's failure" "exit $rc: $(echo "$out" | head -2 | tr '\n' ' ')"
fi

# 2.
if need mpirun openmpi-bin "rank_example under mpirun" && need mpicc libopenmpi-dev "rank_example under mpirun"; then
    if make -s rank_example_mpi >"$tmp/mk.log" 2>&1; then
        root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
        out=$(timeout 120 mpirun "${root[@]}" --oversubscribe -n 3 -x CDSL_ENGINE -x CDSL_TIMEOUT build/rank_example_mpi 2>&1); rc=$?
        if [ $rc = 0 ] && [ "$(echo "$out" | grep -c 'rank_example: rank [0-2] verified 4 runs')" = 3 ]; then
            pass "rank_example under mpirun -n 3: verified"
        else
            fail "rank_example under mpirun -n 3" "exit $rc: $(echo "$out" | tail -3 | tr '\n' ' ')"
        fi
    else
        fail "make rank_example_mpi" "$(tail -3 "$tmp/mk.log" | tr '\n' ' ')"
    fi
fi

# 3.
need python3 python3 "torch_collectives.py" || exit 0
need_modules "torch_collectives.py" torch:python3-torch torch.distributed:python3-torch || exit 0
TPY=$PYTHON_WITH
port=$((20000 + $$ % 20000))
for r in 0 1; do
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 \
        timeout 300 "$TPY" examples/torch_collectives.py --device cpu --max-bytes 64K --iters 2 >"$tmp/tc$r.log" 2>&1 &
done
wait
if tail -1 "$tmp/tc0.log" | grep -q "torch_collectives: PASS (12 rows" && ! grep -q WRONG "$tmp/tc0.log"; then
    pass "torch_collectives.py on CPU tensors: 3 collectives x 4 sizes checked against torch.distributed"
else
    fail "torch_collectives.py on CPU tensors" "$(tail -3 "$tmp/tc0.log" "$tmp/tc1.log" | tr '\n' ' ')"
fi
