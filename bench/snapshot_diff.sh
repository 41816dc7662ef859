#!/bin/bash
# bench/snapshot_diff.sh OLD NEW - which files of two bench/snapshot.sh folders differ. PTX is
# compared without its debug line information (.loc lines and the .file table from the first
# .file on), which follows the device headers' line numbers and paths, not the instructions.
# The --standalone sources paste the device headers in, so a change to a header's comments
# shows there and nowhere else. Exit 0 when nothing differs.
[ $# = 2 ] && [ -d "$1" ] && [ -d "$2" ] || { echo "usage: bench/snapshot_diff.sh OLD NEW" >&2; exit 2; }
norm() { sed -e '/^[[:space:]]*\.loc[[:space:]]/d' -e '/^[[:space:]]*\.file[[:space:]]/,$d' "$1"; }
rc=0
for f in "$1"/*; do
    b=$(basename "$f")
    if [ ! -e "$2/$b" ]; then echo "only in $1: $b"; rc=1; continue; fi
    case $b in
    *.ptx) cmp -s <(norm "$f") <(norm "$2/$b") || { echo "differs: $b"; rc=1; } ;;
    *) cmp -s "$f" "$2/$b" || { echo "differs: $b"; rc=1; } ;;
    esac
done
for f in "$2"/*; do [ -e "$1/$(basename "$f")" ] || { echo "only in $2: $(basename "$f")"; rc=1; }; done
exit $rc
