# tests/lib/common.bash - what script tests share; source it first thing. It makes the
# repository root the current folder, names the tools (CDSLC, CDSLRUN: from the environment,
# as tests/run.sh passes them, else build/), makes a temporary folder $tmp that is removed on
# exit, and defines pass and fail, which print the runner's "[PASS] name" / "[FAIL] name: why"
# lines (fail counts into $failures), and need/needs (need.bash) for a tool the build does
# not need: a test without it prints one "[SKIP] ...: needs TOOL (Debian: PACKAGE)" line.
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
source tests/lib/need.bash
CDSLC=${CDSLC:-$PWD/build/cdslc} CDSLRUN=${CDSLRUN:-$PWD/build/cdslrun}
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
failures=0
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: ${2:0:500}}"; failures=$((failures + 1)); }
