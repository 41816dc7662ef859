/*
 * check_unit.c - unit tests for the checker on IR built by hand (no front end involved).
 *
 * Each test builds an IrProgram the way eval.c would (per rank, ops in program order, each
 * with a line and a loop context), runs check_program with diagnostics captured in memory,
 * and asserts on the verdict and on the words of the messages. The spec programs and their
 * broken variants are rebuilt here at several rank counts, plus the cases the golden tests
 * cover, so the checker can be tested before and independently of the parser. With --scale
 * it also times the big cases (ring at 64 ranks, mesh at 256).
 *
 * Build: cc -std=c11 -Icompiler -Iruntime tests/unit/check_unit.c build/libcdsl.a -ljansson -ldl -lpthread -lm
 *   (or against the objects of compiler/ for the checker, arena, diag and ir alone).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "happens_before.h"
#include "ir.h"

static int failures, tests;

typedef struct Prog {
    Arena *a;
    IrProgram *p;
    Source *src;
} Prog;

static const IrRange NONE = {-1, 0, 0};

static IrRange R(int buf, int first, int count)
{
    return (IrRange){buf, first, count};
}

static Source *fake_source(Arena *a, const char *name)
{
    /* 40 lines of text so that any line a test uses can be quoted. */
    char *text = arena_alloc(a, 40 * 32);
    char *t = text;
    for (int i = 1; i <= 40; i++)
        t += sprintf(t, "    statement_on_line_%d;\n", i);
    Source *s = ARENA_NEW(a, Source);
    s->path = name;
    s->text = text;
    s->len = strlen(text);
    s->arena = a;
    return s;
}

static Prog mk(const char *name, Collective coll, int n, int chunks)
{
    Prog g;
    g.a = arena_create();
    g.src = fake_source(g.a, arena_printf(g.a, "%s.cdsl", name));
    IrProgram *p = ARENA_NEW(g.a, IrProgram);
    p->name = name;
    p->loc = (Loc){g.src, 2, 1};
    p->coll = coll;
    p->coll_name = ir_coll_name(coll);
    p->nranks = n;
    p->chunks = chunks;
    p->arena = g.a;
    int in = coll == COLL_ALLGATHER ? chunks : n * chunks;
    int out = coll == COLL_REDUCESCATTER ? chunks : n * chunks;
    p->bufs[0] = (IrBuf){"input", in, p->loc, false};
    p->bufs[1] = (IrBuf){"output", out, p->loc, false};
    p->nbufs = 2;
    p->ranks = ARENA_ARRAY(g.a, IrSeq, (size_t)n);
    g.p = p;
    return g;
}

static void add_scratch(Prog *g, const char *name, int nchunks)
{
    g->p->bufs[g->p->nbufs++] = (IrBuf){name, nchunks, g->p->loc, false};
}

static void op(Prog *g, int r, IrKind k, int peer, bool relaxed, IrRange dst, IrRange src, IrRange src2, int line,
               const char *ctxfmt, ...)
{
    IrOp o = {0};
    o.kind = k;
    o.peer = peer;
    o.relaxed = relaxed;
    o.dst = dst;
    o.src = src;
    o.src2 = src2;
    o.loc = (Loc){g->src, line, 5};
    if (ctxfmt) {
        char buf[128];
        va_list ap;
        va_start(ap, ctxfmt);
        vsnprintf(buf, sizeof buf, ctxfmt, ap);
        va_end(ap);
        o.ctx = arena_strdup(g->a, buf);
    }
    ir_append(g->p, r, o);
}

#define SIG(g, r, peer, rel, line) op(g, r, IR_SIGNAL, peer, rel, NONE, NONE, NONE, line, NULL)
#define WAIT(g, r, peer, rel, line) op(g, r, IR_WAIT, peer, rel, NONE, NONE, NONE, line, NULL)
#define SWSIG(g, r, rel, line) op(g, r, IR_SW_SIGNAL, -1, rel, NONE, NONE, NONE, line, NULL)
#define SWWAIT(g, r, rel, line) op(g, r, IR_SW_WAIT, -1, rel, NONE, NONE, NONE, line, NULL)

