/*
 * ce_plan_unit.c - properties of the copy-engine lowering (compiler/lower/ce_plan.c), for every
 * stdlib program without a reduction and the programs of tests/ce/, at 2 to 9 ranks and with
 * 1 to 8 lanes. The goldens in tests/ce/ pin down a few plans line by line; this checks what
 * every plan must satisfy, which is what the ordering argument in docs/internals.md rests on:
 *   - the enqueue order holds every step of every rank exactly once, in each rank's order, and
 *     every wait comes after the write that satisfies it (run as the hardware would);
 *   - a word has one writer, whose writes store 1, 2, 3, ...; a wait's per-run growth is the
 *     number of writes to its word per run; the last wait on a word waits for all of them;
 *   - writes and waits sit on lane 0 outside every FORK..JOIN, copies on lanes 1.. only inside
 *     one, lanes below max_lanes, and the copies between a FORK and its JOIN touch nothing
 *     another of them writes;
 *   - every data operation's bytes are moved: one copy for copy/put/get, one per rank for a
 *     switch.store (none where it is in place), with the operation's chunks and the right ranks;
 *   - in events mode a wait names a signal of its sender that writes its word with its value;
 *   - a program with a reduction gets no plan, and says which operation.
 * Prints one [PASS]/[FAIL] line per property and program; exits 1 on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ce_plan.h"
#include "cdsl.h"
#include "driver.h"

static int failures, checks;

static void fail(const char *prog, int n, int lanes, const char *what)
{
    printf("[FAIL] %s -n %d, %d lanes: %s\n", prog, n, lanes, what);
    failures++;
}

static cdsl_program *compile(const char *path, int n)
{
    cdsl_compile_opts o = {.path = path, .nranks = n, .stop_after = CDSL_STAGE_CHECK, .diag = stderr};
    cdsl_program *p = NULL;
    if (cdsl_compile(&o, &p) != CDSL_OK) {
        cdsl_program_destroy(p);
        return NULL;
    }
    return p;
}

/* The order: each rank's steps once, in its order, each wait after its write. */
static const char *check_order(const CePlan *plan)
{
    int n = plan->nranks, w = CE_WORDS(n);
    int *pos = calloc((size_t)n, sizeof *pos);
    unsigned long long *written = calloc((size_t)n * (size_t)w, sizeof *written);
    const char *bad = NULL;
    for (int k = 0; k < plan->norder && !bad; k++) {
        const CeSegment *s = &plan->order[k];
        if (s->begin != pos[s->rank] || s->end <= s->begin)
            bad = "a segment of the order skips or repeats steps";
        for (int i = s->begin; i < s->end && !bad; i++) {
            const CeStep *st = &plan->ranks[s->rank].steps[i];
            if (st->kind == CE_WAIT && written[s->rank * w + st->word] < st->value)
                bad = "a wait is enqueued before the write it waits for";
            if (st->kind == CE_WRITE) {
                unsigned long long *word = &written[st->word_rank * w + st->word];
                if (st->value != *word + 1)
                    bad = "a write does not store one more than the word's last write";
                *word = st->value;
            }
        }
        pos[s->rank] = s->end;
    }
    for (int r = 0; r < n && !bad; r++)
        if (pos[r] != plan->ranks[r].nsteps)
            bad = "the order leaves steps out";
    /* per-run growth = the writes per run; the last wait on a word waits for all of them */
    for (int r = 0; r < n && !bad; r++) {
        unsigned long long last[2048] = {0};
        for (int i = 0; i < plan->ranks[r].nsteps; i++) {
            const CeStep *st = &plan->ranks[r].steps[i];
            if (st->kind == CE_WAIT) {
                if (st->per_run != written[r * w + st->word])
                    bad = "a wait's per-run growth is not the number of writes to its word";
                last[st->word] = st->value;
            }
        }
        for (int word = 0; word < w && !bad; word++)
            if (last[word] && last[word] != written[r * w + word])
                bad = "the last wait on a word does not wait for every write of the run";
    }
    free(pos);
    free(written);
    return bad;
}

static int overlap(CePlace a, CePlace b, int count)
{
    return a.rank == b.rank && a.buf == b.buf && a.first < b.first + count && b.first < a.first + count;
}

static int clash(const CeStep *a, const CeStep *b)
{
    return overlap(a->dst, b->dst, a->count > b->count ? a->count : b->count) ||
           overlap(a->dst, b->src, a->count > b->count ? a->count : b->count) ||
           overlap(a->src, b->dst, a->count > b->count ? a->count : b->count);
}

/* Lanes: flags on lane 0 outside forks, lanes > 0 only inside, batches free of conflicts. */
static const char *check_lanes(const CePlan *plan, int max_lanes)
{
    for (int r = 0; r < plan->nranks; r++) {
        const CeRankPlan *rp = &plan->ranks[r];
        int open = -1;          /* index of the FORK of the batch we are in */
        if (rp->nlanes < 1 || rp->nlanes > max_lanes)
            return "a rank uses more lanes than allowed";
        for (int i = 0; i < rp->nsteps; i++) {
            const CeStep *s = &rp->steps[i];
            if (s->kind == CE_FORK) {
                if (open >= 0 || s->lane < 1 || s->lane >= rp->nlanes)
                    return "a fork inside a fork, or of lanes the rank does not have";
                open = i;
            } else if (s->kind == CE_JOIN) {
                if (open < 0 || rp->steps[open].lane != s->lane)
                    return "a join without its fork";
                for (int a = open + 1; a < i; a++)
                    for (int b = a + 1; b < i; b++)
                        if (clash(&rp->steps[a], &rp->steps[b]))
                            return "two copies of one batch touch what the other writes";
                open = -1;
            } else if (s->kind == CE_COPY) {
                if (s->lane < 0 || s->lane >= rp->nlanes || (s->lane > 0 && open < 0) ||
                    (open >= 0 && s->lane > rp->steps[open].lane))
                    return "a copy on a lane that no fork started";
            } else if (open >= 0) {
                return "a write or wait between a fork and its join";
            }
        }
        if (open >= 0)
            return "a fork that is never joined";
    }
    return NULL;
}

