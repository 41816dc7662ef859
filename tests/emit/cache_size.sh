#!/bin/bash
# The JIT cache's housekeeping: stale temporary files of interrupted stores
# are removed and fresh ones (a store under way) kept; a size cap (CDSL_CACHE_MAXSIZE, else
# CUDA_CACHE_MAXSIZE, in bytes) evicts the least recently used entries; an entry larger than the
# cap is not stored; `cdslc --cache-clean` removes the cache's own files and nothing else, and
# refuses a folder that others can write. [SKIP] when NVRTC is missing.
suite=cache_size
source "$(dirname "$0")/cache_lib.bash"
prog=stdlib/barrier_switch.cdsl

compile() {   # compile DIR N [env...]: PTX of the program at -n N, cache folder DIR; log in DIR.log
    local dir=$1 n=$2; shift 2
    env CDSL_CACHE_DIR="$dir" "$@" timeout 60 "$cdslc" "$prog" -n "$n" --emit-ptx -o "$tmp/out" 2>"$dir.log"
}
size_of() { stat -c %s "$1"; }

if ! compile "$tmp/probe" 2; then
    grep -q "was not found" "$tmp/probe.log" && { skip "libnvrtc not found"; exit 0; }
    fail "first compile: $(head -3 "$tmp/probe.log" | tr '\n' ' ')"; exit 1
fi

# ---- stale temporary files -------------------------------------------------------------------
d=$tmp/tmpfiles
compile "$d" 2
hex=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
touch -d '-1 hour' "$d/$hex.ptx.tmp.AbC123" "$d/notes.tmp.AbC123"
touch "$d/$hex.cubin.tmp.XyZ789"
compile "$d" 2
if [ ! -e "$d/$hex.ptx.tmp.AbC123" ] && [ -e "$d/$hex.cubin.tmp.XyZ789" ] && [ -e "$d/notes.tmp.AbC123" ] \
    && grep -q "cache hit" "$d.log"; then
    pass "a stale temporary file is removed; a fresh one, and a file not ours, are kept"
else
    fail "temporary files: $(ls -A "$d" | tr '\n' ' '): $(cat "$d.log")"
fi

# ---- the size cap ----------------------------------------------------------------------------
# Entries A (-n 2), B (-n 3), C (-n 4). A is used again after B is stored, so B is the least
# recently used when C arrives under a cap that fits A and C but not all three.
compile "$tmp/sizes" 4; size_c=$(size_of "$(entry_of "$tmp/sizes")")
lru() {   # lru DIR [env...]: prints the -n of the entries left
    local dir=$1; shift
    rm -rf "$dir"
    compile "$dir" 2; local a; a=$(entry_of "$dir")
    compile "$dir" 3; local b; b=$(entry_of "$dir")
    touch -d '-2 hours' "$a"; touch -d '-1 hour' "$b"
    compile "$dir" 2
    local cap=$(($(size_of "$a") + size_c))
    compile "$dir" 4 "${@//CAP/$cap}"; local c; c=$(entry_of "$dir")
    for f in "$a:2" "$b:3" "$c:4"; do [ -e "${f%:*}" ] && printf '%s ' "${f##*:}"; done
}
left=$(lru "$tmp/lru" CDSL_CACHE_MAXSIZE=CAP)
[ "$left" = "2 4 " ] && grep -q "evicted" "$tmp/lru.log" \
    && pass "CDSL_CACHE_MAXSIZE evicts the least recently used entry" \
    || fail "CDSL_CACHE_MAXSIZE: entries left for -n: '$left': $(cat "$tmp/lru.log")"
left=$(lru "$tmp/cuda" CUDA_CACHE_MAXSIZE=CAP)
[ "$left" = "2 4 " ] && pass "CUDA_CACHE_MAXSIZE is honoured" || fail "CUDA_CACHE_MAXSIZE: entries left for -n: '$left'"
left=$(lru "$tmp/both" CUDA_CACHE_MAXSIZE=CAP CDSL_CACHE_MAXSIZE=100000000)
[ "$left" = "2 3 4 " ] && pass "CDSL_CACHE_MAXSIZE takes precedence over CUDA_CACHE_MAXSIZE" \
    || fail "both caps: entries left for -n: '$left'"

rm -rf "$tmp/small"
compile "$tmp/small" 2 CDSL_CACHE_MAXSIZE=100; rc=$?
[ $rc = 0 ] && [ -z "$(ls -A "$tmp/small")" ] && pass "an entry larger than the cap is not stored" \
    || fail "cap of 100 bytes: exit $rc, folder: $(ls -A "$tmp/small")"

# ---- cdslc --cache-clean ---------------------------------------------------------------------
d=$tmp/clean
compile "$d" 2 && compile "$d" 3
touch "$d/$hex.ptx.tmp.AbC123" "$d/README" "$d/$hex.txt"
ln -s /etc/hostname "$d/$hex.cubin"
CDSL_CACHE_DIR=$d "$cdslc" --cache-clean >"$tmp/clean.out" 2>"$tmp/clean.err"; rc=$?
left=$(ls -A "$d" | sort | tr '\n' ' ')
if [ $rc = 0 ] && [ "$left" = "$hex.cubin $hex.txt README " ] && [ "$(grep -c '^removed ' "$tmp/clean.out")" = 3 ] \
    && grep -q "^3 files, [0-9]* bytes removed from $d" "$tmp/clean.out"; then
    pass "--cache-clean removes the entries and temporary files, and nothing else"
else
    fail "--cache-clean: exit $rc, left '$left': $(cat "$tmp/clean.out" "$tmp/clean.err")"
fi
CDSL_CACHE_DIR=$d "$cdslc" --cache-clean >"$tmp/clean2.out" 2>&1 && grep -q "^0 files, 0 bytes removed" "$tmp/clean2.out" \
    && pass "--cache-clean on an empty cache removes nothing and exits 0" || fail "second clean: $(cat "$tmp/clean2.out")"
CDSL_CACHE_DIR=$tmp/never "$cdslc" --cache-clean >"$tmp/clean3.out" 2>&1; rc=$?
[ $rc = 0 ] && [ ! -e "$tmp/never" ] && pass "--cache-clean of a folder that does not exist creates nothing" \
    || fail "missing folder: exit $rc: $(cat "$tmp/clean3.out")"

d=$tmp/open
mkdir -m 1777 "$d"
touch "$d/$hex.ptx"
CDSL_CACHE_DIR=$d "$cdslc" --cache-clean >"$tmp/clean4.out" 2>"$tmp/clean4.err"; rc=$?
[ $rc = 1 ] && [ -e "$d/$hex.ptx" ] && grep -q "error: .*$d.* writable by other users" "$tmp/clean4.err" \
    && pass "--cache-clean refuses a folder that others can write" \
    || fail "--cache-clean on a 1777 folder: exit $rc: $(cat "$tmp/clean4.out" "$tmp/clean4.err")"

"$cdslc" --help | grep -q -- "--cache-clean" && "$cdslc" --help | grep -q "CDSL_CACHE_MAXSIZE" \
    && pass "--help lists --cache-clean and CDSL_CACHE_MAXSIZE" || fail "--help lacks --cache-clean or CDSL_CACHE_MAXSIZE"
exit $failed
