#!/bin/bash
# bench/gpu_session.sh - one device call that checks what landed since the last GPU run, on
# whatever GPUs the machine has (a one-H200 machine: every rank shares GPU 0).
#
#   OUT=... bash bench/gpu_session.sh [STEP ...]     steps: build gen mp check (the default),
#                                                    plans, ce, compare
#
#   build  make the tools here (no re2c/lemon on the GPU hosts: the carried build/gen is used)
#   gen    tests/gen/diff.sh --backend p2p: generated programs the checker accepts, run on the
#          GPU at several sizes and types, each verified
#   mp     bench/mp_gpu.sh: one process per rank on the GPU engines
#   check  bench/gpu_check.sh: every stdlib program verified on p2p, ranks sharing the GPUs
#   ranks  one process per rank on the ipc engine (under MPS with one GPU): python3 -m
#          cdsl.selftest -n 2, 4 and 8 (RANK_NS), every stdlib program (RANK_PROGRAMS: only
#          these) and element type, chunks of RANK_CHUNKS bytes (default 128 to 8 MiB: buffers of
#          about 1 KiB to 64 MiB), verified; RANK_ENGINES="ipc nccl" runs both engines
#   before bench/before_after.sh against the tree in .carry/old (an earlier commit with its
#          build/gen): the same programs and sizes (BEFORE_SIZES, default 1K:1M), old and new
#   plans  bench/mscclpp_gpu.sh: MSCCL++ plans imported, checked and run on p2p (the checked-in
#          ones and the DSL corpus, from .carry/mscclpp_plans and .carry/dsl when carried)
#   pkt    MSCCL++'s packet plans timed beside their memory-channel equivalents (1K to 1M)
#   port   bench/port_gpu.sh: port channels through the host's proxy, verified and timed
#   rport  port channels on the ipc engine (a proxy in each rank's process): allgather_port at
#          RPORT_NS processes (default 2 4) through tests/mp/mp_probe.c, staged and in place,
#          verified, every rank's messages kept
#   tcost  bench/torch_call_cost.py on CUDA tensors (ipc engine, two processes, MPS): where the
#          torch backend's per-call host time goes (cProfile)
#   torch  torchrun of bench/torch_backend.py: the torch.distributed backend cdsl, two processes
#   launch bench/perf_launch_gpu.sh: cdsl-perf one process per rank, and the wheel
#   ce     bench/ce_gpu.sh: the copy-engine path against the kernels and plain copies
#   compare  bench/compare.sh: the physical anchors (bench/anchors.cu, built with nvcc), NCCL and
#          cdsl's programs in one go, and bench/targets.py's targets with PASS/FAIL/n/a (COMPARE_S,
#          default 330 s; programs that would start in its last 100 s are skipped). Build, the
#          GPU checks and the targets in one call of about 9 minutes at most:
#          CHECK_S=60 bash bench/gpu_session.sh build check compare
# A .carry/ folder (include/, lib/: jansson's headers and library, for GPU hosts
# without the Debian -dev packages) is used for the build and at run time when present.
# Every step is bounded; everything written goes into $OUT/session.tar.gz (the device tool
# brings back at most 8 files) and each step's summary to standard output.
# SAFETY: the NVLS-off variables are exported first; nothing here uses the nvls backend.
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-bench/results/session-$(date +%Y%m%d-%H%M%S)}
W=$OUT/work; mkdir -p "$W"
steps=${*:-build gen mp check}
if [ -d .carry/lib ]; then   # gcc reads CPATH and LIBRARY_PATH: every make below sees them
    export LD_LIBRARY_PATH=$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export CPATH=$PWD/.carry/include${CPATH:+:$CPATH} LIBRARY_PATH=$PWD/.carry/lib${LIBRARY_PATH:+:$LIBRARY_PATH}
