#!/bin/bash
# tests/unit/unit.sh - builds the C unit tests (sim_unit.c, verify_unit.c, ce_plan_unit.c, grid_unit.c, backends_unit.c, ...) against libcdsl and
# runs them: against build/libcdsl.a, and against build/asan/libcdsl.a under ASan/UBSan when
# that build exists. Their "[PASS] x" / "[FAIL] x" lines pass through, labelled.
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/includes.bash
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1}
CFLAGS="-std=c11 -Wall -Wextra -Wpedantic -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter -g -pthread -D_GNU_SOURCE $CDSL_INCLUDES"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# unit LABEL LIBRARY EXTRA_FLAGS
unit() {
    local label=$1 lib=$2 flags=$3 t out rc
    for t in sim_unit verify_unit limits_unit escape_unit ce_plan_unit grid_unit backends_unit; do
        # shellcheck disable=SC2086
        if ! cc $CFLAGS $flags -o "$tmp/$t" "tests/unit/$t.c" "$lib" -ljansson -ldl -lm 2>"$tmp/cc.log"; then
            echo "[FAIL] $label$t builds: $(head -3 "$tmp/cc.log" | tr '\n' ' ')"
            failures=$((failures + 1))
            continue
        fi
        out=$(timeout 300 "$tmp/$t" 2>&1); rc=$?
        echo "$out" | sed -n "s/^\[\(PASS\|FAIL\)\] /[\1] $label$t: /p"
        if [ $rc != 0 ]; then
            failures=$((failures + 1))
            echo "$out" | grep -v '^\[PASS\]' | head -20
            echo "$out" | grep -q '^\[FAIL\]' || echo "[FAIL] $label$t: exit $rc"
        fi
    done
}

LIB=${CDSL_LIB:-build/libcdsl.a} ASAN_LIB=${ASAN_CDSL_LIB:-build/asan/libcdsl.a}
if [ -f "$LIB" ]; then unit "" "$LIB" "-O2"; else echo "[FAIL] $LIB exists (make)"; failures=1; fi
if [ -f "$ASAN_LIB" ]; then
    unit "asan: " "$ASAN_LIB" "-O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
else
    echo "[SKIP] asan unit tests: no $ASAN_LIB (make asan)"
fi
[ $failures = 0 ]
