#!/bin/bash
# tests/mscclpp/verdict_table.sh - the verdict table of docs/mscclpp.md §5.2, made from the
# recorded verdicts alone (tests/mscclpp/dsl/VERDICTS: the plans MSCCL++'s DSL writes;
# tests/mscclpp/plans/VERDICTS: MSCCL++'s checked-in plans), so that it is regenerated, never
# edited, when a verdict changes. One row per plan: its name, the verdict, and the evidence the
# verdict rests on (accepted: the collective whose postcondition was proved, and the sim run the
# tests make of it; a hazard: the checker's rule and its first message, at the plan's line:col;
# not supported or refused: the reason cdslc gives).
#
#   verdict_table.sh            print the table (markdown) on standard output
#   verdict_table.sh --update   replace the table in docs/mscclpp.md, between its marker lines
#
# tests/mscclpp/dsl_verdicts.sh checks that the table in the docs is this one.
cd "$(dirname "$0")/../.." || exit 2
DOC=docs/mscclpp.md
BEGIN='<!-- verdict table: made by tests/mscclpp/verdict_table.sh from the VERDICTS files; do not edit -->'
END='<!-- end of the verdict table -->'

# evidence VERDICT FIRST-ERROR TESTED-BY: the third column.
evidence() {
    local verdict=$1 first=$2 by=$3 at text
    at=${first%%: error: *} text=${first#*: error: }
    text=${text//|/\\|}
    case $verdict in
    accepted)
        case $first in
        "implements custom") echo "checks clean of races and deadlocks (a custom plan: no postcondition to prove); runs on sim to its end, jitter seed 7, three runs in a row ($by)" ;;
        *) echo "checks clean, with the ${first#implements } postcondition proved on every rank; runs on sim verified against it, jitter seed 7, three runs in a row ($by)" ;;
        esac ;;
    race) echo "rule 1, data races: at $at, $text" ;;
    deadlock) echo "rule 2, synchronisation: at $at, $text" ;;
    "wrong result") echo "rule 4, the postcondition: at $at, $text" ;;
    "not supported") echo "at $at: ${text#not supported: }" ;;
    *) echo "at $at: $text" ;;
    esac
}

# rows FILE LABEL TESTED-BY: one table row per recorded plan.
rows() {
    local path verdict first
    while IFS='|' read -r path verdict first; do
        path=$(echo "$path" | sed 's/^ *//; s/ *$//')
        verdict=$(echo "$verdict" | sed 's/^ *//; s/ *$//')
        first=$(echo "$first" | sed 's/^ *//; s/ *$//')
        case "$path" in "" | "#"*) continue ;; esac
        echo "| \`$2$path\` | **$verdict** | $(evidence "$verdict" "$first" "$3") |"
    done <"$1"
}

# counts FILE: "N accepted, N race, ..." in the order the verdicts are named.
counts() {
    local v n out=""
    for v in accepted race deadlock "wrong result" refused "not supported"; do
        n=$(grep -v '^#' "$1" | awk -F'|' -v v="$v" '{ gsub(/^ +| +$/, "", $2) } $2 == v' | wc -l)
        [ "$n" = 0 ] || out="$out${out:+, }$n $v"
    done
    echo "$out"
}

table() {
    echo "$BEGIN"
    echo
    echo "The $(grep -vc '^#' tests/mscclpp/dsl/VERDICTS) plans of MSCCL++'s DSL ($(counts tests/mscclpp/dsl/VERDICTS)) and its"
    echo "$(grep -vc '^#' tests/mscclpp/plans/VERDICTS) checked-in plans ($(counts tests/mscclpp/plans/VERDICTS))."
    echo
    echo "| plan | verdict | evidence |"
    echo "| --- | --- | --- |"
    rows tests/mscclpp/dsl/VERDICTS "dsl/" "tests/mscclpp/dsl_verdicts.sh"
    rows tests/mscclpp/plans/VERDICTS "" "tests/mscclpp/plans.sh, also at 1 MiB"
    echo
    echo "$END"
}

case "${1:-}" in
"") table ;;
--update)
    if ! grep -qxF "$BEGIN" "$DOC" || ! grep -qxF "$END" "$DOC"; then
        echo "verdict_table.sh: $DOC has no marker lines for the table" >&2
        exit 1
    fi
    new=$(mktemp) || exit 2
    table >"$new.table"
    awk -v b="$BEGIN" -v e="$END" -v t="$new.table" '
        $0 == b { while ((getline l < t) > 0) print l; skip = 1; next }
        $0 == e { skip = 0; next }
        !skip' "$DOC" >"$new" && cat "$new" >"$DOC"
    rm -f "$new" "$new.table"
    ;;
*) echo "usage: $0 [--update]" >&2; exit 2 ;;
esac
