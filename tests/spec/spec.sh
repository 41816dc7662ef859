#!/bin/bash
# tests/spec/spec.sh - the spec's programs, kept in the tree (tests/spec/*.cdsl, copied from the
# project's spec with their verdict lines), checked by our own runner so that the suite needs
# nothing outside the repository. The first line of each file says what must happen:
#   // expect: accept n=2,4,8          cdslc exits 0 at each rank count, silent; the program then
#                                      runs on the sim backend (64 KiB) and verifies
#   // expect: reject n=4 lines=6,7    cdslc exits 1 at each rank count with an error at
#                                      FILE:6 and one at FILE:7
#   // expect: reject n=4 anyline=3,9  ... with an error at one of those lines at least
# Each program and rank count is checked with the plain build and, where it exists, with the
# ASan/UBSan build (build/asan). One [PASS]/[FAIL] line each.
source "$(dirname "$0")/../lib/common.bash"
ASAN_CDSLC=${ASAN_CDSLC:-$PWD/build/asan/cdslc} ASAN_CDSLRUN=${ASAN_CDSLRUN:-$PWD/build/asan/cdslrun}

# field SPEC KEY: the comma list after KEY= in the verdict line, as words.
field() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | tr ',' ' '; }

# errors_at FILE ERR LINES: every line number of LINES has an "error:" at FILE:LINE:.
errors_at() {
    local l
    for l in $3; do grep -q "^$1:$l:[0-9]*: error: " "$2" || return 1; done
}

# one LABEL CDSLC CDSLRUN FILE: every rank count of FILE's verdict line.
one() {
    local label=$1 cdslc=$2 cdslrun=$3 f=$4 spec verdict n rc name why
    spec=$(head -1 "$f")
    case $spec in "// expect: "*) ;; *) fail "$label$f" "no '// expect:' line"; return ;; esac
    spec=${spec#// expect: }
    verdict=${spec%% *}
    for n in $(field "$spec" n); do
        name="$label$(basename "$f") -n $n: $verdict"
        timeout 60 "$cdslc" "$f" -n "$n" >"$tmp/out" 2>"$tmp/err"; rc=$?
        why=""
        if [ "$verdict" = accept ]; then
            [ $rc = 0 ] && [ ! -s "$tmp/err" ] || why="exit $rc: $(head -3 "$tmp/err" | tr '\n' ' ')"
            if [ -z "$why" ] && ! timeout 120 "$cdslrun" "$f" -n "$n" --backend sim --size 64K >"$tmp/run" 2>&1; then
                why="on sim: $(tail -3 "$tmp/run" | tr '\n' ' ')"
            fi
            [ -z "$why" ] && ! grep -qE ': (verified|completed) \(' "$tmp/run" && why="on sim: $(head -2 "$tmp/run")"
        elif [ "$verdict" = reject ]; then
            [ $rc = 1 ] || why="exit $rc, wanted 1"
            errors_at "$f" "$tmp/err" "$(field "$spec" lines)" || why="$why; not every one of lines $(field "$spec" lines) named"
            local any hit=0 l
            any=$(field "$spec" anyline)
            for l in $any; do errors_at "$f" "$tmp/err" "$l" && hit=1; done
            [ -z "$any" ] || [ $hit = 1 ] || why="$why; none of lines $any named"
        else
            why="unknown verdict '$verdict'"
        fi
        if [ -z "$why" ]; then pass "$name"; else fail "$name" "$why"; fi
    done
}

programs=(tests/spec/*.cdsl)
[ -f "${programs[0]}" ] || { fail "spec programs found" "none in tests/spec"; exit 1; }
for f in "${programs[@]}"; do one "" "$CDSLC" "$CDSLRUN" "$f"; done
if [ -x "$ASAN_CDSLC" ] && [ -x "$ASAN_CDSLRUN" ]; then
    for f in "${programs[@]}"; do one "asan: " "$ASAN_CDSLC" "$ASAN_CDSLRUN" "$f"; done
else
    echo "[SKIP] the spec programs under ASan: no $ASAN_CDSLC (make asan)"
fi
[ $failures = 0 ]
