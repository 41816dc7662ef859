#!/bin/bash
# tests/mscclpp/dsl_verdicts.sh - cdslc's verdict on every plan MSCCL++'s own DSL writes (the
# corpus ../shared/mscclpp/dsl beside the checkout, or $MSCCLPP_DSL; ../shared/mscclpp/README.md
# says how it was made), against the verdicts recorded in tests/mscclpp/dsl/VERDICTS:
#   1. each plan's verdict (accepted, race, deadlock, unmatched sync, wrong result, refused, not
#      supported) and its first error, line:col and text, are the recorded ones (for an accepted
#      plan, the collective whose postcondition was checked: "implements C"), and every plan
#      of the corpus is recorded;
#   2. each accepted plan runs on sim (64 KiB, jitter seed 7, three runs in a row), verified
#      against its collective's postcondition (a custom plan, which has none, to its end), and
#      checking the largest plan (the 1.9 MB 8-GPU alltoall) takes under 5 s;
#   3. the verdict table of docs/mscclpp.md is the one tests/mscclpp/verdict_table.sh makes from
#      the VERDICTS files (this part needs no corpus).
# [SKIP] for 1 and 2 where the corpus is not there (a user's clone has none).
#
#   dsl_verdicts.sh --update    record what cdslc says now: rewrite VERDICTS from the corpus and
#                               the docs table from both VERDICTS files (review the diff)
source "$(dirname "$0")/../lib/common.bash"
VERDICTS=tests/mscclpp/dsl/VERDICTS
dir=${MSCCLPP_DSL:-../shared/mscclpp/dsl}

# The verdict the first error line names ("" when there is none).
verdict() {
    case "$1" in
    "" | "implements "*) echo accepted ;;
    *"error: not supported"*) echo "not supported" ;;
    *"error: data race"*) echo race ;;
    *"error: deadlock"* | *"waits forever"*) echo deadlock ;;
    *"error: signal never consumed"* | *"error: uneven switch arrivals"* | *"ahead of its round"*) echo "unmatched sync" ;;
    *"postcondition fails"*) echo "wrong result" ;;
    *) echo refused ;;
    esac
}

# first_error PLAN: its first error as line:col: error: text, without the path.
first_error() {
    timeout 60 "$CDSLC" "$1" 2>&1 | grep -m1 ': error: ' | sed 's/^[^:]*:\([0-9]*:[0-9]*: error: \)/\1/'
}

# detail PLAN: the third column of VERDICTS: the first error, else (accepted) "implements C", the
# collective whose postcondition the checker proved (cdslc --dump-ir's first line).
detail() {
    local err
    err=$(first_error "$1")
    [ -n "$err" ] && { echo "$err"; return; }
    echo "implements $(timeout 60 "$CDSLC" "$1" --dump-ir 2>/dev/null | sed -n '1s/.* implements \([a-z_]*\),.*/\1/p')"
}

trim() { sed 's/^ *//; s/ *$//'; }

record() {
    {
        echo "# The plans of MSCCL++'s DSL (../shared/mscclpp/dsl): plan | verdict | the first error, line:col into the plan"
        echo "# (accepted: implements C, the collective whose postcondition the checker proved and the sim run verifies)."
        echo "# Checked by tests/mscclpp/dsl_verdicts.sh, which rewrites this file with --update; docs/mscclpp.md §5.2 is made from it."
        for f in "$dir"/*.json; do
            err=$(detail "$f")
            echo "$(basename "$f") | $(verdict "$err") | $err"
        done
    } >"$VERDICTS"
    bash tests/mscclpp/verdict_table.sh --update
}

if [ "${1:-}" = --update ]; then
    [ -d "$dir" ] || { echo "dsl_verdicts.sh: no corpus at $dir (set MSCCLPP_DSL)" >&2; exit 2; }
    record
    exit 0
fi

# 3. The docs' table, from the VERDICTS files.
bash tests/mscclpp/verdict_table.sh >"$tmp/table"
awk '/^<!-- verdict table: /, /^<!-- end of the verdict table -->$/' docs/mscclpp.md >"$tmp/docs"
if diff -u "$tmp/table" "$tmp/docs" >"$tmp/table.diff"; then
    pass "docs/mscclpp.md's verdict table is the one verdict_table.sh makes from the VERDICTS files"
else
    fail "docs/mscclpp.md's verdict table is the one verdict_table.sh makes (bash tests/mscclpp/verdict_table.sh --update)" \
        "$(grep '^[-+]|' "$tmp/table.diff" | head -2 | tr '\n' ' ')"
fi

if [ ! -d "$dir" ]; then
    echo "[SKIP] $test_name: needs ../shared/mscclpp/dsl (the MSCCL++ DSL corpus)"
    exit 0
fi

# 1 and 2, plan by plan.
declare -A recorded
while IFS='|' read -r name want first; do
    name=$(echo "$name" | trim); want=$(echo "$want" | trim); first=$(echo "$first" | trim)
    case "$name" in "" | "#"*) continue ;; esac
    recorded[$name]=1
    f=$dir/$name
    if [ ! -f "$f" ]; then fail "$name is in $dir"; continue; fi
    err=$(detail "$f")
    got=$(verdict "$err")
    if [ "$got" = "$want" ] && [ "$err" = "$first" ]; then
        pass "$name: $got (${err%%: error: *})"
    else
        fail "$name: $want${first:+ at ${first%%: error: *}}" "got $got: $err"
    fi
    [ "$got" = accepted ] || continue
    out=$(timeout 300 "$CDSLRUN" "$f" --backend sim --size 64K --seed 7 --iters 3 2>&1)
    expect=": verified (" what="verified against the ${err#implements } postcondition"
    [ "$err" = "implements custom" ] && expect="ran (custom: no postcondition" what="runs to its end (custom: no postcondition)"
    case "$out" in
    *"$expect"*) pass "$name runs on sim, $what" ;;
    *) fail "$name runs on sim, $what" "$(echo "$out" | grep -m2 -E 'error|wrong|failed|verified|ran' | tr '\n' ' ')" ;;
    esac
done <"$VERDICTS"
largest=$(ls -S "$dir"/*.json | head -1)
start=$(date +%s%N)
timeout 60 "$CDSLC" "$largest" >/dev/null 2>&1
ms=$((($(date +%s%N) - start) / 1000000))
[ "$ms" -lt 5000 ] && pass "checking the largest plan, $(basename "$largest"), takes under 5 s ($ms ms)" ||
    fail "checking the largest plan, $(basename "$largest"), takes under 5 s" "$ms ms"
missing=""
for f in "$dir"/*.json; do
    [ -n "${recorded[$(basename "$f")]:-}" ] || missing="$missing $(basename "$f")"
done
[ -z "$missing" ] && pass "every plan of the corpus has a recorded verdict" ||
    fail "every plan of the corpus has a recorded verdict (dsl_verdicts.sh --update)" "not recorded:$missing"
exit $((failures > 0))
