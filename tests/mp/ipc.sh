#!/bin/bash
# tests/mp/ipc.sh - the ipc engine (one process per GPU, VMM memory passed as file descriptors)
# on a stand-in driver, where no NVIDIA driver exists: tests/mp/fake_cuda.c makes "device"
# memory of memfds, so that what one process exports is what another maps, and runs the
# allgather_nvls program's meaning through the kernel's argument block (see its header).
#
# 1. Refusals on any machine: the nvls flavour with CDSL_NVLS=0 (or any NVLS-off variable)
#    before the driver is looked up; the nccl engine without NCCL (CDSL_NCCL_LIB pointing
#    nowhere) says what it needs; with no driver, the ipc engine says so.
# 2. On the stand-in (only where no real driver exists, so that nothing here can reach a GPU):
#    three processes on one GPU, then on three GPUs: staged and in place, three sizes, every
#    rank's output checked; ranks whose kernels take different block sizes launching one shape
#    (the stand-in compares every rank's grid and block size); a rank killed in the middle: the others' waits give up, each says
#    where, and names the dead rank and its pid; two ranks on one GPU refuse the nvls flavour.
#    Every process ends with nothing of the driver alive (memory, mappings, address ranges,
#    modules, streams, contexts) and no descriptor left.
# The device code comes from the JIT cache, filled by cdslc --rank beforehand: NVRTC looks for
# libcuda.so.1 itself and must not meet the stand-in.
cd "$(dirname "$0")/../.." || exit 2
CDSLC=${CDSLC:-$PWD/build/cdslc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export CDSL_TIMEOUT=5 PROBE_DIR=$tmp CDSL_CACHE_DIR=$tmp/cache
unset CDSL_NO_CACHE
NVLS_OFF=(CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1)
CLEAN='fake-cuda: alive: mem 0 phys 0 va 0 maps 0 streams 0 modules 0 contexts 0'

pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; }
skip() { echo "[SKIP] $1"; }

# A real NVIDIA driver here? (gpu_refusals.sh's test, taken from that script.)
eval "$(sed -n '/^driver_present() {/,/^}/p' tests/run/gpu_refusals.sh)"
type driver_present >/dev/null 2>&1 || { fail "driver_present from tests/run/gpu_refusals.sh"; exit 1; }

if ! ${CC:-cc} -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -g -Iruntime -o "$tmp/probe" tests/mp/mp_probe.c \
        build/libcdsl.a -ljansson -ldl -lpthread -lm 2>"$tmp/cc.log"; then
    fail "mp_probe builds" "$(head -3 "$tmp/cc.log")"; exit 1
fi

ag=stdlib/allgather_nvls.cdsl

# ---- 1. refusals ---------------------------------------------------------------------------------
out=$(env "${NVLS_OFF[@]}" CDSL_NVLS=0 LD_DEBUG=libs PROBE_ENGINE=ipc PROBE_FLAVOUR=nvls "$tmp/probe" ok 2 $ag 2>&1)
if echo "$out" | grep -q "disabled by CDSL_NVLS=0" && ! echo "$out" | grep -q 'libcuda'; then
    pass "nvls flavour refused by CDSL_NVLS=0 before the driver is looked up"
else
    fail "nvls flavour refused by CDSL_NVLS=0 before the driver is looked up" "$(echo "$out" | grep -m2 -E 'error|libcuda')"
fi
out=$(PROBE_ENGINE=nccl CDSL_NCCL_LIB=/nonexistent/libnccl.so.2 "$tmp/probe" ok 2 $ag 2>&1)
if echo "$out" | grep -q "the nccl engine needs NCCL 2.28 or newer, and /nonexistent/libnccl.so.2 cannot be loaded"; then
    pass "the nccl engine without NCCL says what it needs"
else
    fail "the nccl engine without NCCL says what it needs" "$(echo "$out" | head -3 | tr '\n' ' ')"
fi

if driver_present; then
    skip "an NVIDIA driver is present: no stand-in driver here (bench/mp_gpu.sh runs the ipc engine on GPUs)"
    exit 0
fi
out=$(PROBE_ENGINE=ipc "$tmp/probe" ok 2 $ag 2>&1)
echo "$out" | grep -q "no CUDA driver (libcuda.so.1) on this machine" && pass "the ipc engine without a driver says so" ||
    fail "the ipc engine without a driver says so" "$(echo "$out" | head -3 | tr '\n' ' ')"

# ---- 2. the stand-in driver -------------------------------------------------------------------------
mkdir -p "$tmp/fake"
if ! ${CC:-cc} -std=c11 -shared -fPIC -Iruntime -o "$tmp/fake/libcuda.so.1" tests/mp/fake_cuda.c 2>"$tmp/cc.log"; then
    fail "the stand-in driver builds" "$(head -3 "$tmp/cc.log")"; exit 1
fi
mkdir -p "$tmp/fake_no_port"
${CC:-cc} -std=c11 -shared -fPIC -Iruntime -DFAKE_NO_PORT -o "$tmp/fake_no_port/libcuda.so.1" tests/mp/fake_cuda.c
for r in 0 1 2; do   # NVRTC in the cache first: the stand-in's processes then only load cubins
    for prog in $ag stdlib/allgather_port.cdsl; do
        if ! "$CDSLC" $prog -n 3 --rank $r --emit-cubin --arch sm_90 -o "$tmp/r.cubin" >"$tmp/nvrtc.log" 2>&1; then
            skip "the ipc engine on the stand-in: no cubin from NVRTC here ($(head -1 "$tmp/nvrtc.log"))"; exit 0
        fi
    done
