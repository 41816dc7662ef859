# cache_lib.bash - what the JIT cache's script tests share (sourced, not run: not a *.sh).
# Set `suite` first. Leaves the shell in the repository root with $cdslc, a temporary folder
# $tmp (removed on exit), no cache settings from the caller's environment, CDSL_CACHE_VERBOSE=1,
# and pass/fail/skip printing "[PASS] $suite: ..." lines (fail also sets failed=1).
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
cdslc=${CDSLC:-./build/cdslc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
unset CDSL_NO_CACHE CDSL_CACHE_DIR XDG_CACHE_HOME CDSL_CACHE_MAXSIZE CUDA_CACHE_MAXSIZE LD_PRELOAD
export CDSL_CACHE_VERBOSE=1
failed=0
pass() { echo "[PASS] $suite: $1"; }
fail() { echo "[FAIL] $suite: $1"; failed=1; }
skip() { echo "[SKIP] $suite: $1"; }
# entry_of OUT: the entry a compile logged to OUT.log looking up
entry_of() { sed -n 's/^cdsl: cache [a-z ,()]*: \(.*\.[a-z]*\)$/\1/p' "$1.log" | head -1; }
