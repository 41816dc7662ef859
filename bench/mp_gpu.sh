#!/bin/bash
# bench/mp_gpu.sh - one process per GPU, on the GPU machine, in one call.
#
#     bash bench/mp_gpu.sh            # results under $OUT (default bench/results/mp-<date>)
#
# Two processes: on two GPUs when the machine has them (torch's group NCCL, cdsl's engine
# auto = nccl, or CDSL_MP_ENGINE=ipc), else both on GPU 0 (torch's group gloo, results checked
# on the CPU, cdsl's engine ipc: NCCL refuses two ranks on one GPU; kernels of two processes on
# one GPU take turns, so those times only show that it runs). Steps, each bounded and each
# ending in a PASS/FAIL line, the whole within 8 minutes:
#   1. build (make; make rank_example_mpi where mpicc is);
#   2. python3 -m cdsl.selftest -n 2 on the GPU engine: every stdlib program, p2p flavour;
#   3. the C example of the per-rank API: mpirun -n 2 when MPI is here, else rank_launch.sh;
#   4. examples/torch_collectives.py under torchrun --nproc-per-node 2, 1K to 1G, CUDA graphs,
#      each result checked against torch.distributed, both times side by side;
#   5. single-process cdslrun (p2p) for the same programs and sizes, and the ratio of the
#      one-process-per-GPU time to cdslrun's, per size (a table in $OUT/ratio.txt).
# The NVLS-off variables are exported first and kept: nothing here creates a multicast object.
cd "$(dirname "$0")/.." || exit 2
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
OUT=${OUT:-bench/results/mp-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
T0=$(date +%s)
MAX_S=${MP_GPU_MAX_S:-470}
export CDSL_LIB=$PWD/build/libcdsl.so CDSL_STDLIB=$PWD/stdlib CDSL_TIMEOUT=60 CDSL_CACHE_DIR=$OUT/cache
results=()
note() { echo "$*" | tee -a "$OUT/summary.txt"; }
pass() { note "[PASS] $1"; results+=("PASS"); }
fail() { note "[FAIL] $1${2:+: $2}"; results+=("FAIL"); }
left() { local l=$((MAX_S - ($(date +%s) - T0))); [ $l -lt 10 ] && l=10; echo $l; }
bound() { local want=$1 l; l=$(left); [ "$want" -lt "$l" ] && echo "$want" || echo "$l"; }

# ---- the machine --------------------------------------------------------------------------------
{
    echo "# $(date -u) $(hostname)"
    nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>&1
    echo "mpirun: $(command -v mpirun || echo none); mpicc: $(command -v mpicc || echo none)"
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())' 2>&1
    python3 -c 'import mpi4py; print("mpi4py", mpi4py.__version__)' 2>&1 | tail -1
} | tee "$OUT/machine.txt"
NGPU=$(python3 -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
[ "$NGPU" -ge 1 ] 2>/dev/null || NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$NGPU" -ge 2 ]; then
    MODE="2 GPUs"; ENGINE=${CDSL_MP_ENGINE:-auto}; RPG=1
else
    MODE="2 processes on 1 GPU"; ENGINE=ipc; RPG=2
fi
note "# mode: $MODE, cdsl engine $ENGINE, results in $OUT"

# ---- 1. build -------------------------------------------------------------------------------------
if timeout "$(bound 240)" make -j"$(nproc)" >"$OUT/build.log" 2>&1; then pass "build"; else fail "build" "$(tail -3 "$OUT/build.log" | tr '\n' ' ')"; exit 1; fi
HAVE_MPI=""
if command -v mpicc >/dev/null && command -v mpirun >/dev/null && make rank_example_mpi >>"$OUT/build.log" 2>&1; then HAVE_MPI=1; fi

# ---- 2. the self-test on the GPU engine ------------------------------------------------------------------
# Without torch imported, libnccl.so.2 is on no library path: point the nccl engine at torch's.
if [ -z "${CDSL_NCCL_LIB:-}" ]; then
    lib=$(python3 -c 'import nvidia.nccl, os, glob; print((glob.glob(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so*")) or [""])[0])' 2>/dev/null)
    [ -n "$lib" ] && export CDSL_NCCL_LIB=$lib && note "# CDSL_NCCL_LIB=$lib"
fi
sel_engine=$ENGINE
if (cd python && timeout "$(bound 150)" python3 -m cdsl.selftest -n 2 --engine "$sel_engine" --timeout 60) >"$OUT/selftest.log" 2>&1 &&
   tail -1 "$OUT/selftest.log" | grep -q ' passed, 0 failed'; then
    pass "selftest -n 2 on $sel_engine: $(tail -1 "$OUT/selftest.log")"
else
    fail "selftest -n 2 on $sel_engine" "$(grep -m3 -E 'FAIL|Error|error' "$OUT/selftest.log" | tr '\n' ' ' | head -c 600)"
fi

# ---- 3. the C example ------------------------------------------------------------------------------------
export CDSL_ENGINE=$ENGINE CDSL_NGPU=$NGPU
if [ -n "$HAVE_MPI" ]; then
    root=(); [ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
    how="mpirun -n 2"
    timeout "$(bound 90)" mpirun "${root[@]}" --oversubscribe -n 2 -x CDSL_ENGINE -x CDSL_NGPU -x CDSL_NVLS -x NCCL_NVLS_ENABLE \
        -x CDSL_CACHE_DIR build/rank_example_mpi >"$OUT/rank_example.log" 2>&1
else
    how="rank_launch.sh 2 (no MPI here)"
    timeout "$(bound 90)" examples/rank_launch.sh 2 build/rank_example >"$OUT/rank_example.log" 2>&1
fi
rc=$?
if [ $rc = 0 ] && [ "$(grep -c 'verified 4 runs' "$OUT/rank_example.log")" = 2 ]; then
    pass "rank_example under $how: $(grep -m1 verified "$OUT/rank_example.log")"
else
    fail "rank_example under $how" "exit $rc: $(tail -3 "$OUT/rank_example.log" | tr '\n' ' ')"
fi
unset CDSL_ENGINE

# ---- 4. torch_collectives.py -----------------------------------------------------------------------------
tc_engine=(); [ "$ENGINE" != auto ] && tc_engine=(--engine "$ENGINE")
if command -v torchrun >/dev/null; then runner=(torchrun); else runner=(python3 -m torch.distributed.run); fi
timeout "$(bound 200)" "${runner[@]}" --nproc_per_node 2 examples/torch_collectives.py --min-bytes 1K --max-bytes 1G \
    "${tc_engine[@]}" --json "$OUT/torch_collectives.json" >"$OUT/torch_collectives.log" 2>&1
rc=$?
grep -E '^#|^  ' "$OUT/torch_collectives.log" | tee -a "$OUT/summary.txt" >/dev/null
if [ $rc = 0 ] && grep -q 'torch_collectives: PASS' "$OUT/torch_collectives.log"; then
    pass "torch_collectives.py: $(grep 'torch_collectives: PASS' "$OUT/torch_collectives.log" | head -1)"
else
    fail "torch_collectives.py" "exit $rc: $(grep -m3 -E 'WRONG|Error|error|FAIL' "$OUT/torch_collectives.log" | tr '\n' ' ' | head -c 600)"
fi

# ---- 5. single-process cdslrun, and the ratio ----------------------------------------------------------
ok=1
for prog in allgather_nvls reducescatter_nvls allreduce_nvls; do
    timeout "$(bound 60)" build/cdslrun "stdlib/$prog.cdsl" -n 2 --backend p2p --ranks-per-gpu $RPG --sizes 1K:1G:4 \
        --bench --json >"$OUT/cdslrun_$prog.json" 2>"$OUT/cdslrun_$prog.err" || ok=0
done
[ $ok = 1 ] && pass "cdslrun (one process, p2p, $RPG rank(s) per GPU): 3 programs, 1K to 1G" ||
    fail "cdslrun (one process)" "$(cat "$OUT"/cdslrun_*.err | grep -m2 error | tr '\n' ' ')"
python3 - "$OUT" <<'EOF' | tee "$OUT/ratio.txt" | tee -a "$OUT/summary.txt"
import json, os, sys
out = sys.argv[1]
try:
    mp = json.load(open(os.path.join(out, "torch_collectives.json")))
except Exception as e:
    print("# no torch_collectives.json: %s" % e); sys.exit(0)
single = {}
for prog in ("allgather_nvls", "reducescatter_nvls", "allreduce_nvls"):
    try:
        j = json.load(open(os.path.join(out, "cdslrun_%s.json" % prog)))
        single[prog] = {r["size"]: r["time_us"] for r in j.get("results", [])}
    except Exception as e:
        print("# cdslrun %s: %s" % (prog, e))
print("# one process per GPU (cdsl.distributed, staged torch tensors) vs one process for all (cdslrun), same call")
print("# %-20s %8s %14s %14s %10s %12s" % ("program", "size", "per-rank (us)", "cdslrun (us)", "mp/single", "torch (us)"))
for r in mp["rows"]:
    s = single.get(r["program"], {}).get(r["size"])
    print("  %-20s %8d %14.2f %14s %10s %12s" % (r["program"], r["size"], r["cdsl_us"], "%.2f" % s if s else "-",
          "%.2f" % (r["cdsl_us"] / s) if s else "-", "%.2f" % r["torch_us"] if r.get("torch_us") else "n/a"))
EOF

# ---- summary ------------------------------------------------------------------------------------------------
nfail=0; for r in "${results[@]}"; do [ "$r" = FAIL ] && nfail=$((nfail + 1)); done
note "# mp_gpu: ${#results[@]} steps, $nfail failed, $(( $(date +%s) - T0 )) s ($MODE)"
[ $nfail = 0 ] && note "mp_gpu: PASS" || note "mp_gpu: FAIL"
[ $nfail = 0 ]
