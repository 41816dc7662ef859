#!/bin/bash
# tests/mp/python.sh - the Python package (python/cdsl), over build/libcdsl.so.
#
# 1. python3 -m cdsl.selftest -n 4: 4 processes on the sim engine run every stdlib program
#    (every dtype, three sizes, staged and on the symmetric buffers) and verify; the last line says
#    "N passed, 0 failed" with N the number of stdlib programs.
# 2. The self-test fails, and says which rank, when a rank kills itself (SIGKILL) mid-way;
#    within its bound, with exit status 1.
# 3. pip install into a fresh venv (system site packages: Debian's setuptools and wheel),
#    offline, with --no-build-isolation; the installed package's self-test runs from outside
#    the source tree. [SKIP] where venv or wheel is missing.
# 4. With a python that has torch: tests/mp/torch_check.py (torch.distributed with gloo, the
#    sim engine on CPU tensors): the collectives against torch's own results, symmetric
#    tensors, and each refused tensor. [SKIP] without torch.
cd "$(dirname "$0")/../.." || exit 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CDSL_LIB=$PWD/build/libcdsl.so CDSL_STDLIB=$PWD/stdlib
PY=${PYTHON:-python3}
source tests/lib/need.bash
need "$PY" python3 || exit 0

pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; }

[ -f "$CDSL_LIB" ] || { fail "build/libcdsl.so exists" "make first"; exit 1; }
nprog=$(ls stdlib/*.cdsl | wc -l)

# 0. The ctypes mirrors of cdsl.h's structs have the C layout (a field added on one side only
#    would shift every field after it).
cat >"$tmp/sizes.c" <<'EOC'
#include <stddef.h>
#include <stdio.h>
#include "cdsl.h"
int main(void)
{
    printf("CompileOpts %zu %zu\nRankConfig %zu %zu\nRankIo %zu %zu\nUniqueId %zu %zu\n",
           sizeof(cdsl_compile_opts), offsetof(cdsl_compile_opts, progress), sizeof(cdsl_rank_config),
           offsetof(cdsl_rank_config, log), sizeof(cdsl_rank_io), offsetof(cdsl_rank_io, output_bytes),
           sizeof(cdsl_unique_id), (size_t)0);
    return 0;
}
EOC
if cc -std=c11 -Iruntime -o "$tmp/sizes" "$tmp/sizes.c" 2>"$tmp/cc.log"; then
    want=$("$tmp/sizes")
    got=$(cd python && "$PY" -c '
import ctypes
from cdsl import _lib as L
for name, last in (("CompileOpts", "progress"), ("RankConfig", "log"), ("RankIo", "output_bytes"), ("UniqueId", None)):
    t = getattr(L, name)
    print(name, ctypes.sizeof(t), getattr(t, last).offset if last else 0)' 2>&1)
    if [ "$want" = "$got" ]; then pass "the ctypes structs have cdsl.h's layout"
    else fail "the ctypes structs have cdsl.h's layout" "C: $(echo $want) python: $(echo $got)"; fi
else
    fail "the ctypes structs have cdsl.h's layout" "cc: $(head -3 "$tmp/cc.log" | tr '\n' ' ')"
fi

# 1.
out=$(cd python && timeout 300 "$PY" -m cdsl.selftest -n 4 2>&1); rc=$?
if [ $rc = 0 ] && [ "$(echo "$out" | tail -1)" = "$nprog passed, 0 failed" ]; then
    pass "python3 -m cdsl.selftest -n 4: $nprog passed, 0 failed"
else
    fail "python3 -m cdsl.selftest -n 4" "exit $rc: $(echo "$out" | grep -v PASS | head -3 | tr '\n' ' ')"
fi

# --chunk-bytes: the sizes every program runs at (2 sizes x 4 types x 2 ways = 16 runs of a
# program that moves data), and a size that is not a multiple of 4 bytes is refused up front.
out=$(cd python && timeout 120 "$PY" -m cdsl.selftest -n 2 --chunk-bytes 64,1024 --program allgather_ring 2>&1); rc=$?
if [ $rc = 0 ] && echo "$out" | grep -q "^\[PASS\] allgather_ring: 2 ranks, 16 runs each, verified"; then
    pass "selftest --chunk-bytes 64,1024: 16 runs of allgather_ring"
else
    fail "selftest --chunk-bytes 64,1024" "exit $rc: $(echo "$out" | head -3 | tr '\n' ' ')"
fi
out=$(cd python && timeout 60 "$PY" -m cdsl.selftest -n 2 --chunk-bytes 6 2>&1); rc=$?
if [ $rc = 2 ] && echo "$out" | grep -q "a chunk is a positive multiple of 4 bytes"; then
    pass "selftest --chunk-bytes 6: refused as usage"
else
    fail "selftest --chunk-bytes 6: refused as usage" "exit $rc: $(echo "$out" | tail -2 | tr '\n' ' ')"
fi

# 2.
out=$(cd python && timeout 120 "$PY" -m cdsl.selftest -n 3 --die 2 --program allgather_ring --program barrier_switch \
      --timeout 3 2>&1); rc=$?
if [ $rc = 1 ] && echo "$out" | grep -q "^\[FAIL\] allgather_ring: rank [01]: .*rank 2 has exited" &&
   [ "$(echo "$out" | tail -1)" = "0 passed, 2 failed" ]; then
    pass "the self-test names a rank that died, and fails"
else
    fail "the self-test names a rank that died, and fails" "exit $rc: $(echo "$out" | tr '\n' ' ' | head -c 400)"
fi

# 3.
VPY=""
need_modules "pip install ./python" venv:python3-venv ensurepip:python3-venv wheel:python3-wheel setuptools:python3-setuptools &&
    VPY=$PYTHON_WITH
if [ -n "$VPY" ] && "$VPY" -m venv --system-site-packages "$tmp/venv" >/dev/null 2>&1; then
    cp -r python "$tmp/src"         # an in-tree build writes build/ and *.egg-info beside the sources
    rm -rf "$tmp/src/build" "$tmp/src"/*.egg-info
    if ! "$tmp/venv/bin/python" -m pip install --no-build-isolation --no-index "$tmp/src" >"$tmp/pip.log" 2>&1; then
        fail "pip install --no-build-isolation ./python (offline, in a venv)" "$(tail -3 "$tmp/pip.log" | tr '\n' ' ')"
    else
        out=$(cd "$tmp" && timeout 120 "$tmp/venv/bin/python" -m cdsl.selftest -n 2 --program allgather_ring 2>&1)
        loc=$(cd "$tmp" && "$tmp/venv/bin/python" -c 'import cdsl; print(cdsl.__file__)')
        if [ "$(echo "$out" | tail -1)" = "1 passed, 0 failed" ] && [[ "$loc" == "$tmp/venv/"* ]]; then
            pass "pip install --no-build-isolation ./python: the installed package runs its self-test"
        else
            fail "the installed package runs its self-test" "$loc: $(echo "$out" | tail -2 | tr '\n' ' ')"
        fi
    fi
elif [ -n "$VPY" ]; then
    fail "$VPY -m venv" "$("$VPY" -m venv --system-site-packages "$tmp/venv2" 2>&1 | tail -2 | tr '\n' ' ')"
fi

# 4.
if need_modules "torch checks" torch:python3-torch torch.distributed:python3-torch; then
    PYTHONPATH=$PWD/python timeout 300 "$PYTHON_WITH" tests/mp/torch_check.py
    rc=$?
    [ $rc = 0 ] || fail "torch checks" "exit $rc"
fi
