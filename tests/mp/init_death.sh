#!/bin/bash
# tests/mp/init_death.sh - a rank that dies during init is named by the ranks that survive it,
# never taken for rank 0. Three processes of examples/rank_example.c on the sim engine; the
# LD_PRELOAD library tests/mp/send_shim.c kills one at a fixed control-plane message (its 2nd:
# its record for "init: the shared page") and holds another one's record back 0.5 s, so rank 0
# has taken the dead rank's record and finds it gone only when it hands the records out:
#   1. rank 1 dies: rank 0 and rank 2 (still waiting for its records) name rank 1;
#   2. rank 2 dies: rank 0 and rank 1 (already served, at its next step) name rank 2;
#   3. rank 1 dies right after its hello: both others name rank 1;
#   4. rank 1 dies and rank 0 is killed before it can say so: rank 2 names both.
# RANK_EXAMPLE names another build's rank_example (to see these fail on an older library).
source "$(dirname "$0")/../lib/common.bash"
export CDSL_ENGINE=sim CDSL_TIMEOUT=10
bin=${RANK_EXAMPLE:-build/rank_example}
shim=$tmp/send_shim.so
if ! ${CC:-cc} -std=c11 -Wall -Wextra -Werror -shared -fPIC -o "$shim" tests/mp/send_shim.c -ldl 2>"$tmp/cc.log"; then
    fail "send_shim builds" "$(head -3 "$tmp/cc.log")"
    exit 1
fi

# job NAME SHIM0 SHIM1 SHIM2: three ranks, each with its SEND_SHIM_* settings ("" for none);
# rank r's output in $tmp/NAME/rR
job() {
    local name=$1 r pids=()
    dir=$tmp/$name
    mkdir -m 700 "$dir"
    shift
    for r in 0 1 2; do
        # shellcheck disable=SC2086
        CDSL_NRANKS=3 CDSL_ID_FILE=$dir/id CDSL_RANK=$r LD_PRELOAD=$shim env $1 timeout 60 "$bin" >"$dir/r$r" 2>&1 &
        pids+=($!)
        shift
    done
    for r in "${pids[@]}"; do wait "$r" 2>/dev/null; done
}

# says NAME RANK PATTERN...: rank RANK's output matches every pattern (grep -E)
says() {
    local name=$1 r=$2 p
    shift 2
    for p in "$@"; do
        grep -qE "$p" "$dir/r$r" || { fail "$name" "rank $r says: $(head -2 "$dir/r$r" | tr '\n' ' ')"; return 1; }
    done
    pass "$name"
}

job rank1 "" SEND_SHIM_KILL_AFTER=2 SEND_SHIM_DELAY=2:500
says "rank 1 dies during init: rank 0 names it" 0 "error: rank 1 has exited \(pid [0-9]+\) during init"
says "rank 1 dies during init: rank 2 names it, not rank 0" 2 "error: rank 1 has exited \(pid [0-9]+\) during init"

job rank2 "" SEND_SHIM_DELAY=2:500 SEND_SHIM_KILL_AFTER=2
says "rank 2 dies during init: rank 0 names it" 0 "error: rank 2 has exited \(pid [0-9]+\) during init"
says "rank 2 dies during init: rank 1, already past that step, names it, not rank 0" 1 \
    "error: rank 2 has exited \(pid [0-9]+\) during init"

job hello "" SEND_SHIM_KILL_AFTER=1 ""
says "rank 1 dies right after its hello: rank 2 names it" 2 "error: rank 1 has exited \(pid [0-9]+\) (before|during) init"

job both SEND_SHIM_KILL_AFTER=3 SEND_SHIM_KILL_AFTER=2 SEND_SHIM_DELAY=2:500
says "rank 1 dies and rank 0 goes without a word: rank 2 names both" 2 \
    "error: rank 2: rank 1 \(pid [0-9]+\) and rank 0 \(pid [0-9]+\) have exited during init"
exit $((failures > 0))