/* Runs the checker; returns its messages (in the arena) and the error count. */
static const char *run_check(Prog *g, int *nerrors)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    Diag d;
    diag_init(&d, f);
    d.color = false;
    check_program(g->p, &d, NULL);
    fclose(f);
    *nerrors = d.nerrors;
    const char *out = arena_strdup(g->a, buf ? buf : "");
    free(buf);
    return out;
}

static void expect(bool ok, const char *what, const char *name, const char *out)
{
    tests++;
    if (ok)
        return;
    failures++;
    fprintf(stderr, "FAIL %s: %s\n--- messages:\n%s---\n", name, what, out);
}

/* Checks the verdict and that each of the NULL-terminated substrings appears. */
static void verdict(Prog *g, bool accept, ...)
{
    int nerr;
    const char *out = run_check(g, &nerr);
    const char *name = arena_printf(g->a, "%s n=%d", g->p->name, g->p->nranks);
    expect(accept ? nerr == 0 : nerr > 0, accept ? "should be accepted" : "should be rejected", name, out);
    va_list ap;
    va_start(ap, accept);
    for (const char *s; (s = va_arg(ap, const char *));)
        expect(strstr(out, s) != NULL, arena_printf(g->a, "no \"%s\" in the messages", s), name, out);
    va_end(ap);
    if (getenv("SHOW"))
        fprintf(stderr, "==== %s\n%s", name, out);
    arena_destroy(g->a);
}

/* ---- The spec programs ------------------------------------------------------------------- */

static Prog ring(int n, bool handshake, bool own_chunk)
{
    Prog g = mk(handshake ? "allgather_ring" : "ring_no_handshake", COLL_ALLGATHER, n, 1);
    for (int r = 0; r < n; r++) {
        int next = (r + 1) % n, prev = (r + n - 1) % n;
        if (own_chunk)
            op(&g, r, IR_COPY, -1, false, R(1, r, 1), R(0, 0, 1), NONE, 5, NULL);
        if (handshake) {
            SIG(&g, r, prev, true, 6);
            WAIT(&g, r, next, true, 7);
        }
        for (int step = 0; step < n - 1; step++) {
            int c = (r + n - step) % n;
            op(&g, r, IR_PUT, next, false, R(1, c, 1), R(1, c, 1), NONE, 10, "step=%d", step);
            op(&g, r, IR_SIGNAL, next, false, NONE, NONE, NONE, 11, "step=%d", step);
            op(&g, r, IR_WAIT, prev, false, NONE, NONE, NONE, 12, "step=%d", step);
        }
    }
    return g;
}

static Prog mesh(int n)
{
    Prog g = mk("allgather_mesh", COLL_ALLGATHER, n, 1);
    for (int r = 0; r < n; r++) {
        for (int p = 0; p < n; p++)
            if (p != r)
                op(&g, r, IR_SIGNAL, p, true, NONE, NONE, NONE, 3, "p=%d", p);
        for (int p = 0; p < n; p++)
            if (p != r)
                op(&g, r, IR_WAIT, p, true, NONE, NONE, NONE, 4, "p=%d", p);
        op(&g, r, IR_COPY, -1, false, R(1, r, 1), R(0, 0, 1), NONE, 5, NULL);
        for (int p = 0; p < n; p++)
            if (p != r)
                op(&g, r, IR_PUT, p, false, R(1, r, 1), R(0, 0, 1), NONE, 6, "p=%d", p);
        for (int p = 0; p < n; p++)
            if (p != r)
                op(&g, r, IR_SIGNAL, p, false, NONE, NONE, NONE, 7, "p=%d", p);
        for (int p = 0; p < n; p++)
            if (p != r)
                op(&g, r, IR_WAIT, p, false, NONE, NONE, NONE, 8, "p=%d", p);
    }
    return g;
}

