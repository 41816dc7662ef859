#!/bin/bash
# The JIT cache's key describes the NVRTC that actually compiled. A stand-in
# libnvrtc.so (tests/emit/standin_nvrtc.c, soname libnvrtc.so.13) is preloaded, so dlopen returns
# it as it would an NVRTC the host application had loaded already; its output is 81 bytes of
# text. A plain run afterwards must compile with the real NVRTC, not be served the stand-in's
# entry; two stand-ins of the same version get an entry each; and a stand-in too old for the
# program is refused even though the cache holds a good entry for the same source.
# [SKIP] when the real NVRTC or a C compiler is missing.
suite=cache_nvrtc
source "$(dirname "$0")/cache_lib.bash"
prog=stdlib/allgather_nvls.cdsl   # the nvls flavour needs NVRTC 12.1 or newer
export CDSL_CACHE_DIR=$tmp/cache

compile() {   # compile OUT [env...]: the PTX into OUT, messages into OUT.log; returns cdslc's status
    local out=$1; shift
    env "$@" "$cdslc" "$prog" -n 2 --backend nvls --emit-ptx -o "$out" 2>"$out.log"
}
standin() {   # standin DIR MAJOR MINOR TAG: build one into DIR/libnvrtc.so.13
    mkdir -p "$1" && ${CC:-cc} -shared -fPIC -O1 -o "$1/libnvrtc.so.13" -Wl,-soname,libnvrtc.so.13 \
        -DSTANDIN_MAJOR="$2" -DSTANDIN_MINOR="$3" -DSTANDIN_TAG="'$4'" tests/emit/standin_nvrtc.c
}

if ! compile "$tmp/probe" CDSL_NO_CACHE=1; then
    grep -q "was not found" "$tmp/probe.log" && { skip "libnvrtc not found"; exit 0; }
    fail "the real NVRTC does not compile $prog: $(head -3 "$tmp/probe.log" | tr '\n' ' ')"; exit 1
fi
grep -q '^\.target' "$tmp/probe" || { fail "the real NVRTC's PTX has no .target line"; exit 1; }
if ! standin "$tmp/a" 13 0 A || ! standin "$tmp/b" 13 0 B || ! standin "$tmp/old" 11 8 O; then
    skip "cannot build the stand-in NVRTC with ${CC:-cc}"; exit 0
fi

compile "$tmp/standin" LD_PRELOAD="$tmp/a/libnvrtc.so.13"
if [ "$(head -c 26 "$tmp/standin")" = "// stand-in NVRTC output A" ] && [ "$(wc -c <"$tmp/standin")" = 80 ]; then
    pass "a preloaded stand-in NVRTC is the one that compiles"
else
    fail "the preloaded stand-in was not used: $(head -c 80 "$tmp/standin"; cat "$tmp/standin.log")"
fi

compile "$tmp/plain"
if cmp -s "$tmp/probe" "$tmp/plain" && grep -q "cache miss" "$tmp/plain.log"; then
    pass "a plain run after a preloaded one compiles with the real NVRTC, not the stand-in's entry"
else
    fail "a plain run got: $(head -c 80 "$tmp/plain"; echo; cat "$tmp/plain.log")"
fi

compile "$tmp/plain2" && compile "$tmp/standin2" LD_PRELOAD="$tmp/a/libnvrtc.so.13"
if cmp -s "$tmp/probe" "$tmp/plain2" && grep -q "cache hit" "$tmp/plain2.log" \
    && cmp -s "$tmp/standin" "$tmp/standin2" && grep -q "cache hit" "$tmp/standin2.log"; then
    pass "each NVRTC hits its own entry"
else
    fail "second runs: $(cat "$tmp/plain2.log" "$tmp/standin2.log")"
fi

compile "$tmp/other" LD_PRELOAD="$tmp/b/libnvrtc.so.13"
if [ "$(head -c 26 "$tmp/other")" = "// stand-in NVRTC output B" ] && grep -q "cache miss" "$tmp/other.log"; then
    pass "another library of the same version is another entry"
else
    fail "a second stand-in of the same version got: $(head -c 80 "$tmp/other"; echo; cat "$tmp/other.log")"
fi

if compile "$tmp/tooold" LD_PRELOAD="$tmp/old/libnvrtc.so.13"; then
    fail "NVRTC 11.8 compiled the nvls flavour (or was served a cached entry): $(cat "$tmp/tooold.log")"
elif grep -q "NVRTC 11.8 .* is too old" "$tmp/tooold.log" && ! grep -q "cache hit" "$tmp/tooold.log"; then
    pass "an NVRTC too old for the program is refused before the cache is looked at"
else
    fail "NVRTC 11.8: $(cat "$tmp/tooold.log")"
fi
exit $failed
