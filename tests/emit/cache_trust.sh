#!/bin/bash
# What the JIT cache trusts. A folder that others can write (mode 1777, 0777,
# 0770) or that belongs to another user turns the cache off with one warning, and compiling goes
# on uncached. In a good folder, these are never served and never hang a compile (each compile
# runs under `timeout`): an entry planted in the old format with a valid checksum, another key's
# entry copied over this one, a FIFO at an entry's path or at every file's path in the folder, a
# symbolic link, an entry owned by another user, an entry too large, an empty file, and an entry
# whose payload is empty; CDSL_CACHE_VERBOSE says why each refused one is (a link, not a regular
# file, another owner, too large with its size and the limit). [SKIP] when NVRTC is missing; the
# other-user cases [SKIP] when not run as root.
suite=cache_trust
source "$(dirname "$0")/cache_lib.bash"
source tests/lib/need.bash
prog=stdlib/barrier_switch.cdsl

compile() {   # compile OUT DIR [N]: PTX into OUT, messages into OUT.log, cache folder DIR
    CDSL_CACHE_DIR=$2 timeout 60 "$cdslc" "$prog" -n "${3:-2}" --emit-ptx -o "$1" 2>"$1.log"
}
served_right() { [ "$2" = 0 ] && cmp -s "$tmp/ref$3" "$1" && ! grep -q "cache hit" "$1.log"; }

if ! CDSL_NO_CACHE=1 compile "$tmp/ref" "$tmp/unused"; then
    grep -q "was not found" "$tmp/ref.log" && { skip "libnvrtc not found"; exit 0; }
    fail "reference compile: $(head -3 "$tmp/ref.log" | tr '\n' ' ')"; exit 1
fi
CDSL_NO_CACHE=1 compile "$tmp/ref4" "$tmp/unused" 4 || { fail "reference compile at -n 4"; exit 1; }

# ---- the folder ----------------------------------------------------------------------------
untrusted() {   # untrusted NAME DIR: the compile works, warns once, and writes nothing there
    local name=$1 dir=$2 out=$tmp/out.$RANDOM
    compile "$out" "$dir"; local rc=$?
    if [ $rc = 0 ] && cmp -s "$tmp/ref" "$out" && [ "$(grep -c "warning: .*cache" "$out.log")" = 1 ] \
        && [ -z "$(ls -A "$dir")" ] && ! grep -q "cache miss\|cache hit" "$out.log"; then
        pass "$name: cache off with one warning, compiled uncached"
    else
        fail "$name: exit $rc, folder holds '$(ls -A "$dir" | tr '\n' ' ')', messages: $(cat "$out.log")"
    fi
}
for mode in 1777 0777 0770 0720; do
    mkdir "$tmp/mode$mode" && chmod "$mode" "$tmp/mode$mode"
    untrusted "a folder with mode $mode" "$tmp/mode$mode"
done
if [ "$(id -u)" = 0 ]; then
    mkdir -m 700 "$tmp/theirs" && chown 12345:12345 "$tmp/theirs"
    untrusted "a folder owned by another user" "$tmp/theirs"
else
    skip "a folder owned by another user (needs root to make one)"
fi
mkdir -m 1777 "$tmp/shared"
compile "$tmp/created" "$tmp/shared/cdsl/sub"
[ "$(stat -c %a "$tmp/shared/cdsl/sub")" = 700 ] && [ "$(stat -c %a "$tmp/shared/cdsl")" = 700 ] \
    && grep -q "cache miss" "$tmp/created.log" && pass "a folder the cache creates is 0700, and used" \
    || fail "created folder: $(stat -c %a "$tmp/shared/cdsl/sub"): $(cat "$tmp/created.log")"

# ---- entries in a good folder ---------------------------------------------------------------
need python3 python3 "$suite: entries in a good folder" || exit $failed
fresh() {   # fresh DIR: DIR holds exactly the reference's entry; prints its path
    rm -rf "$1"; compile "$tmp/fresh" "$1" >/dev/null && entry_of "$tmp/fresh"
}
old_format() {   # old_format FILE PAYLOAD: the pre-issue-14 format with a valid checksum
    python3 -c 'import hashlib,struct,sys; p=sys.argv[2].encode()
open(sys.argv[1],"wb").write(b"CDSLJIT1"+struct.pack("<Q",len(p))+hashlib.sha256(p).digest()+p)' "$1" "$2"
}

