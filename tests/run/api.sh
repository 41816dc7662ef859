#!/bin/bash
# tests/run/api.sh - libcdsl's caller-buffer API (cdsl.h): cdsl_comm_buffer, cdsl_comm_register,
# cdsl_run_async and cdsl_comm_status, from programs of the user's own.
#
# 1. build/api_example (examples/api_example.c) verifies on sim, also under ASan/UBSan: the
#    communicator's buffers through their addresses + cdsl_run, then the caller's buffers +
#    cdsl_run_async + cdsl_comm_status.
# 2. A probe program (written below, linked against build/libcdsl.a the way a user links it)
#    makes the calls that must be refused, and checks the messages: a misaligned or missing
#    pointer, no pointer table, a bad chunk size, addressing or running before any buffers,
#    nvls with CDSL_NVLS=0 (refused before the CUDA driver is even looked up), p2p without a
#    driver; and that a run that gives up is reported by cdsl_comm_status, once.
# 3. Where no NVIDIA driver exists: the stand-in libcuda.so.1 of gpu_refusals.sh (its source is
#    taken from that script) runs api_example on p2p - our cuMemAlloc'd buffers in the peer
#    tables, our streams - and the probe checks nvls's refusal of caller buffers, two ranks of
#    one GPU given one stream, and the grid-barrier report of cdsl_comm_status; every run
#    leaves nothing of the driver's alive.
cd "$(dirname "$0")/../.." || exit 2
CDSLC=${CDSLC:-$PWD/build/cdslc}
EXAMPLE=$PWD/build/api_example ASAN_EXAMPLE=$PWD/build/asan/api_example
NVLS_OFF=(CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1)
UNSET_NVLS=(-u CDSL_NVLS -u NCCL_NVLS_ENABLE -u NVSHMEM_DISABLE_NVLS -u TORCH_SYMM_MEM_DISABLE_MULTICAST)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; }
skip() { echo "[SKIP] $1"; }

# check NAME WANT_EXIT PATTERN ENV... -- BIN ARGS...: exit status and output (grep -E, on the
# output joined into one line, so a pattern may span lines), and no sanitizer report.
check() {
    local name=$1 want=$2 pat=$3; shift 3
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local out rc
    out=$(env "${envs[@]}" timeout 120 "$@" 2>&1); rc=$?
    if [ "$rc" != "$want" ]; then
        fail "$name" "exit $rc, wanted $want: $(echo "$out" | tail -3 | tr '\n' ' ')"
    elif ! echo "$out" | tr '\n' ' ' | grep -qE -- "$pat"; then
        fail "$name" "no '$pat' in: $(echo "$out" | tail -3 | tr '\n' ' ')"
    elif echo "$out" | grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|FAKE-CUDA VIOLATION'; then
        fail "$name" "$(echo "$out" | grep -m1 -E 'Sanitizer|runtime error:|VIOLATION')"
    else
        pass "$name"
    fi
    LAST_OUT=$out
}

# The stand-in driver's report at exit: everything made was freed (after the last check).
clean() {
    if echo "$LAST_OUT" | grep -q "$CLEAN"; then pass "$1: nothing left"
    else fail "$1: nothing left" "$(echo "$LAST_OUT" | grep -m1 'alive:')"; fi
}