static Prog nvls(int n, bool final_wait)
{
    Prog g = mk(final_wait ? "allgather_nvls" : "nvls_no_final_wait", COLL_ALLGATHER, n, 1);
    for (int r = 0; r < n; r++) {
        SWSIG(&g, r, true, 5);
        SWWAIT(&g, r, true, 6);
        op(&g, r, IR_SW_STORE, -1, false, R(1, r, 1), R(0, 0, 1), NONE, 7, NULL);
        SWSIG(&g, r, false, 8);
        if (final_wait)
            SWWAIT(&g, r, false, 9);
    }
    return g;
}

static Prog allreduce_nvls(int n)
{
    Prog g = mk("allreduce_nvls", COLL_ALLREDUCE, n, 1);
    for (int r = 0; r < n; r++) {
        SWSIG(&g, r, true, 3);
        SWWAIT(&g, r, true, 4);
        op(&g, r, IR_SW_REDUCE_STORE, -1, false, R(1, r, 1), R(0, r, 1), NONE, 5, NULL);
        SWSIG(&g, r, false, 6);
        SWWAIT(&g, r, false, 7);
    }
    return g;
}

static Prog barrier(int n, bool wait)
{
    Prog g = mk("barrier_switch", COLL_BARRIER, n, 1);
    g.p->bufs[0].nchunks = g.p->bufs[1].nchunks = 0;
    for (int r = 0; r < n; r++) {
        SWSIG(&g, r, true, 3);
        if (wait)
            SWWAIT(&g, r, true, 4);
    }
    return g;
}

static void test_spec_programs(void)
{
    int ns[] = {2, 4, 8};
    for (int i = 0; i < 3; i++) {
        int n = ns[i];
        Prog g = ring(n, true, true);
        verdict(&g, true, NULL);
        g = mesh(n);
        verdict(&g, true, NULL);
        g = nvls(n, true);
        verdict(&g, true, NULL);
        g = allreduce_nvls(n);
        verdict(&g, true, NULL);
        g = barrier(n, true);
        verdict(&g, true, NULL);
    }
    Prog g = ring(4, false, true);
    verdict(&g, false, "ring_no_handshake.cdsl:10:5: error: data race: rank 0 writes output[0] of rank 1 (put, step=0)",
            "before rank 1 may have entered", "note: rank 1 enters here", NULL);
    g = nvls(2, false);
    verdict(&g, false, "nvls_no_final_wait.cdsl:7:5: error: data race: rank 1 writes output[1] of rank 0 (switch.store)",
            "rank 0 may leave before the write lands", "note: rank 0 leaves here",
            ":8:5: error: switch arrival never consumed", NULL);
}

/* ---- Rule 1 -------------------------------------------------------------------------------- */

static void test_races(void)
{
    /* Relaxed signal used to publish a put. */
    Prog g = mk("relaxed_publish", COLL_CUSTOM, 2, 1);
    SIG(&g, 1, 0, true, 3);
    WAIT(&g, 0, 1, true, 4);
    op(&g, 0, IR_PUT, 1, false, R(1, 0, 1), R(0, 0, 1), NONE, 5, NULL);
    SIG(&g, 0, 1, true, 6);
    WAIT(&g, 1, 0, false, 7);
    op(&g, 1, IR_COPY, -1, false, R(0, 0, 1), R(1, 0, 1), NONE, 8, NULL);
    verdict(&g, false, "relaxed_publish.cdsl:8:5: error: data race: rank 1 reads its output[0] (copy)",
            "may not be visible yet", "relaxed signal here", NULL);

    /* A get of a peer that may already have left. */
    g = mk("get_after_leave", COLL_CUSTOM, 2, 1);
    SIG(&g, 1, 0, true, 3);
    WAIT(&g, 0, 1, true, 4);
    op(&g, 0, IR_GET, 1, false, R(1, 0, 1), R(0, 0, 1), NONE, 5, NULL);
    verdict(&g, false, "error: data race: rank 0 reads input[0] of rank 1 (get)", "rank 1 leaves here", NULL);

    /* Two ranks multicast into one slot. */
    g = mk("two_writers", COLL_CUSTOM, 2, 1);
    for (int r = 0; r < 2; r++) {
        SWSIG(&g, r, true, 3);
        SWWAIT(&g, r, true, 4);
        op(&g, r, IR_SW_STORE, -1, false, R(1, 0, 1), R(0, 0, 1), NONE, 5, NULL);
        SWSIG(&g, r, false, 6);
        SWWAIT(&g, r, false, 7);
    }
    verdict(&g, false, "error: data race: rank 0 writes its output[0] (switch.store) while rank 1 may be writing it too",
            "note: rank 1 writes output[0] of rank 0 here (switch.store)",
            NULL);
}