d=$tmp/good
entry=$(fresh "$d")
[ -n "$entry" ] || { fail "no entry in a fresh folder: $(cat "$tmp/fresh.log")"; exit 1; }
old_format "$entry" $'// planted by someone else\n.version 8.0\n'
compile "$tmp/planted" "$d"; rc=$?
served_right "$tmp/planted" $rc && pass "an entry planted in the old format with a valid checksum is not served" \
    || fail "planted entry: exit $rc, got $(head -c 60 "$tmp/planted"): $(cat "$tmp/planted.log")"

entry=$(fresh "$d"); compile "$tmp/n4" "$d" 4 >/dev/null; entry4=$(entry_of "$tmp/n4")
cp "$entry" "$entry4"
compile "$tmp/copied" "$d" 4; rc=$?
served_right "$tmp/copied" $rc 4 && pass "another key's entry copied over this one is not served" \
    || fail "copied entry: exit $rc: $(cat "$tmp/copied.log")"

entry=$(fresh "$d"); rm -f "$entry"; mkfifo "$entry"
compile "$tmp/fifo" "$d"; rc=$?
served_right "$tmp/fifo" $rc && [ -f "$entry" ] && [ ! -p "$entry" ] \
    && grep -q "refused entry (not a regular file)" "$tmp/fifo.log" \
    && pass "a FIFO at an entry's path neither hangs nor stays" || fail "FIFO entry: exit $rc: $(cat "$tmp/fifo.log")"

fresh "$d" >/dev/null
for f in "$d"/*; do rm -f "$f"; mkfifo "$f"; done
compile "$tmp/fifos" "$d"; rc=$?
served_right "$tmp/fifos" $rc && pass "a FIFO at every file's path in the folder (the old NVRTC memo's too) does not hang" \
    || fail "FIFOs everywhere: exit $rc (124: it hung): $(cat "$tmp/fifos.log")"

entry=$(fresh "$d"); mkdir -p "$tmp/elsewhere"; mv "$entry" "$tmp/elsewhere/good"; ln -s "$tmp/elsewhere/good" "$entry"
compile "$tmp/link" "$d"; rc=$?
served_right "$tmp/link" $rc && [ ! -L "$entry" ] && grep -q "refused entry (a symbolic link)" "$tmp/link.log" && pass "a symbolic link at an entry's path is not followed" \
    || fail "symlink entry: exit $rc: $(cat "$tmp/link.log")"

if [ "$(id -u)" = 0 ]; then
    entry=$(fresh "$d"); chown 12345:12345 "$entry"
    compile "$tmp/owner" "$d"; rc=$?
    served_right "$tmp/owner" $rc && [ "$(stat -c %u "$entry")" = 0 ] \
        && grep -q "refused entry (owned by uid 12345, not by you)" "$tmp/owner.log" \
        && pass "an entry owned by another user is not served" || fail "foreign entry: exit $rc: $(cat "$tmp/owner.log")"
else
    skip "an entry owned by another user (needs root to make one)"
fi

entry=$(fresh "$d"); truncate -s 1G "$entry"
compile "$tmp/huge" "$d"; rc=$?
served_right "$tmp/huge" $rc && [ "$(stat -c %s "$entry")" -lt 1048576 ] &&
    grep -q "refused entry (too large: 1073741824 bytes, over the 268435456 bytes an entry may have)" "$tmp/huge.log" \
    && pass "an entry too large (a 1 GiB sparse file) is refused as too large, with its size and the limit, and replaced" \
    || fail "1 GiB entry: exit $rc: $(cat "$tmp/huge.log")"

entry=$(fresh "$d"); : >"$entry"
compile "$tmp/empty" "$d"; rc=$?
served_right "$tmp/empty" $rc && [ -s "$entry" ] && pass "an empty file is not served, and is replaced" \
    || fail "empty file: exit $rc: $(cat "$tmp/empty.log")"

entry=$(fresh "$d"); old_format "$entry" ""
compile "$tmp/zero_old" "$d"; rc=$?
entry=$(fresh "$d"); key=$(basename "$entry" .ptx)
python3 -c 'import hashlib,struct,sys; h=b"CDSLJIT2"+sys.argv[2].encode()+struct.pack("<Q",0)
open(sys.argv[1],"wb").write(h+hashlib.sha256(h).digest())' "$entry" "$key"
compile "$tmp/zero_new" "$d"; rc2=$?
served_right "$tmp/zero_old" $rc && served_right "$tmp/zero_new" $rc2 \
    && pass "an entry with an empty payload is never a hit (old or current format)" \
    || fail "empty payload: exit $rc/$rc2: $(cat "$tmp/zero_old.log" "$tmp/zero_new.log")"
exit $failed
