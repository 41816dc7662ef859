/*
 * emit_unit.c - unit tests for the code generator and the JIT's pieces, on hand-built IR.
 *
 * Built and run by tests/emit/unit.sh (under ASan and UBSan), without the front end: each test
 * makes an IrProgram directly, emits it and looks at the text, so that the placement rules of
 * emit_cuda.c and emit_fence.c are pinned down independently of what the
 * checker happens to produce. Also the SHA-256 test vectors and (when libnvrtc is found) an
 * NVRTC compile of emitted sources (the cache has its own, tests/unit/cache_unit.c). Prints one
 * [PASS]/[FAIL] line per test; exits 1 on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "happens_before.h"
#include "lower.h"
#include "nvrtc.h"
#include "sha256.h"

static int failures;

static void report(const char *name, int ok, const char *why)
{
    printf("[%s] %s%s%s\n", ok ? "PASS" : "FAIL", name, ok ? "" : ": ", ok ? "" : why);
    failures += !ok;
}

/* ---- Building IR by hand ------------------------------------------------------------------ */

static IrProgram *program(Arena *a, int nranks, int nbufs, const char *const *names, const int *chunks)
{
    IrProgram *p = ARENA_NEW(a, IrProgram);
    p->name = "unit";
    p->coll = COLL_CUSTOM;
    p->coll_name = "custom";
    p->nranks = nranks;
    p->chunks = 1;
    p->nbufs = nbufs;
    for (int b = 0; b < nbufs; b++)
        p->bufs[b] = (IrBuf){names[b], chunks[b], {0}, false};
    p->ranks = ARENA_ARRAY(a, IrSeq, (size_t)nranks);
    p->arena = a;
    return p;
}

static IrRange R(int buf, int first, int count)
{
    return (IrRange){buf, first, count};
}

static const IrRange NONE = {-1, 0, 0};

static void op(IrProgram *p, int rank, IrKind k, int peer, IrRange dst, IrRange src, IrRange src2, int line)
{
    IrOp o = {.kind = k, .peer = peer, .dst = dst, .src = src, .src2 = src2};
    o.loc.line = line;
    o.loc.col = 5;
    ir_append(p, rank, o);
}

static void data(IrProgram *p, int rank, IrKind k, IrRange dst, IrRange src, int line)
{
    op(p, rank, k, -1, dst, src, NONE, line);
}