/* ---- Rule 2 -------------------------------------------------------------------------------- */

static void test_sync(void)
{
    Prog g = mk("cycle3", COLL_CUSTOM, 3, 1);
    for (int r = 0; r < 3; r++) {
        WAIT(&g, r, (r + 1) % 3, false, 3);
        SIG(&g, r, (r + 2) % 3, false, 4);
    }
    verdict(&g, false, "error: deadlock: ranks 0, 1 and 2 wait for each other in a cycle",
            "note: rank 0 waits here for rank 1's 1st signal to rank 0, which rank 1 sends at 4:5", NULL);

    g = mk("never", COLL_CUSTOM, 2, 1);
    WAIT(&g, 0, 1, false, 3);
    verdict(&g, false, "rank 0 waits forever here: this is its 1st wait for rank 1, but rank 1 never signals rank 0",
            NULL);

    g = mk("leftover", COLL_CUSTOM, 2, 1);
    SIG(&g, 0, 1, false, 3);
    SIG(&g, 0, 1, false, 4);
    WAIT(&g, 1, 0, false, 5);
    verdict(&g, false, "leftover.cdsl:4:5: error: signal never consumed", "rank 1's last wait for rank 0 is here",
            NULL);

    g = mk("uneven", COLL_CUSTOM, 3, 1);
    for (int r = 0; r < 3; r++) {
        SWSIG(&g, r, false, 3);
        if (r == 2)
            SWSIG(&g, r, false, 4);
        SWWAIT(&g, r, false, 5);
    }
    verdict(&g, false, "uneven.cdsl:4:5: error: uneven switch arrivals: rank 2 makes 2", NULL);

    g = mk("switch_self", COLL_CUSTOM, 2, 1);
    for (int r = 0; r < 2; r++) {
        SWWAIT(&g, r, false, 3);
        SWSIG(&g, r, false, 4);
    }
    verdict(&g, false, "deadlock: ranks 0 and 1 wait for each other", NULL);
}

/* ---- Rule 4 -------------------------------------------------------------------------------- */

