#!/bin/bash
# tests/emit/plan_channels.sh - an imported plan's counters are sized from the plan, not by a
# fixed limit (runtime/abi.h, compiler/emit/emit_plan.c), checked here without a GPU:
#   - tests/mscclpp/allgather_17_channels.json, 17 channels between its two gpus (one more than
#     the device code once had counters for), emits CUDA and declares CDSL_PLAN_CHANNELS 17;
#   - plan_channels.c: ir_plan_channels, by which the runtime allocates the sync and state
#     words, is 17 for it and 1 for a .cdsl program, and abi.h's layout holds every channel's
#     words after the fixed ones, each its own, inside CDSL_SYNC_WORDS / CDSL_STATE_WORDS;
#   - in the emitted code, every wait names the words abi.h gives its channel (channel 0: the
#     peer's two-copy word; c >= 1: cdsl_wait_chan on the channel's words), and every block that
#     waits on a channel c >= 1 ends by handing on exactly its count (cdsl_tb_chan_leave), which
#     the rank's consumed() then leaves out;
#   - MSCCL++'s alltoall_ring_oop (32 channels per pair), where the corpus is, emits too.
source "$(dirname "$0")/../lib/common.bash"
source tests/lib/includes.bash
PLAN=tests/mscclpp/allgather_17_channels.json

if ! cc -std=c11 -Wall -Wextra -Wpedantic -Werror -Wshadow -g -O1 -pthread -D_GNU_SOURCE $CDSL_INCLUDES \
        -o "$tmp/plan_channels" tests/emit/plan_channels.c build/libcdsl.a -ljansson -ldl -lm 2>"$tmp/cc.log"; then
    fail "tests/emit/plan_channels.c builds" "$(head -3 "$tmp/cc.log" | tr '\n' ' ')"
    exit 1
fi
"$tmp/plan_channels" "$PLAN" 2 17 >"$tmp/words"
grep '^\[' "$tmp/words"
"$tmp/plan_channels" stdlib/allgather_ring.cdsl 4 1 | grep '^\['

if "$CDSLC" "$PLAN" --emit-cuda >"$tmp/plan.cu" 2>"$tmp/err"; then
    pass "a plan of 17 channels between two gpus emits CUDA"
else
    fail "a plan of 17 channels between two gpus emits CUDA" "$(head -1 "$tmp/err")"
    exit 1
fi
grep -q '^#define CDSL_PLAN_CHANNELS 17 ' "$tmp/plan.cu" && pass "the emitted plan declares CDSL_PLAN_CHANNELS 17" ||
    fail "the emitted plan declares CDSL_PLAN_CHANNELS 17" "$(grep -m1 CDSL_PLAN_CHANNELS "$tmp/plan.cu")"

# Each wait, with its block and channel: "block peer channel call sync base need".
awk '/^__device__ bool plan_[0-9]+_[0-9]+\(/ { split($3, f, "[_(]"); blk = f[2] "_" f[3] }
     /\/\/ [0-9]+:[0-9]+  wait peer [0-9]+ channel [0-9]+/ { peer = $5; chan = $7; want = 1; next }
     want && /CDSL_TRY\(cdsl_wait_/ { line = $0; gsub(/[(),&\[\];]/, " ", line); split(line, w, " +")
         print blk, peer, chan, w[3], w[6], w[7], w[8]; want = 0 }' "$tmp/plan.cu" >"$tmp/waits"
bad=$(awk 'NR == FNR { if ($1 == "chan") { s[$2 " " $3] = $4; b[$2 " " $3] = $5 } next }
     $3 == 0 && !($4 == "cdsl_wait_word" && $5 == 1 + $2 && $6 == 1 + $2) { print "ch0:" $0 }
     $3 > 0 && !($4 == "cdsl_wait_chan" && $5 == s[$3 " " $2] && $6 == b[$3 " " $2]) { print "ch:" $0 }' \
     "$tmp/words" "$tmp/waits")
n=$(wc -l <"$tmp/waits")
[ -z "$bad" ] && [ "$n" = 68 ] && pass "each of the 68 waits names the words abi.h gives its channel" ||
    fail "each of the 68 waits names the words abi.h gives its channel" "$n waits; $(echo "$bad" | head -2 | tr '\n' ' ')"

# The blocks' hand-overs: one per (block, channel c >= 1) waited on, with that block's count.
awk '$3 > 0 { n[$1 " " $6]++ } END { for (k in n) print k, n[k] }' "$tmp/waits" | sort >"$tmp/want_leaves"
awk '/^__device__ bool plan_[0-9]+_[0-9]+\(/ { split($3, f, "[_(]"); blk = f[2] "_" f[3] }
     /cdsl_tb_chan_leave\(/ { line = $0; gsub(/[(),;]/, " ", line); split(line, w, " +"); print blk, w[4], w[5] }' \
     "$tmp/plan.cu" | sort >"$tmp/leaves"
if [ -s "$tmp/leaves" ] && diff -q "$tmp/want_leaves" "$tmp/leaves" >/dev/null; then
    pass "every block that waits on a channel c >= 1 hands on its own count, and no other block does"
else
    fail "every block that waits on a channel c >= 1 hands on its own count" "$(diff "$tmp/want_leaves" "$tmp/leaves" | head -3 | tr '\n' ' ')"
fi
cases=$(awk '/_consumed\(u32 w\)/, /^}/' "$tmp/plan.cu" | grep -c 'channel [1-9]')
[ "$cases" = 0 ] && pass "the ranks' consumed() leave the channels c >= 1 to their blocks" ||
    fail "the ranks' consumed() leave the channels c >= 1 to their blocks" "$cases cases"

oop=${MSCCLPP_DSL:-../shared/mscclpp/dsl}/single_node_alltoall_alltoall_ring_oop_g2.json
if [ -f "$oop" ]; then
    if "$CDSLC" "$oop" --emit-cuda 2>"$tmp/err" | grep -q '^#define CDSL_PLAN_CHANNELS 32 '; then
        pass "MSCCL++'s alltoall_ring_oop (32 channels between gpus 0 and 1) emits CUDA"
    else
        fail "MSCCL++'s alltoall_ring_oop emits CUDA" "$(head -1 "$tmp/err")"
    fi
else
    echo "[SKIP] $test_name: MSCCL++'s alltoall_ring_oop: needs ../shared/mscclpp/dsl (the MSCCL++ DSL corpus)"
fi
exit $((failures > 0))
