#!/bin/bash
# tests/mp/ctl_attacks.sh - a local process that is not one of the job's ranks cannot stop a
# starting sim job. Rank 0's control-plane socket is listed in /proc/net/unix for every user to
# see; while a 3-rank job (examples/rank_example.c, the id through a file) waits for its ranks,
# tests/mp/ctl_intruder.c connects to it:
#   1. a process of another user says hello with a wrong nonce, and one with the right nonce
#      (an id that leaked) claiming rank 1 (as root, through setpriv; [SKIP] otherwise); and
#      one that binds the id's name while rank 0 is not there: rank 1 sends it no hello;
#   2. a process of the same user says hello with a wrong nonce (rank 0, under CDSL_DEBUG=INFO,
#      says so in one line that is not an error; its join line says "no GPU"), and one sends
#      bytes that are not cdsl's;
#   3. 70 connections that never speak are opened before the real ranks connect: rank 0 closes
#      them all within a few seconds, and with 70 of them open, a rank that never comes is still
#      named within the job's timeout;
#   4. 100 hellos of the same user with 4 descriptors each that their header does not count, to
#      a rank 0 limited to 256 descriptors: it closes every one and still accepts its ranks.
# In 1-4 the job completes: every rank verifies its runs. RANK_EXAMPLE names another build's
# rank_example (to see these fail on an older library).
source "$(dirname "$0")/../lib/common.bash"
export CDSL_ENGINE=sim CDSL_TIMEOUT=${CDSL_TIMEOUT:-10}
bin=${RANK_EXAMPLE:-build/rank_example}
chmod 711 "$tmp"                # another user runs the intruder from $tmp/pub
mkdir -m 755 "$tmp/pub"
intruder=$tmp/pub/ctl_intruder
if ! ${CC:-cc} -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$intruder" tests/mp/ctl_intruder.c 2>"$tmp/cc.log"; then
    fail "ctl_intruder builds" "$(head -3 "$tmp/cc.log")"
    exit 1
fi
chmod 755 "$intruder"
as_other=()
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
    as_other=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi

# rank0 JOB N [NOFILE]: starts rank 0 of N in $tmp/JOB (with at most NOFILE descriptors); sets
# NAME (the socket's name, from the id file) and NONCE (hex) once rank 0 listens. 1 when it
# does not within 20 s.
rank0() {
    job=$tmp/$1 n=$2 NAME="" NONCE=""
    mkdir -m 700 "$job"
    (ulimit -n "${3:-$(ulimit -n)}" && CDSL_NRANKS=$n CDSL_ID_FILE=$job/id CDSL_RANK=0 exec timeout 120 "$bin") >"$job/r0" 2>&1 &
    pids=($!)
    for ((i = 0; i < 2000; i++)); do
        [ -z "$NAME" ] && [ -s "$job/id" ] && NAME=$(dd if="$job/id" bs=1 skip=16 count=37 2>/dev/null)
        [ -n "$NAME" ] && grep -q "@$NAME\$" /proc/net/unix && break
        sleep 0.01
    done
    NONCE=$(od -An -tx1 -j56 -N16 "$job/id" 2>/dev/null | tr -d ' \n')
    [[ $NAME =~ ^cdsl-[0-9a-f]{32}$ ]] && grep -q "@$NAME\$" /proc/net/unix
}

