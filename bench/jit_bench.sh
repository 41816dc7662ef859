#!/bin/bash
# JIT compile time of cdslc --emit-cubin: cold (empty cache: emit + NVRTC + store) and warm
# (cache hit: emit + key + verified read), median of several runs each, for the spec's
# allgather_nvls (and allreduce_nvls, allgather_ring) at -n 8. Targets: cold < 1 s, warm < 20 ms.
# Prints figures only; it asserts nothing.
cd "$(dirname "$0")/.." || exit 1
cdslc=${CDSLC:-./build/cdslc}
spec=${SPEC_DIR:-tests/spec}
runs=${RUNS:-5}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
unset CDSL_NO_CACHE CDSL_CACHE_VERBOSE

ms() { echo $(( ($2 - $1) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

once() {   # once CACHE_DIR PROGRAM BACKEND: milliseconds of one compile
    local t0 t1
    t0=$(date +%s%N)
    CDSL_CACHE_DIR=$1 "$cdslc" "$2" -n 8 --backend "$3" --dtype f32 --emit-cubin --arch sm_90 \
        -o "$tmp/out.cubin" 2>"$tmp/err" || { echo "compile failed: $(head -3 "$tmp/err")" >&2; return 1; }
    t1=$(date +%s%N)
    ms "$t0" "$t1"
}

printf '%-16s %-5s %10s %10s %10s\n' program flavour "cold ms" "warm ms" "cubin KB"
for pb in allgather_nvls:nvls allreduce_nvls:nvls allgather_ring:p2p allgather_nvls:p2p; do
    p=${pb%%:*} b=${pb##*:}
    cold=$(for i in $(seq "$runs"); do once "$tmp/cold$i.$p.$b" "$spec/$p.cdsl" "$b"; done | median)
    once "$tmp/warm.$p.$b" "$spec/$p.cdsl" "$b" >/dev/null
    warm=$(for i in $(seq "$runs"); do once "$tmp/warm.$p.$b" "$spec/$p.cdsl" "$b"; done | median)
    kb=$(( $(stat -c %s "$tmp/out.cubin") / 1024 ))
    printf '%-16s %-5s %10s %10s %10s\n' "$p" "$b" "$cold" "$warm" "$kb"
done
echo "(-n 8, f32, sm_90, median of $runs; targets: cold < 1000 ms, warm < 20 ms)"
