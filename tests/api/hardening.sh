#!/bin/bash
# tests/api/hardening.sh - a library that never exits or crashes its host, and tools that say
# when they fail:
#   - every public function of cdsl.h with NULL for each pointer argument (null_args.c), and
#     the test's list of functions against the header's, so that none is forgotten;
#   - a program for another rank count or an unknown type in cdsl_fill/cdsl_check, an unknown
#     artifact kind (misuse.c);
#   - in-place layouts through the API, their refusals, cdsl_check_detail (in_place.c);
#   - buffers laid out for an in-place window at one place, refused to a program of the same
#     buffer sizes with its window at another (layout_stride.c);
#   - the last error's text, per communicator (from any thread) and per thread (last_error.c);
#   - the refusals both communicators share (program_layout.c), word for word (front_ends.c);
#   - the packet slots: a program without packets is refused on them, CDSL_PKT_FLAG (packet_slots.c);
#   - a .cdsl program and an imported plan in turn on one communicator, every run verified (program_mix.c);
#   - out of memory through the API (oom.c, address space limited: plain build only) and in
#     the tools under ulimit -v: exit 3 with a message;
#   - a chain of 256 files, each importing the next, compiled from a thread with a 1 MiB stack
#     (deep_imports.c) and by cdslc with a 1 MiB stack;
#   - the sim's memory budget under ulimit -v;
#   - write errors: /dev/full for every kind of output, -o that fails half way (ulimit -f)
#     leaves the old file as it was and no temporary file, -o naming the input is refused (also
#     the file standard input reads, for "-");
#   - user text in the tools' own messages (a file name, an option, a path in a run's report,
#     --json) is shown escaped.
# The C programs are built against build/libcdsl.a and, where it exists, build/asan/libcdsl.a;
# they share tests/api/fixture.h (compiling a program, the [PASS]/[FAIL] lines).
cd "$(dirname "$0")/../.." || exit 2
source tests/lib/need.bash
CDSLC=${CDSLC:-$PWD/build/cdslc} CDSLRUN=${CDSLRUN:-$PWD/build/cdslrun}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CFLAGS="-std=c11 -Wall -Wextra -Wpedantic -Werror -g -O1 -pthread -D_GNU_SOURCE -Iruntime"
ASAN_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
AG=examples/allgather.cdsl

pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: ${2:0:400}}"; }
ok() { if eval "$2"; then pass "$1"; else fail "$1" "${3:-}"; fi; }

# build NAME LABEL: tests/api/NAME.c against the plain ("") or the ASan ("asan") library.
build() {
    local lib=build/libcdsl.a flags="" out=$tmp/$1$2
    if [ "$2" = asan ]; then lib=build/asan/libcdsl.a flags=$ASAN_FLAGS; fi
    [ -f "$lib" ] || { echo "[SKIP] $1 ($2): no $lib"; return 1; }
    # shellcheck disable=SC2086
    cc $CFLAGS $flags -o "$out" "tests/api/$1.c" "$lib" -ljansson -ldl -lm 2>"$tmp/cc.log" && return 0
    fail "tests/api/$1.c builds ($2)" "$(head -3 "$tmp/cc.log" | tr '\n' ' ')"
    return 1
}

# run_c NAME LABEL ARGS...: its [PASS]/[FAIL] lines, labelled; and no sanitizer report.
run_c() {
    local name=$1 label=$2 out rc; shift 2
    out=$(timeout 300 "$tmp/$name$label" "$@" 2>&1); rc=$?
    echo "$out" | sed -n "s/^\[\(PASS\|FAIL\|SKIP\)\] /[\1] ${label:+$label }$name: /p"
    if echo "$out" | grep -qE 'Sanitizer|runtime error:'; then
        fail "${label:+$label }$name: no sanitizer report" "$(echo "$out" | grep -m1 -E 'Sanitizer|runtime error:')"
    elif [ $rc != 0 ] && ! echo "$out" | grep -q '^\[FAIL\]'; then
        fail "${label:+$label }$name: exit $rc" "$(echo "$out" | tail -3 | tr '\n' ' ')"
    fi
}

