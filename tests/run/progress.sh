#!/bin/bash
# tests/run/progress.sh - long work shows what it is doing, on a terminal only: the
# checker ("checking NAME for N ranks"), NVRTC ("compiling ... with NVRTC"), and a sweep of sizes
# in cdslrun ("NAME, SIZE (i of n)"); each line is erased when the work ends, and before any
# diagnostic. Run under a pseudo-terminal from Python; CDSL_PROGRESS_AFTER=0 shows the line
# from the start (the default waits a second), so nothing here depends on how fast the machine
# is. Through a pipe, or with -fdiagnostics-format=json, there is no progress at all.
source "$(dirname "$0")/../lib/common.bash"
need python3 python3 || exit 0
export CDSL_CACHE_DIR=$tmp/cache
unset CDSL_NO_CACHE

# on_tty OUT CMD...: CMD with stdout and stderr on a new pseudo-terminal; the bytes to OUT.
on_tty() {
    local out=$1; shift
    python3 - "$out" "$@" <<'PY'
import os, pty, subprocess, sys
master, slave = pty.openpty()
p = subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, close_fds=True)
os.close(slave)
data = b""
while True:
    try:
        chunk = os.read(master, 65536)
    except OSError:
        break
    if not chunk:
        break
    data += chunk
p.wait()
open(sys.argv[1], "wb").write(data)
sys.exit(p.returncode)
PY
}
# shows FILE TEXT: the progress line with TEXT was drawn ("\r\e[Kcdsl...: TEXT").
shows() { grep -qaF "$(printf '\r\033[K')$2" "$1"; }
# ends_clean FILE: the last progress line was erased: the output ends with "\r\e[K" (and
# possibly a newline-free nothing), or has plain text after the last erase.
erased() { python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); i=d.rfind(b"\r\x1b[K"); j=d.rfind(b"cdsl: "); sys.exit(0 if i >= 0 and (j < i or d.rfind(b"\r\x1b[Kcdsl") < i) else 1)' "$1"; }

export CDSL_PROGRESS_AFTER=0
on_tty "$tmp/check" "$CDSLC" stdlib/allgather_mesh.cdsl -n 8; rc=$?
if [ $rc = 0 ] && shows "$tmp/check" "cdsl: checking allgather_mesh for 8 ranks ..." && erased "$tmp/check"; then
    pass "on a terminal: the checker's progress, erased at the end"
else fail "on a terminal: the checker's progress, erased at the end" "exit $rc: $(od -c "$tmp/check" | head -5)"; fi
"$CDSLC" stdlib/allgather_mesh.cdsl -n 8 >"$tmp/pipe" 2>&1
[ ! -s "$tmp/pipe" ] && pass "through a pipe: nothing" || fail "through a pipe: nothing" "$(od -c "$tmp/pipe" | head -3)"
on_tty "$tmp/json" "$CDSLC" stdlib/allgather_mesh.cdsl -n 8 -fdiagnostics-format=json
[ "$(tr -d '\r\n' <"$tmp/json")" = "[]" ] && pass "JSON diagnostics: no progress, even on a terminal" ||
    fail "JSON diagnostics: no progress, even on a terminal" "$(od -c "$tmp/json" | head -3)"

# A diagnostic erases the line first, so that it starts a line of its own.
on_tty "$tmp/race" "$CDSLC" tests/check/race_relaxed_publish.cdsl -n 2 --color=never
if grep -qaF "$(printf '\r\033[Ktests/check/race_relaxed_publish.cdsl:13:5: error: data race')" "$tmp/race" ||
    { ! grep -qaF "cdsl: checking" "$tmp/race" && grep -qa "^tests/check/race_relaxed_publish.cdsl:13:5: error" "$tmp/race"; }; then
    pass "a diagnostic erases the progress line before it"
else fail "a diagnostic erases the progress line before it" "$(od -c "$tmp/race" | head -6)"; fi

# NVRTC, when it is here.
probe=$("$CDSLC" stdlib/barrier_switch.cdsl -n 2 --emit-ptx -o "$tmp/probe.ptx" 2>&1)
if echo "$probe" | grep -q "NVRTC (libnvrtc.so) was not found"; then
    echo "[SKIP] NVRTC's progress: libnvrtc not found"
else
    on_tty "$tmp/nvrtc" "$CDSLC" stdlib/allgather_ring.cdsl -n 4 --emit-ptx -o "$tmp/a.ptx"; rc=$?
    if [ $rc = 0 ] && shows "$tmp/nvrtc" "cdsl: compiling allgather_ring_p2p_f32.cu with NVRTC for sm_90 ..." && erased "$tmp/nvrtc"; then
        pass "on a terminal: NVRTC's progress"
    else fail "on a terminal: NVRTC's progress" "exit $rc: $(od -c "$tmp/nvrtc" | head -5)"; fi
fi

# cdslrun's sweep: one line per size, erased before each result row.
on_tty "$tmp/sweep" "$CDSLRUN" stdlib/allgather_ring.cdsl -n 2 --backend sim --sizes 1K:8K; rc=$?
if [ $rc = 0 ] && shows "$tmp/sweep" "cdslrun: allgather_ring, 1 KiB (1 of 4)" && shows "$tmp/sweep" "cdslrun: allgather_ring, 8 KiB (4 of 4)" &&
    [ "$(tr -d '\r' <"$tmp/sweep" | grep -ac 'verified')" = 4 ]; then
    pass "on a terminal: cdslrun's sweep, size by size"
else fail "on a terminal: cdslrun's sweep, size by size" "exit $rc: $(od -c "$tmp/sweep" | head -5)"; fi
"$CDSLRUN" stdlib/allgather_ring.cdsl -n 2 --backend sim --sizes 1K:8K 2>"$tmp/sweep_err" >/dev/null
[ ! -s "$tmp/sweep_err" ] && pass "cdslrun through a pipe: no progress" || fail "cdslrun through a pipe: no progress" "$(head -c 200 "$tmp/sweep_err")"
