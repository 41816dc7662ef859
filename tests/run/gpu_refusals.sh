#!/bin/bash
# tests/run/gpu_refusals.sh - the GPU backends refuse clearly, and early, where they cannot or
# must not run; and, on a stand-in driver, they place, launch, verify, report and free.
#
# 1. Refusals (any machine). `--backend nvls` with CDSL_NVLS=0, NCCL_NVLS_ENABLE=0,
#    NVSHMEM_DISABLE_NVLS=1 or TORCH_SYMM_MEM_DISABLE_MULTICAST=1 exits 3 naming the variable,
#    and with CDSL_NVLS=0 the CUDA driver is never even looked up (LD_DEBUG=libs shows every
#    library search). On a machine that has an NVIDIA driver every run here keeps all four
#    variables set, so that no bug in this test or in nvls.c can reach a multicast object.
# 2. No driver (CI): `--backend p2p` says "no CUDA driver (libcuda.so.1)", exits 3, and is
#    ASan/UBSan clean.
# 3. A stand-in libcuda.so.1 (built below; only where no real driver exists, so that a failed
#    build can never fall through to real GPUs): device memory is host memory, a launch runs a
#    host "allgather" through the kernel's argument block (so a wrong peer table or offset shows
#    up as a wrong result), and the library counts what is still alive at exit and checks the
#    multicast call order. It covers placement messages, peer access, the grid bound, CUDA
#    graphs, the error record's report, the multicast group's build and teardown, and leaks on
#    every path. The device code comes from the JIT cache, filled by cdslc beforehand (NVRTC
#    itself looks for libcuda.so.1 and must not meet the stand-in).
cd "$(dirname "$0")/../.." || exit 2
CDSLC=${CDSLC:-$PWD/build/cdslc}
CDSLRUN=${CDSLRUN:-$PWD/build/cdslrun}
ASAN_CDSLRUN=${ASAN_CDSLRUN:-$PWD/build/asan/cdslrun}
NVLS_OFF=(CDSL_NVLS=0 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NVLS=1 TORCH_SYMM_MEM_DISABLE_MULTICAST=1)
UNSET_NVLS=(-u CDSL_NVLS -u NCCL_NVLS_ENABLE -u NVSHMEM_DISABLE_NVLS -u TORCH_SYMM_MEM_DISABLE_MULTICAST)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1${2:+: $2}"; failures=$((failures + 1)); }
skip() { echo "[SKIP] $1"; }