fi
# With MPS=1 and one GPU, the mp step runs under the CUDA MPS daemon, so that two processes'
# kernels run at the same time on it (without it they take turns, in slices of milliseconds).
mps_start() {
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/cdsl-mps CUDA_MPS_LOG_DIRECTORY=/tmp/cdsl-mps-log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    nvidia-cuda-mps-control -d && echo "# MPS daemon started" | tee -a "$W/session.txt"
}
mps_stop() { echo quit | nvidia-cuda-mps-control 2>/dev/null; unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY; }
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
echo "# $(date -u) $(hostname): $NGPU GPU(s); steps: $steps" | tee "$W/session.txt"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>&1 | tee -a "$W/session.txt"
step() { echo "## $1 ($(date -u +%T))" | tee -a "$W/session.txt"; }
for s in $steps; do
    case $s in
    build)
        step build
        touch build/gen/lexer.c build/gen/parser.c build/gen/parser.h
        make -j"$(nproc)" LEMPAR="$PWD/grammar/parser.y" RE2C=false LEMON=false all \
            >"$W/build.txt" 2>&1
        echo "build rc=$?" | tee -a "$W/session.txt" ;;
    gen)
        step gen
        rpg=$(( NGPU >= 2 ? 4 : 8 ))
        timeout "${GEN_S:-200}" python3 tests/gen/diff.py --backend p2p --count "${GEN_COUNT:-60}" --start 500000 \
            --ranks-per-gpu $rpg --max-n 8 --keep "$W/gen_keep" >"$W/gen.txt" 2>&1
        echo "gen rc=$?" | tee -a "$W/session.txt"
        grep -E "^\[FAIL\]|passed|accepted|verified|disagree" "$W/gen.txt" | tail -15 | tee -a "$W/session.txt" ;;
    mp)
        step mp
        [ "${MPS:-0}" = 1 ] && [ "$NGPU" = 1 ] && mps_start
        OUT="$W/mp" MP_GPU_MAX_S="${MP_S:-300}" timeout "$(( ${MP_S:-300} + 30 ))" bash bench/mp_gpu.sh >"$W/mp.txt" 2>&1
        echo "mp rc=$?" | tee -a "$W/session.txt"
        [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && mps_stop
        grep -E "^\[(PASS|FAIL)\]|^# mode" "$W/mp.txt" | tee -a "$W/session.txt"
        [ -f "$W/mp/ratio.txt" ] && tee -a "$W/session.txt" <"$W/mp/ratio.txt" ;;
    check)
        step check
        if [ "$NGPU" -ge 2 ]; then cfg="2:1 4:2 8:4"; else cfg="2:2 4:4 8:8"; fi
        CONFIGS="$cfg" SIZES="${CHECK_SIZES:-1K:256M}" BUDGET_S="${CHECK_S:-150}" OUT="$W" \
            timeout "$(( ${CHECK_S:-150} + 60 ))" bash bench/gpu_check.sh >"$W/check.txt" 2>&1
        echo "check rc=$?" | tee -a "$W/session.txt"
        tail -25 "$W/check.txt" | tee -a "$W/session.txt" ;;
    ranks)
        step ranks
        [ "$NGPU" = 1 ] && mps_start
        for n in ${RANK_NS:-2 4 8}; do
            for e in ${RANK_ENGINES:-ipc}; do
                # shellcheck disable=SC2046
                (cd python && CDSL_LIB=$PWD/../build/libcdsl.so CDSL_STDLIB=$PWD/../stdlib CDSL_CACHE_DIR=$W/cache \
                    timeout "${RANKS_S:-150}" python3 -m cdsl.selftest -n "$n" --engine "$e" --timeout 60 \
                    $(for p in ${RANK_PROGRAMS:-}; do printf -- '--program %s ' "$p"; done) \
                    --chunk-bytes "${RANK_CHUNKS:-128,16384,1048576,8388608}") >"$W/ranks_${e}_$n.txt" 2>&1
                echo "ranks $e -n $n rc=$?: $(tail -1 "$W/ranks_${e}_$n.txt")" | tee -a "$W/session.txt"
                grep -E '^\[(FAIL|SKIP)\]|gave up|error' "$W/ranks_${e}_$n.txt" | head -8 | tee -a "$W/session.txt"
            done
        done
        [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && mps_stop ;;
    before)
        step before
        [ -d .carry/old ] || { echo "before: no .carry/old tree" | tee -a "$W/session.txt"; continue; }
        OUT="$W/before" SIZES="${BEFORE_SIZES:-1K:1M}" ITERS="${BEFORE_ITERS:-200}" \
            timeout "${BEFORE_S:-240}" bash bench/before_after.sh .carry/old >"$W/before.txt" 2>&1
        echo "before rc=$?" | tee -a "$W/session.txt"
        tee -a "$W/session.txt" <"$W/before.txt" ;;
    plans)
        step plans
        [ -d .carry/mscclpp_plans ] && export MSCCLPP_PLANS=${MSCCLPP_PLANS:-$PWD/.carry/mscclpp_plans}
        [ -d .carry/dsl ] && export MSCCLPP_DSL=${MSCCLPP_DSL:-$PWD/.carry/dsl}
        OUT="$W/plans" BUDGET_S=$((${PLANS_S:-200} - 30)) timeout "${PLANS_S:-200}" bash bench/mscclpp_gpu.sh \
            >"$W/plans.txt" 2>&1
        echo "plans rc=$?" | tee -a "$W/session.txt"
        grep -E "^\[(PASS|FAIL|SKIP)\]|passed, " "$W/plans.txt" | tee -a "$W/session.txt" ;;
    port)
        step port
        [ -d .carry/dsl ] && export MSCCLPP_DSL=${MSCCLPP_DSL:-$PWD/.carry/dsl}
        OUT="$W/port" timeout "${PORT_S:-240}" bash bench/port_gpu.sh >"$W/port_run.txt" 2>&1
        echo "port rc=$?" | tee -a "$W/session.txt"
        grep -E "^\[(PASS|FAIL|SKIP)\]|^# port|^###|^ +[0-9]+ " "$W/port_run.txt" | tee -a "$W/session.txt" ;;
    rport)
        # port channels on the ipc engine, a proxy in each rank's process (MPS with one GPU):
        # tests/mp/mp_probe.c, whose ranks write every message to their own log (kept)
        step rport
        [ "$NGPU" = 1 ] && mps_start
        cc -std=c11 -D_GNU_SOURCE -g -Iruntime -o "$W/probe" tests/mp/mp_probe.c build/libcdsl.a -ljansson -ldl \
            -lpthread -lm >"$W/rport_cc.txt" 2>&1
        for n in ${RPORT_NS:-2 4}; do
            mkdir -p "$W/rport_$n"
            PROBE_DIR=$W/rport_$n PROBE_ENGINE=ipc CDSL_TIMEOUT=30 CDSL_DEBUG=INFO CDSL_CACHE_DIR=$W/cache \
                timeout "${RPORT_S:-60}" "$W/probe" ok "$n" stdlib/allgather_port.cdsl >"$W/rport_$n.txt" 2>&1
            echo "rport -n $n rc=$?" | tee -a "$W/session.txt"
            grep -E "^rank [0-9]+: |verified|error" "$W/rport_$n.txt" | head -12 | tee -a "$W/session.txt"
        done
        [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && mps_stop ;;
    torch)
        # torchrun of a script that uses only torch.distributed calls with the backend cdsl
        # (cuda:cdsl,cpu:gloo), every collective verified against gloo and timed, staged and
        # on a symmetric tensor; two processes on one GPU run under MPS
        step torch
        [ "$NGPU" = 1 ] && mps_start
        CDSL_LIB=$PWD/build/libcdsl.so CDSL_STDLIB=$PWD/stdlib PYTHONPATH=$PWD/python CDSL_CACHE_DIR=$W/cache \
            timeout "${TORCH_S:-200}" torchrun --nproc_per_node=2 bench/torch_backend.py \
            --sizes "${TORCH_SIZES:-1K,64K,1M,16M}" >"$W/torch.txt" 2>&1
        echo "torch rc=$?" | tee -a "$W/session.txt"
        grep -E "^\[(PASS|FAIL|SKIP)\]|Error|error" "$W/torch.txt" | head -60 | tee -a "$W/session.txt"
        [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && mps_stop ;;
    tcost)
        step tcost
        [ "$NGPU" = 1 ] && mps_start
        # the profile of the tree's backend, then (TCOST_OLD: a python/cdsl of an earlier commit,
        # default .carry/oldpy) old and new alternately without the profiler, 2000 calls each
        tcost() {   # tcost NAME PYTHONPATH ROWS CALLS
            rm -f "$W/tcost_store"
            for r in 0 1; do
                CDSL_LIB=$PWD/build/libcdsl.so CDSL_STDLIB=$PWD/stdlib PYTHONPATH=$2 CDSL_CACHE_DIR=$W/cache \
                    CDSL_ENGINE=ipc CDSL_TORCH_DEVICE=cuda CDSL_PROFILE_ROWS=$3 timeout 120 python3 bench/torch_call_cost.py \
                    "$r" 2 "$W/tcost_store" "$4" >"$W/tcost_$1_$r.txt" 2>&1 &
            done
            wait
        }
        tcost profile "$PWD/python" 25 500
        head -40 "$W/tcost_profile_0.txt" | tee -a "$W/session.txt"
        old=${TCOST_OLD:-.carry/oldpy}
        for i in 1 2 3; do
            [ -d "$old" ] && tcost "old$i" "$PWD/$old" 0 2000 && echo "tcost old $i: $(head -1 "$W/tcost_old${i}_0.txt")" | tee -a "$W/session.txt"
            tcost "new$i" "$PWD/python" 0 2000 && echo "tcost new $i: $(head -1 "$W/tcost_new${i}_0.txt")" | tee -a "$W/session.txt"
        done
        [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && mps_stop ;;
    launch)
        # cdsl-perf one process per rank (torchrun's environment, no torch) and the wheel
        step launch
        [ "$NGPU" = 1 ] && mps_start
        OUT="$W/launch" timeout "${LAUNCH_S:-200}" bash bench/perf_launch_gpu.sh >"$W/launch.txt" 2>&1
        echo "launch rc=$?" | tee -a "$W/session.txt"
        grep -E "^\[(PASS|FAIL|SKIP)\]" "$W/launch.txt" | tee -a "$W/session.txt"
        [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] && mps_stop ;;
    pkt)
        # MSCCL++'s packet plans beside their memory-channel equivalents, one table per pair
        step pkt
        d=${MSCCLPP_DSL:-.carry/dsl}
        for pair in single_node_allreduce_pkt_g2:single_node_allreduce_g2 single_node_allreduce_pkt_g8:single_node_allreduce_g8 \
                    single_node_allgather_pkt_g2:single_node_allgather_g2; do
            for f in ${pair%%:*} ${pair##*:}; do
                n=$(build/cdslc "$d/$f.json" --dump-ir 2>/dev/null | sed -n 's/.*nranks=\([0-9]*\).*/\1/p')
                echo "### $f (n=$n)" >>"$W/pkt.txt"
                timeout 60 build/cdslrun "$d/$f.json" --backend p2p --ranks-per-gpu "${n:-2}" --sizes 1K:1M:4 --bench \
                    --iters 200 >>"$W/pkt.txt" 2>&1
                echo "pkt $f rc=$?" | tee -a "$W/session.txt"
            done
        done
        grep -E "^###|^ +[0-9]+ " "$W/pkt.txt" | tee -a "$W/session.txt" ;;
    compare)
        step compare
        cs=${COMPARE_S:-330}
        OUT="$W" BUDGET_S=$((cs - 100)) timeout "$cs" bash bench/compare.sh >"$W/compare.txt" 2>&1
        echo "compare rc=$?" | tee -a "$W/session.txt"
        # Cut short by the timeout: judge what did run.
        [ -f "$W/compare/targets.txt" ] || python3 bench/targets.py "$W/compare" >"$W/compare/targets.txt" 2>&1
        grep -E "^anchor |^# (ONE GPU|anchors:|NCCL: n/a|nccl_allgather.py|[a-z_]+: (exit|skipped))" "$W/compare.txt" |
            tee -a "$W/session.txt"
        [ -f "$W/compare/table.txt" ] && tee -a "$W/session.txt" <"$W/compare/table.txt"
        [ -f "$W/compare/targets.txt" ] && tee -a "$W/session.txt" <"$W/compare/targets.txt" ;;
    ce)
        step ce
        OUT="$W/ce" CE_GPU_MAX_S="${CE_S:-150}" timeout "$(( ${CE_S:-150} + 30 ))" bash bench/ce_gpu.sh >"$W/ce.txt" 2>&1
        echo "ce rc=$?" | tee -a "$W/session.txt"
        grep -E "^\[(PASS|FAIL)\]" "$W/ce.txt" | tee -a "$W/session.txt"
        [ -f "$W/ce/table.txt" ] && tee -a "$W/session.txt" <"$W/ce/table.txt" ;;
    esac
done
tar -C "$OUT" -czf "$OUT/session.tar.gz" work 2>/dev/null && rm -rf "$W"
ls -la "$OUT"
