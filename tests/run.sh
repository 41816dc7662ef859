#!/bin/bash
# tests/run.sh - the whole suite, one runner (cproc-style golden files plus script tests).
#
#   tests/<suite>/<name>.cdsl   golden test. First lines may say:
#                                 // args: -n 4 --dump-ast     (arguments after the file; default -n 2)
#                                 // tool: cdslrun             (default cdslc)
#                                 // exit: N                   (default: 1 if a .err exists, else 0)
#                               expected output beside it: <name>.err (stderr), and one of
#                               <name>.out/.ast/.ir/.cu/.dot (stdout). UPDATE=1 rewrites them.
#   tests/<suite>/<name>.json   golden test of an MSCCL++ plan: the same, with its header lines
#                               in <name>.args beside it (JSON has no comments); default args none.
#   tests/<suite>/*.sh          script test, run from the repository root; it prints
#                               "[PASS] x" / "[FAIL] x" lines (each counts) or is judged by its exit.
#   tests/spec/                 the spec's programs with their verdict lines, checked by
#                               tests/spec/spec.sh (a script test), not as golden tests.
# Then the golden suites again under the ASan/UBSan build and a short bounded fuzz run of both
# fuzz harnesses; the project's shared spec (../shared/spec/run.sh, also with RUN=1) in addition
# where a checkout has it beside it (a note otherwise: the suite needs nothing outside the
# repository); last, a check that no test left a temporary file behind. The last line is
# "N passed, N failed, N skipped": a skip is a "[SKIP] ..." line of a script test, a part it
# could not run here (a missing tool: "needs TOOL (Debian: PACKAGE)", no GPU, no NVRTC); a
# script that printed only skips counts as skipped, not as passed.
cd "$(dirname "$0")/.." || exit 2
export CDSLC=${CDSLC:-$PWD/build/cdslc} CDSLRUN=${CDSLRUN:-$PWD/build/cdslrun}
export ASAN_CDSLC=$PWD/build/asan/cdslc ASAN_CDSLRUN=$PWD/build/asan/cdslrun
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0} UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# A private TMPDIR: every temporary file of the suite goes there, and whatever a test leaves
# behind is found at the end (below) and then removed with it, as is the JIT cache.
SUITE_TMP=$(mktemp -d "${TMPDIR:-/tmp}/cdsl-suite.XXXXXX") || exit 2
trap 'rm -rf "$SUITE_TMP"' EXIT
export TMPDIR=$SUITE_TMP
export CDSL_CACHE_DIR=${CDSL_CACHE_DIR:-$SUITE_TMP/cache}
mkdir -p -m 700 "$CDSL_CACHE_DIR"
# Never let a test reach a multicast object, whatever the machine.
export CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
SHARED=${SHARED:-$PWD/../shared}
pass=0 fail=0 skip=0 failed=()

ok()  { pass=$((pass + 1)); [ -n "${VERBOSE:-}" ] && echo "[PASS] $1"; }
skipped() { skip=$((skip + 1)); echo "$1"; }
bad() { fail=$((fail + 1)); failed+=("$1"); echo "[FAIL] $1${2:+: $2}"; }

header() {
    local f=$1
    case "$f" in *.json) f=${f%.json}.args; [ -f "$f" ] || return 0 ;; esac
    sed -n "1,5s|^// $2: *||p" "$f" | head -1
}

# One golden test with the given cdslc/cdslrun binaries; label says which build.
golden() {
    local f=$1 cdslc=$2 cdslrun=$3 label=$4
    local base=${f%.*} args tool want out err rc
    args=$(header "$f" args); [ -n "$args" ] || { [ "${f%.json}" = "$f" ] && args="-n 2"; }
    tool=$(header "$f" tool); want=$(header "$f" exit)
    [ -n "$want" ] || { [ -f "$base.err" ] && want=1 || want=0; }
    local bin=$cdslc; [ "$tool" = cdslrun ] && bin=$cdslrun
    out=$(mktemp) err=$(mktemp)
    # shellcheck disable=SC2086
    timeout 60 "$bin" "$f" $args >"$out" 2>"$err"; rc=$?
    local why=""
    [ "$rc" = "$want" ] || why="exit $rc, wanted $want"
    if [ -f "$base.err" ] || [ -s "$err" ]; then
        if [ -n "${UPDATE:-}" ] && [ -z "$label" ]; then [ -s "$err" ] && cp "$err" "$base.err"; fi
        [ -f "$base.err" ] && ! diff -u "$base.err" "$err" >"$out.diff" && why="$why stderr differs"
        [ -f "$base.err" ] || why="$why unexpected stderr: $(head -3 "$err" | tr '\n' ' ')"
    fi
    for ext in out ast ir cu dot; do
        if [ -f "$base.$ext" ]; then
            [ -n "${UPDATE:-}" ] && [ -z "$label" ] && cp "$out" "$base.$ext"
            diff -u "$base.$ext" "$out" >>"$out.diff" || why="$why stdout differs from .$ext"
        fi
    done
    if [ -z "$why" ]; then ok "$label$f"; else bad "$label$f" "$why"; [ -n "${VERBOSE:-}" ] && head -40 "$out.diff"; fi
    rm -f "$out" "$err" "$out.diff"
}

