#!/bin/bash
# Builds tests/unit/runs_unit.c (compiler/check/chunk_runs.c: interval maps over chunks and the checker's
# budget) against libcdsl, and under ASan/UBSan against build/asan/libcdsl.a when that exists,
# and runs it. It prints one [PASS]/[FAIL] line per test and build.
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/includes.bash
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
run() {
    local label=$1 lib=$2; shift 2
    if [ ! -f "$lib" ]; then echo "[SKIP] runs_unit ($label): no $lib"; return; fi
    if ! cc -std=c11 -g -Wall -Wextra -Werror "$@" $CDSL_INCLUDES -o "$tmp/$label" tests/unit/runs_unit.c \
            "$lib" -ljansson -ldl -lpthread -lm 2>"$tmp/$label.log"; then
        echo "[FAIL] runs_unit ($label): does not build"; cat "$tmp/$label.log"; return
    fi
    "$tmp/$label" | sed "s/^\[\(PASS\|FAIL\)\] /[\1] ($label) /"
}
run plain build/libcdsl.a -O2
run asan build/asan/libcdsl.a -O1 -fsanitize=address,undefined -fno-omit-frame-pointer
