/*
 * sim_unit.c - the sim backend and the runtime API on hand-built IR, without the front end.
 *
 * Builds per-rank operation lists the way eval.c would (ring and mesh allgathers, switch
 * allreduce and reducescatter, a get-and-reduce reducescatter with scratch) and runs them
 * through cdsl.h's runtime API on the sim: fill, run, check, for every dtype, with and without
 * jitter. Then the failures: a wait nobody signals (reported with rank, place and counter,
 * exit status CDSL_ERR_RUNTIME, no hang), an allgather that never delivers (CDSL_ERR_VERIFY
 * naming the rank, chunk and element), and API misuse. Prints "[PASS] name" / "[FAIL] name".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cdsl.h"
#include "driver.h"
#include "ir.h"

static int failures;
static Source unit_src = {.path = "unit.cdsl"};

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("  %s:%d: ", __FILE__, __LINE__);                                               \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            ok = 0;                                                                                \
        }                                                                                          \
    } while (0)

static void result(const char *name, int ok)
{
    printf("[%s] %s\n", ok ? "PASS" : "FAIL", name);
    failures += !ok;
}

static IrRange R(int buf, int first, int count)
{
    return (IrRange){buf, first, count};
}

static const IrRange NONE = {-1, 0, 0};

static IrOp op(IrKind k, int peer, IrRange dst, IrRange src, int line)
{
    IrOp o = {.kind = k, .peer = peer, .dst = dst, .src = src, .src2 = NONE};
    o.loc = (Loc){&unit_src, line, 5};
    return o;
}

static cdsl_program *new_program(Collective coll, int n, int C, int in, int out)
{
    Arena *a = arena_create();
    cdsl_program *p = ARENA_NEW(a, cdsl_program);
    IrProgram *ir = ARENA_NEW(a, IrProgram);
    p->arena = a;
    p->ir = ir;
    p->ok = true;
    ir->name = ir_coll_name(coll);
    ir->coll = coll;
    ir->coll_name = ir_coll_name(coll);
    ir->nranks = n;
    ir->chunks = C;
    ir->bufs[0] = (IrBuf){.name = "input", .nchunks = in};
    ir->bufs[1] = (IrBuf){.name = "output", .nchunks = out};
    ir->nbufs = 2;
    ir->ranks = ARENA_ARRAY(a, IrSeq, (size_t)n);
    ir->arena = a;
    return p;
}

static void free_program(cdsl_program *p)
{
    arena_destroy(p->arena);
}

static cdsl_program *ring_allgather(int n)
{
    cdsl_program *p = new_program(COLL_ALLGATHER, n, 1, 1, n);
    for (int r = 0; r < n; r++) {
        int next = (r + 1) % n, prev = (r + n - 1) % n;
        ir_append(p->ir, r, op(IR_COPY, -1, R(1, r, 1), R(0, 0, 1), 3));
        if (n == 1)
            continue; /* peer(rank) is not a channel */
        IrOp s = op(IR_SIGNAL, prev, NONE, NONE, 4), w = op(IR_WAIT, next, NONE, NONE, 5);
        s.relaxed = w.relaxed = true;
        ir_append(p->ir, r, s);
        ir_append(p->ir, r, w);
        for (int step = 0; step < n - 1; step++) {
            int c = (r + n - step) % n;
            ir_append(p->ir, r, op(IR_PUT, next, R(1, c, 1), R(1, c, 1), 8));
            ir_append(p->ir, r, op(IR_SIGNAL, next, NONE, NONE, 9));
            ir_append(p->ir, r, op(IR_WAIT, prev, NONE, NONE, 10));
        }
    }
    return p;
}

static void switch_barrier(cdsl_program *p, int r, bool relaxed, int line)
{
    IrOp s = op(IR_SW_SIGNAL, -1, NONE, NONE, line), w = op(IR_SW_WAIT, -1, NONE, NONE, line + 1);
    s.relaxed = w.relaxed = relaxed;
    ir_append(p->ir, r, s);
    ir_append(p->ir, r, w);
}

/* allreduce_nvls with C chunks per rank slot. */
static cdsl_program *switch_allreduce(int n, int C)
{
    cdsl_program *p = new_program(COLL_ALLREDUCE, n, C, n * C, n * C);
    for (int r = 0; r < n; r++) {
        switch_barrier(p, r, true, 2);
        ir_append(p->ir, r, op(IR_SW_REDUCE_STORE, -1, R(1, r * C, C), R(0, r * C, C), 4));
        switch_barrier(p, r, false, 5);
    }
    return p;
}

