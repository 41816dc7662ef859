#!/bin/bash
# tests/mp/torch_backend.sh - the torch.distributed backend "cdsl" (python/cdsl/torch_backend.py)
# in real processes: tests/mp/torch_backend.py at 2 and 4 ranks, init_process_group("cdsl") on
# the sim engine (CPU tensors), every collective called through torch.distributed and compared
# with gloo's result on the same data; the op, program and size refusals; the fallback to gloo;
# symmetric tensors; a rank that dies, named in the exception the others' next call raises.
# Then the same checks against a deliberately wrong expectation
# (CDSL_TEST_WRONG=1), all of which must fail: no check here passes whatever happens.
# [SKIP] where no python has torch.
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/need.bash
export CDSL_LIB=$PWD/build/libcdsl.so CDSL_STDLIB=$PWD/stdlib CDSL_ENGINE=sim
need_modules torch_backend torch:python3-torch torch.distributed:python3-torch || exit 0
[ -f "$CDSL_LIB" ] || { echo "[FAIL] torch_backend: build/libcdsl.so exists: make first"; exit 1; }

rc=0
for n in 2 4 die; do
    PYTHONPATH=$PWD/python timeout 300 "$PYTHON_WITH" tests/mp/torch_backend.py "$n" || rc=1
done

out=$(for n in 2 die; do
    CDSL_TEST_WRONG=1 PYTHONPATH=$PWD/python timeout 300 "$PYTHON_WITH" tests/mp/torch_backend.py $n 2>&1
done)
total=$(echo "$out" | grep -c '^\[\(PASS\|FAIL\)\]')
passed=$(echo "$out" | grep '^\[PASS\]' | head -3 | tr '\n' ' ')
if [ "$total" -gt 20 ] && [ -z "$passed" ]; then
    echo "[PASS] torch_backend: all $total checks fail against a wrong expectation"
else
    echo "[FAIL] torch_backend: checks that pass against a wrong expectation: ${passed:-only $total ran}"
    rc=1
fi
exit $rc
