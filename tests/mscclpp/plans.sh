#!/bin/bash
# tests/mscclpp/plans.sh - MSCCL++ execution plans, beyond their golden diagnostics:
#   1. every plan of tests/mscclpp that checks clean (no .err beside it) runs verified on sim,
#      with jitter and three runs in a row (counters, barriers and starts carried over), and
#      under ThreadSanitizer when build/tsan/cdslrun exists (the sim's thread per block);
#   2. a plan over the size cap (100 MB, a sparse file) is refused before it is parsed;
#   3. MSCCL++'s own plans, when a folder of them is here ($MSCCLPP_PLANS, else
#      ../shared/mscclpp/plans; laid out as current/<path> and old/<path>, as
#      tests/mscclpp/plans/SOURCE.md says): each one's verdict is the one that
#      tests/mscclpp/plans/VERDICTS records, and each accepted one of 2 to 8 ranks runs
#      verified on sim. [SKIP] when there is no such folder (a user's clone has none).
cd "$(dirname "$0")/../.." || exit 2
CDSLC=${CDSLC:-build/cdslc} CDSLRUN=${CDSLRUN:-build/cdslrun}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; }

# run_sim NAME FILE [COLLECTIVE]: verified on sim at two sizes, jitter, three runs; with the
# plan's collective named, against its postcondition (custom: run to its end, there is none)
run_sim() {
    local out want="verified|ran \\(custom"
    case "${3:-}" in "") ;; custom) want="ran \\(custom" ;; *) want="verified" ;; esac
    for size in 64K 1M; do
        out=$("$CDSLRUN" "$2" --backend sim --size "$size" --seed 7 --iters 3 2>&1)
        if ! echo "$out" | grep -qE "$want"; then
            fail "$1 runs ${3:+as $3, }verified on sim at $size" "$(echo "$out" | head -3 | tr '\n' ' ')"; return
        fi
    done
    pass "$1 runs verified on sim${3:+ ($3)}"
}

TSAN_CDSLRUN=${TSAN_CDSLRUN:-build/tsan/cdslrun}
for f in tests/mscclpp/*.json; do
    [ -f "${f%.json}.err" ] || [ -f "${f%.json}.args" ] && continue
    run_sim "$(basename "$f")" "$f"
    [ -x "$TSAN_CDSLRUN" ] || continue
    out=$(TSAN_OPTIONS=halt_on_error=1:exitcode=66 timeout 300 "$TSAN_CDSLRUN" "$f" --backend sim --size 64K --seed 3 \
          --iters 2 2>&1); rc=$?
    if [ $rc = 0 ] && ! echo "$out" | grep -q ThreadSanitizer; then pass "$(basename "$f") under TSan"
    elif echo "$out" | grep -q "FATAL: ThreadSanitizer: unexpected memory mapping"; then echo "[SKIP] TSan cannot start here"
    else fail "$(basename "$f") under TSan" "exit $rc: $(echo "$out" | grep -m2 -E 'ThreadSanitizer|error' | tr '\n' ' ')"; fi
done

# A 100 MB plan: refused at 1:1 from its size, without reading it (a sparse file).
big=$tmp/big.json
printf '{"name": "big", "gpus": [' >"$big"
truncate -s 100M "$big"
out=$("$CDSLC" "$big" 2>&1); rc=$?
if [ $rc = 1 ] && echo "$out" | grep -q "big.json:1:1: error: the plan is 104857600 bytes; plans are read up to 16 MiB"; then
    pass "a 100 MB plan is refused before parsing"
else
    fail "a 100 MB plan is refused before parsing" "exit $rc: $(echo "$out" | head -2 | tr '\n' ' ')"
fi

# MSCCL++'s own plans, where they are.
dir=${MSCCLPP_PLANS:-../shared/mscclpp/plans}
if [ ! -d "$dir" ]; then
    echo "[SKIP] MSCCL++'s plans: no folder $dir (set MSCCLPP_PLANS)"
    exit 0
fi
verdict() { # the first error's kind, as VERDICTS words it
    case "$1" in
    "" | "implements "*) echo accepted ;;
    *"not supported"*) echo "not supported" ;;
    *"data race"*) echo race ;;
    *"deadlock"* | *"waits forever"*) echo deadlock ;;
    *"postcondition fails"*) echo "wrong result" ;;
    *) echo refused ;;   # rule 3, or what the executor cannot load (as dsl_verdicts.sh says)
    esac
}
while IFS='|' read -r path want first; do
    trim() { sed 's/^ *//; s/ *$//'; }
    path=$(echo "$path" | trim); want=$(echo "$want" | trim); first=$(echo "$first" | trim)
    case "$path" in "" | "#"*) continue ;; esac
    f=$dir/$path
    if [ ! -f "$f" ]; then fail "$path is in $dir"; continue; fi
    err=$("$CDSLC" "$f" 2>&1 | grep ': error: ' | head -1 | sed 's/^[^:]*:\([0-9]*:[0-9]*: error: \)/\1/')
    # accepted: the collective whose postcondition the checker proved, as VERDICTS records it
    [ -n "$err" ] || err="implements $("$CDSLC" "$f" --dump-ir 2>/dev/null | sed -n '1s/.* implements \([a-z_]*\),.*/\1/p')"
    got=$(verdict "$err")
    if [ "$got" = "$want" ] && [ "$err" = "$first" ]; then
        pass "$path: $got"
    else
        fail "$path: $want" "got $got: $err"
    fi
    n=$("$CDSLC" "$f" --dump-ir 2>/dev/null | sed -n 's/.*nranks=\([0-9]*\).*/\1/p')
    if [ "$got" = accepted ] && [ -n "$n" ] && [ "$n" -ge 2 ] && [ "$n" -le 8 ]; then
        run_sim "$path" "$f" "${err#implements }"
    fi
done <tests/mscclpp/plans/VERDICTS
