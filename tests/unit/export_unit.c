/*
 * export_unit.c - every stdlib program exports as an MSCCL++ plan, re-imports and checks clean,
 * and the re-imported IR is exactly the exporter's lowering of the program (mscclpp_lower):
 * the program's own ops in order with the nops a plan needs, its scratch buffers end to end,
 * and switch.reduce fused into glres or taken through a slot (docs/mscclpp.md §3.4). For a
 * program without switch.reduce the lowering is the program itself plus nops, which is checked
 * too; and exporting the re-imported plan writes the same bytes again. At 2, 4 and 8 ranks.
 *
 * Run by tests/mscclpp/export.sh, against build/libcdsl.a and the ASan build.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"
#include "mscclpp.h"

static int failures;

static bool same_range(IrRange a, IrRange b)
{
    return a.buf == b.buf && (a.buf < 0 || (a.first == b.first && a.count == b.count));
}

static bool same_op(const IrOp *a, const IrOp *b)
{
    return a->kind == b->kind && a->peer == b->peer && a->relaxed == b->relaxed && a->tb == b->tb &&
           same_range(a->dst, b->dst) && same_range(a->src, b->src) && same_range(a->src2, b->src2);
}

/* Where the two differ, or NULL. */
static const char *compare(const IrProgram *want, const IrProgram *got, char *why, size_t n)
{
    if (want->nranks != got->nranks)
        return snprintf(why, n, "%d ranks, not %d", got->nranks, want->nranks), why;
    for (int r = 0; r < want->nranks; r++) {
        const IrSeq *w = &want->ranks[r], *g = &got->ranks[r];
        for (int i = 0; i < w->nops || i < g->nops; i++)
            if (i >= w->nops || i >= g->nops || !same_op(&w->ops[i], &g->ops[i]))
                return snprintf(why, n, "rank %d, op %d: %s, not %s", r, i, i < g->nops ? ir_kind_name(g->ops[i].kind)
                                : "nothing", i < w->nops ? ir_kind_name(w->ops[i].kind) : "nothing"), why;
    }
    return NULL;
}

/* The lowering without its nops is the program (scratch ranges aside) when no switch.reduce
   had to be lowered. */
static const char *lowering_is_program(const IrProgram *p, const IrProgram *q, char *why, size_t n)
{
    for (int r = 0; r < p->nranks; r++) {
        const IrSeq *s = &p->ranks[r], *t = &q->ranks[r];
        int i = 0;
        for (int k = 0; k < t->nops; k++) {
            if (t->ops[k].kind == IR_NOP)
                continue;
            const IrOp *a = &s->ops[i++], *b = &t->ops[k];
            if (a->kind != b->kind || a->peer != b->peer || a->relaxed != b->relaxed || a->dst.count != b->dst.count ||
                (a->dst.buf < 2 && !same_range(a->dst, b->dst)) || (a->src.buf < 2 && !same_range(a->src, b->src)))
                return snprintf(why, n, "rank %d: op %d is %s, the program's %s", r, k, ir_kind_name(b->kind),
                                ir_kind_name(a->kind)), why;
        }
        if (i != s->nops)
            return snprintf(why, n, "rank %d has %d ops besides nops, the program %d", r, i, s->nops), why;
    }
    return NULL;
}

static bool has_switch_reduce(const IrProgram *p)
{
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++)
            if (p->ranks[r].ops[i].kind == IR_SW_REDUCE)
                return true;
    return false;
}

static bool has_packets(const IrProgram *p)
{
    for (int r = 0; r < p->nranks; r++)
        for (int i = 0; i < p->ranks[r].nops; i++)
            if (ir_is_packet(p->ranks[r].ops[i].kind))
                return true;
    return false;
}

/* A collective with a root that MSCCL++ does not name (reduce): a plan would lose its meaning. */
static bool no_plan_collective(const IrProgram *p)
{
    const CollInfo *ci = coll_info(p->coll);
    return coll_has_root(ci) && !ci->mscclpp;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    *len = 0;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n >= 0 && (buf = malloc((size_t)n + 1)) && fread(buf, 1, (size_t)n, f) == (size_t)n)
        *len = (size_t)n;
    fclose(f);
    return buf;
}

