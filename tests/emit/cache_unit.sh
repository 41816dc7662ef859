#!/bin/bash
# Builds tests/unit/cache_unit.c with the JIT cache (runtime/jit/cache.c, sha256.c) under ASan and
# UBSan and runs it; no NVRTC needed. It prints one [PASS]/[FAIL] line per test.
cd "$(dirname "$0")/../.." || exit 1
source tests/lib/includes.bash
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
if ! ${CC:-cc} -std=c11 -Wall -Wextra -Wpedantic -Werror -Wshadow -D_GNU_SOURCE -g -O1 \
        -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer $CDSL_INCLUDES \
        -o "$out/cache_unit" tests/unit/cache_unit.c runtime/jit/cache.c runtime/jit/sha256.c 2>"$out/cc.log"; then
    echo "[FAIL] cache_unit: does not build"; cat "$out/cc.log"; exit 1
fi
"$out/cache_unit"
