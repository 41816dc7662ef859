#!/bin/bash
# tests/mscclpp/plans/extract.sh GITDIR DEST - recreate MSCCL++'s plan files that SOURCE.md lists
# from a clone of github.com/microsoft/mscclpp (GITDIR: its git directory or work tree), laid out
# as DEST/current/<path> and DEST/old/<path> with LICENSE, each checked against the SHA-256
# prefix SOURCE.md records. The files are data, kept out of this repository (SOURCE.md says why);
# then: MSCCLPP_PLANS=DEST bash tests/mscclpp/plans.sh
set -u
[ $# = 2 ] || { echo "usage: $0 GITDIR DEST" >&2; exit 2; }
git=$1 dest=$2 src=$(dirname "$0")/SOURCE.md
current=$(sed -n 's/.*from `main` at \*\*\([0-9a-f]\{40\}\)\*\*.*/\1/p' "$src")
old=$(sed -n 's/.*taken from \*\*\([0-9a-f]\{40\}\)\*\*.*/\1/p' "$src")
[ -n "$current" ] && [ -n "$old" ] || { echo "$0: cannot read the commits in $src" >&2; exit 2; }
bad=0
# take GEN COMMIT PATH SHA16: one file out of the commit, checked
take() {
    local out=$dest/$1/$3
    mkdir -p "$(dirname "$out")"
    if ! git -C "$git" show "$2:$3" >"$out" 2>/dev/null; then
        echo "$0: $3 is not in $2" >&2; bad=1; return
    fi
    [ -z "$4" ] || [ "$(sha256sum <"$out" | cut -c1-16)" = "$4" ] || { echo "$0: $1/$3 differs from SOURCE.md" >&2; bad=1; }
}
section=
while IFS= read -r line; do
    case "$line" in
    "## Current format"*) section=current ;;
    "## Old format"*) section=old ;;
    "## "*) section= ;;
    "| "*)
        [ -n "$section" ] || continue
        IFS='|' read -r _ path _ _ sha _ <<<"$line"
        path=$(echo "$path" | tr -d ' '); sha=$(echo "$sha" | tr -d ' ')
        case "$path" in path | ---* | "") continue ;; esac
        commit=$current; [ "$section" = old ] && commit=$old
        if [ "$path" = LICENSE ]; then take . "$commit" LICENSE ""; else take "$section" "$commit" "$path" "$sha"; fi ;;
    esac
done <"$src"
[ $bad = 0 ] && echo "extracted into $dest"
exit $bad