# A real NVIDIA driver on this machine (or devices): then nothing here runs without the
# NVLS-off variables, and the stand-in driver is not used at all.
driver_present() {
    ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' && return 0
    compgen -G '/dev/nvidia*' >/dev/null && return 0
    local d
    for d in ${LD_LIBRARY_PATH//:/ } /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda/lib64 /usr/lib/wsl/lib; do
        [ -e "$d/libcuda.so.1" ] && return 0
    done
    return 1
}

# Line numbers matter: the error-record test names line 3.
cat >"$tmp/ag.cdsl" <<'EOF'
program ag implements allgather {
    switch.signal(relaxed);
    switch.wait(relaxed);
    switch.store(output[rank], input[0]);
    switch.signal();
    switch.wait();
}
EOF
prog=$tmp/ag.cdsl

# run NAME WANT_EXIT PATTERN ENV... -- BIN ARGS...: the output must match PATTERN (grep -E).
run() {
    local name=$1 want=$2 pat=$3; shift 3
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local out rc
    out=$(env "${envs[@]}" timeout 120 "$@" 2>&1); rc=$?
    if [ "$rc" != "$want" ]; then
        fail "$name" "exit $rc, wanted $want: $(echo "$out" | tail -3 | tr '\n' ' ')"
    elif ! echo "$out" | grep -qE -- "$pat"; then
        fail "$name" "no '$pat' in: $(echo "$out" | tail -3 | tr '\n' ' ')"
    elif echo "$out" | grep -qE 'AddressSanitizer|LeakSanitizer|runtime error:|FAKE-CUDA VIOLATION'; then
        fail "$name" "$(echo "$out" | grep -m1 -E 'Sanitizer|runtime error:|VIOLATION')"
    else
        pass "$name"
    fi
    LAST_OUT=$out
}

# ---- 1. refusals that happen before any CUDA call ------------------------------------------------
refusals() {
    local real=$1 bin=$2 label=$3 v name
    for v in "${NVLS_OFF[@]}" NCCL_NVLS_ENABLE=off CDSL_NVLS=maybe; do
        name=${v%%=*}
        if [ "$real" = 1 ]; then    # a driver is here: keep every variable set
            run "${label:+$label }nvls refused by $v" 3 "disabled by $name=${v#*=}" "${NVLS_OFF[@]}" "$v" -- \
                "$bin" "$prog" -n 2 --backend nvls
        else                        # no driver: this variable alone must do it
            run "${label:+$label }nvls refused by $v alone" 3 "disabled by $name=${v#*=}" "${UNSET_NVLS[@]}" "$v" -- \
                "$bin" "$prog" -n 2 --backend nvls
        fi
    done
}

no_driver_lookup() {
    local out
    out=$(env "${UNSET_NVLS[@]}" CDSL_NVLS=0 LD_DEBUG=libs "$CDSLRUN" "$prog" -n 2 --backend nvls 2>&1)
    if echo "$out" | grep -q 'libcuda'; then
        fail "CDSL_NVLS=0: libcuda is never looked up" "$(echo "$out" | grep -m1 libcuda)"
    elif ! echo "$out" | grep -q 'disabled by CDSL_NVLS=0'; then
        fail "CDSL_NVLS=0: libcuda is never looked up" "no refusal in the output"
    else
        pass "CDSL_NVLS=0: libcuda is never looked up"
    fi
}

# ---- 2. no driver ------------------------------------------------------------------------------------
no_driver() {
    local bin=$1 label=$2
    run "${label:+$label }p2p without a driver" 3 'no CUDA driver \(libcuda\.so\.1\) on this machine' -- \
        "$bin" "$prog" -n 2 --backend p2p
    run "${label:+$label }nvls without a driver" 3 'no CUDA driver \(libcuda\.so\.1\)' "${UNSET_NVLS[@]}" -- \
        "$bin" "$prog" -n 2 --backend nvls
    run "${label:+$label }nvls refuses several ranks per GPU" 3 'one rank per GPU' "${UNSET_NVLS[@]}" -- \
        "$bin" "$prog" -n 4 --backend nvls --ranks-per-gpu 2
}

# ---- 3. the stand-in driver ----------------------------------------------------------------------------
write_fake() {
    cat >"$tmp/fake.c" <<'EOF'
/* A stand-in libcuda.so.1 for tests: host memory for device memory, a host "allgather" for
 * the kernel, resource counts printed at exit, the multicast call order checked. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "abi.h"
typedef int R;
typedef unsigned long long U;
static __thread int cur;
static long mem, streams, events, modules, graphs, execs, mcs, phys, vas, maps, ctxs, mc_made;
static void die(const char *what) { fprintf(stderr, "FAKE-CUDA VIOLATION: %s\n", what); exit(99); }
static int env(const char *n) { return getenv(n) != NULL; }
__attribute__((destructor)) static void report(void)
{
    fprintf(stderr, "fake-cuda: multicast objects made %ld; alive: mem %ld streams %ld events %ld "
            "modules %ld graphs %ld execs %ld mc %ld phys %ld va %ld maps %ld contexts %ld\n", mc_made,
            mem, streams, events, modules, graphs, execs, mcs, phys, vas, maps, ctxs);
}
R cuGetErrorName(R e, const char **s) { (void)e; *s = "CUDA_ERROR_FAKE"; return 0; }
R cuGetErrorString(R e, const char **s) { (void)e; *s = "fake"; return 0; }
R cuInit(unsigned f) { (void)f; return 0; }
R cuDriverGetVersion(int *v) { *v = 13000; return 0; }
R cuDeviceGetCount(int *c) { *c = 2; return 0; }
R cuDeviceGet(int *d, int o) { *d = o; return o < 2 ? 0 : 101; }
R cuDeviceGetName(char *n, int l, int d) { snprintf(n, (size_t)l, "Fake GPU %d", d); return 0; }
R cuDeviceGetAttribute(int *v, int a, int d)
{
    (void)d;
    *v = a == 16 ? 132 : a == 41 ? 1 : a == 75 ? 9 : a == 76 ? 0 : a == 102 || a == 103 ? 1
       : a == 132 ? !env("FAKE_NO_MC") : 0;
    return 0;
}
R cuDeviceCanAccessPeer(int *c, int a, int b) { (void)a; (void)b; *c = !env("FAKE_NO_PEER"); return 0; }
R cuDevicePrimaryCtxRetain(void **c, int d) { ctxs++; *c = (void *)(uintptr_t)(d + 1); return 0; }
R cuDevicePrimaryCtxRelease_v2(int d) { (void)d; ctxs--; return 0; }
R cuCtxSetCurrent(void *c) { cur = (int)(uintptr_t)c; return 0; }
R cuCtxSynchronize(void) { return cur ? 0 : 201; }
R cuCtxEnablePeerAccess(void *p, unsigned f) { (void)f; if ((uintptr_t)p == (uintptr_t)cur) die("peer access to itself"); return 0; }
R cuMemAlloc_v2(U *p, size_t n) { if (!cur) die("alloc without a context"); *p = (U)(uintptr_t)aligned_alloc(256, (n + 255) / 256 * 256); mem++; return 0; }
R cuMemFree_v2(U p) { free((void *)(uintptr_t)p); mem--; return 0; }
R cuMemcpyHtoD_v2(U d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
R cuMemcpyDtoH_v2(void *d, U s, size_t n) { memcpy(d, (void *)(uintptr_t)s, n); return 0; }
R cuMemsetD8_v2(U d, unsigned char v, size_t n) { memset((void *)(uintptr_t)d, v, n); return 0; }
typedef struct { int dev; } Obj;
static void *obj(long *count) { Obj *o = malloc(sizeof *o); o->dev = cur; ++*count; return o; }
static void check_dev(void *o, const char *what) { if (((Obj *)o)->dev != cur) die(what); }
R cuStreamCreate(void **s, unsigned f) { (void)f; *s = obj(&streams); return 0; }
R cuStreamDestroy_v2(void *s) { free(s); streams--; return 0; }
R cuStreamSynchronize(void *s) { (void)s; return 0; }
R cuStreamWaitEvent(void *s, void *e, unsigned f) { (void)e; (void)f; check_dev(s, "wait on another device's stream"); return 0; }
R cuEventCreate(void **e, unsigned f) { (void)f; *e = obj(&events); return 0; }
R cuEventDestroy_v2(void *e) { free(e); events--; return 0; }
R cuEventRecord(void *e, void *s) { check_dev(e, "event of another device"); check_dev(s, "record on another device's stream"); return 0; }
R cuEventSynchronize(void *e) { (void)e; return 0; }
R cuEventElapsedTime_v2(float *ms, void *a, void *b) { (void)a; (void)b; *ms = 1; return 0; }
R cuModuleLoadData(void **m, const void *img) { if (memcmp(img, "\177ELF", 4)) return 200; *m = obj(&modules); return 0; }
R cuModuleUnload(void *m) { free(m); modules--; return 0; }
R cuModuleGetFunction(void **f, void *m, const char *n) { *f = m; return strcmp(n, "cdsl_main") ? 500 : 0; }
R cuFuncGetAttribute(int *v, int a, void *f) { (void)f; *v = a == 0 ? 1024 : 32; return 0; }
R cuOccupancyMaxActiveBlocksPerMultiprocessor(int *b, void *f, int t, size_t s) { (void)f; (void)s; *b = 2048 / t; return 0; }
static void kernel(const CdslArgs *a, unsigned blocks)
{
    const char *g = getenv("FAKE_GIVEUP");      /* "rank:line:counter" */
    int r, line, ctr;
    if (blocks < 1 || blocks > 132) die("grid");  // at most one block per SM (the fake has 132)
    if (a->peer_sync[a->rank] != a->sync) die("peer_sync does not hold the rank's sync words");
    if (g && sscanf(g, "%d:%d:%d", &r, &line, &ctr) == 3 && r == a->rank) {
        a->error[0] = 1; a->error[1] = (unsigned)r; a->error[2] = (unsigned)line; a->error[3] = (unsigned)ctr;
        return;
    }
    for (int p = 0; p < a->nranks; p++)
        memcpy(a->peer_buf[p * 8 + 1] + (size_t)a->rank * a->chunk_bytes, a->buf[0], a->chunk_bytes);
    if (a->mc_buf[0] && (a->mc_buf[1] - a->mc_buf[0] != a->buf[1] - a->buf[0] ||
                         (char *)a->mc_sync - a->mc_buf[0] != (char *)a->sync - a->buf[0]))
        die("multicast offsets differ from unicast ones");
}
typedef struct { CdslArgs *a; unsigned *blocks; int n; } Graph;
static Graph *capture;
R cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                 unsigned sm, void *s, void **params, void **extra)
{
    (void)gy; (void)gz; (void)by; (void)bz; (void)sm; (void)extra;
    check_dev(f, "kernel of another device"); check_dev(s, "launch on another device's stream");
    if (bx % 32) die("block size");
    if (!capture) { kernel(params[0], gx); return 0; }
    capture->a = realloc(capture->a, sizeof *capture->a * (size_t)(capture->n + 1));
    capture->blocks = realloc(capture->blocks, sizeof(unsigned) * (size_t)(capture->n + 1));
    capture->a[capture->n] = *(CdslArgs *)params[0];
    capture->blocks[capture->n++] = gx;
    return 0;
}
R cuStreamBeginCapture_v2(void *s, int m) { (void)s; (void)m; capture = calloc(1, sizeof *capture); graphs++; return 0; }
R cuStreamEndCapture(void *s, void **g) { (void)s; *g = capture; capture = NULL; return 0; }
R cuGraphInstantiateWithFlags(void **e, void *g, unsigned long long f) { (void)f; *e = g; execs++; return 0; }
R cuGraphUpload(void *e, void *s) { (void)e; (void)s; return 0; }
R cuGraphLaunch(void *e, void *s) { Graph *g = e; (void)s; for (int i = 0; i < g->n; i++) kernel(&g->a[i], g->blocks[i]); return 0; }
R cuGraphExecDestroy(void *e) { (void)e; execs--; return 0; }
R cuGraphDestroy(void *x) { Graph *g = x; free(g->a); free(g->blocks); free(g); graphs--; return 0; }
/* Virtual memory and multicast: a reservation is real host memory, so unicast views work. */
#define GRAN (2u << 20)
typedef struct Phys { int mc, need, added, maps, bound, dev; size_t size; struct Phys *on[16]; } Phys;
typedef struct { int type, handles, loc_type, loc_id; void *w; char flags[8]; } AllocProp;
typedef struct { unsigned n; size_t size; U handles, flags; } McProp;
typedef struct { U va; size_t size; Phys *map; } Va;
static Va va[64];
R cuMemGetAllocationGranularity(size_t *g, const AllocProp *p, int o) { (void)p; (void)o; *g = GRAN; return 0; }
R cuMulticastGetGranularity(size_t *g, const McProp *p, int o) { (void)p; *g = o ? 64 * GRAN : GRAN; return 0; }
R cuMulticastCreate(U *h, const McProp *p)
{
    if (p->size % GRAN || p->flags) die("multicast properties");
    Phys *x = calloc(1, sizeof *x); x->mc = 1; x->need = (int)p->n; x->size = p->size;
    *h = (U)(uintptr_t)x; mcs++; mc_made++; return 0;
}
R cuMulticastAddDevice(U h, int d) { (void)d; ((Phys *)(uintptr_t)h)->added++; return 0; }
R cuMemCreate(U *h, size_t size, const AllocProp *p, unsigned long long f)
{
    (void)f;
    if (size % GRAN || p->type != 1 || p->loc_type != 1) die("cuMemCreate properties");
    Phys *x = calloc(1, sizeof *x); x->size = size; x->dev = p->loc_id; *h = (U)(uintptr_t)x; phys++; return 0;
}
R cuMemRelease(U h)
{
    Phys *x = (Phys *)(uintptr_t)h;
    if (x->maps || x->bound) die("cuMemRelease of a handle still mapped or bound");
    if (x->mc) mcs--; else phys--;
    free(x); return 0;
}
static Va *find(U p) { for (int i = 0; i < 64; i++) if (va[i].va == p) return &va[i]; die("unknown address range"); return 0; }
R cuMemAddressReserve(U *p, size_t size, size_t al, U addr, unsigned long long f)
{
    (void)addr; (void)f;
    if (size % GRAN || al % GRAN) die("reservation not a multiple of the granularity");
    for (int i = 0; i < 64; i++)
        if (!va[i].va) { va[i].va = (U)(uintptr_t)aligned_alloc(GRAN, size); va[i].size = size; *p = va[i].va; vas++; return 0; }
    return 2;
}
R cuMemAddressFree(U p, size_t size) { Va *v = find(p); if (v->map || v->size != size) die("cuMemAddressFree"); free((void *)(uintptr_t)p); v->va = 0; vas--; return 0; }
R cuMemMap(U p, size_t size, size_t off, U h, unsigned long long f)
{
    Va *v = find(p); Phys *x = (Phys *)(uintptr_t)h; (void)f;
    if (off || size != v->size || size > x->size) die("cuMemMap arguments");
    if (x->mc && x->added != x->need) die("multicast mapped before every device was added");
    v->map = x; x->maps++; maps++; return 0;
}
R cuMemUnmap(U p, size_t size) { Va *v = find(p); if (!v->map || size != v->size) die("cuMemUnmap"); v->map->maps--; v->map = 0; maps--; return 0; }
R cuMemSetAccess(U p, size_t size, const void *d, size_t n) { (void)d; Va *v = find(p); if (!v->map || size != v->size || !n) die("cuMemSetAccess"); return 0; }
R cuMulticastBindMem(U mc, size_t mo, U mem, size_t memo, size_t size, unsigned long long f)
{
    Phys *m = (Phys *)(uintptr_t)mc, *x = (Phys *)(uintptr_t)mem; (void)f;
    if (m->added != m->need) die("bound before every device was added");
    if (mo || memo || size != m->size || size > x->size) die("cuMulticastBindMem arguments");
    m->on[m->bound++] = x; x->bound++; return 0;
}
R cuMulticastUnbind(U mc, int dev, size_t mo, size_t size)
{
    Phys *m = (Phys *)(uintptr_t)mc;
    if (mo || size != m->size) die("cuMulticastUnbind arguments");
    for (int i = 0; i < m->bound; i++)
        if (m->on[i]->dev == dev) { m->on[i]->bound--; m->on[i] = m->on[--m->bound]; return 0; }
    die("unbind of a device that is not bound");
    return 0;
}
EOF
}

