#!/bin/bash
# bench/ce_gpu.sh - the copy-engine path on the GPU machine, in one call, within 5
# minutes: does it verify, and how fast is it next to the kernels and to plain copies?
#
#     bash bench/ce_gpu.sh          # results under $OUT (default bench/results/ce-<date>)
#
# Placements (CONFIGS, "nranks:ranks-per-gpu"; default "2:2 4:4" = every rank on GPU 0, so that
# one GPU is enough, plus "2:1" when the machine has two GPUs). On one GPU every copy is a
# device-to-device copy within it, which measures the local copy engine (CUDA may also run
# such copies on the SMs; only "2:1" crosses NVLink). For each placement and each allgather
# program (PROGS, default allgather_nvls allgather_mesh allgather_ring; "4:4" runs only
# allgather_nvls) cdslrun --bench --json runs SIZES (default 1M:1G:4) three ways, every size
# verified on every rank:
#   kernel      CDSL_CE=off                     the emitted kernel
#   ce          CDSL_CE=on                      copy engine, stream write/wait-value flags
#   ce-events   CDSL_CE=on CDSL_CE_SYNC=events  copy engine, CUDA events between the ranks
# and bench/ce_anchor.c moves the same bytes with nothing but cuMemcpyAsync (no flags at all),
# on one stream per rank and on nranks streams per rank. The table ($OUT/table.txt) gives per
# size the time of each and the ratios ce/kernel (above 1: the copy engine is faster) and
# anchor/ce (the share of plain-copy speed the copy-engine path reaches; 1 = all of it).
# A wait that never completes is reported by the copy-engine watchdog after about 4 s and the
# run fails (exit 4); every step prints a PASS/FAIL line. The NVLS-off variables are exported
# first and kept: nothing here creates a multicast object.
cd "$(dirname "$0")/.." || exit 2
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
OUT=${OUT:-bench/results/ce-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT" && mkdir -p -m 700 "$OUT/cache"
export CDSL_CACHE_DIR=$OUT/cache
T0=$(date +%s)
MAX_S=${CE_GPU_MAX_S:-280}
SIZES=${SIZES:-1M:1G:4}
PROGS=${PROGS:-allgather_nvls allgather_mesh allgather_ring}
nfail=0
note() { echo "$*" | tee -a "$OUT/summary.txt"; }
pass() { note "[PASS] $1"; }
fail() { note "[FAIL] $1${2:+: $2}"; nfail=$((nfail + 1)); }
left() { echo $((MAX_S - ($(date +%s) - T0))); }

{
    echo "# $(date -u) $(hostname)"
    nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader 2>&1
} | tee "$OUT/machine.txt"
NGPU=$(nvidia-smi -L 2>/dev/null | wc -l)
CONFIGS=${CONFIGS:-"2:2 4:4$([ "$NGPU" -ge 2 ] && echo " 2:1")"}
note "# configs: $CONFIGS; sizes $SIZES; results in $OUT"

if bash bench/gpu_check.sh --build >"$OUT/build.log" 2>&1; then pass "build"; else fail "build" "$(tail -3 "$OUT/build.log" | tr '\n' ' ')"; exit 1; fi
if cc -std=c11 -O2 -o "$OUT/ce_anchor" bench/ce_anchor.c -ldl 2>>"$OUT/build.log"; then pass "ce_anchor builds"; else fail "ce_anchor builds"; fi

# sizes_of MIN:MAX:F -> the sizes cdslrun sweeps (powers of 1024 suffixes)
sizes_of() {
    python3 - "$1" <<'EOF'
import sys
def b(s):
    m = {"K": 10, "M": 20, "G": 30}
    return int(s[:-1]) << m[s[-1]] if s[-1] in m else int(s)
lo, hi, *f = sys.argv[1].split(":")
s, f = b(lo), int(f[0]) if f else 2
while s <= b(hi):
    print(s); s *= f
EOF
}

for cfg in $CONFIGS; do
    n=${cfg%%:*} rpg=${cfg##*:}
    progs=$PROGS; [ "$cfg" = 4:4 ] && progs=allgather_nvls
    for prog in $progs; do
        for mode in kernel ce ce-events; do
            if [ "$(left)" -lt 30 ]; then fail "$cfg $prog $mode" "skipped: out of time"; continue; fi
            case $mode in
            kernel) envs=(CDSL_CE=off) ;;
            ce) envs=(CDSL_CE=on) ;;
            ce-events) envs=(CDSL_CE=on CDSL_CE_SYNC=events) ;;
            esac
            f=$OUT/${n}x${rpg}_${prog}_$mode
            env "${envs[@]}" timeout 120 build/cdslrun "stdlib/$prog.cdsl" -n "$n" --ranks-per-gpu "$rpg" --backend p2p \
                --sizes "$SIZES" --bench --json >"$f.json" 2>"$f.err"
            rc=$?
            warn=$(grep -m1 'warning' "$f.err")
            if [ $rc = 0 ] && grep -q '"status": "ok"' "$f.json"; then
                pass "-n $n, $rpg per GPU, $prog, $mode: $SIZES verified${warn:+ ($warn)}"
            else
                fail "-n $n, $rpg per GPU, $prog, $mode" "exit $rc: $(grep -m2 -E 'error|warning' "$f.err" | tr '\n' ' ' | head -c 400)"
            fi
        done
    done
    for size in $(sizes_of "$SIZES"); do
        [ "$(left)" -lt 15 ] && break
        for lanes in 1 "$n"; do
            timeout 60 "$OUT/ce_anchor" "$n" "$rpg" $((size / n)) "$lanes" >>"$OUT/anchor_${n}x${rpg}.txt" 2>&1 ||
                echo "# anchor failed: size $size lanes $lanes" >>"$OUT/anchor_${n}x${rpg}.txt"
        done
    done