# ---- NULL arguments: the header's functions, every one tested ---------------------------------
if build null_args ""; then
    cc -E -P -Iruntime runtime/cdsl.h | grep -oE '\bcdsl_[a-z0-9_]+ *\(' | sed 's/ *(//' | sort -u >"$tmp/header"
    "$tmp/null_args" --list | sort -u >"$tmp/tested"
    missing=$(comm -23 "$tmp/header" "$tmp/tested" | tr '\n' ' ')
    extra=$(comm -13 "$tmp/header" "$tmp/tested" | tr '\n' ' ')
    ok "null_args.c knows every function cdsl.h declares ($(wc -l <"$tmp/header"))" '[ -z "$missing$extra" ]' \
        "not tested: $missing; not in cdsl.h: $extra"
    run_c null_args "" $AG
fi
build null_args asan && run_c null_args asan $AG

# ---- misuse ---------------------------------------------------------------------------------------
build misuse "" && run_c misuse "" $AG
build misuse asan && run_c misuse asan $AG

# ---- the last error: cdsl_get_last_error, cdsl_rank_get_last_error ----------------------------------
build last_error "" && run_c last_error "" $AG
build last_error asan && run_c last_error asan $AG

# ---- the refusals both front ends share ------------------------------------------------------------
build front_ends "" && run_c front_ends "" $AG
build front_ends asan && run_c front_ends asan $AG

# ---- in place: the API's in-place layouts and refusals, the first wrong element -----------------
IP="stdlib/allgather_ring.cdsl stdlib/allreduce_nvls.cdsl stdlib/reducescatter_nvls.cdsl stdlib/alltoall_mesh.cdsl"
# shellcheck disable=SC2086
build in_place "" && run_c in_place "" $IP
# shellcheck disable=SC2086
build in_place asan && run_c in_place asan $IP

# ---- in place: buffers laid out for one window are refused to a program with another ---------------
cat >"$tmp/ar8.cdsl" <<'CDSL'
program ar8(chunks = 2) implements allreduce {
    scratch part[6];
    switch.signal(relaxed);
    switch.wait(relaxed);
    for k in 0 .. 2 {
        switch.reduce(part[k], input[2 * rank + k]);
        switch.store(output[2 * rank + k], part[k]);
    }
    switch.signal();
    switch.wait();
}
CDSL
build layout_stride "" && run_c layout_stride "" "$tmp/ar8.cdsl" tests/mscclpp/in_place_no_layout.json
build layout_stride asan && run_c layout_stride asan "$tmp/ar8.cdsl" tests/mscclpp/in_place_no_layout.json

# ---- the packet slots are the runtime's: a program without packets may not run on them -------------
cat >"$tmp/pa.cdsl" <<'CDSL'
program pa implements allgather {
    let other = peer(1 - rank);
    other.send_packets(input[0]);
    copy(output[rank], input[0]);
    other.recv_packets(output[1 - rank]);
}
CDSL
cat >"$tmp/pb.cdsl" <<'CDSL'
program pb implements custom {
    input[1];
    output[2];
    scratch t[4];
    for k in 0 .. 4 { copy(t[k], input[0]); }
    copy(output[0], input[0]);
    copy(output[1], input[0]);
}
CDSL
build packet_slots "" && run_c packet_slots "" "$tmp/pa.cdsl" "$tmp/pb.cdsl"
build packet_slots asan && run_c packet_slots asan "$tmp/pa.cdsl" "$tmp/pb.cdsl"

# ---- a .cdsl program and an imported plan in turn on one communicator (program_mix.c) -----------------
build program_mix "" && run_c program_mix "" sim stdlib/allgather_mesh.cdsl tests/mscclpp/allgather_put.json
build program_mix asan && run_c program_mix asan sim stdlib/allgather_mesh.cdsl tests/mscclpp/allgather_put.json