script() {
    local s=$1 log rc
    log=$(mktemp)
    timeout 900 bash "$s" >"$log" 2>&1; rc=$?
    local n=0 skips=0
    while IFS= read -r line; do
        case "$line" in
        "[PASS] "*) ok "$s: ${line#\[PASS\] }"; n=$((n + 1)) ;;
        "[FAIL] "*) bad "$s: ${line#\[FAIL\] }"; n=$((n + 1)) ;;
        "[SKIP] "*) skipped "$line"; skips=$((skips + 1)) ;;
        esac
    done <"$log"
    if [ $n = 0 ]; then
        if [ $rc != 0 ]; then bad "$s" "exit $rc"; tail -20 "$log"; elif [ $skips = 0 ]; then ok "$s"; fi
    elif [ $rc != 0 ] && ! grep -q '^\[FAIL\]' "$log"; then bad "$s" "exit $rc"; tail -20 "$log"; fi
    rm -f "$log"
}

# The shared spec's own runner, where it is present (the in-tree copies run as tests/spec/spec.sh).
spec() {
    local label=$1; shift
    local log; log=$(mktemp)
    env "$@" bash "$SHARED/spec/run.sh" >"$log" 2>&1
    local p f
    p=$(tail -1 "$log" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
    f=$(tail -1 "$log" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
    if [ -z "$p" ]; then bad "spec$label" "$(tail -3 "$log" | tr '\n' ' ')"; rm -f "$log"; return; fi
    pass=$((pass + p)); fail=$((fail + f))
    [ "$f" = 0 ] || { failed+=("spec$label"); grep '^FAIL' "$log"; }
    echo "spec$label: $p passed, $f failed"
    rm -f "$log"
}

goldens=()
for f in tests/*/*.cdsl tests/*/*.json; do [ -e "$f" ] || continue; case $f in tests/spec/*) ;; *) goldens+=("$f") ;; esac; done
for f in "${goldens[@]}"; do golden "$f" "$CDSLC" "$CDSLRUN" ""; done
for s in tests/*/*.sh; do script "$s"; done
have_shared_spec=""
[ -f "$SHARED/spec/run.sh" ] && have_shared_spec=1
if [ -n "$have_shared_spec" ]; then
    spec ""
    spec " (RUN=1, sim)" RUN=1
else
    echo "note: no shared spec at $SHARED/spec (not part of the repository); tests/spec/spec.sh checked the in-tree copies"
fi
if [ -x "$ASAN_CDSLC" ]; then
    for f in "${goldens[@]}"; do golden "$f" "$ASAN_CDSLC" "$ASAN_CDSLRUN" "asan:"; done
    [ -z "$have_shared_spec" ] || spec " (asan)" CDSLC="$ASAN_CDSLC" CDSLRUN="$ASAN_CDSLRUN" RUN=1
else
    bad "asan build" "missing $ASAN_CDSLC (make asan)"
fi
if [ -z "${NO_FUZZ:-}" ]; then script tests/fuzz/fuzz.sh.run; fi
left=$(cd "$SUITE_TMP" && find . -mindepth 1 -maxdepth 1 ! -name cache | sed 's|^\./||' | head -5 | tr '\n' ' ')
if [ -z "$left" ]; then ok "the suite leaves no temporary files"; else bad "the suite leaves no temporary files" "$left"; fi

[ ${#failed[@]} -eq 0 ] || { echo "failed:"; printf '  %s\n' "${failed[@]}"; }
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
