/*
 * fuzz_check.c - libFuzzer target through the whole compiler: parse, resolve, evaluate for
 * several rank counts (every other one in place), check, emit CUDA for both device flavours,
 * and lower to the copy engine (every checked program without a reduction or packets has a copy-engine
 * plan: the lowering finds an order in which each wait follows its write, since the checker
 * proved there is no deadlock; an input for which it does not is a finding, and aborts).
 *
 * The input is a .cdsl file. Its leading comment lines may set parameters the way -D does:
 *
 *     //D chunks=4
 *     //D steps=3
 *     program p(chunks = 1, steps = 1) implements allgather { ... }
 *
 * (up to MAX_DEFINES of them, each "name=value" as the command line passes it), so that the
 * fuzzer varies the -D values along with the program. Every input must end in clean output or
 * in diagnostics at each stage: no crash, no leak, no undefined behaviour (built with
 * -fsanitize=fuzzer,address,undefined by `make fuzz`).
 *
 * What this harness does not look for is slowness: the checker's own budgets are another
 * matter (bench/check_scale.sh measures them). So each input's arena is capped at ARENA_CAP
 * bytes (out of memory unwinds to the trap below, as it does in cdsl_compile), and programs
 * bigger than MAX_CHECKED_OPS operations or MAX_CHECKED_CHUNKS chunks are evaluated but not
 * checked.
 */
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ast.h"
#include "ce_plan.h"
#include "fuzz.h"
#include "check.h"
#include "emit.h"
#include "eval.h"
#include "lower.h"
#include "parse.h"
#include "resolve.h"

enum {
    MAX_DEFINES = 4,
    MAX_DEFINE_LEN = 64,
    MAX_CHECKED_OPS = 4096,
    MAX_CHECKED_CHUNKS = 4096,
};
#define ARENA_CAP ((size_t)256 << 20)

static const int rank_counts[] = {1, 2, 3, 4, 8};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Defines {
    char text[MAX_DEFINES][MAX_DEFINE_LEN + 1];
    const char *list[MAX_DEFINES];
    int n;
} Defines;

/* "//D name=value" lines at the top of the input, each cut at MAX_DEFINE_LEN bytes. */
static void read_defines(const char *s, size_t len, Defines *d)
{
    size_t i = 0;
    d->n = 0;
    while (d->n < MAX_DEFINES && i + 4 <= len && !memcmp(s + i, "//D ", 4)) {
        i += 4;
        size_t k = 0;
        while (i < len && s[i] != '\n') {
            if (k < MAX_DEFINE_LEN && s[i])
                d->text[d->n][k++] = s[i];
            i++;
        }
        d->text[d->n][k] = 0;
        d->list[d->n] = d->text[d->n];
        d->n++;
        i++;
    }
}

static bool small_enough(const IrProgram *ir)
{
    long long ops = 0, chunks = 0;
    for (int r = 0; r < ir->nranks; r++)
        ops += ir->ranks[r].nops;
    for (int b = 0; b < ir->nbufs; b++)
        chunks += ir->bufs[b].nchunks;
    return ops <= MAX_CHECKED_OPS && chunks <= MAX_CHECKED_CHUNKS;
}

/* Emit both flavours; the element type varies with the input (every one has its own
 * reduction code in the nvls flavour). */
static void emit_all(const IrProgram *ir, Arena *a, Diag *d, size_t seed, FILE *sink)
{
    cdsl_dtype t = (cdsl_dtype)(seed % 5);
    const char *p2p = emit_cuda(ir, CDSL_BACKEND_P2P, t, a, d);
    const char *nvls = emit_cuda(ir, CDSL_BACKEND_NVLS, t, a, d);
    fputs(p2p ? p2p : "", sink);
    fputs(nvls ? nvls : "", sink);
}

/* The copy-engine plan, with 1 to 8 lanes as the input varies. */
static void lower_ce(const IrProgram *ir, size_t seed, FILE *sink)
{
    CePlan *plan = NULL;
    char why[512];
    int st = ce_plan_build(ir, (int)(seed % CE_MAX_LANES) + 1, &plan, why, sizeof why);
    if (st == CDSL_OK)
        ce_plan_dump(plan, sink);
    else if (st == CDSL_ERR_PROGRAM && !strstr(why, "is a reduction") && !strstr(why, "is a packet operation"))
        abort();    /* a checked program that cannot be lowered: the lowering is wrong */
    ce_plan_free(plan);
}

static void compile_for(const Decl *program, int nranks, const Defines *defs, Arena *a, Diag *d, size_t seed,
                        FILE *sink)
{
    /* Every other rank count in place (cdsl_compile_opts.in_place): the alias rewrite too. */
    EvalOptions eo = {nranks, defs->list, defs->n, seed % 2 == 1};
    d->nerrors = 0;
    d->suppressed = false;
    IrProgram *ir = eval_program(a, d, program, &eo);
    if (!ir || !ir_packet_layout(ir, d) || !small_enough(ir))   /* the driver's phases, in its order */
        return;
    /* The checker's own budget keeps one input's checking short; its error is a finding too. */
    const CheckLimits limits = {256u << 20, 1u << 24};
    struct CheckResult *r = check_program(ir, d, &limits);
    check_emit_dot(ir, r, sink);
    if (d->nerrors == 0) {
        partition_program(ir);
        emit_all(ir, a, d, seed, sink);
        lower_ce(ir, seed, sink);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    FILE *sink = fuzz_sink();
    Arena *a = arena_create();
    if (!a)
        return 0;
    arena_set_limit(a, ARENA_CAP);
    ArenaTrap trap;
    arena_trap_push(a, &trap);
    if (setjmp(trap.env)) {   /* over ARENA_CAP: a bounded run, not a finding */
        arena_destroy(a);
        return 0;
    }
    Diag d;
    diag_init(&d, sink);
    Source *src = fuzz_source(a, data, size);
    Defines defs;
    read_defines(src->text, size, &defs);
    AstFile *file = parse_file(a, &d, src);
    Decl *program = NULL;
    if (file) {
        AstUnit unit = {&file, 1};
        program = resolve_unit(a, &d, &unit, NULL);
    }
    for (size_t i = 0; program && i < sizeof rank_counts / sizeof *rank_counts; i++)
        compile_for(program, rank_counts[i], &defs, a, &d, size + i, sink);
    arena_trap_pop(a, &trap);
    arena_destroy(a);
    return 0;
}