# ---- out of memory ------------------------------------------------------------------------------------
# 16M operations: several GiB of IR; a loop of 20000 copies at -n 1 passes and emits ~2 MB of CUDA.
printf 'program big implements allgather { for i in 0 .. 16000000 { copy(output[rank], input[0]); } }\n' >"$tmp/big.cdsl"
printf 'program medium implements allgather { for i in 0 .. 20000 { copy(output[0], input[0]); } }\n' >"$tmp/medium.cdsl"
build oom "" && run_c oom "" "$tmp/big.cdsl" "$tmp/medium.cdsl"
out=$( (ulimit -v 400000; "$CDSLC" "$tmp/big.cdsl" -n 1) 2>&1); rc=$?
ok "cdslc out of memory (ulimit -v): exit 3, says so" '[ $rc = 3 ] && echo "$out" | grep -q "error: out of memory"' "exit $rc: $out"
out=$( (ulimit -v 400000; "$CDSLRUN" "$tmp/big.cdsl" -n 1 --backend sim) 2>&1); rc=$?
ok "cdslrun out of memory (ulimit -v): exit 3, says so" '[ $rc = 3 ] && echo "$out" | grep -q "error: out of memory"' "exit $rc: $out"
ok "cdslc --help names exit 3" '"$CDSLC" --help | grep -q "3 system (out of memory"'

# ---- the sim's memory budget -----------------------------------------------------------------------------
# 4 ranks x (input + output + the output's end copy) of a 1 GiB allgather: 9 GiB, refused before
# allocating, with a budget under ulimit -v's 1 GB (the budget follows the limit, not the machine's
# memory).
out=$( (ulimit -v 1000000; "$CDSLRUN" stdlib/allgather_ring.cdsl -n 4 --backend sim --size 1G) 2>&1); rc=$?
may=$(echo "$out" | sed -n 's/.*it may use \([0-9.]*\) \([KMG]\)iB here.*/\1 \2/p')
ok "sim budget under ulimit -v 1000000: refused, a budget below the limit" \
    '[ $rc = 3 ] && [ -n "$may" ] && awk -v v="${may% *}" -v u="${may#* }" "BEGIN { m = u == \"G\" ? 1048576 : u == \"M\" ? 1024 : 1; exit !(v * m < 1000000) }"' \
    "exit $rc: $out"
out=$( (ulimit -v 1000000; "$CDSLRUN" stdlib/allgather_ring.cdsl -n 4 --backend sim --size 16M) 2>&1); rc=$?
ok "sim under ulimit -v 1000000: a run that fits still verifies" '[ $rc = 0 ]' "exit $rc: $out"

# ---- deep imports -----------------------------------------------------------------------------------------
mkdir -p "$tmp/chain"
for i in $(seq 1 255); do
    if [ "$i" = 255 ]; then echo 'def last() { }'; else printf 'import "f%03d.cdsl";\n' $((i + 1)); fi >"$tmp/chain/f$(printf %03d "$i").cdsl"
done
printf 'import "f001.cdsl";\nprogram deep implements barrier { last(); switch.signal(relaxed); switch.wait(relaxed); }\n' >"$tmp/chain/main.cdsl"
build deep_imports "" && { out=$("$tmp/deep_imports" "$tmp/chain/main.cdsl" 2 2>&1); rc=$?
    ok "256 files deep, compiled from a thread with a 1 MiB stack" '[ $rc = 0 ] && [ "$out" = rc=0 ]' "exit $rc: $out"; }
build deep_imports asan && { out=$("$tmp/deep_importsasan" "$tmp/chain/main.cdsl" 2 2>&1); rc=$?
    ok "asan: 256 files deep, compiled from a thread with a 1 MiB stack" '[ $rc = 0 ] && [ "$out" = rc=0 ]' "exit $rc: $out"; }