/* The text of rank_<r>() in a source, without its #line directives. */
static char *rank_body(const char *src, int r)
{
    char head[64];
    snprintf(head, sizeof head, "__device__ bool rank_%d(", r);
    const char *s = strstr(src, head), *e = s ? strstr(s, "\n}\n") : NULL;
    if (!e)
        return strdup("");
    char *t = malloc((size_t)(e - s) + 1), *o = t;
    for (const char *l = s; l < e;) {
        const char *nl = memchr(l, '\n', (size_t)(e - l));
        const char *end = nl ? nl + 1 : e;
        if (strncmp(l, "#line ", 6) != 0) {
            memcpy(o, l, (size_t)(end - l));
            o += end - l;
        }
        l = end;
    }
    *o = 0;
    return t;
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

/* A rank body has an alias fence just before the call of the operation at line:5. */
static int fenced_at(const char *body, int line)
{
    char head[32];
    snprintf(head, sizeof head, "    // %d:5 ", line);
    const char *s = strstr(body, head);
    if (!s)
        return 0;
    s += strlen(head);
    const char *next = strstr(s, "\n    // "), *f = strstr(s, "\n    cdsl_fence_alias();");
    const char *call = f ? strchr(f + 1, '\n') : NULL;
    return call && (!next || f < next) && strncmp(call, "\n    cdsl_", 10) == 0 &&
           strncmp(call, "\n    cdsl_fence", 16) != 0;
}

/* ... and one just before it returns. */
static int fenced_at_end(const char *body)
{
    const char *r = strstr(body, "\n    return true;"), *l = r;
    while (l && l > body && l[-1] != '\n')
        l--;
    return r && l > body && strncmp(l, "    cdsl_fence_alias();", 23) == 0;
}

static const char *const NAMES3[] = {"input", "output", "tmp"};
static const int CHUNKS3[] = {2, 2, 2};

static const char *emit(IrProgram *p, cdsl_backend b, cdsl_dtype t, Arena *a, Diag *d)
{
    return emit_cuda(p, b, t, a, d);
}

/* ---- The tests ------------------------------------------------------------------------------- */

static void test_sim_refused(void)
{
    Arena *a = arena_create();
    Diag d;
    FILE *sink = fopen("/dev/null", "w");
    diag_init(&d, sink);
    IrProgram *p = program(a, 2, 3, NAMES3, CHUNKS3);
    const char *s = emit(p, CDSL_BACKEND_SIM, CDSL_F32, a, &d);
    report("emit refuses the sim backend", !s && d.nerrors == 1, "returned a source or no error");
    fclose(sink);
    arena_destroy(a);
}

static void test_sanitised(void)
{
    Arena *a = arena_create();
    Diag d;
    diag_init(&d, stderr);
    const char *names[] = {"input", "output", "bad\\\nname*/"};
    IrProgram *p = program(a, 2, 3, names, CHUNKS3);
    p->name = "evil\\";
    IrOp o = {.kind = IR_COPY, .peer = -1, .dst = R(2, 0, 1), .src = R(0, 0, 1), .src2 = NONE};
    Source src = {.path = "x/dir\\\"\n#include <y>.cdsl"};
    o.loc.line = 3;
    o.loc.src = &src;
    o.ctx = "p=1\\\n#include <x> */ ?\?/";
    ir_append(p, 0, o);
    ir_append(p, 1, o);
    const char *s = emit(p, CDSL_BACKEND_P2P, CDSL_F32, a, &d);
    int ok = s && !strchr(s, '\\') && count(s, "\n#include") == 1 && strstr(s, "\n#include \"cdsl_device.cuh\"") &&
             strstr(s, "B2 = 2") && strstr(s, "(p=1___include _x_ __ ___)") &&
             strstr(s, "\n#line 3 \"dir___#include <y>.cdsl\"\n");
    report("user text is sanitised (no backslash, no newline, no #include but the library's)", ok,
           s ? "unsafe text in the source" : "no source");
    arena_destroy(a);
}

/* An access from before a wait, met by a differently placed one after it: grid barrier. */
static void test_barrier_across_wait(void)
{
    Arena *a = arena_create();
    Diag d;
    diag_init(&d, stderr);
    IrProgram *p = program(a, 2, 3, NAMES3, CHUNKS3);
    for (int r = 0; r < 2; r++) {
        data(p, r, IR_COPY, R(2, 0, 2), R(0, 0, 2), 3);
        op(p, r, IR_WAIT, 1 - r, NONE, NONE, NONE, 4);
        data(p, r, IR_COPY, R(1, 0, 1), R(2, 1, 1), 5);      /* tmp[1]: placed differently */
        op(p, r, IR_WAIT, 1 - r, NONE, NONE, NONE, 6);
        data(p, r, IR_COPY, R(1, 1, 1), R(2, 1, 1), 7);      /* same range as the line 5 read */
    }
    order_program(p, NULL);   /* as the checker does before any emission: it decides the barriers */
    const char *s = emit(p, CDSL_BACKEND_P2P, CDSL_F32, a, &d);
    char *r0 = rank_body(s ? s : "", 0);
    int ok = count(r0, "cdsl_grid_barrier(a, 1, 5)") == 1 && count(r0, "cdsl_grid_barrier") == 1 &&
             count(r0, "cdsl_peer_wait(a, 1, 2, CDSL_ACQUIRE, 6)") == 1;
    report("grid barrier for a conflict across a wait, none for read-after-read", ok, r0);
    free(r0);
    arena_destroy(a);
}

/* sync_before from the checker gives a barrier, unless no data op ran since the last one. */
static void test_sync_before(void)
{
    Arena *a = arena_create();
    Diag d;
    diag_init(&d, stderr);
    IrProgram *p = program(a, 2, 3, NAMES3, CHUNKS3);
    for (int r = 0; r < 2; r++) {
        data(p, r, IR_COPY, R(2, 0, 2), R(0, 0, 2), 3);
        data(p, r, IR_COPY, R(1, 0, 1), R(2, 1, 1), 4);
        p->ranks[r].ops[1].sync_before = true;
        data(p, r, IR_COPY, R(1, 1, 1), R(0, 1, 1), 5);
    }
    const char *s = emit(p, CDSL_BACKEND_P2P, CDSL_U32, a, &d);
    char *r1 = rank_body(s ? s : "", 1);
    int ok = count(r1, "cdsl_grid_barrier(a, 1, 4)") == 1 && count(r1, "cdsl_grid_barrier") == 1;
    report("sync_before becomes one grid barrier", ok, r1);
    free(r1);
    arena_destroy(a);
}

/* Data ops every rank reaches through the same blocks (partition.c's same_blocks): signals
   arrive block by block, with no convergence; one op that is not makes the next signal
   converge and arrive for all blocks, and so every signal until a grid barrier. */
static void test_block_arrival(void)
{
    Arena *a = arena_create();
    Diag d;
    diag_init(&d, stderr);
    IrProgram *p = program(a, 2, 3, NAMES3, CHUNKS3);
    for (int r = 0; r < 2; r++) {
        data(p, r, IR_PUT, R(1, r, 1), R(0, 0, 1), 3);
        p->ranks[r].ops[0].peer = 1 - r;
        p->ranks[r].ops[0].same_blocks = true;
        op(p, r, IR_SIGNAL, 1 - r, NONE, NONE, NONE, 4);
        op(p, r, IR_WAIT, 1 - r, NONE, NONE, NONE, 5);
        data(p, r, IR_COPY, R(2, 0, 1), R(1, 1 - r, 1), 6);
        op(p, r, IR_SIGNAL, 1 - r, NONE, NONE, NONE, 7);
        op(p, r, IR_WAIT, 1 - r, NONE, NONE, NONE, 8);
        op(p, r, IR_SIGNAL, 1 - r, NONE, NONE, NONE, 9);
    }
    const char *s = emit(p, CDSL_BACKEND_P2P, CDSL_F32, a, &d);
    char *r0 = rank_body(s ? s : "", 0);
    int ok = count(r0, "cdsl_peer_signal(a, 1, CDSL_RELEASE, CDSL_BY_BLOCK)") == 1 &&
             count(r0, "cdsl_peer_signal(a, 1, CDSL_RELEASE, CDSL_FOR_ALL)") == 2 &&
             count(r0, "cdsl_converge(a, 1, 7)") == 1 && count(r0, "cdsl_converge(a, 2, 9)") == 1 &&
             count(r0, "cdsl_converge(") == 2;
    report("same_blocks ops: block-by-block signals; after another op, converge and arrive for all", ok, r0);
    free(r0);
    arena_destroy(a);
}

/* Converge before a signal only when data ran since the last convergence. */
static void test_converge(void)
{
    Arena *a = arena_create();
    Diag d;
    diag_init(&d, stderr);
    IrProgram *p = program(a, 2, 3, NAMES3, CHUNKS3);
    for (int r = 0; r < 2; r++) {
        op(p, r, IR_SW_SIGNAL, -1, NONE, NONE, NONE, 2);
        op(p, r, IR_SW_WAIT, -1, NONE, NONE, NONE, 3);
        data(p, r, IR_SW_STORE, R(1, r, 1), R(0, r, 1), 4);
        op(p, r, IR_SW_SIGNAL, -1, NONE, NONE, NONE, 5);
        op(p, r, IR_SIGNAL, 1 - r, NONE, NONE, NONE, 6);
        op(p, r, IR_SW_WAIT, -1, NONE, NONE, NONE, 7);
        op(p, r, IR_WAIT, 1 - r, NONE, NONE, NONE, 8);
    }
    const char *s = emit(p, CDSL_BACKEND_NVLS, CDSL_F32, a, &d);
    char *r0 = rank_body(s ? s : "", 0);
    int ok = count(r0, "cdsl_converge(") == 1 && count(r0, "cdsl_converge(a, 1, 5)") == 1 &&
             count(r0, "cdsl_switch_wait(a, 2, CDSL_ACQUIRE, 7)") == 1 && s &&
             strstr(s, "case CDSL_STATE_SWITCH: return 2 * CDSL_NRANKS;") &&
             strstr(s, "case CDSL_STATE_PEER + 1: return 1;") &&
             strstr(s, "case CDSL_STATE_GRID(CDSL_NRANKS): return cdsl_meet_arrivals(1);") &&
             !strstr(s, "cdsl_last_out") && strstr(s, "cdsl_enter(a);");
    report("one convergence, before the first signal after data; waits numbered", ok, r0);
    free(r0);
    arena_destroy(a);
}

/* Alias fences: before a unicast access of multicast-written bytes, and at the end. */
static void test_fences(void)
{
    Arena *a = arena_create();
    Diag d;
    diag_init(&d, stderr);
    IrProgram *p = program(a, 2, 3, NAMES3, CHUNKS3);
    for (int r = 0; r < 2; r++) {
        data(p, r, IR_SW_REDUCE_STORE, R(1, r, 1), R(0, r, 1), 3);
        data(p, r, IR_COPY, R(2, r, 1), R(1, r, 1), 4);        /* reads what it just multicast */
        data(p, r, IR_COPY, R(2, 1 - r, 1), R(0, 1 - r, 1), 5); /* input: never multicast */
        op(p, r, IR_SW_SIGNAL, -1, NONE, NONE, NONE, 6);
        op(p, r, IR_SW_WAIT, -1, NONE, NONE, NONE, 7);
        data(p, r, IR_SW_REDUCE, R(1, r, 1), R(2, r, 1), 8);   /* tmp was written through unicast */
    }
    const char *s = emit(p, CDSL_BACKEND_NVLS, CDSL_F16, a, &d);
    char *r0 = rank_body(s ? s : "", 0);
    const char *f4 = strstr(r0, "// 4:5"), *f5 = strstr(r0, "// 5:5"), *f8 = strstr(r0, "// 8:5");
    int ok = count(r0, "cdsl_fence_alias();") == 3 && f4 && f5 && f8 && count(f4, "cdsl_fence_alias") == 3 &&
             count(f5, "cdsl_fence_alias") == 2 && count(f8, "cdsl_fence_alias") == 2;
    report("nvls: alias fence before the unicast read, before the multicast read, at the end", ok, r0);
    free(r0);
    const char *q = emit(p, CDSL_BACKEND_P2P, CDSL_F16, a, &d);
    report("p2p: no fence, no multimem", q && !strstr(q, "fence.proxy") && !strstr(q, "multimem"),
           "p2p source mentions multimem or the alias fence");
    arena_destroy(a);
}

static void sw_sync(IrProgram *p, int r, bool relaxed, int line)
{
    op(p, r, IR_SW_SIGNAL, -1, NONE, NONE, NONE, line);
    op(p, r, IR_SW_WAIT, -1, NONE, NONE, NONE, line + 1);
    p->ranks[r].ops[p->ranks[r].nops - 2].relaxed = relaxed;
    p->ranks[r].ops[p->ranks[r].nops - 1].relaxed = relaxed;
}

/* A unicast read, then (after signal -> wait) another rank's multicast write of those bytes:
   the writer fences after its wait. Without the read, no fence there. */
static void test_fence_read_then_mc_write(void)
{
    int ok = 1;
    char *r1 = NULL;
    for (int with_read = 1; with_read >= 0; with_read--) {
        Arena *a = arena_create();
        Diag d;
        diag_init(&d, stderr);
        IrProgram *p = program(a, 2, 3, NAMES3, CHUNKS3);
        for (int r = 0; r < 2; r++) {
            sw_sync(p, r, true, 2);
            data(p, r, IR_SW_REDUCE, R(2, 0, 1), R(0, r, 1), 4);    /* the entry fence goes here */
            if (r == 0 && with_read)
                data(p, r, IR_COPY, R(2, 1, 1), R(1, 0, 1), 5);  /* unicast read of output[0] */
            sw_sync(p, r, false, 6);
            if (r == 1)
                data(p, r, IR_SW_STORE, R(1, 0, 1), R(0, 1, 1), 8); /* overwrites it on rank 0 */
            sw_sync(p, r, false, 9);
        }
        const char *s = emit(p, CDSL_BACKEND_NVLS, CDSL_F32, a, &d);
        free(r1);
        r1 = rank_body(s ? s : "", 1);
        ok &= fenced_at(r1, 4) && fenced_at(r1, 8) == with_read && fenced_at_end(r1) &&
              count(r1, "cdsl_fence_alias();") == 2 + with_read;
        arena_destroy(a);
    }
    report("nvls: a unicast read is fenced against another rank's later multicast write", ok, r1);
    free(r1);
}

/* A multicast read (ld_reduce), then a unicast write of those bytes: by the same rank (no wait
   between) and by another rank after a wait. */
static void test_fence_mc_read_then_write(void)
{
    Arena *a = arena_create();
    Diag d;
    diag_init(&d, stderr);
    IrProgram *p = program(a, 2, 3, NAMES3, CHUNKS3);
    for (int r = 0; r < 2; r++) {
        sw_sync(p, r, true, 2);
        data(p, r, IR_SW_REDUCE, R(2, 0, 1), R(0, r, 1), 4);  /* rank 0: input[0] of every rank */
        if (r == 0) {
            data(p, r, IR_COPY, R(2, 1, 1), R(1, 1, 1), 5);   /* never multicast: no fence */
            data(p, r, IR_COPY, R(0, 0, 1), R(2, 0, 1), 6);   /* own write of what it reduced */
        }
        sw_sync(p, r, false, 7);
        if (r == 1)
            data(p, r, IR_COPY, R(0, 0, 1), R(2, 0, 1), 9);   /* rank 1 overwrites input[0] */
    }
    const char *s = emit(p, CDSL_BACKEND_NVLS, CDSL_F32, a, &d);
    char *r0 = rank_body(s ? s : "", 0), *r1 = rank_body(s ? s : "", 1);
    int ok0 = fenced_at(r0, 4) && !fenced_at(r0, 5) && fenced_at(r0, 6) && fenced_at_end(r0) &&
              count(r0, "cdsl_fence_alias();") == 3;
    /* The fence before 9 serves rank 1's end as well. */
    int ok1 = fenced_at(r1, 4) && fenced_at(r1, 9) && count(r1, "cdsl_fence_alias();") == 2;
    report("nvls: a multicast read is fenced against a later unicast write (own and other rank's)",
           ok0 && ok1, ok0 ? r1 : r0);
    free(r0);
    free(r1);
    arena_destroy(a);
}

/* The other ranks' work before the collective: the first multicast access after a wait is
   fenced, until a fence has followed a wait for every other rank. */
static void test_fence_prior_work(void)
{
    Arena *a = arena_create();
    Diag d;
    diag_init(&d, stderr);
    static const int chunks[] = {3, 3, 1};
    IrProgram *p = program(a, 3, 3, NAMES3, chunks);
    for (int q = 1; q < 3; q++)
        op(p, q, IR_SIGNAL, 0, NONE, NONE, NONE, 2);
    op(p, 1, IR_SIGNAL, 0, NONE, NONE, NONE, 3);
    op(p, 0, IR_WAIT, 1, NONE, NONE, NONE, 2);
    data(p, 0, IR_SW_STORE, R(1, 0, 1), R(0, 0, 1), 3);   /* rank 1's earlier work: fence */
    op(p, 0, IR_WAIT, 2, NONE, NONE, NONE, 4);
    data(p, 0, IR_SW_STORE, R(1, 1, 1), R(0, 1, 1), 5);   /* rank 2's: fence */
    op(p, 0, IR_WAIT, 1, NONE, NONE, NONE, 6);
    data(p, 0, IR_SW_STORE, R(1, 2, 1), R(0, 2, 1), 7);   /* both covered: none */
    const char *s = emit(p, CDSL_BACKEND_NVLS, CDSL_F32, a, &d);
    char *r0 = rank_body(s ? s : "", 0);
    int ok = fenced_at(r0, 3) && fenced_at(r0, 5) && !fenced_at(r0, 7) && fenced_at_end(r0) &&
             count(r0, "cdsl_fence_alias();") == 3;
    report("nvls: other ranks' earlier work fenced once per rank waited for", ok, r0);
    free(r0);
    arena_destroy(a);
}

/* Compile an emitted source with NVRTC when it is there. */
static void test_nvrtc(void)
{
    const char *why = NULL;
    const RtNvrtc *nv = rt_nvrtc_get(&why);
    if (!nv) {
        printf("[SKIP] nvrtc: %s\n", why);
        return;
    }
    Arena *a = arena_create();
    Diag d;
    diag_init(&d, stderr);
    IrProgram *p = program(a, 3, 3, NAMES3, CHUNKS3);
    for (int r = 0; r < 3; r++) {
        data(p, r, IR_REDUCE, R(2, 0, 2), R(0, 0, 2), 3);
        p->ranks[r].ops[0].src2 = R(1, 0, 2);
        data(p, r, IR_SW_REDUCE, R(1, 0, 1), R(2, 1, 1), 4);
        data(p, r, IR_PUT, R(1, 1, 1), R(2, 0, 1), 5);
        p->ranks[r].ops[2].peer = (r + 1) % 3;
        data(p, r, IR_GET, R(2, 1, 1), R(0, 1, 1), 6);
        p->ranks[r].ops[3].peer = (r + 2) % 3;
        op(p, r, IR_SIGNAL, (r + 1) % 3, NONE, NONE, NONE, 7);
        op(p, r, IR_WAIT, (r + 2) % 3, NONE, NONE, NONE, 8);
    }
    for (int b = CDSL_BACKEND_P2P; b <= CDSL_BACKEND_NVLS; b++)
        for (int t = CDSL_F32; t <= CDSL_S32; t++) {
            const char *src = emit(p, (cdsl_backend)b, (cdsl_dtype)t, a, &d);
            const char *opts[] = {"--gpu-architecture=sm_90", "-std=c++17"};
            const char *names[16], *texts[16];
            int nh = 0;
            for (const EmitHeader *h = emit_device_headers; h->name && nh < 16; h++, nh++)
                names[nh] = h->name, texts[nh] = h->text;
            RtNvrtcJob job = {src, "unit.cu", opts, 2, 1, nh, texts, names};
            void *out = NULL;
            size_t len = 0;
            char *log = NULL, name[64];
            int rc = src ? rt_nvrtc_compile(nv, &job, &out, &len, &log) : 1;
            snprintf(name, sizeof name, "NVRTC compiles every operation (%s, %s)", b == CDSL_BACKEND_NVLS ? "nvls" : "p2p",
                     emit_dtype((cdsl_dtype)t)->name);
            report(name, rc == 0 && len > 0, log ? log : "no source");
            free(out);
            free(log);
        }
    arena_destroy(a);
}

static void test_sha256(void)
{
    static const struct { const char *in; const char *hex; } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
    };
    int ok = 1;
    char hex[65];
    uint8_t dg[32];
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        rt_sha256(v[i].in, strlen(v[i].in), dg);
        rt_sha256_hex(dg, hex);
        ok &= strcmp(hex, v[i].hex) == 0;
    }
    /* A million 'a', fed in uneven pieces to exercise the block buffer. */
    RtSha256 s;
    rt_sha256_init(&s);
    char as[997];
    memset(as, 'a', sizeof as);
    size_t left = 1000000;
    while (left) {
        size_t n = left < sizeof as ? left : sizeof as;
        rt_sha256_update(&s, as, n);
        left -= n;
    }
    rt_sha256_final(&s, dg);
    rt_sha256_hex(dg, hex);
    ok &= strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0;
    report("SHA-256 test vectors (FIPS 180-4)", ok, "digest differs");
}

int main(void)
{
    test_sim_refused();
    test_sanitised();
    test_barrier_across_wait();
    test_sync_before();
    test_converge();
    test_block_arrival();
    test_fences();
    test_fence_read_then_mc_write();
    test_fence_mc_read_then_write();
    test_fence_prior_work();
    test_sha256();
    test_nvrtc();
    return failures ? 1 : 0;
}
