#!/bin/bash
# Build everything and run the main job: the allgather example, checked, compiled, run on the
# best backend this machine has (p2p on GPUs, sim on CPU threads otherwise) and verified.
# First installs, with apt-get (as root, or through sudo), what packages.txt lists for the
# build and the tests (groups build and test: the C toolchain, re2c, lemon, jansson, python3,
# pkg-config) where this machine lacks it, so that `make test` then passes here too; the
# optional packages (.ci/run installs them) only add tests, which skip without them.
set -euo pipefail
cd "$(dirname "$0")"
bash .ci/packages build test
make -j"$(nproc)"
build/cdslc examples/allgather.cdsl -n 8 && echo "examples/allgather.cdsl: checked for 8 ranks"
exec build/cdslrun examples/allgather.cdsl -n 8 --size 64M "$@"
