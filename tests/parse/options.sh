#!/bin/bash
# tests/parse/options.sh - the tools read their options with getopt_long, with its conventions
# -n8, -n 8, --nranks 8, --nranks=8, a long option shortened to a unique prefix,
# options after the program, "--" before a program whose name starts with '-', "-" for a
# program on standard input (its imports looked up from the current folder); a bad -D is a
# usage error (exit 2), as is a -D the program has no parameter for; every message of the
# tools' own starts with the tool's name; every option --help lists is one the tool takes.
source "$(dirname "$0")/../lib/common.bash"
AG=$PWD/stdlib/allgather_chunked_ring.cdsl

# expect NAME WANT_EXIT PATTERN CMD...: exit status and a line matching PATTERN (grep -E).
expect() {
    local name=$1 want=$2 pat=$3 out rc; shift 3
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" != "$want" ]; then fail "$name" "exit $rc, wanted $want: $(echo "$out" | head -3 | tr '\n' ' ')"
    elif [ -n "$pat" ] && ! echo "$out" | grep -qE -- "$pat"; then fail "$name" "no '$pat' in: $(echo "$out" | head -3 | tr '\n' ' ')"
    else pass "$name"; fi
}
# The ranks seen are the ranks asked for: --dump-ir lists rank 7 only at -n 8.
ranks8() { "$@" --dump-ir 2>&1 | grep -q '^r7 '; }
for form in "-n8" "-n 8" "--nranks 8" "--nranks=8" "--nr=8"; do
    # shellcheck disable=SC2086
    if ranks8 "$CDSLC" "$AG" $form; then pass "cdslc $form"; else fail "cdslc $form"; fi
done
# shellcheck disable=SC2086
ranks8 "$CDSLC" -n 8 "$AG" && pass "cdslc: options before the program" || fail "cdslc: options before the program"
expect "cdslrun --nranks=2 -Dchunks=3 after the program" 0 "verified \(2 ranks x 6 chunks\)" \
    "$CDSLRUN" "$AG" --nranks=2 -Dchunks=3 --size 48K --backend sim
expect "cdslrun --define chunks=3" 0 "verified \(2 ranks x 6 chunks\)" \
    "$CDSLRUN" "$AG" -n 2 --define chunks=3 --size 48K --backend sim

cp "$AG" "$tmp/-odd.cdsl"
expect "cdslc -- -odd.cdsl: after --, a name starting with '-' is the program" 0 "" \
    sh -c "cd '$tmp' && '$CDSLC' -n 2 -- -odd.cdsl"
expect "cdslc -odd.cdsl without --: that is -o dd.cdsl, and no program" 2 "^cdslc: error: no input file" \
    sh -c "cd '$tmp' && '$CDSLC' -n 2 -odd.cdsl"

# "-": standard input; imports from the current folder.
mkdir "$tmp/lib"
printf 'def fill() { copy(output[rank], input[0]); }\n' >"$tmp/lib/helpers.cdsl"
printf 'import "lib/helpers.cdsl";\nprogram p implements custom {\n    input[1];\n    output[2];\n    fill();\n}\n' >"$tmp/p.cdsl"
expect "cdslc -: the program from standard input, its import found from the current folder" 0 "" \
    sh -c "cd '$tmp' && '$CDSLC' - -n 2 <p.cdsl"
expect "cdslc -: messages name <stdin>" 1 "^<stdin>:2:1[0-9]: error: " \
    sh -c "cd '$tmp' && printf 'program p implements allgather {\n    copy(output[9], input[0]);\n}\n' | '$CDSLC' - -n 2"
expect "cdslrun -: runs the program from standard input" 0 "^allgather_ring: 2 ranks, sim, f32, 64 KiB: verified" \
    sh -c "'$CDSLRUN' - -n 2 --backend sim --size 64K <'$PWD/stdlib/allgather_ring.cdsl'"
expect "cdslc -: a NUL byte is refused" 1 "^cdslc: error: <stdin>: a NUL byte at offset 3" \
    sh -c "printf 'pro\0gram' | '$CDSLC' - -n 2"

# Bad -D: usage errors, exit 2.
expect "cdslc -D without =: exit 2" 2 "^cdslc: error: -D chunks: expected NAME=INTEGER" "$CDSLC" "$AG" -n 2 -D chunks
expect "cdslc -D not an integer: exit 2" 2 "^cdslc: error: -D chunks=2x: expected NAME=INTEGER" "$CDSLC" "$AG" -n 2 -D chunks=2x
expect "cdslc -D not a name: exit 2" 2 "^cdslc: error: -D 2c=1: expected NAME=INTEGER" "$CDSLC" "$AG" -n 2 -D 2c=1
expect "cdslc -D out of range: exit 2" 2 "^cdslc: error: -D chunks=99999999999999999999: expected" \
    "$CDSLC" "$AG" -n 2 -D chunks=99999999999999999999
expect "cdslc -D for no parameter: exit 2" 2 "^cdsl: error: define 'depth': program 'allgather_chunked_ring' has no parameter 'depth'" \
    "$CDSLC" "$AG" -n 2 -D depth=2
expect "cdslrun -D chunks=0: exit 2" 2 "define 'chunks=0': chunks must be between" "$CDSLRUN" "$AG" -n 2 -D chunks=0
expect "cdslc -D 0x10 and -D -1 are integers" 0 "" "$CDSLC" "$AG" -n 2 -D chunks=0x10
expect "cdslc --program for no program: exit 2" 2 "has no program named 'nope'" "$CDSLC" "$AG" -n 2 --program nope

# The tools' own messages start with the tool's name.
for tool in cdslc cdslrun; do
    bin=$CDSLC; [ $tool = cdslrun ] && bin=$CDSLRUN
    bad=""
    for args in "--frobnicate" "-n" "-n x" "--dtype=" "--dtype f64" "-D" "--color=sometimes" "--check-steps 0" "" "$AG $AG -n 2"; do
        # shellcheck disable=SC2086
        first=$("$bin" $args 2>&1 >/dev/null </dev/null | head -1)
        case $first in "$tool: error: "*) ;; *) bad="$bad [$args] -> '$first'" ;; esac
    done
    [ -z "$bad" ] && pass "$tool: usage messages start with '$tool: error:'" || fail "$tool: usage messages start with '$tool: error:'" "$bad"
done
expect "cdslc: a missing value names the option" 2 "^cdslc: error: --arch needs a value" "$CDSLC" "$AG" -n 2 --emit-ptx --arch=
expect "cdslrun: a missing value names the option" 2 "^cdslrun: error: --sizes needs a value" "$CDSLRUN" "$AG" -n 2 --sizes

# Every option --help lists is taken (whatever it then says about its value or the rest).
for tool in cdslc cdslrun; do
    bin=$CDSLC; [ $tool = cdslrun ] && bin=$CDSLRUN
    bad=""
    for o in $("$bin" --help | grep -oE '(^|[ ,])--[a-z][a-z-]+' | sed 's/^[ ,]*//' | sort -u); do
        "$bin" "$o" 2>&1 | grep -q "unknown option" && bad="$bad $o"
    done
    [ -z "$bad" ] && pass "$tool: every option of --help is taken" || fail "$tool: every option of --help is taken" "$bad"
done
