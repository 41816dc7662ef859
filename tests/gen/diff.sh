#!/bin/bash
# tests/gen/diff.sh - the differential tester (tests/gen/diff.py): generated programs, the
# checker's verdict against unchecked sim runs, and the kept reproducers in tests/gen/found.
# With no arguments it is the suite's bounded run (80 programs, 3 jitter seeds each, about
# 20 s on two cores). A long campaign is one command:
#   nice tests/gen/diff.sh --count 5000 --seeds 8 --jobs 2 [--asan]
# and on a GPU machine (accepted programs only, on p2p, NVLS off):
#   tests/gen/diff.sh --backend p2p --count 200 --ranks-per-gpu 2
# `tests/gen/diff.py --help` lists every option.
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/need.bash
need python3 python3 || exit 0
exec python3 tests/gen/diff.py "$@"
