#!/bin/bash
# Checker scale: full checks (parse, evaluate,
# rules 1-4) of every stdlib program and of generated programs that stress the checker, each run
# as `cdslc FILE -n N [-D ...]` under /usr/bin/time, one table row per (pattern, n): wall time,
# CPU time (user + system: what the machine's load does not inflate), peak RSS, and the
# verdict (accepted, or the exit status and the first error).
#
#   bash bench/check_scale.sh            the whole table (several minutes on 2 cores)
#   bash bench/check_scale.sh oneshot    only the rows whose pattern contains "oneshot"
#   LIMIT=120 MEM_MB=8192 ...            seconds / MiB of address space before a row is cut off
#   PRINT=1 ...                          print the generated programs first
#   CDSLC=path/to/cdslc ...              another build (e.g. the one before a change)
#
# Patterns (generated into a temporary folder):
#   stdlib/*            every stdlib program at n = 64, 256, 1024 (ring and mesh also at 2048
#                       and 4096, to show where -n's limit sits)
#   oneshot_get         allreduce: every rank gets every rank's whole input (nranks*C chunks) into
#                       scratch and adds it to its output, in rank order (n^3 chunk reads in all)
#   oneshot_get_ownfirst  the same starting from its own input: the partial sums then differ on
#                       every rank (n^2 distinct sums of up to n terms: the symbolic values grow
#                       as n^3, which the budget stops)
#   oneshot_switch      allreduce: every rank switch.reduces all nranks*C chunks
#   ... -D chunks=65536 the one-shot reads with 2^16 chunks per rank (the allreduces at n=16,
#                       where their buffers reach the 2^20-chunk limit; oneshot_custom, a custom
#                       collective with C-chunk buffers, up to n=1024)
#   switch_rounds[_race]  rank 0 puts into the last rank, then 1001 switch rounds; in the _race
#                       one no round publishes the put (a race whose explanation crosses them all)
#   chunk_bomb_K        a tiny custom collective with 2^20-chunk buffers and K copies
# Targets: every pattern at n=1024 in under 10 s and under 2 GB.
# Asserts nothing (tests never assert on time); it prints the figures.
set -uo pipefail
cd "$(dirname "$0")/.."
cdslc=${CDSLC:-build/cdslc}
limit=${LIMIT:-120}
mem_mb=${MEM_MB:-8192}
only=${1:-}
[ -x "$cdslc" ] || { echo "no $cdslc (make first)"; exit 2; }
[ -x /usr/bin/time ] || { echo "no /usr/bin/time (apt-get install time)"; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# One-shot allreduce through gets; $1 = name, $2 = "rank" (sum in rank order) or "own".
oneshot_get() {
    local all='0 .. nranks * chunks'
    echo "program $1(chunks = 1) implements allreduce {"
    echo "    scratch tmp[nranks * chunks];"
    echo "    for p in 0 .. nranks { if p != rank { peer(p).signal(relaxed); } }  // my input may be read"
    echo "    for p in 0 .. nranks { if p != rank { peer(p).wait(relaxed); } }"
    if [ "$2" = rank ]; then
        echo "    for p in 0 .. nranks {"
        echo "        if p == rank { copy(tmp[$all], input[$all]); } else { peer(p).get(tmp[$all], input[$all]); }"
        echo "        if p == 0 { copy(output[$all], tmp[$all]); } else { reduce(output[$all], output[$all], tmp[$all]); }"
        echo "    }"
    else
        echo "    copy(output[$all], input[$all]);"
        echo "    for p in 0 .. nranks {"
        echo "        if p != rank { peer(p).get(tmp[$all], input[$all]); reduce(output[$all], output[$all], tmp[$all]); }"
        echo "    }"
    fi
    echo "    for p in 0 .. nranks { if p != rank { peer(p).signal(relaxed); } }  // done reading yours"
    echo "    for p in 0 .. nranks { if p != rank { peer(p).wait(relaxed); } }    // nobody reads mine"
    echo "}"
}
oneshot_get oneshot_get rank >"$dir/oneshot_get.cdsl"
oneshot_get oneshot_get_ownfirst own >"$dir/oneshot_get_ownfirst.cdsl"
cat >"$dir/oneshot_switch.cdsl" <<'EOF'
program oneshot_switch(chunks = 1) implements allreduce {
    switch.signal(relaxed);
    switch.wait(relaxed);
    switch.reduce(output[0 .. nranks * chunks], input[0 .. nranks * chunks]);
    switch.signal(relaxed);
    switch.wait(relaxed);
}
EOF
cat >"$dir/oneshot_custom.cdsl" <<'EOF'
program oneshot_custom(chunks = 1) implements custom {
    input[chunks];
    output[chunks];
    scratch tmp[chunks];
    for p in 0 .. nranks { if p != rank { peer(p).signal(relaxed); } }
    for p in 0 .. nranks { if p != rank { peer(p).wait(relaxed); } }
    for p in 0 .. nranks {
        if p == rank { copy(tmp[0 .. chunks], input[0 .. chunks]); }
        else { peer(p).get(tmp[0 .. chunks], input[0 .. chunks]); }
        if p == 0 { copy(output[0 .. chunks], tmp[0 .. chunks]); }
        else { reduce(output[0 .. chunks], output[0 .. chunks], tmp[0 .. chunks]); }
    }
    for p in 0 .. nranks { if p != rank { peer(p).signal(relaxed); } }
    for p in 0 .. nranks { if p != rank { peer(p).wait(relaxed); } }
}
EOF
# Rank 0 puts into the last rank, then 1001 switch rounds; the first publishes the put (a
# release round), or (the race) none does: the explanation searches from the put to the last
# rank's end through every round.
for v in ok race; do
    order="" name=switch_rounds
    [ $v = race ] && order=relaxed name=switch_rounds_race
    cat >"$dir/$name.cdsl" <<EOF
program $name implements custom {
    input[1];
    output[1];
    switch.signal(relaxed);
    switch.wait(relaxed);
    if rank == 0 { peer(nranks - 1).put(output[0], input[0]); }
    switch.signal($order);
    switch.wait($order);
    for i in 0 .. 1000 { switch.signal(relaxed); switch.wait(relaxed); }
}
EOF
done
# The chunk bomb: K copies of 2^20 chunks (161 bytes for K=10).
for k in 1 10 1000; do
    printf 'program b implements custom{input[1048576];output[1048576];for i in 0..%d{copy(output[0..1048576],input[0..1048576]);}}\n' \
        "$k" >"$dir/chunk_bomb_$k.cdsl"
done
[ -n "${PRINT:-}" ] && head -50 "$dir"/*.cdsl

row() { # pattern file n [extra args]
    local name=$1 f=$2 n=$3; shift 3
    [ -n "$only" ] && [[ "$name $*" != *"$only"* ]] && return
    local out rc wall cpu rss verdict
    out=$(ulimit -v $((mem_mb * 1024)); timeout "$limit" /usr/bin/time -f '%e %U %S %M' "$cdslc" "$f" -n "$n" "$@" 2>&1 >/dev/null)
    rc=$?
    if [ $rc = 124 ]; then
        wall=">$limit" cpu=- rss=- verdict="cut off after $limit s"
    else
        local user sys
        read -r wall user sys rss <<<"$(echo "$out" | tail -1)"
        cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
        rss=$(awk -v k="$rss" 'BEGIN { printf "%.0f", k / 1024 }')
        verdict=accepted
        [ $rc = 0 ] || verdict="exit $rc: $(echo "$out" | grep -m1 -E 'error|memory|signal' | sed 's|^[^ ]*/||' | cut -c1-100)"
    fi
    printf '%-32s %5d %8s %8s %8s  %s\n' "$name${*:+ $*}" "$n" "$wall" "$cpu" "$rss" "$verdict"
}