driver_present() {
    ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' && return 0
    compgen -G '/dev/nvidia*' >/dev/null && return 0
    local d
    for d in ${LD_LIBRARY_PATH//:/ } /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda/lib64 /usr/lib/wsl/lib; do
        [ -e "$d/libcuda.so.1" ] && return 0
    done
    return 1
}

# ---- the probe ---------------------------------------------------------------------------------
write_probe() {
    cat >"$tmp/probe.c" <<'EOF'
/* api_probe CASE BACKEND NRANKS FILE: one use of the caller-buffer API; prints "rc=N" (or a
 * line per step) after the library's own messages. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cdsl.h"

enum { CHUNK = 4096 };
static void *ptrs[64];
static void *host(size_t bytes) { return aligned_alloc(64, bytes ? bytes : 64); }

/* Aligned host memory for every rank's buffers (device memory, for the stand-in driver). */
static void fill_ptrs(const cdsl_program *p, int n)
{
    int nb = cdsl_program_nbufs(p);
    for (int i = 0; i < n * nb; i++)
        ptrs[i] = host((size_t)cdsl_program_buf_chunks(p, i % nb) * CHUNK);
}

static int run_case(const char *what, cdsl_comm *c, cdsl_program *p, int n)
{
    void *addr, *streams[2] = {(void *)1, (void *)1};
    int nb = cdsl_program_nbufs(p);
    if (!strcmp(what, "misaligned")) {
        fill_ptrs(p, n);
        ptrs[nb + CDSL_BUF_OUTPUT] = (char *)ptrs[nb + CDSL_BUF_OUTPUT] + 4;
        int rc = cdsl_comm_register(c, p, CHUNK, ptrs);
        ptrs[nb + CDSL_BUF_OUTPUT] = (char *)ptrs[nb + CDSL_BUF_OUTPUT] - 4;
        return rc;
    }
    if (!strcmp(what, "null-table"))
        return cdsl_comm_register(c, p, CHUNK, NULL);
    if (!strcmp(what, "null-entry")) {
        fill_ptrs(p, n);
        free(ptrs[CDSL_BUF_INPUT]);
        ptrs[CDSL_BUF_INPUT] = NULL;
        return cdsl_comm_register(c, p, CHUNK, ptrs);
    }
    if (!strcmp(what, "chunk")) {
        fill_ptrs(p, n);
        return cdsl_comm_register(c, p, 6, ptrs);
    }
    if (!strcmp(what, "buffer-first"))
        return cdsl_comm_buffer(c, 0, CDSL_BUF_INPUT, &addr);
    if (!strcmp(what, "async-first"))
        return cdsl_run_async(c, p, CDSL_U32, NULL);
    if (!strcmp(what, "register")) {      /* also nvls's refusal */
        fill_ptrs(p, n);
        return cdsl_comm_register(c, p, CHUNK, ptrs);
    }
    if (!strcmp(what, "same-stream")) {
        int rc = cdsl_comm_alloc(c, p, CHUNK);
        return rc ? rc : cdsl_run_async(c, p, CDSL_U32, streams);
    }
    if (!strcmp(what, "barrier")) {       /* no chunks: NULL pointers are fine (sim) */
        int rc = cdsl_comm_register(c, p, CHUNK, ptrs);
        rc = rc ? rc : cdsl_run_async(c, p, CDSL_U32, NULL);
        return rc ? rc : cdsl_comm_status(c);
    }
    if (!strcmp(what, "status")) {        /* a run that gives up, reported once; then one that works */
        int rc = cdsl_comm_alloc(c, p, CHUNK);
        int a = rc ? rc : cdsl_run_async(c, p, CDSL_U32, NULL);
        int s1 = cdsl_comm_status(c);
        unsetenv("FAKE_GIVEUP");
        int s2 = cdsl_comm_status(c);
        int again = cdsl_fill(c, p, CDSL_U32);
        again = again ? again : cdsl_run_async(c, p, CDSL_U32, NULL);
        again = again ? again : cdsl_comm_status(c);
        if (!again && strcmp(cdsl_program_collective(p), "barrier"))
            again = cdsl_check(c, p, CDSL_U32, NULL);
        printf("async=%d status=%d again=%d rerun=%d\n", a, s1, s2, again);
        return 0;
    }
    fprintf(stderr, "api_probe: no case %s\n", what);
    return 99;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);   /* in order with the library's messages */
    if (argc < 5)
        return 99;
    cdsl_backend b;
    cdsl_backend_parse(argv[2], &b);
    int n = atoi(argv[3]);
    cdsl_compile_opts co = {.path = argv[4], .nranks = n, .stop_after = getenv("PROBE_UNCHECKED") ? CDSL_STAGE_EVAL : CDSL_STAGE_CHECK};
    cdsl_comm_opts o;
    cdsl_comm_opts_init(&o);
    o.backend = (int)b;
    o.nranks = n;
    o.ranks_per_gpu = getenv("PROBE_RPG") ? atoi(getenv("PROBE_RPG")) : 1;
    o.spin_limit = 20000;
    cdsl_program *p = NULL;
    cdsl_comm *c = NULL;
    int rc = cdsl_compile(&co, &p);
    if (!rc)
        rc = cdsl_comm_create(&o, &c);
    if (!rc)
        rc = run_case(argv[1], c, p, n);
    cdsl_comm_destroy(c);
    cdsl_program_destroy(p);
    for (int i = 0; i < 64; i++)
        free(ptrs[i]);
    printf("rc=%d\n", rc);
    return 0;
}
EOF
}

build_probe() {   # build_probe OUT LIB [CFLAGS...]
    local out=$1 lib=$2; shift 2
    cc -std=c11 -D_GNU_SOURCE -Iruntime "$@" -o "$out" "$tmp/probe.c" "$lib" -ljansson -ldl -lpthread -lm 2>"$tmp/cc.log"
}

