#!/bin/bash
# bench/before_after.sh OLD_TREE - this tree's cdslrun against another tree's (an earlier commit,
# e.g. `git archive COMMIT | tar -x -C OLD_TREE`, with its build/gen carried when the GPU host
# has no re2c/lemon), the same programs and sizes, one after the other in one call, so that a
# change to the emitted code is measured on the same machine in the same session.
#
# Environment: PROGRAMS (default: allgather_nvls barrier_switch allgather_mesh allreduce_twoshot,
# and allgather_ll where this tree has it), SIZES (default 1K:64M), ITERS (timed runs per
# size, default 200), OUT (raw outputs; default a fresh /tmp folder). Two GPUs: one rank per
# GPU; one GPU: both ranks share it (figures then compare the two builds only).
# Prints per program and size: old us, new us, old/new (above 1: the new code is faster), and
# whether both verified. SAFETY: the NVLS-off variables are exported; p2p only.
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
cd "$(dirname "$0")/.." || exit 2
[ $# = 1 ] && [ -d "$1" ] || { echo "usage: bench/before_after.sh OLD_TREE" >&2; exit 2; }
old=$(cd "$1" && pwd)
LOGS=${OUT:-$(mktemp -d /tmp/before_after.XXXXXX)}
mkdir -p "$LOGS"
mk() { touch "$1"/build/gen/* 2>/dev/null; make -C "$1" -j"$(nproc)" RE2C=false LEMON=false LEMPAR="$1/grammar/parser.y" \
       build/cdslrun >"$LOGS/build_$2.txt" 2>&1; }
mk . new || { echo "# this tree does not build: $(tail -3 "$LOGS/build_new.txt")"; exit 3; }
mk "$old" old || { echo "# $old does not build: $(tail -3 "$LOGS/build_old.txt")"; exit 3; }
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$NGPU" -ge 2 ]; then PLACE=(-n 2); else PLACE=(-n 2 --ranks-per-gpu 2); fi
progs=${PROGRAMS:-"allgather_nvls barrier_switch allgather_mesh allreduce_twoshot $( [ -f stdlib/allgather_ll.cdsl ] && echo allgather_ll)"}
echo "# before/after: $(date -u +%FT%TZ), $NGPU GPU(s), ${PLACE[*]}, sizes ${SIZES:-1K:64M}, $ITERS timed runs; old = $old"
printf '# %-18s %10s %10s %10s %8s  %s\n' program size old_us new_us old/new verified
for p in $progs; do
    for side in old new; do
        tree=.; [ $side = old ] && tree=$old
        f=$tree/stdlib/$p.cdsl
        [ -f "$f" ] || { echo "# $p: not in the $side tree" >"$LOGS/${p}_$side.txt"; continue; }
        CDSL_CACHE_DIR=$LOGS/cache_$side timeout 150 "$tree/build/cdslrun" "$f" --backend p2p "${PLACE[@]}" \
            --sizes "${SIZES:-1K:64M}" --bench --iters "${ITERS:-200}" >"$LOGS/${p}_$side.txt" 2>&1
    done
    python3 - "$LOGS/${p}_old.txt" "$LOGS/${p}_new.txt" "$p" <<'PY'
import sys
sys.path.insert(0, "bench")
from targets import read_rows   # bench/targets.py: cdslrun --bench rows, {size: (us, busbw, wrong)}
old, new, name = read_rows(sys.argv[1]), read_rows(sys.argv[2]), sys.argv[3]
for size in sorted(set(old) | set(new)):
    o, n = old.get(size), new.get(size)
    ratio = f"{o[0] / n[0]:.2f}" if o and n and n[0] > 0 else "n/a"
    ok = "yes" if o and n and o[2] == "0" and n[2] == "0" else f"old={o[2] if o else '-'} new={n[2] if n else '-'}"
    print(f"  {name:<18} {size:>10} {o[0] if o else float('nan'):>10.2f} {n[0] if n else float('nan'):>10.2f} {ratio:>8}  {ok}")
PY
done