out=$( (ulimit -s 1024; "$CDSLC" "$tmp/chain/main.cdsl" -n 2) 2>&1); rc=$?
ok "cdslc: 256 files deep with a 1 MiB stack" '[ $rc = 0 ]' "exit $rc: $out"
echo 'def one_more() { }' >"$tmp/chain/f256.cdsl"
printf 'import "f256.cdsl";\n' >"$tmp/chain/f255.cdsl"
out=$("$CDSLC" "$tmp/chain/main.cdsl" -n 2 2>&1); rc=$?
ok "cdslc: 257 files: the limit, said" '[ $rc = 1 ] && echo "$out" | grep -q "too many imported files (the limit is 256)"' "exit $rc: $out"

# ---- write errors ------------------------------------------------------------------------------------------
for e in --dump-ast --dump-ir --emit-dot --emit-cuda; do
    out=$("$CDSLC" $AG -n 2 $e 2>&1 >/dev/full); rc=$?
    ok "cdslc $e to /dev/full: exit 3, says so" '[ $rc = 3 ] && echo "$out" | grep -q "cannot write to standard output: No space left"' "exit $rc: $out"
done
for flags in "" --json --bench; do
    out=$("$CDSLRUN" $AG -n 2 --backend sim --size 4K $flags 2>&1 >/dev/full); rc=$?
    ok "cdslrun ${flags:-(summary)} to /dev/full: exit 3, says so" '[ $rc = 3 ] && echo "$out" | grep -q "cannot write to standard output"' "exit $rc: $out"
done
mkdir "$tmp/o"
echo "the old file" >"$tmp/o/x.cu"
out=$( (trap '' XFSZ; ulimit -f 1; "$CDSLC" $AG -n 2 --emit-cuda -o "$tmp/o/x.cu") 2>&1); rc=$?
ok "-o failing half way (ulimit -f): exit 3, says so" '[ $rc = 3 ] && echo "$out" | grep -q "cannot write .*x.cu.: File too large"' "exit $rc: $out"
ok "-o failing half way: the old file is as it was, no temporary file left" \
    '[ "$(cat "$tmp/o/x.cu")" = "the old file" ] && [ "$(ls -A "$tmp/o")" = x.cu ]' "$(ls -A "$tmp/o")"
out=$( (trap '' XFSZ; ulimit -f 1; "$CDSLC" $AG -n 2 --emit-dot -o "$tmp/o/new.dot") 2>&1); rc=$?
ok "--emit-dot -o failing half way: exit 3, no file" '[ $rc = 3 ] && [ "$(ls -A "$tmp/o")" = x.cu ]' "exit $rc: $(ls -A "$tmp/o")"
(umask 027; "$CDSLC" $AG -n 2 --emit-cuda -o "$tmp/o/y.cu"); rc=$?
ok "-o: complete, with the mode the umask gives" '[ $rc = 0 ] && grep -q __global__ "$tmp/o/y.cu" && [ "$(stat -c %a "$tmp/o/y.cu")" = 640 ]' \
    "exit $rc, mode $(stat -c %a "$tmp/o/y.cu" 2>&1)"
ok "-o /dev/null: written in place" '"$CDSLC" $AG -n 2 --emit-cuda -o /dev/null && [ -c /dev/null ]'
cp $AG "$tmp/o/self.cdsl"
ln "$tmp/o/self.cdsl" "$tmp/o/link.cdsl"
for o in "$tmp/o/self.cdsl" "$tmp/o/../o/self.cdsl" "$tmp/o/link.cdsl"; do
    out=$("$CDSLC" "$tmp/o/self.cdsl" -n 2 --emit-cuda -o "$o" 2>&1); rc=$?
    ok "-o naming the input (${o#"$tmp"/}) is refused" \
        '[ $rc = 2 ] && echo "$out" | grep -q "is the input file; refusing to overwrite it" && cmp -s $AG "$tmp/o/self.cdsl"' "exit $rc: $out"
