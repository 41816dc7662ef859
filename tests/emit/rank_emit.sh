#!/bin/bash
# tests/emit/rank_emit.sh - cdslc --rank R: one rank's device code, what one process per GPU loads.
#
# 1. Usage errors (exit 2, a message that names the problem): R out of range (R = nranks and
#    a negative R), R not a number, --rank without --emit-cuda/--emit-ptx/--emit-cubin (alone
#    and with --dump-ir).
# 2. The checker still checks every rank: a program whose race is between other ranks fails
#    with --rank 0 as it does without it.
# 3. For every stdlib program at -n 4, both flavours, every rank R: the --rank R source holds
#    rank_R() and no other rank's function, and its rank_R() and rank_R_leave() are
#    byte for byte the ones in the every-rank source.
# 4. With NVRTC: --emit-ptx and --emit-cubin --rank compile (the PTX has cdsl_main), and the
#    cubin differs from the every-rank one.
cd "$(dirname "$0")/../.." || exit 1
cdslc=${CDSLC:-./build/cdslc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
export CDSL_CACHE_DIR=$tmp/cache
unset CDSL_NO_CACHE

pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; }

# usage NAME PATTERN ARGS...: exit 2 and the message
usage() {
    local name=$1 pat=$2 out rc; shift 2
    out=$("$cdslc" "$@" 2>&1); rc=$?
    if [ "$rc" != 2 ]; then fail "$name" "exit $rc, wanted 2: $out"
    elif ! echo "$out" | grep -qE -- "$pat"; then fail "$name" "no '$pat' in: $out"
    else pass "$name"; fi
}

ag=stdlib/allgather_mesh.cdsl
usage "--rank out of range" "--rank 4: there is no such rank at -n 4 \(ranks are 0 to 3\)" $ag -n 4 --emit-cuda --rank 4
usage "--rank negative" "--rank -1: there is no such rank at -n 4" $ag -n 4 --emit-ptx --rank -1
usage "--rank not a number" "--rank expects a rank number, not 'x'" $ag -n 4 --emit-cuda --rank x
usage "--rank without a value" "--rank needs a value" $ag -n 4 --emit-cuda --rank
usage "--rank without an emit option" "--rank 1 selects one rank's device code: it needs --emit-cuda, --emit-ptx or --emit-cubin" \
    $ag -n 4 --rank 1
usage "--rank with --dump-ir" "needs --emit-cuda, --emit-ptx or --emit-cubin" $ag -n 4 --dump-ir --rank 1

# 2. every rank is checked
race=tests/check/race_leave_while_read.cdsl
want=$("$cdslc" $race -n 2 2>&1)
got=$("$cdslc" $race -n 2 --emit-cuda --rank 0 2>&1); rc=$?
if [ "$rc" = 1 ] && [ "$got" = "$want" ] && echo "$got" | grep -q "data race"; then
    pass "--rank 0 still reports the race the whole program has"
else
    fail "--rank 0 still reports the race the whole program has" "exit $rc: $(echo "$got" | head -2)"
fi

# 3. the same code as in the every-rank source (but the #line that returns to the emitted
#    file's own numbering: its line number and file name are the file's)
section() { sed -n "/^__device__ bool rank_$2(/,/^}/p; /^__device__ void rank_$2_leave(/,/^}/p" "$1" | grep -v '^#line [0-9]* ".*\.cu"$'; }
bad=0 count=0
for f in stdlib/*.cdsl; do
    for b in p2p nvls; do
        "$cdslc" "$f" -n 4 --emit-cuda --backend $b -o "$tmp/all.cu" 2>/dev/null || continue
        for r in 0 1 2 3; do
            count=$((count + 1))
            if ! "$cdslc" "$f" -n 4 --emit-cuda --backend $b --rank $r -o "$tmp/one.cu" 2>"$tmp/err"; then
                fail "$(basename "$f") $b --rank $r" "$(head -2 "$tmp/err")"; bad=1; continue
            fi
            others=$(grep -c "^__device__ bool rank_" "$tmp/one.cu")
            if [ "$others" != 1 ] || ! grep -q "^__device__ bool rank_$r(" "$tmp/one.cu"; then
                fail "$(basename "$f") $b --rank $r" "$others rank functions"; bad=1
            elif ! diff <(section "$tmp/all.cu" $r) <(section "$tmp/one.cu" $r) >/dev/null; then
                fail "$(basename "$f") $b --rank $r" "rank_$r differs from the every-rank source"; bad=1
            fi
        done
    done
done
[ $bad = 0 ] && [ $count -gt 40 ] && pass "every stdlib program, both flavours, every rank: the same code as in the whole source ($count)"
[ $count -gt 40 ] || fail "stdlib sources" "only $count combinations emitted"

# 4. NVRTC
probe=$("$cdslc" $ag -n 2 --emit-ptx --rank 0 2>&1 >/dev/null)
if echo "$probe" | grep -q "NVRTC (libnvrtc.so) was not found"; then
    echo "[SKIP] --rank through NVRTC: libnvrtc not found"
    exit 0
fi
if "$cdslc" $ag -n 8 --emit-ptx --rank 3 -o "$tmp/r.ptx" 2>"$tmp/err" && grep -q "cdsl_main" "$tmp/r.ptx"; then
    pass "--emit-ptx --rank 3"
else
    fail "--emit-ptx --rank 3" "$(head -3 "$tmp/err")"
fi
if "$cdslc" $ag -n 8 --emit-cubin --rank 3 -o "$tmp/r.cubin" 2>"$tmp/err" &&
   "$cdslc" $ag -n 8 --emit-cubin -o "$tmp/all.cubin" 2>>"$tmp/err" && ! cmp -s "$tmp/r.cubin" "$tmp/all.cubin"; then
    pass "--emit-cubin --rank 3 is its own cubin"
else
    fail "--emit-cubin --rank 3 is its own cubin" "$(head -3 "$tmp/err")"
fi
