#!/bin/bash
# Every stdlib program exports as an MSCCL++ plan, re-imports and checks clean, with exactly the
# IR the exporter lowered it to (tests/unit/export_unit.c), against build/libcdsl.a and, where it
# exists, the ASan build.
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/includes.bash
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp
run() {
    local label=$1 lib=$2; shift 2
    if [ ! -f "$lib" ]; then echo "[SKIP] export_unit ($label): no $lib"; return; fi
    if ! cc -std=c11 -g "$@" $CDSL_INCLUDES -o "$tmp/$label" tests/unit/export_unit.c "$lib" \
            -ljansson -ldl -lpthread -lm 2>"$tmp/$label.log"; then
        echo "[FAIL] export_unit ($label): does not build"; cat "$tmp/$label.log"; return
    fi
    "$tmp/$label" | sed "s/^\[\(PASS\|FAIL\)\] /[\1] $label: /"
}
run plain build/libcdsl.a -O2
ASAN_OPTIONS=detect_leaks=1 run asan build/asan/libcdsl.a -O1 -fsanitize=address,undefined -fno-omit-frame-pointer
