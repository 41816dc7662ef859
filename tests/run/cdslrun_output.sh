#!/bin/bash
# tests/run/cdslrun_output.sh - what cdslrun prints: nccl-tests-style --bench rows (sizes, counts,
# bus-bandwidth factors, #wrong), sweeps rounded to the chunk count, --json that parses and
# carries the same facts, --help/--version, and no progress text when stderr is not a terminal.
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/need.bash
need python3 python3 || exit 0
CDSLRUN=${CDSLRUN:-$PWD/build/cdslrun}
failures=0
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; failures=$((failures + 1)); }
ok() { if eval "$2"; then pass "$1"; else fail "$1" "${3:-}"; fi; }

run() { timeout 120 "$CDSLRUN" "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --bench over 1K..64K at -n 4: a header, 7 rows, a footer; columns as nccl-tests has them.
out=$(run stdlib/allgather_ring.cdsl -n 4 --backend sim --bench --sizes 1K:64K 2>"$tmp/err"); rc=$?
err=$(cat "$tmp/err")
ok "--bench exits 0" '[ $rc = 0 ]' "exit $rc: $err"
ok "--bench prints nothing on stderr off a terminal" '[ -z "$err" ]' "$err"
ok "--bench header" 'echo "$out" | grep -qE "^# +size +count +type +time\(us\) +algbw\(GB/s\) +busbw\(GB/s\) +#wrong$"' "$out"
rows=$(echo "$out" | grep -vE '^#')
ok "--bench: one row per size 1K..64K" '[ "$(echo "$rows" | wc -l)" = 7 ]' "$out"
ok "--bench rows: size, count, type, time, algbw, busbw, 0 wrong" \
    'echo "$rows" | awk "NF != 7 || \$2 * 4 != \$1 || \$3 != \"f32\" || \$7 != 0 { bad = 1 } END { exit bad }"' "$rows"
ok "--bench footer" 'echo "$out" | grep -q "^# wrong elements: 0 (verified)$" && echo "$out" | grep -q "^# avg busbw: "' "$out"
first=$(echo "$rows" | head -1 | awk '{ print $1 }'); last=$(echo "$rows" | tail -1 | awk '{ print $1 }')
ok "--bench sizes 1024 .. 65536" '[ "$first" = 1024 ] && [ "$last" = 65536 ]' "$first .. $last"

# Bus bandwidth factors as nccl-tests has them, checked on --json's figures. Both figures are
# rounded when printed, so the ratio is checked against the range the rounding allows: half a
# unit in the last printed digit either way (a slow build, e.g. under ASan, prints small
# bandwidths with few significant digits).
ratio_ok() {   # ratio_ok ALGBW BUSBW WANT: the printed figures, as text
    python3 - "$@" <<'PY'
import sys
from decimal import Decimal
a, b, want = (Decimal(x) for x in sys.argv[1:4])
ha = Decimal(10) ** a.as_tuple().exponent / 2
hb = Decimal(10) ** b.as_tuple().exponent / 2
lo = (b - hb) / (a + ha)
hi = (b + hb) / (a - ha) if a > ha else Decimal("Infinity")
sys.exit(not (lo <= want <= hi))
PY
}
factor() {   # the algbw and busbw of a 64K run, as printed
    run "$1" -n 4 --backend sim --size 64K --json --iters 3 2>/dev/null |
        python3 -c 'import json, sys; r = json.load(sys.stdin, parse_float=str)["results"][0]; print(r["algbw_gbs"], r["busbw_gbs"])'
}
ok "the ratio check allows for rounding: 0.0035 and 0.0053 printed fit 1.5" 'ratio_ok 0.0035 0.0053 1.5'
ok "the ratio check still fails a wrong factor: 0.0035 and 0.0053 do not fit 0.75" '! ratio_ok 0.0035 0.0053 0.75'
f=$(factor stdlib/allgather_ring.cdsl)
ok "allgather busbw = algbw * (n-1)/n" 'ratio_ok $f 0.75' "$f"
f=$(factor stdlib/reducescatter_nvls.cdsl)
ok "reducescatter busbw = algbw * (n-1)/n" 'ratio_ok $f 0.75' "$f"
f=$(factor stdlib/allreduce_nvls.cdsl)
ok "allreduce busbw = algbw * 2(n-1)/n" 'ratio_ok $f 1.5' "$f"
out=$(run stdlib/allreduce_nvls.cdsl -n 4 --backend sim --bench --sizes 64K:64K --iters 2 --warmup 0 2>&1)
ok "--bench names the warmup and timed runs" 'echo "$out" | grep -q "0 warmup + 2 timed runs per size"' "$out"

# Sweeps at -n 3 round each size down to a multiple of 12 bytes (3 chunks of 4-byte words).
out=$(run stdlib/allgather_nvls.cdsl -n 3 --backend sim --bench --sizes 1K:16K:4 --no-check 2>/dev/null)
sizes=$(echo "$out" | grep -v '^#' | awk '{ printf "%s ", $1 }')
ok "--sizes 1K:16K:4 at -n 3: 1020 4092 16380" '[ "$sizes" = "1020 4092 16380 " ]' "$sizes"
ok "--no-check rows say N/A" '[ "$(echo "$out" | grep -v "^#" | awk "{ print \$7 }" | sort -u)" = N/A ]' "$out"

# A barrier moves no data: one row of size 0, count 0 and no bandwidth, whatever the sizes asked.
out=$(run stdlib/barrier_switch.cdsl -n 4 --backend sim --bench --sizes 1K:64M --iters 2 --warmup 0 2>&1)
rows=$(echo "$out" | grep -v '^#')
ok "a barrier: one row, size 0, count 0, algbw and busbw 0" \
    '[ "$(echo "$rows" | wc -l)" = 1 ] && echo "$rows" | grep -qE "^ +0 +0 +f32 +[0-9.]+ +0\.00 +0\.00 +N/A$"' "$out"
json=$(run stdlib/barrier_switch.cdsl -n 4 --backend sim --json 2>&1)
ok "a barrier in --json: size 0, no bandwidth" \
    'echo "$json" | python3 -c "import json, sys; r = json.load(sys.stdin)[\"results\"]; sys.exit(not (len(r) == 1 and [r[0][k] for k in (\"size\", \"count\", \"algbw_gbs\", \"busbw_gbs\")] == [0, 0, 0, 0]))"' "$json"

# Plain runs: one summary line per size.
out=$(run stdlib/allgather_ring.cdsl -n 2 --backend sim --sizes 4K:16K 2>&1)
ok "a sweep without --bench: one summary per size" '[ "$(echo "$out" | grep -c ": verified (2 ranks x 2 chunks)")" = 3 ]' "$out"
out=$(run stdlib/reducescatter_nvls.cdsl -n 4 --backend sim --size 64K 2>&1)
ok "reducescatter: the size is the input, as nccl-tests counts it" \
    'echo "$out" | grep -q "^reducescatter_nvls: 4 ranks, sim, f32, 64 KiB: verified (4 ranks x 1 chunk)$"' "$out"

# --json: one object that python parses, with the facts of the run.
json=$(run stdlib/allreduce_twoshot.cdsl -n 4 --backend sim --sizes 4K:16K --json --dtype bf16 2>&1); rc=$?
ok "--json exits 0" '[ $rc = 0 ]' "$json"
ok "--json parses" 'echo "$json" | python3 -m json.tool >/dev/null' "$json"
facts=$(echo "$json" | python3 -c '
import json, sys
j = json.load(sys.stdin)
r = j["results"]
print(j["program"], j["collective"], j["nranks"], j["backend"], j["dtype"], j["status"], j["exit"],
      len(r), r[0]["size"], r[0]["count"], r[0]["chunk_bytes"], r[-1]["size"], sum(x["wrong"] for x in r),
      all(x["result"] == "verified" for x in r))' 2>&1)
ok "--json facts" '[ "$facts" = "allreduce_twoshot allreduce 4 sim bf16 ok 0 3 4096 2048 1024 16384 0 True" ]' "$facts"
json=$(run stdlib/allgather_ring.cdsl -n 2 --unchecked --size 1K --json 2>/dev/null)
ok "--json parses for an unchecked run too" 'echo "$json" | python3 -m json.tool >/dev/null' "$json"
json=$(cd /tmp && timeout 60 "$CDSLRUN" "$PWD/no such file.cdsl" -n 2 --json 2>/dev/null); rc=$?
ok "--json after a failure: parses, says why, exit matches" \
    'echo "$json" | python3 -c "import json,sys; j=json.load(sys.stdin); sys.exit(not (j[\"exit\"] == $rc and j[\"status\"] != \"ok\" and j[\"results\"] == []))"' "$json"

out=$(run --help); rc=$?
ok "--help exits 0 and lists every option" '[ $rc = 0 ] && for o in --program -D -I --backend --size --sizes --dtype --iters --warmup --check --no-check --bench --json --ranks-per-gpu --seed --jitter --spin-limit --unchecked --in-place; do echo "$out" | grep -q -- " $o" || exit 1; done' "$out"
out=$(run --version); rc=$?
ok "--version" '[ $rc = 0 ] && echo "$out" | grep -qE "^cdslrun [0-9]+\.[0-9]+"' "$out"
# --json longer than stdout's buffer (24 rows) to /dev/full: jansson's write fails, and that is
# said as a write error, once, not as running out of memory.
err=$(run examples/allgather.cdsl -n 2 --backend sim --sizes 8:16M --json 2>&1 >/dev/full); rc=$?
ok "--json of 24 rows to /dev/full: exit 3, a write error said once" \
    '[ $rc = 3 ] && [ "$(echo "$err" | grep -c "cannot write to standard output: No space left")" = 1 ] && ! echo "$err" | grep -q "out of memory"' \
    "exit $rc: $err"
[ $failures = 0 ]