done
# "-": the file standard input reads is the input too (fstat of descriptor 0), however -o names it.
for o in in.cdsl in_link.cdsl; do
    rm -f "$tmp/o/in.cdsl" "$tmp/o/in_link.cdsl"
    cp $AG "$tmp/o/in.cdsl" && ln "$tmp/o/in.cdsl" "$tmp/o/in_link.cdsl"
    out=$("$CDSLC" - -n 2 --emit-cuda -o "$tmp/o/$o" <"$tmp/o/in.cdsl" 2>&1); rc=$?
    ok "-o naming the file standard input reads ($o) is refused" \
        '[ $rc = 2 ] && echo "$out" | grep -q "is the file standard input reads; refusing to overwrite it" && cmp -s $AG "$tmp/o/in.cdsl"' "exit $rc: $out"
done
cp $AG "$tmp/o/self.cdsl"
out=$("$CDSLC" - -n 2 --emit-cuda -o "$tmp/o/from_stdin.cu" <"$tmp/o/self.cdsl" 2>&1); rc=$?
ok "-o another file with a file on standard input: written" '[ $rc = 0 ] && grep -q __global__ "$tmp/o/from_stdin.cu"' "exit $rc: $out"
out=$("$CDSLC" - -n 2 --emit-cuda -o /dev/null <"$tmp/o/self.cdsl" 2>&1); rc=$?
ok "-o /dev/null with a file on standard input: written in place" '[ $rc = 0 ]' "exit $rc: $out"

# ---- user text in the tools' own messages ------------------------------------------------------------------
esc=$(printf '\033]0;owned\a\033[2J')
cp $AG "$tmp/$esc.cdsl"
printf 'program lost implements barrier {\n    if rank == 0 { peer(1).wait(); }\n}\n' >"$tmp/lost$esc.cdsl"
out=$("$CDSLC" "$tmp/$esc.cdsl" -n 2 --frobnicate"$esc" 2>&1)
ok "cdslc: an unknown option is shown escaped" 'echo "$out" | grep -qF "unknown option '"'"'--frobnicate\\x1b]0;owned\\x07\\x1b[2J'"'"'"' "$out"
out=$("$CDSLC" "$tmp/nothing$esc.cdsl" -n 2 2>&1)
ok "cdslc: a missing file's name is shown escaped" 'echo "$out" | grep -qF "nothing\\x1b]0;owned\\x07\\x1b[2J.cdsl" && ! echo "$out" | grep -q "$(printf "\033")"' "$out"
out=$("$CDSLC" "$tmp/$esc.cdsl" -n 2 --emit-cuda -o "$tmp/no/such$esc" 2>&1)
ok "cdslc: an -o that cannot be written is shown escaped" 'echo "$out" | grep -qF "such\\x1b]0;owned" && ! echo "$out" | grep -q "$(printf "\033")"' "$out"
out=$("$CDSLRUN" "$tmp/lost$esc.cdsl" -n 2 --unchecked --spin-limit 20000 --size 4K 2>&1)
ok "cdslrun: the file in a run's report is shown escaped" \
    'echo "$out" | grep -qF "lost\\x1b]0;owned\\x07\\x1b[2J.cdsl:2:" && ! echo "$out" | grep -q "$(printf "\033")"' "$out"
json=$("$CDSLRUN" "$tmp/$esc.cdsl" -n 2 --backend sim --size 4K --json 2>/dev/null)
need python3 python3 "cdslrun --json: the file name escaped, and the JSON parses" && ok "cdslrun --json: the file name escaped, and the JSON parses" \
    'echo "$json" | python3 -c "import json, sys; f = json.load(sys.stdin)[\"file\"]; sys.exit(not f.endswith(\"\\\\x1b]0;owned\\\\x07\\\\x1b[2J.cdsl\"))"' "$json"
exit 0