echo "# $(date -u '+%F %H:%M') $(uname -m), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $cdslc"
printf '%-32s %5s %8s %8s %8s  %s\n' pattern n "wall s" "cpu s" "RSS MB" verdict
for f in stdlib/*.cdsl; do
    name=$(basename "$f" .cdsl)
    ns="64 256 1024"
    case $name in allgather_ring|allgather_mesh) ns="$ns 2048 4096";; esac
    for n in $ns; do row "$name" "$f" "$n"; done
done
for n in 64 256 512 1024; do row oneshot_get "$dir/oneshot_get.cdsl" $n; done
for n in 64 256 512 1024; do row oneshot_get_ownfirst "$dir/oneshot_get_ownfirst.cdsl" $n; done
for n in 64 256 512 1024; do row oneshot_switch "$dir/oneshot_switch.cdsl" $n; done
row oneshot_get "$dir/oneshot_get.cdsl" 16 -D chunks=65536
row oneshot_get_ownfirst "$dir/oneshot_get_ownfirst.cdsl" 16 -D chunks=65536
row oneshot_switch "$dir/oneshot_switch.cdsl" 16 -D chunks=65536
for n in 16 32 1024; do row oneshot_custom "$dir/oneshot_custom.cdsl" $n -D chunks=65536; done
for n in 64 1024; do row switch_rounds "$dir/switch_rounds.cdsl" $n; done
for n in 64 1024; do row switch_rounds_race "$dir/switch_rounds_race.cdsl" $n; done
row chunk_bomb_10 "$dir/chunk_bomb_10.cdsl" 2
row chunk_bomb_1 "$dir/chunk_bomb_1.cdsl" 16
row chunk_bomb_1000 "$dir/chunk_bomb_1000.cdsl" 8
for n in 64 1024; do row chunk_bomb_10 "$dir/chunk_bomb_10.cdsl" $n; done
echo "targets: every pattern at n=1024 in under 10 s and under 2048 MB"