static void test_post(void)
{
    Prog g = ring(4, true, false);
    verdict(&g, false, "allgather postcondition fails: rank 0 ends with output[0] undefined; it should hold input@0[0]",
            NULL);

    /* reducescatter through the switch, reducing the wrong chunk */
    int n = 4;
    g = mk("rs_wrong", COLL_REDUCESCATTER, n, 1);
    for (int r = 0; r < n; r++) {
        SWSIG(&g, r, true, 3);
        SWWAIT(&g, r, true, 4);
        op(&g, r, IR_SW_REDUCE, -1, false, R(1, 0, 1), R(0, (r + 1) % n, 1), NONE, 5, NULL);
        SWSIG(&g, r, true, 6);
        SWWAIT(&g, r, true, 7);
    }
    verdict(&g, false, "reducescatter postcondition fails: rank 0 ends with output[0] = the sum over all 4 ranks p of "
            "input@p[1]; it should hold the sum over all 4 ranks p of input@p[0] [rule 4: the postcondition]\n", NULL);

    g = mk("rs_right", COLL_REDUCESCATTER, n, 1);
    for (int r = 0; r < n; r++) {
        SWSIG(&g, r, true, 3);
        SWWAIT(&g, r, true, 4);
        op(&g, r, IR_SW_REDUCE, -1, false, R(1, 0, 1), R(0, r, 1), NONE, 5, NULL);
        SWSIG(&g, r, true, 6);
        SWWAIT(&g, r, true, 7);
    }
    verdict(&g, true, NULL);

    /* two-shot allreduce: switch.reduce into scratch, then switch.store */
    g = mk("allreduce_two_shot", COLL_ALLREDUCE, n, 1);
    add_scratch(&g, "tmp", 1);
    for (int r = 0; r < n; r++) {
        SWSIG(&g, r, true, 3);
        SWWAIT(&g, r, true, 4);
        op(&g, r, IR_SW_REDUCE, -1, false, R(2, 0, 1), R(0, r, 1), NONE, 5, NULL);
        op(&g, r, IR_SW_STORE, -1, false, R(1, r, 1), R(2, 0, 1), NONE, 6, NULL);
        SWSIG(&g, r, false, 7);
        SWWAIT(&g, r, false, 8);
    }
    verdict(&g, true, NULL);

    g = barrier(3, false);
    verdict(&g, false, "switch arrival never consumed", NULL);
}

/* ---- order.c ------------------------------------------------------------------------------- */

static void test_order(void)
{
    Prog g = mk("order", COLL_CUSTOM, 2, 4);
    g.p->bufs[0].nchunks = g.p->bufs[1].nchunks = 8;
    op(&g, 0, IR_COPY, -1, false, R(1, 0, 2), R(0, 0, 2), NONE, 3, NULL);   /* 0 */
    op(&g, 0, IR_COPY, -1, false, R(1, 4, 2), R(1, 0, 2), NONE, 4, NULL);   /* 1: same range: no sync */
    op(&g, 0, IR_COPY, -1, false, R(1, 6, 2), R(1, 1, 2), NONE, 5, NULL);   /* 2: shifted: sync */
    op(&g, 0, IR_COPY, -1, false, R(0, 4, 2), R(0, 6, 2), NONE, 6, NULL);   /* 3: disjoint: no sync */
    SIG(&g, 0, 1, false, 7);                                                /* 4 */
    op(&g, 0, IR_COPY, -1, false, R(0, 0, 1), R(0, 4, 1), NONE, 8, NULL);   /* 5: reads what op 3 wrote, differently placed: a signal is no barrier: sync */
    op(&g, 0, IR_PUT, 1, false, R(1, 0, 2), R(0, 2, 2), NONE, 10, NULL);   /* 6: a peer's chunks: no sync */
    op(&g, 0, IR_GET, 1, false, R(1, 2, 1), R(0, 0, 1), NONE, 11, NULL);   /* 7: reads only: no sync */
    op(&g, 0, IR_GET, 1, false, R(1, 3, 1), R(0, 0, 1), NONE, 12, NULL);   /* 8: reads only: no sync */
    op(&g, 0, IR_COPY, -1, false, R(0, 7, 1), R(1, 3, 1), NONE, 13, NULL); /* 9: same range: no sync */
    op(&g, 0, IR_SW_STORE, -1, false, R(1, 3, 1), R(0, 7, 1), NONE, 14, NULL); /* 10: other path: sync */
    op(&g, 0, IR_PUT, 1, false, R(1, 5, 1), R(0, 5, 1), NONE, 15, NULL);   /* 11: no overlap: no sync */
    op(&g, 0, IR_GET, 1, false, R(0, 6, 1), R(1, 3, 1), NONE, 16, NULL);   /* 12: rank 1's output[3], stored: sync */
    WAIT(&g, 1, 0, false, 9);
    int nerr;
    run_check(&g, &nerr);
    IrOp *o = g.p->ranks[0].ops;
    bool want[] = {false, false, true, false, false, true, false, false, false, false, true, false, true};
    for (int i = 0; i < 13; i++)
        expect(o[i].sync_before == want[i], arena_printf(g.a, "op %d: sync_before should be %d", i, want[i]),
               "order", "");
    arena_destroy(g.a);
}

