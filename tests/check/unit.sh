#!/bin/bash
# Builds tests/unit/check_unit.c (the checker on hand-built IR) against libcdsl, and under
# ASan/UBSan against build/asan/libcdsl.a when that exists, and runs it. One [PASS]/[FAIL]
# line per build.
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/includes.bash
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
run() {
    local label=$1 lib=$2; shift 2
    if [ ! -f "$lib" ]; then echo "[SKIP] check_unit ($label): no $lib"; return; fi
    if ! cc -std=c11 -g "$@" $CDSL_INCLUDES -o "$tmp/$label" tests/unit/check_unit.c "$lib" \
            -ljansson -ldl -lpthread -lm 2>"$tmp/$label.log"; then
        echo "[FAIL] check_unit ($label): does not build"; cat "$tmp/$label.log"; return
    fi
    if "$tmp/$label" >"$tmp/$label.out" 2>&1; then echo "[PASS] check_unit ($label)"
    else echo "[FAIL] check_unit ($label)"; cat "$tmp/$label.out"; fi
}
run plain build/libcdsl.a -O2
run asan build/asan/libcdsl.a -O1 -fsanitize=address,undefined -fno-omit-frame-pointer
