#!/bin/bash
# The JIT cache (runtime/jit/cache.c) through cdslc --emit-cubin: a second compile hits, a
# corrupted or truncated entry is detected and recompiled, CDSL_NO_CACHE=1 bypasses the cache,
# an unusable cache folder is not an error, concurrent compiles leave one whole entry, and the
# folder falls back to $XDG_CACHE_HOME/cdsl and ~/.cache/cdsl. [SKIP] when NVRTC is missing.
cd "$(dirname "$0")/../.." || exit 1
cdslc=${CDSLC:-./build/cdslc}
prog=stdlib/allgather_nvls.cdsl
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
unset CDSL_NO_CACHE XDG_CACHE_HOME CDSL_CACHE_MAXSIZE CUDA_CACHE_MAXSIZE
export CDSL_CACHE_VERBOSE=1 CDSL_CACHE_DIR=$tmp/cache

compile() {   # compile OUT [env...]: the cubin into OUT, cache messages into OUT.log
    local out=$1; shift
    env "$@" "$cdslc" "$prog" -n 4 --backend nvls --emit-cubin --arch sm_90 -o "$out" 2>"$out.log"
}
pass() { echo "[PASS] cache: $1"; }
fail() { echo "[FAIL] cache: $1"; failed=1; }
failed=0

if ! compile "$tmp/first"; then
    if grep -q "was not found" "$tmp/first.log"; then echo "[SKIP] cache: libnvrtc not found"; exit 0; fi
    fail "first compile failed: $(head -3 "$tmp/first.log" | tr '\n' ' ')"; exit 1
fi
entry=$(ls "$tmp/cache"/*.cubin 2>/dev/null | head -1)
grep -q "cache miss" "$tmp/first.log" && [ -n "$entry" ] && pass "first compile misses and stores an entry" \
    || fail "first compile: $(cat "$tmp/first.log")"

compile "$tmp/second"
grep -q "cache hit" "$tmp/second.log" && cmp -s "$tmp/first" "$tmp/second" && pass "second compile hits, same cubin" \
    || fail "second compile: $(cat "$tmp/second.log")"

# Flip one payload byte (the header is 112 bytes).
printf '\xff' | dd of="$entry" bs=1 seek=200 conv=notrunc status=none
compile "$tmp/third"
grep -q "corrupt entry, recompiling" "$tmp/third.log" && cmp -s "$tmp/first" "$tmp/third" \
    && pass "a corrupted entry is detected and recompiled" || fail "corrupt entry: $(cat "$tmp/third.log")"
compile "$tmp/fourth"
grep -q "cache hit" "$tmp/fourth.log" && pass "the recompiled entry replaced the corrupt one" \
    || fail "after recompiling: $(cat "$tmp/fourth.log")"

truncate -s 60 "$entry"
compile "$tmp/fifth"
grep -q "corrupt entry" "$tmp/fifth.log" && cmp -s "$tmp/first" "$tmp/fifth" \
    && pass "a truncated entry is detected and recompiled" || fail "truncated entry: $(cat "$tmp/fifth.log")"

before=$(ls "$tmp/cache" | wc -l)
compile "$tmp/nocache" CDSL_NO_CACHE=1 CDSL_CACHE_DIR="$tmp/cache2"
! grep -q "cache hit\|cache miss" "$tmp/nocache.log" && [ ! -e "$tmp/cache2" ] && cmp -s "$tmp/first" "$tmp/nocache" \
    && [ "$(ls "$tmp/cache" | wc -l)" = "$before" ] && pass "CDSL_NO_CACHE=1 bypasses the cache" \
    || fail "CDSL_NO_CACHE: $(cat "$tmp/nocache.log")"

touch "$tmp/a_file"
if compile "$tmp/badcache" CDSL_CACHE_DIR="$tmp/a_file/sub" && grep -q "cache off" "$tmp/badcache.log" \
    && cmp -s "$tmp/first" "$tmp/badcache"; then pass "an unusable cache folder only turns caching off"
else fail "unusable folder: $(cat "$tmp/badcache.log")"; fi

rm -rf "$tmp/cache3"
for i in 1 2 3 4 5 6; do compile "$tmp/par$i" CDSL_CACHE_DIR="$tmp/cache3" & done; wait
ok=1
for i in 1 2 3 4 5 6; do cmp -s "$tmp/first" "$tmp/par$i" || ok=0; done
[ "$(ls "$tmp/cache3" | grep -c '\.cubin$')" = 1 ] && [ "$(ls "$tmp/cache3" | grep -c tmp)" = 0 ] || ok=0
compile "$tmp/parcheck" CDSL_CACHE_DIR="$tmp/cache3"
grep -q "cache hit" "$tmp/parcheck.log" || ok=0
[ $ok = 1 ] && pass "six concurrent compiles: one whole entry, no temporary files left" \
    || fail "concurrent compiles: $(ls "$tmp/cache3")"

compile "$tmp/xdg" -u CDSL_CACHE_DIR XDG_CACHE_HOME="$tmp/xdg_home"
ls "$tmp/xdg_home/cdsl"/*.cubin >/dev/null 2>&1 && pass "falls back to \$XDG_CACHE_HOME/cdsl" \
    || fail "XDG fallback: $(cat "$tmp/xdg.log")"
compile "$tmp/home" -u CDSL_CACHE_DIR -u XDG_CACHE_HOME HOME="$tmp/home_dir"
ls "$tmp/home_dir/.cache/cdsl"/*.cubin >/dev/null 2>&1 && pass "falls back to ~/.cache/cdsl" \
    || fail "HOME fallback: $(cat "$tmp/home.log")"

# A different architecture or artifact is a different entry.
"$cdslc" "$prog" -n 4 --backend nvls --emit-ptx -o "$tmp/ptx" 2>"$tmp/ptx.log"
grep -q "cache miss" "$tmp/ptx.log" && pass "PTX and cubin are different entries" || fail "PTX: $(cat "$tmp/ptx.log")"
exit $failed