/* ---- Scale ------------------------------------------------------------------------------- */

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void time_one(Prog g)
{
    const char *name = arena_printf(g.a, "%s n=%d", g.p->name, g.p->nranks);
    double t0 = seconds();
    int nerr;
    const char *out = run_check(&g, &nerr);
    double dt = seconds() - t0;
    fprintf(stderr, "%-28s %8.3f s  arena %6.1f MB\n", name, dt, (double)arena_used(g.a) / 1e6);
    expect(nerr == 0, "accepted", name, out);
    arena_destroy(g.a);
}

/* ---- Thread blocks as units (ir.h) -------------------------------------------------------- */

/* A program whose ranks have `ntbs` thread blocks each; ops are appended with tb_op. */
static Prog mk_blocks(const char *name, Collective coll, int n, int chunks, int ntbs)
{
    Prog g = mk(name, coll, n, chunks);
    g.p->ntbs = ARENA_ARRAY(g.a, int, (size_t)n);
    g.p->plan = true; /* thread blocks are a plan's (ir.h) */
    for (int r = 0; r < n; r++)
        g.p->ntbs[r] = ntbs;
    return g;
}

static void tb_op(Prog *g, int r, int tb, IrKind k, int peer, int chan, IrRange dst, IrRange src, int line)
{
    IrOp o = {0};
    o.kind = k;
    o.peer = peer;
    o.tb = tb;
    o.dst = dst;
    o.src = src;
    o.src2 = NONE;
    o.loc = (Loc){g->src, line, 5};
    o.ctx = arena_printf(g->a, "threadblock %d", tb);
    if (k == IR_BARRIER) {
        o.barrier = (int16_t)chan;
        o.blocks = 2;
    } else {
        o.chan = (int16_t)chan;
    }
    ir_append(g->p, r, o);
}

