# tests/lib/need.bash - how a script test says it cannot run a part here because a tool is
# missing: one "[SKIP] WHAT: needs TOOL (Debian: PACKAGE)" line, which tests/run.sh counts as
# a skip, instead of a failure that reads as nonsense. Sourced by common.bash, and by the
# scripts that do not use it, after their cd to the repository root. PACKAGE is the Debian
# package that brings TOOL, as packages.txt names it (tests/parse/packages.sh checks that).

# The script as the runner names it (tests/<suite>/<name>.sh): the default WHAT.
case $0 in tests/*) test_name=$0 ;; */tests/*) test_name=tests/${0##*/tests/} ;; *) test_name=$0 ;; esac

# needs WHAT TOOL PACKAGE: that line, for a need that is not a command on PATH (a Python
# module, a compiler's runtime library).
needs() { echo "[SKIP] $1: needs $2 (Debian: $3)"; }

# need TOOL PACKAGE [WHAT]: true when the command TOOL is on PATH; else the needs line and
# false. A script that cannot run at all without TOOL says `need python3 python3 || exit 0`;
# one that can do the rest says `if need gnuplot gnuplot-nox "bench/plot.sh"; then ...`.
need() {
    command -v "$1" >/dev/null 2>&1 && return 0
    needs "${3:-$test_name}" "$1" "$2"
    return 1
}

# python_with MODULE...: prints the first of ${PYTHON:-python3} and /usr/bin/python3 that
# imports every MODULE (a pyenv python3 first on PATH does not see Debian's python3-*
# packages; /usr/bin/python3 does); false, printing nothing, when neither does.
python_with() {
    local p mods
    mods=$(IFS=,; echo "$*")
    for p in "${PYTHON:-python3}" /usr/bin/python3; do
        "$p" -c "import $mods" >/dev/null 2>&1 && { echo "$p"; return 0; }
    done
    return 1
}

# need_modules WHAT MODULE:PACKAGE...: true when python_with finds them all (it is then in
# $PYTHON_WITH); else the needs line for the first MODULE that is missing, and false.
need_modules() {
    local what=$1 m; shift
    PYTHON_WITH=$(python_with "${@%%:*}") && return 0
    for m in "$@"; do
        python_with "${m%%:*}" >/dev/null || { needs "$what" "${m%%:*}" "${m#*:}"; return 1; }
    done
    needs "$what" "${*%%:*}" "${*#*:}"     # each imports alone, not all in one python
    return 1
}

# need_fuzzer WHAT: clang (FUZZ_CC) with its libFuzzer, ASan and UBSan runtimes, shown by
# building and running a tiny fuzz target the way `make fuzz` builds the real ones: clang on
# PATH without Debian's libclang-rt-N-dev compiles but cannot link -fsanitize=fuzzer.
need_fuzzer() {
    local cc=${FUZZ_CC:-clang} d rc major
    need "$cc" clang "$1" || return 1
    d=$(mktemp -d) || { echo "[SKIP] $1: cannot make a temporary folder to probe $cc's fuzzer runtime"; return 1; }
    printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
        'int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { (void)data; (void)size; return 0; }' >"$d/probe.c"
    "$cc" -fsanitize=fuzzer,address,undefined -o "$d/probe" "$d/probe.c" >"$d/log" 2>&1 &&
        "$d/probe" -runs=1 >>"$d/log" 2>&1
    rc=$?
    major=$("$cc" -dumpversion 2>/dev/null); major=${major%%.*}
    [ $rc = 0 ] || needs "$1" "$cc's fuzzer runtime" "libclang-rt-${major:-N}-dev"
    rm -rf "$d"
    return $rc
}