done
FAKE=(LD_LIBRARY_PATH="$tmp/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PROBE_ENGINE=ipc "${NVLS_OFF[@]}")

# ipc NAME WANT-STATUS PATTERN MIN-LINES ENV... -- CASE: every rank's status matches WANT-STATUS,
# at least MIN-LINES lines match PATTERN, and every rank that exited left nothing alive.
ipc() {
    local name=$1 st=$2 pat=$3 min=$4; shift 4
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    out=$(env "${FAKE[@]}" "${envs[@]}" "$tmp/probe" "$1" 3 $ag 2>&1)
    local bad
    bad=$(echo "$out" | grep -E '^rank [0-9]: ' | grep -vE "^rank [0-9]: ($st)\$" | head -1)
    if echo "$out" | grep -qE 'HANG|VIOLATION|descriptors leaked'; then
        fail "$name" "$(echo "$out" | grep -m1 -E 'HANG|VIOLATION|leaked')"
    elif [ -n "$bad" ]; then
        fail "$name" "$bad: $(echo "$out" | grep -m2 'error' | tr '\n' ' ')"
    elif [ "$(echo "$out" | grep -cE "$pat")" -lt "$min" ]; then
        fail "$name" "fewer than $min lines with '$pat': $(echo "$out" | grep -v alive | tr '\n' ' ')"
    elif [ "$(echo "$out" | grep -c "$CLEAN")" != "$(echo "$out" | grep -cE '^rank [0-9]: exit')" ]; then
        fail "$name: nothing of the driver left" "$(echo "$out" | grep -m1 'alive:' | grep -v "$CLEAN")"
    else
        pass "$name"
    fi
}
ipc "3 processes on one GPU: staged and in place, 3 sizes, verified, nothing left" "exit 0" \
    "rank [0-9]: verified 6 runs" 3 FAKE_NGPU=1 -- ok
ipc "3 processes on 3 GPUs: verified, nothing left" "exit 0" "rank [0-9]: verified 6 runs" 3 FAKE_NGPU=3 -- ok
ipc "3 processes whose kernels differ agree on one launch shape (the stand-in compares them)" "exit 0" \
    "rank [0-9]: verified 6 runs" 3 FAKE_NGPU=1 FAKE_UNEVEN=1 -- ok
ipc "a rank killed mid-run: the others give up where they wait, and name it" "exit 4|killed by signal 9" \
    "gave up waiting at stdlib/allgather_nvls.cdsl:5:[0-9]+ \(the switch barrier\).*|rank [02]: rank 1's process \(pid [0-9]+\) has exited" \
    4 FAKE_NGPU=1 FAKE_WAIT_S=1 -- die
# Port channels: each rank's proxy is a thread of its own process (runtime/engines/gpu_port.h),
# which copies into the peers' buffers and signals into their port words through the mappings
# of their regions; the stand-in's kernel makes allgather_port's requests and waits.
ag=stdlib/allgather_port.cdsl ipc "allgather_port, 3 processes on one GPU, a port proxy in each: staged and in place, verified" \
    "exit 0" "rank [0-9]: verified 6 runs" 3 FAKE_NGPU=1 -- ok
ag=stdlib/allgather_port.cdsl ipc "allgather_port, 3 processes on 3 GPUs: verified" "exit 0" "rank [0-9]: verified 6 runs" 3 \
    FAKE_NGPU=3 -- ok
ag=stdlib/allgather_port.cdsl ipc "allgather_port with a rank killed mid-run: the others give up at a port wait and name it" \
    "exit 4|killed by signal 9" \
    "gave up waiting at stdlib/allgather_port.cdsl:[59]:[0-9]+ \(a port channel's signal from rank 1's proxy\)|rank [02]: rank 1's process \(pid [0-9]+\) has exited" \
    4 FAKE_NGPU=1 FAKE_WAIT_S=1 -- die
# ... and the kernel's give-up ends its proxy's pass at once: the proxy does not wait out its own
# bound for requests the blocks will never make.
if echo "$out" | grep -q "port proxy [0-9]* gave up waiting"; then
    fail "after the kernel gave up, its proxy's pass ends without a give-up of its own" \
        "$(echo "$out" | grep -m1 "port proxy")"
else
    pass "after the kernel gave up, its proxy's pass ends without a give-up of its own"
fi
# A driver without pinned host memory or write-values, which the proxy needs: every rank says so
# at the handshake.
out=$(env "${FAKE[@]}" LD_LIBRARY_PATH="$tmp/fake_no_port" FAKE_NGPU=1 "$tmp/probe" ok 2 stdlib/allgather_port.cdsl 2>&1)
if [ "$(echo "$out" | grep -c "allgather_port uses port channels, whose proxy needs pinned host memory, copies and stream write-values, which this CUDA driver lacks")" -ge 2 ]; then
    pass "a program with port channels on a driver without the proxy's calls: each rank's own message says what is missing"
else
    fail "a program with port channels on a driver without the proxy's calls: each rank's own message says what is missing" \
        "$(echo "$out" | grep -v alive | head -4 | tr '\n' ' ')"
fi
out=$(env "${FAKE[@]}" FAKE_NGPU=1 CDSL_NVLS=1 NCCL_NVLS_ENABLE=1 NVSHMEM_DISABLE_NVLS=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=0 \
      PROBE_FLAVOUR=nvls "$tmp/probe" ok 2 $ag 2>&1)
if echo "$out" | grep -q "the nvls flavour needs one rank per GPU; ranks 0 and 1 share GPU 0"; then
    pass "two ranks on one GPU refuse the nvls flavour"
else
    fail "two ranks on one GPU refuse the nvls flavour" "$(echo "$out" | grep -m2 error | tr '\n' ' ')"
fi