static cdsl_program *switch_reducescatter(int n)
{
    cdsl_program *p = new_program(COLL_REDUCESCATTER, n, 1, n, 1);
    for (int r = 0; r < n; r++) {
        switch_barrier(p, r, true, 2);
        ir_append(p->ir, r, op(IR_SW_REDUCE, -1, R(1, 0, 1), R(0, r, 1), 4));
        switch_barrier(p, r, false, 5);
    }
    return p;
}

/* allgather_nvls: every rank stores its chunk into slot `rank` everywhere. */
static cdsl_program *switch_allgather(int n)
{
    cdsl_program *p = new_program(COLL_ALLGATHER, n, 1, 1, n);
    for (int r = 0; r < n; r++) {
        switch_barrier(p, r, true, 2);
        ir_append(p->ir, r, op(IR_SW_STORE, -1, R(1, r, 1), R(0, 0, 1), 4));
        switch_barrier(p, r, false, 5);
    }
    return p;
}

/* Reducescatter by gets into scratch and local reduces: exercises GET, REDUCE, scratch. */
static cdsl_program *get_reducescatter(int n)
{
    cdsl_program *p = new_program(COLL_REDUCESCATTER, n, 1, n, 1);
    p->ir->bufs[2] = (IrBuf){.name = "tmp", .nchunks = n};
    p->ir->nbufs = 3;
    for (int r = 0; r < n; r++) {
        switch_barrier(p, r, true, 2);
        for (int q = 0; q < n; q++)
            if (q != r)
                ir_append(p->ir, r, op(IR_GET, q, R(2, q, 1), R(0, r, 1), 4));
        switch_barrier(p, r, true, 5); /* my peers have read my input */
        ir_append(p->ir, r, op(IR_COPY, -1, R(1, 0, 1), R(0, r, 1), 7));
        for (int q = 0; q < n; q++) {
            if (q == r)
                continue;
            IrOp o = op(IR_REDUCE, -1, R(1, 0, 1), R(1, 0, 1), 8);
            o.src2 = R(2, q, 1);
            ir_append(p->ir, r, o);
        }
    }
    return p;
}

static cdsl_comm *new_comm(int n, unsigned seed, int jitter, unsigned long long spin, FILE *log)
{
    cdsl_comm_opts o;
    cdsl_comm_opts_init(&o);
    o.backend = CDSL_BACKEND_SIM;
    o.nranks = n;
    o.seed = seed;
    o.jitter_us = jitter;
    o.spin_limit = spin;
    o.log = log;
    cdsl_comm *c = NULL;
    return cdsl_comm_create(&o, &c) == CDSL_OK ? c : NULL;
}

/* fill, run `iters` times, check; returns the status of the first failing step. */
static int run_checked(cdsl_comm *c, cdsl_program *p, cdsl_dtype t, size_t size, int iters,
                       unsigned long long *wrong, double *us)
{
    size_t chunk;
    int rc = cdsl_chunk_bytes(p, size, &chunk, NULL);
    if (!rc)
        rc = cdsl_comm_alloc(c, p, chunk);
    if (!rc)
        rc = cdsl_fill(c, p, t);
    if (!rc)
        rc = cdsl_run(c, p, t, iters, us);
    if (!rc)
        rc = cdsl_check(c, p, t, wrong);
    return rc;
}

typedef cdsl_program *(*Maker)(int n);

static cdsl_program *allreduce2(int n)
{
    return switch_allreduce(n, 2);
}

static void test_collectives(void)
{
    static const struct {
        const char *name;
        Maker make;
    } makers[] = {
        {"ring_allgather", ring_allgather},     {"switch_allgather", switch_allgather},
        {"switch_allreduce", allreduce2},       {"switch_reducescatter", switch_reducescatter},
        {"get_reducescatter", get_reducescatter},
    };
    static const cdsl_dtype types[] = {CDSL_F32, CDSL_F16, CDSL_BF16, CDSL_U32, CDSL_S32};
    static const int ns[] = {1, 2, 3, 4, 8};
    for (size_t m = 0; m < sizeof makers / sizeof makers[0]; m++) {
        int ok = 1;
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            int n = ns[k];
            cdsl_program *p = makers[m].make(n);
            cdsl_comm *c = new_comm(n, 0, 0, 0, stdout);
            for (size_t t = 0; c && t < sizeof types / sizeof types[0]; t++) {
                unsigned long long wrong = 1;
                size_t chunk, granule;
                cdsl_chunk_bytes(p, 1, &chunk, &granule);
                size_t size = granule * 1000;
                int rc = run_checked(c, p, types[t], size, 2, &wrong, NULL);
                EXPECT(rc == 0 && wrong == 0, "%s n=%d %s: rc=%d wrong=%llu", makers[m].name, n,
                       cdsl_dtype_name(types[t]), rc, wrong);
            }
            EXPECT(c != NULL, "no communicator");
            cdsl_comm_destroy(c);
            free_program(p);
        }
        char name[80];
        snprintf(name, sizeof name, "sim runs %s for n=1,2,3,4,8 in every dtype", makers[m].name);
        result(name, ok);
    }
}

