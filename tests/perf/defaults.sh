#!/bin/bash
# tests/perf/defaults.sh - cdsl-perf's defaults read the same in --help, the header and the -F
# JSON, and the warm-up it rounds up is said beside them, not in their place:
# 1. at the defaults: --help's "-n ... (default N)" and "-w ... (default W)", the header's
#    "warmup iters: W iters: N" and the JSON's warmup_iters W and iterations N agree;
# 2. -w 5 -n 20 (rounded up to one call of 20 runs): the header and the JSON give -w as asked
#    (5), and say the 20 runs made on a line of their own / in warmup_runs.
source "$(dirname "$0")/../lib/common.bash"
PERF=${CDSL_PERF:-build/cdsl-perf}
need python3 python3 || exit 0

help=$("$PERF" --help)
hn=$(echo "$help" | sed -n 's/^ *-n, --iters N .*(default \([0-9]*\)).*/\1/p')
hw=$(echo "$help" | sed -n 's/^ *-w, --warmup_iters N .*(default \([0-9]*\)).*/\1/p')
"$PERF" --nranks 2 -b 1K -e 1K -F "$tmp/d.json" allgather_ring >"$tmp/d.log" 2>&1
head=$(grep -o "warmup iters: [0-9]* iters: [0-9]*" "$tmp/d.log")
json=$(python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["config"]; print(c["warmup_iters"], c["iterations"])' "$tmp/d.json" 2>&1)
if [ -n "$hn" ] && [ -n "$hw" ] && [ "$head" = "warmup iters: $hw iters: $hn" ] && [ "$json" = "$hw $hn" ]; then
    pass "the defaults agree: --help -w $hw -n $hn, the header, the JSON"
else
    fail "the defaults agree in --help, the header and the JSON" "help -w '$hw' -n '$hn'; header '$head'; JSON '$json'"
fi

"$PERF" --nranks 2 -b 1K -e 1K -w 5 -n 20 -F "$tmp/w.json" allgather_ring >"$tmp/w.log" 2>&1
json=$(python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["config"]; print(c["warmup_iters"], c.get("warmup_runs"))' "$tmp/w.json" 2>&1)
if grep -q "warmup iters: 5 iters: 20" "$tmp/w.log" && [ "$json" = "5 20" ] &&
   grep -qx "# cdsl: -w 5 warms up with 20 runs: whole calls of 20 runs, as the timed ones" "$tmp/w.log"; then
    pass "-w 5 -n 20: -w as asked in the header and the JSON, the 20 runs made beside it"
else
    fail "-w 5 -n 20: -w as asked, the runs made beside it" "$(grep "nThread\|warms" "$tmp/w.log") JSON: $json"
fi
exit $((failures > 0))