/* Every data operation's copies, with the operation's chunks and ranks. */
static const char *check_copies(const CePlan *plan)
{
    const IrProgram *ir = plan->ir;
    for (int r = 0; r < plan->nranks; r++) {
        const CeRankPlan *rp = &plan->ranks[r];
        for (int o = 0; o < ir->ranks[r].nops; o++) {
            const IrOp *op = &ir->ranks[r].ops[o];
            if (!ir_is_data(op->kind))
                continue;
            int want = op->kind == IR_SW_STORE ? ir->nranks : 1, got = 0;
            if (op->kind == IR_SW_STORE && op->dst.buf == op->src.buf && op->dst.first == op->src.first)
                want--;     /* in place: the rank's own copy moves nothing */
            for (int i = 0; i < rp->nsteps; i++) {
                const CeStep *s = &rp->steps[i];
                if (s->kind != CE_COPY || s->op != o)
                    continue;
                got++;
                int dst_rank = op->kind == IR_PUT ? op->peer : r, src_rank = op->kind == IR_GET ? op->peer : r;
                if (s->count != op->dst.count || s->dst.buf != op->dst.buf || s->dst.first != op->dst.first ||
                    s->src.buf != op->src.buf || s->src.first != op->src.first || s->src.rank != src_rank ||
                    (op->kind != IR_SW_STORE && s->dst.rank != dst_rank))
                    return "a copy does not move what its operation moves";
            }
            if (got != want)
                return "an operation has the wrong number of copies";
        }
    }
    return NULL;
}

/* Events mode: a wait's (from_rank, from_sig) is a signal that writes this wait's word. */
static const char *check_events(const CePlan *plan)
{
    for (int r = 0; r < plan->nranks; r++) {
        const CeRankPlan *rp = &plan->ranks[r];
        for (int i = 0; i < rp->nsteps; i++) {
            const CeStep *s = &rp->steps[i];
            if (s->kind != CE_WAIT)
                continue;
            const CeRankPlan *from = &plan->ranks[s->from_rank];
            int found = 0;
            for (int k = 0; k < from->nsteps && !found; k++) {
                if (from->steps[k].kind != CE_WRITE || from->steps[k].sig != s->from_sig)
                    continue;
                for (int j = k; j < from->nsteps && from->steps[j].kind == CE_WRITE &&
                                from->steps[j].op == from->steps[k].op && !found; j++)
                    found = from->steps[j].word_rank == r && from->steps[j].word == s->word &&
                            from->steps[j].value == s->value;
            }
            if (!found)
                return "a wait names a signal that does not write its word with its value";
        }
    }
    return NULL;
}

static void check_program(const char *path, int n, int lanes)
{
    cdsl_program *p = compile(path, n);
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (!p) {
        fail(name, n, lanes, "does not compile");
        return;
    }
    CePlan *plan = NULL;
    char why[512];
    int st = ce_plan_build(p->ir, lanes, &plan, why, sizeof why);
    const char *bad = st ? why : NULL;
    if (!bad)
        bad = check_order(plan);
    if (!bad)
        bad = check_lanes(plan, lanes);
    if (!bad)
        bad = check_copies(plan);
    if (!bad)
        bad = check_events(plan);
    if (bad)
        fail(name, n, lanes, bad);
    checks++;
    ce_plan_free(plan);
    cdsl_program_destroy(p);
}

static void no_plan(const char *path, int n, const char *want)
{
    cdsl_program *p = compile(path, n);
    CePlan *plan = NULL;
    char why[512] = "";
    int st = p ? ce_plan_build(p->ir, CE_MAX_LANES, &plan, why, sizeof why) : CDSL_ERR_USAGE;
    printf("[%s] %s -n %d has no plan: %s\n", st == CDSL_ERR_PROGRAM && !plan && strstr(why, want) ? "PASS" : "FAIL",
           path, n, why);
    failures += !(st == CDSL_ERR_PROGRAM && !plan && strstr(why, want));
    cdsl_program_destroy(p);
}

int main(void)
{
    static const char *const progs[] = {
        "stdlib/allgather_nvls.cdsl", "stdlib/allgather_ring.cdsl", "stdlib/allgather_mesh.cdsl",
        "stdlib/allgather_chunked_ring.cdsl", "stdlib/barrier_switch.cdsl", "tests/ce/batch_split.cdsl",
        "tests/ce/in_place.cdsl", "tests/ce/pull.cdsl", "tests/ce/forward.cdsl",
    };
    for (size_t i = 0; i < sizeof progs / sizeof *progs; i++) {
        int before = failures;
        int two_ranks = strstr(progs[i], "batch_split") != NULL;    /* written for -n 2 */
        for (int n = 2; n <= (two_ranks ? 2 : 9); n++)
            for (int lanes = 1; lanes <= CE_MAX_LANES; lanes *= 2)
                check_program(progs[i], n, lanes);
        if (failures == before)
            printf("[PASS] %s: plans at every rank count and lane limit keep their properties\n", progs[i]);
    }
    no_plan("stdlib/allreduce_twoshot.cdsl", 2, "switch.reduce at stdlib/allreduce_twoshot.cdsl:7:12 is a reduction");
    no_plan("stdlib/reducescatter_nvls.cdsl", 3, "reductions need the SMs");
    printf("%d plans checked\n", checks);
    return failures ? 1 : 0;
}