static void test_jitter(void)
{
    int ok = 1;
    for (unsigned seed = 1; seed <= 6; seed++) {
        cdsl_program *p = seed % 2 ? ring_allgather(5) : get_reducescatter(4);
        cdsl_comm *c = new_comm(p->ir->nranks, seed, 30, 0, stdout);
        unsigned long long wrong = 1;
        size_t chunk, granule;
        cdsl_chunk_bytes(p, 1, &chunk, &granule);
        int rc = run_checked(c, p, CDSL_F32, granule * 300 * 1024, 3, &wrong, NULL);
        EXPECT(rc == 0 && wrong == 0, "seed %u: rc=%d wrong=%llu", seed, rc, wrong);
        cdsl_comm_destroy(c);
        free_program(p);
    }
    result("sim with jitter seeds 1..6 verifies", ok);
}

/* Messages into memory: *text is valid after fclose(*f). */
static FILE *capture(char **text, size_t *len)
{
    *text = NULL;
    return open_memstream(text, len);
}

static void test_deadlock(void)
{
    int ok = 1;
    cdsl_program *p = new_program(COLL_BARRIER, 3, 1, 0, 0);
    ir_append(p->ir, 0, op(IR_WAIT, 1, NONE, NONE, 7));    /* rank 1 never signals */
    ir_append(p->ir, 2, op(IR_SW_SIGNAL, -1, NONE, NONE, 9));
    ir_append(p->ir, 2, op(IR_SW_WAIT, -1, NONE, NONE, 10)); /* 0 and 1 never arrive */
    size_t len;
    char *text;
    FILE *log = capture(&text, &len);
    cdsl_comm *c = new_comm(3, 0, 0, 20000, log);
    time_t t0 = time(NULL);
    int rc = cdsl_comm_alloc(c, p, 64);
    if (!rc)
        rc = cdsl_run(c, p, CDSL_F32, 1, NULL);
    fclose(log);
    EXPECT(rc == CDSL_ERR_RUNTIME, "rc=%d", rc);
    EXPECT(time(NULL) - t0 < 20, "took %ld s", (long)(time(NULL) - t0));
    const char *want0 = "cdsl: error: rank 0 gave up waiting at unit.cdsl:7:5 for rank 1's signal "
                        "(counter peer 1: 0 of 1 arrivals)\n";
    const char *want2 = "cdsl: error: rank 2 gave up waiting at unit.cdsl:10:5 for rank 0's switch "
                        "arrival (counter switch: 1 of 3 arrivals)\n";
    EXPECT(text && strstr(text, want0), "missing rank 0's report in:\n%s", text ? text : "");
    EXPECT(text && strstr(text, want2), "missing rank 2's report in:\n%s", text ? text : "");
    EXPECT(text && strstr(text, "no rank made progress for 20000 polls"), "no note in:\n%s", text ? text : "");
    free(text);
    /* The communicator still works afterwards (counters were reset). */
    cdsl_program *ring = ring_allgather(3);
    unsigned long long wrong = 1;
    rc = run_checked(c, ring, CDSL_U32, 3 * 64, 1, &wrong, NULL);
    EXPECT(rc == 0 && wrong == 0, "after a stop: rc=%d wrong=%llu", rc, wrong);
    cdsl_comm_destroy(c);
    free_program(ring);
    free_program(p);
    result("a wait nobody satisfies stops the run and names rank, place and counter", ok);
}

static void test_wrong(void)
{
    int ok = 1;
    cdsl_program *p = new_program(COLL_ALLGATHER, 4, 1, 1, 4);
    for (int r = 0; r < 4; r++)
        ir_append(p->ir, r, op(IR_COPY, -1, R(1, r, 1), R(0, 0, 1), 3)); /* never sends */
    size_t len;
    char *text;
    FILE *log = capture(&text, &len);
    cdsl_comm *c = new_comm(4, 0, 0, 0, log);
    unsigned long long wrong = 0;
    int rc = run_checked(c, p, CDSL_F32, 4 * 16, 1, &wrong, NULL);
    fclose(log);
    EXPECT(rc == CDSL_ERR_VERIFY, "rc=%d", rc);
    EXPECT(wrong == 4 * 3 * 4, "wrong=%llu", wrong);
    const char *want = "cdsl: error: wrong result on rank 0: output chunk 1, element 0 is nan (never written), "
                       "expected 2 (from rank 1's input chunk 0)\n"
                       "cdsl: note: 48 of 64 output elements wrong, on 4 of 4 ranks\n";
    EXPECT(text && strcmp(text, want) == 0, "got:\n%s", text ? text : "");
    free(text);
    cdsl_comm_destroy(c);
    free_program(p);
    result("an allgather that never delivers is reported with rank, chunk and element", ok);
}

