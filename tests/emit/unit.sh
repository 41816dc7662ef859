#!/bin/bash
# Builds tests/unit/emit_unit.c with the emitter, SHA-256 and the NVRTC loader under ASan and
# UBSan (no front end needed) and runs it; it prints one [PASS]/[FAIL] line per test.
cd "$(dirname "$0")/../.." || exit 1
source tests/lib/includes.bash
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
src="tests/unit/emit_unit.c compiler/util/arena.c compiler/util/diag.c compiler/util/escape.c compiler/ir/ir.c
     compiler/ir/colls.c compiler/emit/emit_cuda.c compiler/emit/emit_fence.c compiler/emit/emit_headers.c
     compiler/emit/emit_plan.c compiler/emit/emit_port.c build/gen/device_headers.c compiler/emit/emit_packets.c
     compiler/emit/emit_buf.c
     compiler/emit/emit_target.c compiler/lower/packet_layout.c compiler/lower/order.c compiler/check/chunk_runs.c
     runtime/api/names.c runtime/jit/sha256.c runtime/jit/nvrtc.c"
# shellcheck disable=SC2086
if ! ${CC:-cc} -std=c11 -Wall -Wextra -Wpedantic -Werror -Wno-unused-parameter -D_GNU_SOURCE -g -O1 \
        -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
        $CDSL_INCLUDES -o "$out/emit_unit" $src -ljansson -ldl -lpthread 2>"$out/cc.log"; then
    echo "[FAIL] emit_unit: does not build"; cat "$out/cc.log"; exit 1
fi
# NVRTC's own allocations are not ours to check for leaks.
ASAN_OPTIONS=detect_leaks=0 "$out/emit_unit"
