#!/bin/bash
# tests/run/port_proxy.sh - the host's port-channel proxy (runtime/engines/gpu_port.c) on a
# stand-in driver and stand-in blocks (tests/run/port_proxy.c says what each checks): the stdlib's
# allgather over port channels at 2 and 4 ranks, and MSCCL++ plans whose blocks flush
# (put-with-signal-and-flush) and reuse a source only after the flush, and one whose rppkt goes
# through a port channel (packets copied flags and all, in the half of the double scratch buffer
# the launch's flag picks); a driver that refuses write-values into another GPU (signals become
# copies of the count, or with no copy either, a named failure); the same with a proxy per rank
# that reaches its peers only through the site, as on the per-rank engines; a launch that starts
# late; also under TSan where that build can be made. No GPU needed.
source "$(dirname "$0")/../lib/common.bash"
source tests/lib/includes.bash
build() {   # build NAME EXTRA-FLAGS LIB
    cc -std=c11 -Wall -Wextra -Wpedantic -Werror -Wshadow -g -O1 -pthread -D_GNU_SOURCE $CDSL_INCLUDES $2 \
        -o "$tmp/$1" tests/run/port_proxy.c "$3" -ljansson -ldl -lm 2>"$tmp/$1.log"
}
if ! build port_proxy "" build/libcdsl.a; then
    fail "tests/run/port_proxy.c builds" "$(head -3 "$tmp/port_proxy.log" | tr '\n' ' ')"
    exit 1
fi
for case in "stdlib/allgather_port.cdsl 2" "stdlib/allgather_port.cdsl 4" "tests/mscclpp/port_pwsf_reuse_ok.json 0" \
            "tests/mscclpp/port_flush_ok.json 0" "tests/mscclpp/port_packets.json 0" \
            "stdlib/allgather_port.cdsl 4 refuse-write-values" "stdlib/allgather_port.cdsl 2 refuse-write-values-no-copy" \
            "stdlib/allgather_port.cdsl 4 per-rank" "tests/mscclpp/port_pwsf_reuse_ok.json 0 per-rank" \
            "tests/mscclpp/port_packets.json 0 per-rank" "stdlib/allgather_port.cdsl 4 per-rank-refuse-write-values"; do
    set -- $case
    timeout 120 "$tmp/port_proxy" "$@" | sed "s|^\[\([A-Z]*\)\] |[\1] $(basename "$1") n=$2${3:+ $3}: |"
    rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "$(basename "$1") n=$2: the stand-in exits cleanly" "exit $rc"
done
# The same under TSan: the proxy thread, the lanes and the blocks share the words only through atomics.
if cc -fsanitize=thread -x c -o "$tmp/tsan_probe" - <<<'int main(void){return 0;}' 2>/dev/null && "$tmp/tsan_probe" 2>/dev/null; then
    objs=$(ls build/obj/compiler/*.o build/obj/compiler/*/*.o build/obj/runtime/*/*.o 2>/dev/null | grep -v "/tools/")
    srcs=$(ls compiler/*.c compiler/*/*.c runtime/*/*.c)
    if cc -std=c11 -g -O1 -fsanitize=thread -pthread -D_GNU_SOURCE $CDSL_INCLUDES -Ibuild/gen -o "$tmp/port_proxy_tsan" \
        tests/run/port_proxy.c $srcs build/gen/*.c -ljansson -ldl -lm 2>"$tmp/tsan.log"; then
        if TSAN_OPTIONS=halt_on_error=1 timeout 300 "$tmp/port_proxy_tsan" stdlib/allgather_port.cdsl 4 >"$tmp/tsan.out" 2>&1; then
            pass "allgather_port n=4 under TSan: no data race between the proxy, its lanes and the blocks"
        else
            fail "allgather_port n=4 under TSan" "$(grep -m3 -E 'WARNING|FAIL|SUMMARY' "$tmp/tsan.out" | tr '\n' ' ')"
        fi
    else
        echo "[SKIP] port_proxy under TSan: the build failed here ($(head -1 "$tmp/tsan.log"))"
    fi
else
    echo "[SKIP] port_proxy under TSan: this compiler cannot make TSan binaries here"
fi