static void test_misuse(void)
{
    int ok = 1;
    size_t len;
    char *text;
    FILE *log = capture(&text, &len);
    cdsl_program *p = ring_allgather(4), *q = switch_allreduce(4, 1), *p8 = ring_allgather(8);
    cdsl_comm *c = new_comm(4, 0, 0, 0, log);
    size_t chunk = 0, granule = 0;
    EXPECT(cdsl_chunk_bytes(p, 1000, &chunk, &granule) == CDSL_ERR_USAGE && granule == 16, "granule %zu", granule);
    EXPECT(cdsl_chunk_bytes(p, 1024, &chunk, NULL) == 0 && chunk == 256, "chunk %zu", chunk);
    EXPECT(cdsl_run(c, p, CDSL_F32, 1, NULL) == CDSL_ERR_USAGE, "run before alloc");
    EXPECT(cdsl_comm_alloc(c, p, 6) == CDSL_ERR_USAGE, "chunk of 6 bytes");
    EXPECT(cdsl_comm_alloc(c, p, 64) == 0, "alloc");
    EXPECT(cdsl_run(c, q, CDSL_F32, 1, NULL) == CDSL_ERR_USAGE, "other layout");
    EXPECT(cdsl_run(c, p8, CDSL_F32, 1, NULL) == CDSL_ERR_USAGE, "other rank count");
    EXPECT(cdsl_run(c, p, CDSL_F32, 0, NULL) == CDSL_ERR_USAGE, "zero iterations");
    char buf[512];
    EXPECT(cdsl_comm_write(c, 4, 0, buf, 4) == CDSL_ERR_USAGE, "rank out of range");
    EXPECT(cdsl_comm_write(c, 0, 1, buf, 4 * 64 + 1) == CDSL_ERR_USAGE, "too many bytes");
    EXPECT(cdsl_comm_read(c, 0, 7, buf, 4) == CDSL_ERR_USAGE, "no such buffer");
    EXPECT(cdsl_comm_alloc(c, p, (size_t)1 << 60) == CDSL_ERR_SYSTEM, "huge");
    EXPECT(cdsl_comm_chunk_bytes(c) == 0, "a failed alloc leaves no buffers");
    cdsl_comm_opts o;
    cdsl_comm_opts_init(&o);
    o.nranks = 0;
    o.log = log;
    cdsl_comm *bad = NULL;
    EXPECT(cdsl_comm_create(&o, &bad) == CDSL_ERR_USAGE && !bad, "zero ranks");
    o.nranks = 2;
    o.backend = CDSL_BACKEND_AUTO;
    EXPECT(cdsl_comm_create(&o, &bad) == 0 && bad, "default backend");
    if (bad)
        cdsl_comm_destroy(bad);
    fclose(log);
    EXPECT(text && strstr(text, "out of memory"), "no out-of-memory message:\n%s", text ? text : "");
    free(text);
    cdsl_comm_destroy(c);
    free_program(p);
    free_program(q);
    free_program(p8);
    result("API misuse is refused with a status, nothing leaks", ok);
}

static void test_big(void)
{
    int ok = 1;
    static const struct {
        const char *name;
        cdsl_program *(*make)(int);
        cdsl_dtype t;
    } cases[] = {{"ring_allgather", ring_allgather, CDSL_F32},
                 {"switch_allgather", switch_allgather, CDSL_F32},
                 {"switch_allreduce", allreduce2, CDSL_F32},
                 {"switch_allreduce", allreduce2, CDSL_BF16}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cdsl_program *p = cases[i].make(8);
        cdsl_comm *c = new_comm(8, 0, 0, 0, stdout);
        unsigned long long wrong = 1;
        double us = 0;
        int rc = run_checked(c, p, cases[i].t, 64u << 20, 1, &wrong, &us);
        EXPECT(rc == 0 && wrong == 0, "%s: rc=%d wrong=%llu", cases[i].name, rc, wrong);
        printf("  %s n=8 64 MiB %s: %.1f ms per run\n", cases[i].name, cdsl_dtype_name(cases[i].t), us / 1e3);
        cdsl_comm_destroy(c);
        free_program(p);
    }
    result("sim at n=8 with 64 MiB", ok);
}

int main(int argc, char **argv)
{
    test_collectives();
    test_jitter();
    test_deadlock();
    test_wrong();
    test_misuse();
    if (argc > 1 && strcmp(argv[1], "--big") == 0)
        test_big();
    return failures != 0;
}
