#!/bin/bash
# Builds tests/unit/emit_unit.c with the emitter, SHA-256 and the NVRTC loader under ASan and
# UBSan (no front end needed) and runs it; it prints one [PASS]/[FAIL] line per test.
cd "$(dirname "$0")/../.." || exit 1
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
src="tests/unit/emit_unit.c compiler/arena.c compiler/diag.c compiler/escape.c compiler/ir.c compiler/colls.c compiler/emit_cuda.c
     compiler/emit_fence.c compiler/emit_headers.c compiler/emit_plan.c build/gen/device_headers.c
     compiler/emit_packets.c compiler/emit_buf.c compiler/emit_target.c compiler/packet_layout.c
     compiler/order.c compiler/runs.c runtime/names.c
     runtime/sha256.c runtime/nvrtc.c"
# shellcheck disable=SC2086
if ! ${CC:-cc} -std=c11 -Wall -Wextra -Wpedantic -Werror -Wno-unused-parameter -D_GNU_SOURCE -g -O1 \
        -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
        -Icompiler -Iruntime -o "$out/emit_unit" $src -ljansson -ldl -lpthread 2>"$out/cc.log"; then
    echo "[FAIL] emit_unit: does not build"; cat "$out/cc.log"; exit 1
fi
# NVRTC's own allocations are not ours to check for leaks.
ASAN_OPTIONS=detect_leaks=0 "$out/emit_unit"