CLEAN='alive: mem 0 streams 0 events 0 modules 0 graphs 0 execs 0 mc 0 phys 0 va 0 maps 0 contexts 0'

fake_driver() {
    write_fake
    mkdir -p "$tmp/fake" "$tmp/cache"
    if ! cc -std=c11 -D_GNU_SOURCE -shared -fPIC -Iruntime -o "$tmp/fake/libcuda.so.1" "$tmp/fake.c" 2>"$tmp/cc.log"; then
        fail "the stand-in driver builds" "$(head -3 "$tmp/cc.log" | tr '\n' ' ')"
        return
    fi
    export CDSL_CACHE_DIR=$tmp/cache
    local n flavour ok=1
    for n in 2 4 8; do
        for flavour in p2p nvls; do
            "$CDSLC" "$prog" -n $n --backend $flavour --emit-cubin --arch sm_90 -o "$tmp/x.cubin" >"$tmp/nvrtc.log" 2>&1 || ok=0
        done
    done
    if [ $ok = 0 ]; then
        skip "stand-in driver runs: no cubin from NVRTC here ($(head -1 "$tmp/nvrtc.log"))"
        return
    fi
    local FAKE=("${UNSET_NVLS[@]}" LD_LIBRARY_PATH="$tmp/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
    local bin label
    for bin in "$CDSLRUN" "$ASAN_CDSLRUN"; do
        [ -x "$bin" ] || { skip "no $bin"; continue; }
        label=$([ "$bin" = "$ASAN_CDSLRUN" ] && echo "asan " || echo "")
        run "${label}p2p -n 2 on the stand-in: verified, nothing left" 0 "$CLEAN" "${FAKE[@]}" -- \
            "$bin" "$prog" -n 2 --backend p2p --sizes 1K:4M --bench
        echo "$LAST_OUT" | grep -q '# wrong elements: 0 (verified)' || fail "${label}p2p -n 2 verified" "$(echo "$LAST_OUT" | tail -3)"
        run "${label}p2p -n 8, 4 ranks per GPU, graphs: verified, nothing left" 0 "$CLEAN" "${FAKE[@]}" -- \
            "$bin" "$prog" -n 8 --backend p2p --ranks-per-gpu 4 --sizes 4K:1M --iters 300
        run "${label}p2p without graphs: verified" 0 "$CLEAN" "${FAKE[@]}" CDSL_NO_GRAPH=1 -- \
            "$bin" "$prog" -n 4 --backend p2p --ranks-per-gpu 2 --size 64K --iters 3
        run "${label}CDSL_DEBUG=INFO names the placement" 0 "cdsl INFO placement: GPU 1 \(.*\): ranks 2 to 3" \
            "${FAKE[@]}" CDSL_DEBUG=INFO -- "$bin" "$prog" -n 4 --backend p2p --ranks-per-gpu 2 --size 64K
        echo "$LAST_OUT" | grep -qE "cdsl INFO placement: 4 ranks on 2 GPUs, 2 per GPU" &&
            echo "$LAST_OUT" | grep -qE "cdsl INFO backend p2p: 4 ranks, asked for" ||
            fail "${label}CDSL_DEBUG=INFO names the backend and the GPUs" "$(echo "$LAST_OUT" | grep INFO | head -5)"
        run "${label}too few GPUs" 3 '8 ranks need 8 GPUs at 1 rank per GPU; this machine has 2 \(4 ranks per GPU would fit\)' \
            "${FAKE[@]}" -- "$bin" "$prog" -n 8 --backend p2p
        run "${label}no peer access" 3 "GPU 0 cannot access GPU 1's memory \(no peer access\)" \
            "${FAKE[@]}" FAKE_NO_PEER=1 -- "$bin" "$prog" -n 2 --backend p2p
        run "${label}a wait that gave up is reported with its place" 4 \
            "rank 1 gave up waiting at .*ag\.cdsl:3:[0-9]+ \(the switch barrier\)" \
            "${FAKE[@]}" FAKE_GIVEUP=1:3:0 -- "$bin" "$prog" -n 2 --backend p2p --size 64K
        echo "$LAST_OUT" | grep -q "$CLEAN" || fail "${label}nothing left after a failed run" "$(echo "$LAST_OUT" | tail -1)"
        run "${label}nvls needs multicast" 3 'does not support multicast' "${FAKE[@]}" FAKE_NO_MC=1 -- \
            "$bin" "$prog" -n 2 --backend nvls
        run "${label}nvls on the stand-in: group built, rebuilt, torn down" 0 "multicast objects made [1-9].*$CLEAN" \
            "${FAKE[@]}" -- "$bin" "$prog" -n 2 --backend nvls --sizes 1K:8M --bench
        echo "$LAST_OUT" | grep -q '# wrong elements: 0 (verified)' || fail "${label}nvls verified" "$(echo "$LAST_OUT" | tail -3)"
    done
}

# ---- main ------------------------------------------------------------------------------------------------
if [ ! -x "$CDSLRUN" ]; then
    fail "cdslrun is built" "no $CDSLRUN"
    exit 1
fi
if driver_present; then
    skip "an NVIDIA driver is present: refusals run with every NVLS-off variable set; no stand-in driver"
    refusals 1 "$CDSLRUN" ""
    [ -x "$ASAN_CDSLRUN" ] && refusals 1 "$ASAN_CDSLRUN" "asan"
else
    refusals 0 "$CDSLRUN" ""
    no_driver_lookup
    no_driver "$CDSLRUN" ""
    if [ -x "$ASAN_CDSLRUN" ]; then
        refusals 0 "$ASAN_CDSLRUN" "asan"
        no_driver "$ASAN_CDSLRUN" "asan"
    else
        fail "the ASan build exists" "no $ASAN_CDSLRUN (make asan)"
    fi
    fake_driver
fi
[ $failures = 0 ]
