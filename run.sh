#!/bin/bash
# Build everything and run the main job: the allgather example, checked, compiled, run on the
# best backend this machine has (p2p on GPUs, sim on CPU threads otherwise) and verified.
# Installs the build tools (re2c, lemon, cJSON's headers) with apt-get when they are missing.
set -euo pipefail
cd "$(dirname "$0")"
missing=""
for tool in re2c lemon make gcc; do command -v "$tool" >/dev/null || missing="$missing $tool"; done
[ -f /usr/include/cjson/cJSON.h ] || missing="$missing libcjson-dev"     # cdsl-perf's JSON files
if [ -n "$missing" ]; then
    echo "installing:$missing"
    sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -q && $sudo apt-get install -y -q $missing
fi
make -j"$(nproc)"
build/cdslc examples/allgather.cdsl -n 8 && echo "examples/allgather.cdsl: checked for 8 ranks"
exec build/cdslrun examples/allgather.cdsl -n 8 --size 64M "$@"