static void test_units(void)
{
    /* Two blocks of one rank write one chunk: nothing orders them. */
    Prog g = mk_blocks("blocks_race", COLL_CUSTOM, 1, 1, 2);
    add_scratch(&g, "tmp", 1);
    tb_op(&g, 0, 0, IR_COPY, -1, 0, R(2, 0, 1), R(0, 0, 1), 3);
    tb_op(&g, 0, 1, IR_COPY, -1, 0, R(2, 0, 1), R(0, 0, 1), 4);
    verdict(&g, false, "blocks_race.cdsl:4:5: error: data race: rank 0 writes its tmp[0] (copy, threadblock 1) "
            "while rank 0 may be writing it too", "note: rank 0 writes its tmp[0] here (copy, threadblock 0)", NULL);

    /* The same with a barrier between the blocks: the second write follows the first. */
    g = mk_blocks("blocks_barrier", COLL_CUSTOM, 1, 1, 2);
    add_scratch(&g, "tmp", 1);
    tb_op(&g, 0, 0, IR_COPY, -1, 0, R(2, 0, 1), R(0, 0, 1), 3);
    tb_op(&g, 0, 0, IR_BARRIER, -1, 0, NONE, NONE, 4);
    tb_op(&g, 0, 1, IR_BARRIER, -1, 0, NONE, NONE, 5);
    tb_op(&g, 0, 1, IR_COPY, -1, 0, R(1, 0, 1), R(2, 0, 1), 6);
    verdict(&g, true, NULL);

    /* Channels: block t of rank 0 waits on channel t, which rank 1's block t signals after its
       put; each block then reads what its own channel published. */
    g = mk_blocks("blocks_channels", COLL_CUSTOM, 2, 2, 2);
    for (int t = 0; t < 2; t++) {
        tb_op(&g, 0, t, IR_SIGNAL, 1, t, NONE, NONE, 3);
        tb_op(&g, 0, t, IR_WAIT, 1, t, NONE, NONE, 4);
        tb_op(&g, 0, t, IR_NOP, -1, 0, NONE, NONE, 4);
        tb_op(&g, 0, t, IR_COPY, -1, 0, R(1, t, 1), R(1, 2 + t, 1), 5);
        tb_op(&g, 0, t, IR_NOP, -1, 0, NONE, NONE, 5);
        tb_op(&g, 0, t, IR_SIGNAL, 1, t, NONE, NONE, 6);
    }
    add_scratch(&g, "unused", 1);
    g.p->bufs[1].nchunks = 4;
    for (int t = 0; t < 2; t++) {
        tb_op(&g, 1, t, IR_WAIT, 0, t, NONE, NONE, 7);
        tb_op(&g, 1, t, IR_NOP, -1, 0, NONE, NONE, 7);
        tb_op(&g, 1, t, IR_PUT, 0, 0, R(1, 2 + t, 1), R(0, t, 1), 8);
        tb_op(&g, 1, t, IR_NOP, -1, 0, NONE, NONE, 8);
        tb_op(&g, 1, t, IR_SIGNAL, 0, t, NONE, NONE, 9);
        tb_op(&g, 1, t, IR_WAIT, 0, t, NONE, NONE, 10);
    }
    verdict(&g, true, NULL);

    /* The same with the channels crossed on rank 0: block 0 reads what channel 1 published. */
    g = mk_blocks("blocks_crossed", COLL_CUSTOM, 2, 2, 2);
    g.p->bufs[1].nchunks = 4;
    for (int t = 0; t < 2; t++) {
        tb_op(&g, 0, t, IR_SIGNAL, 1, t, NONE, NONE, 3);
        tb_op(&g, 0, t, IR_WAIT, 1, t, NONE, NONE, 4);
        tb_op(&g, 0, t, IR_NOP, -1, 0, NONE, NONE, 4);
        tb_op(&g, 0, t, IR_COPY, -1, 0, R(1, t, 1), R(1, 3 - t, 1), 5);
        tb_op(&g, 0, t, IR_NOP, -1, 0, NONE, NONE, 5);
        tb_op(&g, 0, t, IR_SIGNAL, 1, t, NONE, NONE, 6);
    }
    for (int t = 0; t < 2; t++) {
        tb_op(&g, 1, t, IR_WAIT, 0, t, NONE, NONE, 7);
        tb_op(&g, 1, t, IR_NOP, -1, 0, NONE, NONE, 7);
        tb_op(&g, 1, t, IR_PUT, 0, 0, R(1, 2 + t, 1), R(0, t, 1), 8);
        tb_op(&g, 1, t, IR_NOP, -1, 0, NONE, NONE, 8);
        tb_op(&g, 1, t, IR_SIGNAL, 0, t, NONE, NONE, 9);
        tb_op(&g, 1, t, IR_WAIT, 0, t, NONE, NONE, 10);
    }
    verdict(&g, false, "blocks_crossed.cdsl:5:5: error: data race: rank 0 reads its output[3] (copy, threadblock 0)",
            "note: rank 1 writes output[3] of rank 0 here (put, threadblock 1)", NULL);

    /* A barrier that one block uses twice and the other once never completes its 2nd time. */
    g = mk_blocks("blocks_uneven_barrier", COLL_CUSTOM, 1, 1, 2);
    tb_op(&g, 0, 0, IR_BARRIER, -1, 3, NONE, NONE, 3);
    tb_op(&g, 0, 0, IR_BARRIER, -1, 3, NONE, NONE, 4);
    tb_op(&g, 0, 1, IR_BARRIER, -1, 3, NONE, NONE, 5);
    verdict(&g, false, "blocks_uneven_barrier.cdsl:4:5: error: rank 0 waits forever here (threadblock 0): this is "
            "its 2nd use of barrier 3, but its threadblock 1 uses that barrier only once", NULL);

    /* A cycle through a barrier: rank 0's block 1 waits for rank 1, which waits for rank 0's
       block 0, which waits at the barrier for block 1. */
    g = mk_blocks("blocks_cycle", COLL_CUSTOM, 2, 1, 2);
    tb_op(&g, 0, 0, IR_BARRIER, -1, 0, NONE, NONE, 3);
    tb_op(&g, 0, 0, IR_SIGNAL, 1, 0, NONE, NONE, 4);
    tb_op(&g, 0, 1, IR_WAIT, 1, 0, NONE, NONE, 5);
    tb_op(&g, 0, 1, IR_BARRIER, -1, 0, NONE, NONE, 6);
    tb_op(&g, 1, 0, IR_WAIT, 0, 0, NONE, NONE, 7);
    tb_op(&g, 1, 0, IR_SIGNAL, 0, 0, NONE, NONE, 8);
    g.p->ntbs[1] = 1;
    verdict(&g, false, "error: deadlock: rank 0 threadblock 0, rank 0 threadblock 1 and rank 1 threadblock 0 wait for "
            "each other in a cycle", "rank 0 waits here (threadblock 0) for threadblock 1 of rank 0 to come to barrier 0",
            NULL);

    /* plan_blocks.c: a signal right after a put publishes only thread 0's share of it. */
    g = mk_blocks("blocks_put_signal", COLL_CUSTOM, 2, 1, 1);
    tb_op(&g, 0, 0, IR_PUT, 1, 0, R(1, 0, 1), R(0, 0, 1), 3);
    tb_op(&g, 0, 0, IR_SIGNAL, 1, 0, NONE, NONE, 4);
    tb_op(&g, 1, 0, IR_WAIT, 0, 0, NONE, NONE, 5);
    verdict(&g, false, "blocks_put_signal.cdsl:4:5: error: signal (threadblock 0) follows the put at 3:5 with no nop "
            "between them", "so it publishes only thread 0's share of it", NULL);

    /* A block's write into a peer that only another block of the peer's rank orders: the end
       of the peer's rank joins all its blocks. */
    g = mk_blocks("blocks_end", COLL_CUSTOM, 2, 1, 2);
    g.p->ntbs[1] = 1;
    tb_op(&g, 0, 0, IR_SIGNAL, 1, 0, NONE, NONE, 3);
    tb_op(&g, 0, 1, IR_WAIT, 1, 0, NONE, NONE, 4);
    tb_op(&g, 1, 0, IR_WAIT, 0, 0, NONE, NONE, 5);
    tb_op(&g, 1, 0, IR_NOP, -1, 0, NONE, NONE, 5);
    tb_op(&g, 1, 0, IR_PUT, 0, 0, R(1, 0, 1), R(0, 0, 1), 6);
    tb_op(&g, 1, 0, IR_NOP, -1, 0, NONE, NONE, 6);
    tb_op(&g, 1, 0, IR_SIGNAL, 0, 0, NONE, NONE, 7);
    verdict(&g, true, NULL);
}

int main(int argc, char **argv)
{
    test_spec_programs();
    test_units();
    test_races();
    test_sync();
    test_post();
    test_order();
    if (argc > 1 && strcmp(argv[1], "--scale") == 0) {
        time_one(ring(64, true, true));
        time_one(ring(256, true, true));
        time_one(mesh(64));
        time_one(mesh(256));
        time_one(allreduce_nvls(256));
    }
    printf("check_unit: %d tests, %d failed\n", tests, failures);
    return failures != 0;
}
