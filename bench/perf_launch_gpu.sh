#!/bin/bash
# bench/perf_launch_gpu.sh - on the GPU machine: cdsl-perf one process per rank, and the wheel.
#
#     bash bench/perf_launch_gpu.sh        # results under $OUT (default bench/results/launch-<date>)
#
# 1. build (make all, make wheel);
# 2. cdsl-perf -g 1 in two processes with torchrun's environment (no torch needed), 1K to 16M,
#    on the ipc engine (both on GPU 0 when there is one GPU: the local rank picks GPU
#    local rank % GPUs) and on nccl where there are two GPUs; rank 0's table, verified;
# 3. the wheel in a fresh venv, no environment: python -m cdsl.selftest -n 2 --engine ipc.
# Each step ends in a PASS/FAIL line. The NVLS-off variables are exported: nothing here makes
# a multicast object.
cd "$(dirname "$0")/.." || exit 2
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
OUT=${OUT:-bench/results/launch-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
failures=0
pass() { echo "[PASS] $1" | tee -a "$OUT/summary.txt"; }
fail() { echo "[FAIL] $1${2:+: $2}" | tee -a "$OUT/summary.txt"; failures=$((failures + 1)); }

# 1.
make -j"$(nproc)" all >"$OUT/make.log" 2>&1 && whl=$(make --no-print-directory wheel 2>>"$OUT/make.log" | tail -1) ||
    { fail "make all wheel" "$(tail -3 "$OUT/make.log")"; exit 1; }
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c ^GPU)

# 2.
engines=(${PERF_ENGINES:-ipc})   # PERF_ENGINES=sim tries the script without a GPU
[ -z "${PERF_ENGINES:-}" ] && [ "${ngpu:-0}" -ge 2 ] && engines+=(nccl)
for eng in "${engines[@]}"; do
    for r in 0 1; do
        env WORLD_SIZE=2 RANK=$r LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=29600 TORCHELASTIC_RUN_ID="$eng-$$" \
            CDSL_ENGINE=$eng timeout 200 build/cdsl-perf -b 1K -e 16M -f 4 -g 1 -T 60 -F "$OUT/$eng.json" allgather_ring \
            >"$OUT/$eng$r.log" 2>"$OUT/$eng$r.err" &
    done
    wait %1; rc0=$?; wait %2; rc1=$?
    rows=$(grep -c '^ *[0-9]' "$OUT/${eng}0.log")
    if [ $rc0 = 0 ] && [ $rc1 = 0 ] && [ "$rows" = 8 ] && grep -q "Out of bounds values : 0 OK" "$OUT/${eng}0.log" &&
       [ ! -s "$OUT/${eng}1.log" ]; then
        pass "cdsl-perf -g 1, 2 processes on $eng: 8 rows from rank 0, verified"
    else
        fail "cdsl-perf -g 1, 2 processes on $eng" "exit $rc0/$rc1, $rows rows: $(head -3 "$OUT/${eng}0.err" "$OUT/${eng}1.err" | tr '\n' ' ')"
    fi
done

# 3.
rm -rf "$OUT/venv" && mkdir -p "$OUT/away"
if python3 -m venv "$OUT/venv" >"$OUT/venv.log" 2>&1 && "$OUT/venv/bin/pip" install --no-index "$PWD/$whl" >>"$OUT/venv.log" 2>&1; then
    (cd "$OUT/away" && env -i PATH=/usr/bin:/bin HOME="$OUT/away" timeout 300 "$OUT/venv/bin/python" -m cdsl.selftest -n 2 \
        --engine ipc) >"$OUT/selftest.log" 2>&1; rc=$?
    [ $rc = 0 ] && pass "the wheel, no environment: selftest -n 2 --engine ipc: $(tail -1 "$OUT/selftest.log")" ||
        fail "the wheel, no environment: selftest -n 2 --engine ipc" "exit $rc: $(tail -3 "$OUT/selftest.log" | tr '\n' ' ')"
else
    fail "the wheel installs into a fresh venv" "$(tail -3 "$OUT/venv.log" | tr '\n' ' ')"
fi
exit $((failures > 0))
