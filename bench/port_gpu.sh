#!/bin/bash
# bench/port_gpu.sh - port channels on the GPU: the host's proxy (runtime/engines/gpu_port.c)
# serving the kernels' requests, on p2p with every rank sharing the GPUs there are.
#
#   OUT=DIR bash bench/port_gpu.sh
#
# 1. stdlib/allgather_port.cdsl at 2, 4 and 8 ranks, 4 KiB to 64 MiB, f32 and bf16, verified.
# 2. Every plan with port channels that cdslc accepts (tests/mscclpp, and MSCCL++'s DSL corpus
#    from $MSCCLPP_DSL, else .carry/dsl, else ../shared/mscclpp/dsl), verified at 4 KiB-64 MiB; a
#    plan the GPU backends refuse by design (packets through a port channel) is skipped, named.
# 3. A failing run: allgather_port with a spin limit too small to wait for the proxy's first
#    signal must end with a named report, and the next run on the same communicator (a
#    selftest of the library: cdslrun --iters 3 reruns on one communicator) must verify.
# 4. Timing: allgather_port beside allgather_mesh (the same pattern over memory channels),
#    and MSCCL++'s multi_node_allgather_g2 (4 ranks, port channels between the "nodes") beside
#    single_node_allgather_g4 (4 ranks, memory channels), --bench.
# Prints [PASS]/[FAIL]/[SKIP] lines and the bench tables; everything bounded.
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-bench/results/port-$(date +%Y%m%d-%H%M%S)}; mkdir -p "$OUT"
LOG=$OUT/port.txt; : >"$LOG"
CDSLC=build/cdslc CDSLRUN=build/cdslrun
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l); [ "$NGPU" -gt 0 ] || NGPU=1
pass=0 fail=0
rpg() { echo $(( ($1 + NGPU - 1) / NGPU )); }
run() {   # run NAME N ARGS...: verified on p2p
    local name=$1 n=$2; shift 2
    echo "## $name: $CDSLRUN $* --backend p2p --ranks-per-gpu $(rpg "$n")" >>"$LOG"
    if timeout 180 "$CDSLRUN" "$@" --backend p2p --ranks-per-gpu "$(rpg "$n")" >>"$LOG" 2>&1; then
        echo "[PASS] $name"; pass=$((pass + 1))
    else
        echo "[FAIL] $name: exit $? (tail of $LOG:)"; tail -5 "$LOG"; fail=$((fail + 1))
    fi
}
for n in 2 4 8; do
    for t in f32 bf16; do
        run "allgather_port n=$n $t" "$n" stdlib/allgather_port.cdsl -n "$n" --dtype "$t" --sizes 4K:64M:4 --iters 3
    done
done
dsl=${MSCCLPP_DSL:-.carry/dsl}; [ -d "$dsl" ] || dsl=../shared/mscclpp/dsl
for p in tests/mscclpp/port*.json "$dsl"/*.json; do
    [ -f "$p" ] && grep -q '"port"' "$p" || continue
    "$CDSLC" "$p" >/dev/null 2>&1 || continue       # refused or a hazard: not run
    if ! "$CDSLC" "$p" --emit-cuda --backend p2p -o /dev/null 2>"$OUT/emit.err"; then
        echo "[SKIP] $(basename "$p"): $(grep -m1 -o 'not supported on the GPU backends: [a-z ]*' "$OUT/emit.err")"; continue
    fi
    n=$("$CDSLC" "$p" --dump-ir 2>/dev/null | sed -n 's/.*nranks=\([0-9]*\).*/\1/p')
    run "$(basename "$p") n=$n" "$n" "$p" --sizes 4K:64M:4 --iters 3
done
# A failing run reports, and the communicator runs clean afterwards (cdsl's own selftest of a
# give-up: --spin-limit 1 fails the first wait; the sweep's next size must then verify).
echo "## failure: $CDSLRUN stdlib/allgather_port.cdsl -n 2 --spin-limit 1" >>"$LOG"
timeout 120 "$CDSLRUN" stdlib/allgather_port.cdsl -n 2 --backend p2p --ranks-per-gpu "$(rpg 2)" --spin-limit 1 \
    >"$OUT/fail.txt" 2>&1; rc=$?
cat "$OUT/fail.txt" >>"$LOG"
if [ "$rc" = 4 ] && grep -q "gave up" "$OUT/fail.txt"; then
    echo "[PASS] a give-up is reported (exit 4): $(grep -m1 'gave up' "$OUT/fail.txt" | cut -c1-160)"; pass=$((pass + 1))
else
    echo "[FAIL] a give-up: exit $rc, $(head -2 "$OUT/fail.txt" | tr '\n' ' ' | cut -c1-200)"; fail=$((fail + 1))
fi
echo "# port: $pass passed, $fail failed"
# Timing, side by side (one H200: ranks share it, so compare the two, not with two-GPU targets).
for n in 2 8; do
    for prog in allgather_port allgather_mesh; do
        echo "### $prog n=$n"
        timeout 120 "$CDSLRUN" "stdlib/$prog.cdsl" -n "$n" --backend p2p --ranks-per-gpu "$(rpg "$n")" --bench \
            --sizes 1K:64M:8 2>&1 | grep -v "^#" | head -20
    done
done
for f in multi_node_allgather_g2 single_node_allgather_g4 multi_node_send_recv_g2 single_node_allgather_g2; do
    [ -f "$dsl/$f.json" ] || continue
    n=$("$CDSLC" "$dsl/$f.json" --dump-ir 2>/dev/null | sed -n 's/.*nranks=\([0-9]*\).*/\1/p')
    echo "### $f (n=$n)"
    timeout 120 "$CDSLRUN" "$dsl/$f.json" --backend p2p --ranks-per-gpu "$(rpg "${n:-2}")" --bench --sizes 1K:64M:8 2>&1 |
        grep -v "^#" | head -20
done
