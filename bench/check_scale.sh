#!/bin/bash
# Checker scale: full checks (parse, evaluate, rules 1-4) of the spec's allgather_ring and
# allgather_mesh at -n 8, 64 and 256, printing wall time and peak RSS for each.
# Targets (issue 3): ring at -n 64 under 1 s; mesh at -n 256 under 10 s and under 1 GB.
# Asserts nothing (tests never assert on time); it prints the figures and the targets.
set -uo pipefail
cd "$(dirname "$0")/.."
cdslc=${CDSLC:-build/cdslc}
spec=${SHARED:-../shared}/spec/programs
[ -x "$cdslc" ] || { echo "no $cdslc (make first)"; exit 2; }
[ -x /usr/bin/time ] || { echo "no /usr/bin/time (apt-get install time)"; exit 2; }
printf '%-16s %6s %10s %12s  %s\n' program nranks "wall (s)" "peak RSS" verdict
for prog in allgather_ring allgather_mesh; do
    f=$spec/$prog.cdsl
    [ -f "$f" ] || f=stdlib/$prog.cdsl
    for n in 8 64 256; do
        out=$(/usr/bin/time -f '%e %M' "$cdslc" "$f" -n "$n" 2>&1 >/dev/null); rc=$?
        read -r wall rss <<<"$(echo "$out" | tail -1)"
        verdict=accepted; [ $rc = 0 ] || verdict="exit $rc: $(echo "$out" | head -1)"
        printf '%-16s %6d %10s %9.1f MB  %s\n' "$prog" "$n" "$wall" "$(awk -v k="$rss" 'BEGIN { print k / 1024 }')" "$verdict"
    done
done
echo "targets: allgather_ring -n 64 < 1 s; allgather_mesh -n 256 < 10 s and < 1024 MB"
