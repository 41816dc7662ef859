#!/bin/bash
# tests/api/layering.sh - the library's parts depend on each other in one direction:
#   - the runtime sees a compiled program only through the seam, compiler/program.h (the
#     per-rank operations of ir.h with the three tables they are made of, ops.def for op kinds,
#     chans.def for channels and colls.def for collectives, the copy-engine plan of ce_plan.h, and the table through
#     which device code is made): no runtime file reaches, directly or through the headers it
#     includes, a compiler header beyond those and the shared utilities (arena, diagnostics,
#     escaping, the debug log, the progress line). driver.h, check.h, emit.h and the rest are
#     the compiler's business; a runtime that read them would change with every compiler change;
#   - no two files of compiler/, runtime/ or tools/ call each other's functions (an include
#     circle: a helper living inside the orchestrator that uses it; the helper belongs in a
#     file of its own). A table of function pointers that a caller reaches by name (an
#     engine's ops, the checker's passes) is a registration, not a call, and does not count.
# Sources live in folders by stage (compiler/front, ir, check, ...; runtime/api, engines, jit),
# every folder on the include path, so a header is found by its name in any of them.
# The second check reads the objects of the last build (build/obj/).
source "$(dirname "$0")/../lib/common.bash"

SEAM="program.h ir.h ops.def chans.h chans.def colls.h colls.def ce_plan.h"
UTILITIES="arena.h diag.h escape.h log.h progress_line.h"

# Where each header of compiler/ and runtime/ is, by name ("compiler" or "runtime" first).
declare -A where
for h in $(find compiler runtime -path runtime/device -prune -o \( -name '*.h' -o -name '*.def' \) -print); do
    where[$(basename "$h")]=$h
done

# The compiler headers a file reaches through its #include "..." lines, following compiler
# headers (the runtime's own are followed too: they may include compiler headers).
reach() {
    local todo=("$@") seen=" " f h
    while [ ${#todo[@]} -gt 0 ]; do
        f=${todo[0]}
        todo=("${todo[@]:1}")
        for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
            case "$seen" in *" $h "*) continue ;; esac
            seen="$seen$h "
            case "${where[$h]}" in
            compiler/*) echo "$h"; todo+=("${where[$h]}") ;;
            runtime/*) todo+=("${where[$h]}") ;;
            esac
        done
    done
}

bad=""
runtime_files=$(find runtime -path runtime/device -prune -o -name '*.[ch]' -print | sort)
for f in $runtime_files; do
    for h in $(reach "$f"); do
        case " $SEAM $UTILITIES " in *" $h "*) ;; *) bad="$bad $f->$h" ;; esac
    done
done
if [ -z "$bad" ]; then
    pass "runtime/ reaches no compiler header but the seam ($SEAM) and the utilities"
else
    fail "runtime/ reaches no compiler header but the seam ($SEAM) and the utilities" "${bad# }"
fi

seam_direct=$(grep -l '#include "\(ir\|ce_plan\)\.h"' $runtime_files | tr '\n' ' ')
if [ -z "$seam_direct" ]; then
    pass "runtime/ includes the seam as program.h, never ir.h or ce_plan.h by name"
else
    fail "runtime/ includes the seam as program.h, never ir.h or ce_plan.h by name" "$seam_direct"
fi

# Calls between objects: "A B" when A calls a function B defines (nm: U in A, T in B).
objects=$(find build/obj/compiler build/obj/runtime build/obj/tools -name '*.o' 2>/dev/null | sort)
if [ -z "$objects" ]; then
    fail "no include circle in compiler/, runtime/ or tools/" "no objects in build/obj (run make first)"
    exit 1
fi
for o in $objects; do
    nm "$o" | awk -v o="$o" '$2 == "T" {print "T", o, $3} $1 == "U" {print "U", o, $2}'
done >"$tmp/symbols"
awk '$1 == "T" {def[$3] = $2} $1 == "U" {use[$2 " " $3] = 1}
     END {for (k in use) {split(k, a, " "); if ((a[2] in def) && def[a[2]] != a[1]) print a[1], def[a[2]]}}' \
    "$tmp/symbols" | sort -u >"$tmp/calls"
circles=$(awk '{e[$1 " " $2] = 1} END {for (k in e) {split(k, a, " "); if ((a[2] " " a[1]) in e && a[1] < a[2]) print a[1] "<->" a[2]}}' \
    "$tmp/calls" | sed 's|build/obj/||g' | sort | tr '\n' ' ')
if [ -z "$circles" ]; then
    pass "no include circle in compiler/, runtime/ or tools/ (no two files call each other's functions)"
else
    fail "no include circle in compiler/, runtime/ or tools/ (no two files call each other's functions)" "$circles"
fi
exit $((failures != 0))