# ---- programs ---------------------------------------------------------------------------------------
cat >"$tmp/barrier.cdsl" <<'EOF'
program b implements barrier {
    switch.signal();
    switch.wait();
}
EOF
cat >"$tmp/lost.cdsl" <<'EOF'
program lost implements barrier {
    if rank == 0 { peer(1).wait(); }
}
EOF
AG=examples/allgather.cdsl

# ---- 1. the example ----------------------------------------------------------------------------------
example() {
    local bin=$1 label=$2
    [ -x "$bin" ] || { fail "${label}api_example is built" "no $bin"; return; }
    check "${label}api_example sim verifies" 0 'api_example: verified \(sim, 2 ranks\)' -- "$bin" sim
    check "${label}api_example sim, 5 ranks, verifies" 0 'api_example: verified \(sim, 5 ranks\)' -- "$bin" sim 5
}

# ---- 2. refusals and cdsl_comm_status, any machine ---------------------------------------------------------
refusals() {
    local probe=$1 label=$2
    check "${label}register: a misaligned pointer is refused" 0 \
        "rank 1's buffer output \(ptrs\[3\]\) is 0x[0-9a-f]*4: a registered buffer must be 16-byte aligned.*rc=2" \
        -- "$probe" misaligned sim 2 $AG
    check "${label}register: no pointer table" 0 'cdsl_comm_register needs 4 pointers \(ranks x buffers\), not NULL.*rc=2' \
        -- "$probe" null-table sim 2 $AG
    check "${label}register: a missing pointer" 0 \
        "rank 0's buffer input \(ptrs\[0\]\) is \(nil\): a registered buffer must be there \(NULL only for a buffer of no chunks\)" \
        -- "$probe" null-entry sim 2 $AG
    check "${label}register: a chunk size not a multiple of 4" 0 'a chunk of 6 bytes: chunks are a multiple of 4 bytes' \
        -- "$probe" chunk sim 2 $AG
    check "${label}cdsl_comm_buffer before any buffers" 0 'no buffer to address before cdsl_comm_alloc or cdsl_comm_register.*rc=2' \
        -- "$probe" buffer-first sim 2 $AG
    check "${label}cdsl_run_async before any buffers" 0 "buffers were not allocated for allgather's layout.*rc=2" \
        -- "$probe" async-first sim 2 $AG
    check "${label}a barrier registers no memory and runs" 0 'rc=0' -- "$probe" barrier sim 4 "$tmp/barrier.cdsl"
    check "${label}sim: cdsl_comm_status reports a run that gave up, once" 0 \
        "rank 0 gave up waiting at .*lost\.cdsl:2:28 for rank 1's signal.*async=0 status=4 again=0 rerun=4" \
        PROBE_UNCHECKED=1 -- "$probe" status sim 2 "$tmp/lost.cdsl"
    check "${label}nvls with CDSL_NVLS=0: refused before the driver" 0 'disabled by CDSL_NVLS=0.*rc=3' \
        "${NVLS_OFF[@]}" -- "$probe" register nvls 2 $AG
}

# CDSL_NVLS=0 alone keeps libcuda from ever being looked up (LD_DEBUG=libs shows every search).
no_driver_lookup() {
    local out
    out=$(env "${UNSET_NVLS[@]}" CDSL_NVLS=0 LD_DEBUG=libs "$1" register nvls 2 $AG 2>&1)
    if echo "$out" | grep -q 'libcuda'; then
        fail "nvls register with CDSL_NVLS=0: libcuda is never looked up" "$(echo "$out" | grep -m1 libcuda)"
    elif ! echo "$out" | grep -q 'disabled by CDSL_NVLS=0'; then
        fail "nvls register with CDSL_NVLS=0: libcuda is never looked up" "no refusal in the output"
    else
        pass "nvls register with CDSL_NVLS=0: libcuda is never looked up"
    fi
}

no_driver() {
    local bin=$1 label=$2
    check "${label}api_example p2p without a driver" 3 'no CUDA driver \(libcuda\.so\.1\) on this machine' -- "$bin" p2p
}

# ---- 3. the stand-in driver ---------------------------------------------------------------------------------
CLEAN='alive: mem 0 streams 0 events 0 modules 0 graphs 0 execs 0 mc 0 phys 0 va 0 maps 0 contexts 0'