done

python3 - "$OUT" $CONFIGS <<'EOF' | tee "$OUT/table.txt" | tee -a "$OUT/summary.txt"
import glob, json, os, re, sys
out, configs = sys.argv[1], sys.argv[2:]
def times(path):
    try:
        j = json.load(open(path))
        return {r["size"]: (r["time_us"], r["result"]) for r in j.get("results", [])}
    except Exception:
        return {}
print("# times in us per allgather (output size); anchor = the same copies with cuMemcpyAsync alone,")
print("# on 1 / nranks streams per rank; ce/kernel > 1: the copy engine is faster; anchor/ce: share of plain-copy speed")
for cfg in configs:
    n, rpg = cfg.split(":")
    anchor = {}
    for line in open(os.path.join(out, "anchor_%sx%s.txt" % (n, rpg))) if os.path.exists(os.path.join(out, "anchor_%sx%s.txt" % (n, rpg))) else []:
        m = re.match(r"anchor nranks (\d+) rpg (\d+) chunk (\d+) lanes (\d+): ([\d.]+) us", line)
        if m:
            anchor[(int(m.group(3)) * int(n), int(m.group(4)))] = float(m.group(5))
    for f in sorted(glob.glob(os.path.join(out, "%sx%s_*_kernel.json" % (n, rpg)))):
        prog = os.path.basename(f)[len("%sx%s_" % (n, rpg)):-len("_kernel.json")]
        k = times(f)
        c = times(f.replace("_kernel.json", "_ce.json"))
        e = times(f.replace("_kernel.json", "_ce-events.json"))
        print("\n# -n %s, %s rank(s) per GPU, %s" % (n, rpg, prog))
        print("# %10s %10s %10s %10s %10s %10s %9s %9s %9s" % ("size", "kernel", "ce", "ce-events", "anchor1", "anchorN",
              "ce/kern", "ev/kern", "anchN/ce"))
        for size in sorted(set(k) | set(c) | set(e)):
            tk, tc, te = (d.get(size, (None, ""))[0] for d in (k, c, e))
            a1, an = anchor.get((size, 1)), anchor.get((size, int(n)))
            fmt = lambda x: "%10.1f" % x if x else "%10s" % "-"
            ratio = lambda a, b: "%9.2f" % (a / b) if a and b else "%9s" % "-"
            bad = [m for m, d in (("kernel", k), ("ce", c), ("ce-events", e)) if d.get(size, (0, "verified"))[1] != "verified"]
            print("  %10d %s %s %s %s %s %s %s %s%s" % (size, fmt(tk), fmt(tc), fmt(te), fmt(a1), fmt(an), ratio(tk, tc),
                  ratio(tk, te), ratio(an, tc), "  NOT VERIFIED: " + ",".join(bad) if bad else ""))
EOF

note "# ce_gpu: $nfail failed, $(( $(date +%s) - T0 )) s"
[ $nfail = 0 ] && note "ce_gpu: PASS" || note "ce_gpu: FAIL"
[ $nfail = 0 ]
