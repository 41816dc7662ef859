#!/bin/bash
# tests/emit/standalone.sh - the device library is a header, not part of the emitted text:
# 1. --emit-cuda prints a short program that #includes "cdsl_device.cuh" and holds none of the
#    library's own text (for .cdsl programs and an MSCCL++ plan, both flavours);
# 2. --emit-cuda --standalone pastes the library in: no #include of ours is left, and nvcc
#    compiles the one file to an sm_90 cubin (skipped, with a message, where nvcc is absent);
# 3. the short program compiles with nvcc too, given the folders of the headers (-I);
# 4. --standalone without --emit-cuda is a usage error.
source "$(dirname "$0")/../lib/common.bash"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
plan=tests/mscclpp/allreduce_pairs_cu.json
cases=("stdlib/allgather_mesh.cdsl -n 4 --backend p2p"
       "stdlib/allgather_mesh.cdsl -n 4 --backend nvls"
       "stdlib/allreduce_nvls.cdsl -n 2 --backend nvls --dtype bf16"
       "stdlib/allreduce_nvls.cdsl -n 2 --backend p2p --dtype f16"
       "stdlib/allreduce_twoshot.cdsl -n 8 --backend p2p --dtype s32"
       "$plan --backend p2p"
       "$plan --backend nvls"
       "tests/mscclpp/packet_allreduce_cu.json --backend p2p"
       "tests/mscclpp/packet_allreduce_cu.json --backend nvls --dtype bf16")
# Lines only the library has: if one is in the short program, the library was pasted.
library_lines=("#ifndef CDSL_DEVICE_CUH" "bool cdsl_spin(" "typedef struct CdslArgs {")
have_nvcc=1
[ -x "$NVCC" ] || { have_nvcc=""; echo "[SKIP] standalone: no nvcc at $NVCC (set NVCC to run the nvcc compiles)"; }
i=0
for c in "${cases[@]}"; do
    i=$((i + 1))
    # shellcheck disable=SC2086
    if ! "$CDSLC" $c --emit-cuda -o "$tmp/$i.cu" 2>"$tmp/err"; then fail "emit: $c" "$(head -3 "$tmp/err")"; continue; fi
    leaked=""
    for l in "${library_lines[@]}"; do grep -qF "$l" "$tmp/$i.cu" && leaked="$leaked '$l'"; done
    if grep -q '^#include "cdsl_device.cuh"' "$tmp/$i.cu" && [ -z "$leaked" ]; then
        pass "short program includes the library: $c"
    else
        fail "short program includes the library: $c" "no #include, or library text:$leaked"
    fi
    # shellcheck disable=SC2086
    if ! "$CDSLC" $c --emit-cuda --standalone -o "$tmp/$i.s.cu" 2>"$tmp/err"; then
        fail "--standalone: $c" "$(head -3 "$tmp/err")"; continue
    fi
    if grep -qE '^ *#include "(cdsl_[a-z]*\.cuh|abi\.h)"' "$tmp/$i.s.cu" || ! grep -qF "#define CDSL_DEVICE_CUH" "$tmp/$i.s.cu"; then
        fail "--standalone pastes the library: $c" "an #include is left or the library is missing"
    else
        pass "--standalone pastes the library: $c"
    fi
    [ -n "$have_nvcc" ] || continue
    if (cd "$tmp" && timeout 300 "$NVCC" -cubin -arch=sm_90 -std=c++17 -lineinfo -o "$i.cubin" "$i.s.cu") >"$tmp/nvcc.log" 2>&1 &&
        [ -s "$tmp/$i.cubin" ]; then
        pass "nvcc compiles the --standalone source: $c"
    else
        fail "nvcc compiles the --standalone source: $c" "$(grep -m3 error "$tmp/nvcc.log")"
    fi
done
if [ -n "$have_nvcc" ]; then
    if timeout 300 "$NVCC" -cubin -arch=sm_90 -std=c++17 -Iruntime/device -Iruntime -o "$tmp/short.cubin" "$tmp/2.cu" \
            >"$tmp/nvcc.log" 2>&1 && [ -s "$tmp/short.cubin" ]; then
        pass "nvcc compiles the short program with -I for the headers"
    else
        fail "nvcc compiles the short program with -I for the headers" "$(grep -m3 error "$tmp/nvcc.log")"
    fi
fi
# A plan's packets as LL8 too (runtime/device/cdsl_packets.cuh: CDSL_MSC_PACKET_BYTES); the loop
# compiled the default, LL16.
if [ -n "$have_nvcc" ]; then
    if timeout 300 "$NVCC" -cubin -arch=sm_90 -std=c++17 -DCDSL_MSC_PACKET_BYTES=8 -o "$tmp/ll8.cubin" \
            "$tmp/$((${#cases[@]} - 1)).s.cu" >"$tmp/nvcc.log" 2>&1 && [ -s "$tmp/ll8.cubin" ]; then
        pass "nvcc compiles a plan's packets as LL8"
    else
        fail "nvcc compiles a plan's packets as LL8" "$(grep -m3 error "$tmp/nvcc.log")"
    fi
fi
out=$("$CDSLC" stdlib/allgather_mesh.cdsl -n 2 --emit-ptx --standalone 2>&1); rc=$?
if [ $rc = 2 ] && echo "$out" | grep -q -- "--standalone pastes the device library into CUDA source: it needs --emit-cuda"; then
    pass "--standalone without --emit-cuda is a usage error"
else
    fail "--standalone without --emit-cuda is a usage error" "exit $rc: $out"
fi
exit $((failures > 0))