fake_driver() {
    local probe=$1 asan_probe=$2
    sed -n "/^    cat >\"\$tmp\/fake.c\" <<'EOF'\$/,/^EOF\$/p" tests/run/gpu_refusals.sh | sed '1d;$d' >"$tmp/fake.c"
    mkdir -p "$tmp/fake" "$tmp/cache"
    if ! [ -s "$tmp/fake.c" ] ||
        ! cc -std=c11 -D_GNU_SOURCE -shared -fPIC -Iruntime -o "$tmp/fake/libcuda.so.1" "$tmp/fake.c" 2>"$tmp/cc.log"; then
        fail "the stand-in driver of gpu_refusals.sh builds" "$(head -3 "$tmp/cc.log" | tr '\n' ' ')"
        return
    fi
    export CDSL_CACHE_DIR=$tmp/cache
    if ! "$CDSLC" $AG -n 2 --backend p2p --dtype u32 --emit-cubin --arch sm_90 -o "$tmp/x.cubin" >"$tmp/nvrtc.log" 2>&1 ||
        ! "$CDSLC" "$tmp/barrier.cdsl" -n 2 --backend p2p --dtype u32 --emit-cubin --arch sm_90 -o "$tmp/x.cubin" >>"$tmp/nvrtc.log" 2>&1; then
        skip "stand-in driver runs: no cubin from NVRTC here ($(head -1 "$tmp/nvrtc.log"))"
        return
    fi
    local FAKE=("${UNSET_NVLS[@]}" LD_LIBRARY_PATH="$tmp/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
    local bin label p
    for bin in "$EXAMPLE" "$ASAN_EXAMPLE"; do
        [ -x "$bin" ] || continue
        label=$([ "$bin" = "$ASAN_EXAMPLE" ] && echo "asan " || echo "")
        p=$([ "$bin" = "$ASAN_EXAMPLE" ] && echo "$asan_probe" || echo "$probe")
        check "${label}api_example p2p on the stand-in: verified, nothing left" 0 \
            'api_example: verified \(p2p, 2 ranks\)' "${FAKE[@]}" -- "$bin" p2p
        clean "${label}api_example p2p on the stand-in"
        [ -x "$p" ] || continue
        check "${label}nvls refuses caller buffers, before any multicast object" 0 \
            "the nvls backend cannot run on caller buffers: a multicast object binds only memory the backend creates itself.*multicast objects made 0;" \
            "${FAKE[@]}" -- "$p" register nvls 2 $AG
        clean "${label}nvls refusing caller buffers"
        check "${label}two ranks of one GPU on one stream are refused" 0 \
            "ranks 0 and 1 of GPU 0 were given the same stream: each rank needs a stream of its own.*rc=2" \
            "${FAKE[@]}" PROBE_RPG=2 -- "$p" same-stream p2p 2 $AG
        clean "${label}refusing one stream for two ranks"
        # Line 7 of allgather.cdsl is its second switch operation.
        check "${label}p2p: cdsl_comm_status names a grid barrier that ran out, once" 0 \
            "rank 1 gave up waiting at examples/allgather\.cdsl:7:[0-9]+ \(its own thread blocks' grid barrier \(were all blocks resident\?\)\).*async=0 status=4 again=0 rerun=0" \
            "${FAKE[@]}" FAKE_GIVEUP=1:7:4294967295 -- "$p" status p2p 2 $AG
        clean "${label}a run that gave up on the stand-in"
    done
}

# ---- main ---------------------------------------------------------------------------------------------
write_probe
probe=$tmp/probe asan_probe=$tmp/probe_asan
build_probe "$probe" build/libcdsl.a -O1 || { fail "the probe builds against build/libcdsl.a" "$(head -3 "$tmp/cc.log")"; exit 1; }
if [ -f build/asan/libcdsl.a ]; then
    build_probe "$asan_probe" build/asan/libcdsl.a -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer ||
        fail "the probe builds against build/asan/libcdsl.a" "$(head -3 "$tmp/cc.log")"
else
    fail "the ASan build exists" "no build/asan/libcdsl.a (make asan)"
fi
example "$EXAMPLE" ""
example "$ASAN_EXAMPLE" "asan "
refusals "$probe" ""
[ -x "$asan_probe" ] && refusals "$asan_probe" "asan "
if driver_present; then
    skip "an NVIDIA driver is present: no p2p-without-driver check, no stand-in driver"
else
    no_driver_lookup "$probe"
    no_driver "$EXAMPLE" ""
    [ -x "$ASAN_EXAMPLE" ] && no_driver "$ASAN_EXAMPLE" "asan "
    fake_driver "$probe" "$asan_probe"
fi
exit 0