static int export_to(cdsl_program *p, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rc = cdsl_emit_mscclpp(p, f);
    return fclose(f) || rc ? -1 : 0;
}

static void one(const char *file, int n, const char *dir, FILE *log)
{
    char name[512], plan[1024], plan2[1024], why[256] = "";
    const char *base = strrchr(file, '/') ? strrchr(file, '/') + 1 : file;
    snprintf(name, sizeof name, "%s -n %d", base, n);
    snprintf(plan, sizeof plan, "%s/%d.%s.json", dir, n, base);
    snprintf(plan2, sizeof plan2, "%s/%d.%s.again.json", dir, n, base);
    cdsl_compile_opts o = {.path = file, .nranks = n, .stop_after = CDSL_STAGE_CHECK, .diag = log, .color = 0};
    cdsl_program *p = NULL, *back = NULL;
    const char *bad = NULL;
    size_t l1 = 0, l2 = 0;
    char *t1 = NULL, *t2 = NULL;
    if (cdsl_compile(&o, &p) || !p) {
        bad = "does not compile";
    } else if (has_packets(p->ir) || no_plan_collective(p->ir)) { /* MSCCL++ plans have no cdsl packets
                                                                       and no reduce: refused, by name */
        if (mscclpp_lower(p->ir, &p->diag) || export_to(p, plan) == 0)
            bad = "a program MSCCL++ cannot hold was written as a plan";
    } else {
        IrProgram *q = mscclpp_lower(p->ir, &p->diag);
        cdsl_compile_opts o2 = {.path = plan, .nranks = 0, .stop_after = CDSL_STAGE_CHECK, .diag = log, .color = 0};
        if (!q)
            bad = "its lowering does not check";
        else if (export_to(p, plan))
            bad = "does not export";
        else if (cdsl_compile(&o2, &back) || !back)
            bad = "the exported plan does not re-import and check clean";
        else if ((bad = compare(q, back->ir, why, sizeof why)))
            ;
        else if (!has_switch_reduce(p->ir) && (bad = lowering_is_program(p->ir, q, why, sizeof why)))
            ;
        else if (export_to(back, plan2) || !(t1 = slurp(plan, &l1)) || !(t2 = slurp(plan2, &l2)) || l1 != l2 ||
                 memcmp(t1, t2, l1))
            bad = "exporting the re-imported plan writes other bytes";
    }
    const char *what = p && has_packets(p->ir)          ? "refused as a plan (packets)"
                       : p && no_plan_collective(p->ir) ? "refused as a plan (a collective MSCCL++ does not have)"
                                                        : "exports, re-imports and checks clean";
    if (bad) {
        printf("[FAIL] %s: %s: %s\n", what, name, bad);
        failures++;
    } else {
        printf("[PASS] %s: %s\n", what, name);
    }
    free(t1);
    free(t2);
    unlink(plan);
    unlink(plan2);
    cdsl_program_destroy(back);
    cdsl_program_destroy(p);
}

int main(void)
{
    char dir[] = "/tmp/cdsl-export.XXXXXX";
    const char *tmp = getenv("TMPDIR");
    char dirbuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s/cdsl-export.XXXXXX", tmp ? tmp : "/tmp");
    char *d = mkdtemp(tmp ? dirbuf : dir);
    FILE *log = fopen("/dev/null", "w");
    glob_t g;
    if (!d || !log || glob("stdlib/*.cdsl", 0, NULL, &g) || g.gl_pathc == 0) {
        printf("[FAIL] export_unit: no stdlib/*.cdsl or no temporary folder\n");
        return 1;
    }
    for (size_t i = 0; i < g.gl_pathc; i++)
        for (int n = 2; n <= 8; n *= 2)
            one(g.gl_pathv[i], n, d, log);
    globfree(&g);
    fclose(log);
    rmdir(d);
    return failures != 0;
}