# rest [RANKS...]: starts the given ranks (default: 1 .. n-1) and waits for every rank
rest() {
    local r ranks=("$@")
    [ $# = 0 ] && ranks=($(seq 1 $((n - 1))))
    for r in "${ranks[@]}"; do
        CDSL_NRANKS=$n CDSL_ID_FILE=$job/id CDSL_RANK=$r timeout 120 "$bin" >"$job/r$r" 2>&1 &
        pids+=($!)
    done
    for r in "${pids[@]}"; do wait "$r"; done
}

# verified NAME: every rank verified its runs
verified() {
    local r bad=""
    for ((r = 0; r < n; r++)); do
        grep -q "rank_example: rank $r verified 4 runs" "$job/r$r" || bad="rank $r: $(head -2 "$job/r$r" | tr '\n' ' ')"
        [ -n "$bad" ] && break
    done
    [ -z "$bad" ] && pass "$1" || fail "$1" "$bad"
}

# ---- 1. another user --------------------------------------------------------------------------
if [ ${#as_other[@]} = 0 ]; then
    echo "[SKIP] ctl_attacks: another user's connection (needs root and setpriv, Debian: util-linux)"
else
    if rank0 other 3; then
        said=$("${as_other[@]}" "$intruder" hello "$NAME" 1 3 2>&1)
        rest
        verified "another user's hello with a wrong nonce is dropped; the job completes ($said)"
    else
        fail "another user's hello with a wrong nonce" "rank 0 did not listen: $(head -2 "$job/r0")"
    fi
    if rank0 leaked 3; then
        said=$("${as_other[@]}" "$intruder" hello "$NAME" 1 3 "$NONCE" 2>&1)
        rest
        verified "another user with the right nonce (a leaked id) claiming rank 1 is dropped; the job completes ($said)"
    else
        fail "another user with the right nonce" "rank 0 did not listen: $(head -2 "$job/r0")"
    fi
fi

# Another user binds the id's name while rank 0 is not there (here: it has left): rank 1 finds
# a listener of another user there, sends it no hello (the nonce) and says so.
if [ ${#as_other[@]} != 0 ]; then
    if rank0 impostor 2; then
        kill "${pids[0]}"
        wait "${pids[0]}"
        "${as_other[@]}" "$intruder" listen "$NAME" 6 >"$job/intruder" 2>&1 &
        ipid=$!
        for ((i = 0; i < 1000; i++)); do grep -qs "listening\|cannot" "$job/intruder" && break; sleep 0.01; done
        CDSL_TIMEOUT=3 CDSL_NRANKS=2 CDSL_ID_FILE=$job/id CDSL_RANK=1 timeout 60 "$bin" >"$job/r1" 2>&1
        wait $ipid
        if grep -q "no hello" "$job/intruder" &&
            grep -q "cdsl: error: rank 1: rank 0 never arrived at init within 3 s: what listened at the id's address was a process of another user (pid [0-9]*, uid 65534)" "$job/r1"; then
            pass "rank 1 sends no hello to another user's listener at the id's address, and says so"
        else
            fail "rank 1 sends no hello to another user's listener" "$(tr '\n' ' ' <"$job/intruder") $(head -2 "$job/r1" | tr '\n' ' ')"
        fi
    else
        fail "another user's listener at the id's address" "rank 0 did not listen: $(head -2 "$job/r0")"
    fi
fi

# ---- 2. the same user --------------------------------------------------------------------------
if CDSL_DEBUG=INFO rank0 nonce 3; then
    said=$("$intruder" hello "$NAME" 2 3 2>&1)
    rest
    verified "the same user's hello with a wrong nonce is dropped; the job completes ($said)"
    drops=$(grep -c "cdsl INFO .*dropped" "$job/r0")
    if [ "$drops" = 1 ] && ! grep -q "error" "$job/r0"; then
        pass "CDSL_DEBUG=INFO: rank 0 says in one line that it dropped the connection, and no error"
    else
        fail "CDSL_DEBUG=INFO: one line for the dropped connection" "$drops lines: $(grep -m3 "dropped\|error" "$job/r0" | tr '\n' ' ')"
    fi
    grep -q "cdsl INFO engine sim: rank 0 of 3, no GPU (" "$job/r0" && pass "CDSL_DEBUG=INFO: the join line says 'no GPU' on sim" ||
        fail "CDSL_DEBUG=INFO: the join line says 'no GPU' on sim" "$(grep -m1 "INFO engine" "$job/r0")"
else
    fail "the same user's hello with a wrong nonce" "rank 0 did not listen: $(head -2 "$job/r0")"
fi
if rank0 garbage 3; then
    said=$("$intruder" garbage "$NAME" 2>&1)
    rest
    verified "bytes that are not cdsl's are dropped; the job completes ($said)"
else
    fail "bytes that are not cdsl's" "rank 0 did not listen: $(head -2 "$job/r0")"
fi

# ---- 3. idle connections -----------------------------------------------------------------------
if rank0 idle 3; then
    "$intruder" idle "$NAME" 70 5 >"$job/intruder" 2>&1 &
    ipid=$!
    for ((i = 0; i < 1000; i++)); do grep -qs "connected\|refused" "$job/intruder" && break; sleep 0.01; done
    rest
    verified "70 idle connections opened first do not crowd out the real ranks; the job completes ($(head -1 "$job/intruder"))"
    wait $ipid
    grep -q "closed by rank 0: 70 of 70" "$job/intruder" && pass "rank 0 closes connections that never speak within 5 s" ||
        fail "rank 0 closes connections that never speak within 5 s" "$(tr '\n' ' ' <"$job/intruder")"
else
    fail "70 idle connections" "rank 0 did not listen: $(head -2 "$job/r0")"
fi
if CDSL_TIMEOUT=3 rank0 missing 3; then
    "$intruder" idle "$NAME" 70 4 >"$job/intruder" 2>&1 &
    ipid=$!
    for ((i = 0; i < 1000; i++)); do grep -qs "connected\|refused" "$job/intruder" && break; sleep 0.01; done
    start=$SECONDS
    CDSL_TIMEOUT=3 rest 1
    took=$((SECONDS - start))
    wait $ipid
    if grep -q "cdsl: error: rank 2 never arrived at init within 3 s" "$job/r0" &&
        grep -q "cdsl: error: rank 2 never arrived at init within 3 s" "$job/r1" && [ $took -le 8 ]; then
        pass "with 70 idle connections open, a rank that never comes is named within the timeout (${took} s)"
    else
        fail "with 70 idle connections open, a rank that never comes is named within the timeout" \
            "${took} s: $(cat "$job/r0" "$job/r1" | head -3 | tr '\n' ' ')"
    fi
else
    fail "idle connections and a missing rank" "rank 0 did not listen: $(head -2 "$job/r0")"
fi
# ---- 4. descriptors -------------------------------------------------------------------------------
# 100 hellos with a wrong nonce, each with 4 descriptors its header does not count, to a rank 0
# that may hold 256: it closes them all and still has room for its ranks.
if rank0 fds 3 256; then
    said=$("$intruder" fds "$NAME" 100 2>&1)
    r0=$(pgrep -P "${pids[0]}" -x rank_example | head -1)
    open=$(ls "/proc/$r0/fd" 2>/dev/null | wc -l)
    rest
    verified "400 descriptors attached to hellos that do not count them are closed; the job completes ($said)"
    [ "$said" = "sent 100" ] && [ "$open" -gt 0 ] && [ "$open" -lt 64 ] &&
        pass "rank 0 holds $open descriptors after 100 such hellos" ||
        fail "rank 0 closes descriptors it does not hand out" "$open open: $said"
else
    fail "descriptors attached to hellos" "rank 0 did not listen: $(head -2 "$job/r0")"
fi
exit $((failures > 0))
