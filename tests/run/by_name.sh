#!/bin/bash
# tests/run/by_name.sh - stdlib programs by name: `cdslrun allgather_ring -n 4` and
# `cdslc allgather_ring -n 4` find the stdlib program when no file of that name exists (a file
# of that name wins; CDSL_PATH's folders come first, as for imports), a name found nowhere is
# an error with a pointer to --list, and `--list` shows every stdlib program with its
# collective and the first sentence of its first comment.
source "$(dirname "$0")/../lib/common.bash"
stdlib=$PWD/stdlib

# expect NAME WANT_EXIT PATTERN CMD...: run in an empty folder; exit status and a matching line.
expect() {
    local name=$1 want=$2 pat=$3 out rc; shift 3
    out=$(cd "$tmp/empty" && "$@" 2>&1); rc=$?
    if [ "$rc" != "$want" ]; then fail "$name" "exit $rc, wanted $want: $(echo "$out" | head -3 | tr '\n' ' ')"
    elif [ -n "$pat" ] && ! echo "$out" | grep -qE -- "$pat"; then fail "$name" "no '$pat' in: $(echo "$out" | head -3 | tr '\n' ' ')"
    else pass "$name"; fi
}
mkdir "$tmp/empty" "$tmp/mine"
expect "cdslrun allgather_ring -n 4: the stdlib program" 0 "^allgather_ring: 4 ranks, sim, f32, 64 KiB: verified" \
    "$CDSLRUN" allgather_ring -n 4 --backend sim --size 64K
expect "cdslc allgather_ring -n 4: the stdlib program, checked" 0 "" "$CDSLC" allgather_ring -n 4
expect "cdslc allgather_ring.cdsl: the name with its suffix" 0 "" "$CDSLC" allgather_ring.cdsl -n 4
expect "cdslc reducescatter_nvls --dump-ir: what ran is the stdlib's" 0 "switch.reduce " \
    "$CDSLC" reducescatter_nvls -n 2 --dump-ir
expect "a name found nowhere: bad usage (2), and where to look" 2 "^cdslc: note: 'allgather_rung' is not a stdlib program either \(cdslc --list shows them\)" \
    "$CDSLC" allgather_rung -n 4
expect "a path is never looked up by name" 2 "cannot read 'x/allgather_ring'" "$CDSLC" x/allgather_ring -n 4

# A file of that name in the current folder wins; CDSL_PATH's folders come before the stdlib.
printf 'program mine implements barrier { switch.signal(relaxed); switch.wait(relaxed); }\n' >"$tmp/empty/allgather_ring"
expect "a file of that name wins over the stdlib" 0 "^mine: 2 ranks, sim: completed" \
    "$CDSLRUN" allgather_ring -n 2 --backend sim
rm "$tmp/empty/allgather_ring"
printf 'program mine implements barrier { switch.signal(relaxed); switch.wait(relaxed); }\n' >"$tmp/mine/allgather_ring.cdsl"
expect "CDSL_PATH's folders come before the stdlib" 0 "^mine: 2 ranks, sim: completed" \
    env CDSL_PATH="$tmp/mine" "$CDSLRUN" allgather_ring -n 2 --backend sim

# --list: every stdlib program, once, with its collective and a description.
for tool in cdslc cdslrun; do
    bin=$CDSLC; [ $tool = cdslrun ] && bin=$CDSLRUN
    "$bin" --list >"$tmp/list.$tool" 2>&1; rc=$?
    bad=""
    [ $rc = 0 ] || bad="exit $rc"
    for f in "$stdlib"/*.cdsl; do
        name=$(basename "$f" .cdsl)
        coll=$(sed -n 's/^program [A-Za-z0-9_]*\(([^)]*)\)\{0,1\} implements \([a-z]*\).*/\2/p' "$f" | head -1)
        line=$(grep "^$name " "$tmp/list.$tool")
        [ "$(grep -c "^$name " "$tmp/list.$tool")" = 1 ] || { bad="$bad; $name listed $(grep -c "^$name " "$tmp/list.$tool") times"; continue; }
        echo "$line" | grep -qE "^$name +$coll +[A-Z].*\.$" || bad="$bad; '$line' (wanted $coll and a sentence)"
    done
    [ "$(wc -l <"$tmp/list.$tool")" = "$(ls "$stdlib"/*.cdsl | wc -l)" ] || bad="$bad; $(wc -l <"$tmp/list.$tool") lines"
    [ -z "$bad" ] && pass "$tool --list: every stdlib program, its collective, what it does" ||
        fail "$tool --list: every stdlib program, its collective, what it does" "$bad"
done
grep -q "^allgather_nvls  *allgather  *One-shot allgather through the NVLink switch\.$" "$tmp/list.cdslrun" &&
    pass "--list: the first sentence of the first comment" || fail "--list: the first sentence of the first comment" "$(grep allgather_nvls "$tmp/list.cdslrun")"
