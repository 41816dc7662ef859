/*
 * driver.c - cdsl_compile: every phase in order, as one table (phases[]) that it walks,
 * stopping after the first that failed or at the stage the caller asked for.
 *
 *     front/load           read the file and its imports, lex and parse   (load.c, parse.c)
 *     front/resolve        names, operations, argument counts, orders     (resolve.c)
 *     plan/import          an MSCCL++ plan instead of the three above     (mscclpp_import.c)
 *     ir/eval              per-rank operation sequences; bounds, shapes   (eval.c)
 *     lower/packet layout  where packets travel                           (packet_layout.c)
 *     check/check          order.c's sync_before, then the four rules     (check.c)
 *     check/warnings       synchronisation the program does not need      (unneeded_sync.c)
 *     lower/partition      the data ops that may signal block by block    (partition.c)
 *
 * lower/lower.h says why each lowering runs where it does. Emission (emit/) and the
 * copy-engine plan (lower/ce_plan.c) come after, on request.
 *
 * Everything lives in the program's arena, destroyed with the program. Running out of memory
 * anywhere in the phases unwinds to cdsl_compile (arena.h's trap), which frees the half-built
 * program and returns CDSL_ERR_SYSTEM: the host goes on.
 */
#include "driver.h"

#include <errno.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ast.h"
#include "ce_plan.h"
#include "check.h"
#include "emit.h"
#include "eval.h"
#include "unneeded_sync.h"
#include "log.h"
#include "load.h"
#include "lower.h"
#include "mscclpp.h"
#include "resolve.h"

static cdsl_program *new_program(const cdsl_compile_opts *o)
{
    static atomic_ullong serials;
    cdsl_program *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->serial = atomic_fetch_add(&serials, 1) + 1;
    p->arena = arena_create();
    if (!p->arena || pthread_mutex_init(&p->lazy, NULL) != 0) {
        arena_destroy(p->arena);
        free(p);
        return NULL;
    }
    FILE *out = o->diag ? o->diag : stderr;
    diag_init(&p->diag, out);
    if (o->color >= 0)
        p->diag.color = o->color != 0;
    p->diag.format = o->diag_format == CDSL_DIAG_JSON ? DIAG_JSON : DIAG_TEXT;
    if (p->diag.format == DIAG_JSON)
        p->diag.color = false;
    p->diag.warn_off = o->warnings_off & CDSL_WARN_ALL;
    p->diag.werror = o->warnings_as_errors != 0;
    p->progress_mode = p->diag.format == DIAG_JSON ? 0 : o->progress;
    return p;
}

_Static_assert(IR_MAX_RANKS == CDSL_MAX_RANKS, "cdsl.h and ir.h must agree on the rank limit");
#define TEXT_OF(x) #x
#define NUMBER_TEXT(x) TEXT_OF(x)

static int usage_error(FILE *out, const char *msg, int n)
{
    fprintf(out ? out : stderr, msg, n);
    return CDSL_ERR_USAGE;
}

/* "timing: check 12.345 ms (allgather_ring, 8 ranks)" on the debug log (CDSL_DEBUG=INFO). */
static void timed(const char *step, double t0, const cdsl_program *p, int nranks)
{
    char ranks[32] = "";
    if (p->name && nranks)
        snprintf(ranks, sizeof ranks, ", %d ranks", nranks);
    log_msg(LOG_INFO, "timing: %s %.3f ms (%s%s)", step, log_ms_since(t0), p->name ? p->name : "", ranks);
}

/* One compilation in hand, as the phases pass it along. */
typedef struct Compilation {
    cdsl_program *p;
    const cdsl_compile_opts *o;
    bool plan;        /* an MSCCL++ plan: imported as IR, with no syntax tree */
    Decl *program;    /* the chosen .cdsl program, once resolved */
    bool done;        /* the stage the caller asked for (stop_after) is reached */
} Compilation;

/* A phase returns CDSL_OK to go on (done set: stop there, successfully) or the code to stop
 * with. The code of a phase that reported errors: usage errors are the caller's. */
static int failed(const cdsl_program *p)
{
    return p->diag.nusage ? CDSL_ERR_USAGE : CDSL_ERR_PROGRAM;
}

static int phase_load(Compilation *c)
{
    cdsl_program *p = c->p;
    const cdsl_compile_opts *o = c->o;
    LoadOptions lo = {o->include_dirs, o->ninclude_dirs, o->source};
    double t = log_clock();
    p->ast = load_unit(p->arena, &p->diag, o->path, &lo);
    log_msg(LOG_INFO, "timing: parse %.3f ms (%s, %d file%s)", log_ms_since(t), o->path,
            p->ast ? p->ast->nfiles : 0, p->ast && p->ast->nfiles == 1 ? "" : "s");
    return p->ast ? CDSL_OK : failed(p);   /* the file itself unreadable is the caller's error */
}

static int phase_resolve(Compilation *c)
{
    cdsl_program *p = c->p;
    double t = log_clock();
    c->program = resolve_unit(p->arena, &p->diag, p->ast, c->o->program);
    if (!c->program)
        return failed(p);
    p->name = c->program->name;
    p->collective = c->program->collective;
    timed("resolve", t, p, 0);
    c->done = c->o->stop_after == CDSL_STAGE_PARSE;
    return CDSL_OK;
}

/* A plan's size class, -D pipeline_iterations=N (1 without it): 0 after a usage error. */
static int plan_size_class(cdsl_program *p, const cdsl_compile_opts *o)
{
    static const char key[] = "pipeline_iterations=";
    int n = 1;
    for (int i = 0; i < o->ndefines; i++) {
        if (!o->defines[i] || strncmp(o->defines[i], key, sizeof key - 1))
            continue;
        char *end;
        errno = 0;
        long v = strtol(o->defines[i] + sizeof key - 1, &end, 10);
        if (errno || *end || end == o->defines[i] + sizeof key - 1 || v < 1 || v > 65535) {
            diag_usage(&p->diag, "define %s (cdsl_compile_opts.defines, cdslc -D): a plan's size class is a number "
                       "of pipeline iterations, 1 to 65535", o->defines[i]);
            return 0;
        }
        n = (int)v;
    }
    return n;
}

/* Whether -D pipeline_iterations chose the plan's size class. */
static bool size_class_chosen(const cdsl_compile_opts *o)
{
    for (int i = 0; i < o->ndefines; i++)
        if (o->defines[i] && !strncmp(o->defines[i], "pipeline_iterations=", 20))
            return true;
    return false;
}

/* The size classes checked by default: those of 1 to PLAN_CLASSES pipeline iterations that
   reuse_resources leaves scratch in its plain layout for. */
enum { PLAN_CLASSES = 3 };

static int default_classes(const IrProgram *ir)
{
    int n = 1;
    while (n < PLAN_CLASSES && (!ir->scratch_cap || (unsigned long long)n * ir->pipe_unit < ir->scratch_cap))
        n++;
    return n;
}

/* Says which sizes a plan whose meaning depends on the size was checked for (classes: how many
   were, from the one compiled on). */
static void note_size_classes(cdsl_program *p, int classes)
{
    const IrProgram *ir = p->ir;
    if (ir->pipe_iters && classes > 1)
        diag_note(&p->diag, ir->loc, "the plan's pipelines run once per %llu bytes of a chunk, so what it does depends "
                  "on the size: checked for the size classes of 1 to %d iterations (chunks up to %llu bytes); a run "
                  "checks the class of its size (-D pipeline_iterations=N checks the class of N)", ir->pipe_unit,
                  classes, (unsigned long long)classes * ir->pipe_unit < ir->scratch_cap || !ir->scratch_cap
                      ? (unsigned long long)classes * ir->pipe_unit : ir->scratch_cap);
    else if (ir->pipe_iters)
        diag_note(&p->diag, ir->loc, "the plan's pipelines run once per %llu bytes of a chunk, so what it does depends "
                  "on the size: checked for the size class of %d iteration%s (chunks over %llu and up to %llu bytes); "
                  "-D pipeline_iterations=N checks the class of N", ir->pipe_unit, ir->pipe_iters,
                  ir->pipe_iters == 1 ? "" : "s", ir->chunk_lo, ir->chunk_hi);
    else if (ir->scratch_cap)
        diag_note(&p->diag, ir->loc, "reuse_resources: checked for chunks up to %llu bytes, where the executor keeps "
                  "scratch in its plain layout; larger ones are not", ir->scratch_cap);
}

/* After a clean check of a pipelined plan's first size class (no -D chose one): the next
   classes, each read and checked the same way; the first with errors says them. */
static void check_more_classes(cdsl_program *p, const cdsl_compile_opts *o, const CheckLimits *limits)
{
    int classes = p->ir->pipe_iters && !size_class_chosen(o) && p->diag.nerrors == 0 ? default_classes(p->ir) : 1;
    note_size_classes(p, classes);
    for (int n = 2; n <= classes && p->diag.nerrors == 0; n++) {
        bool usage;
        Diag quiet; /* counts, prints nothing: the class is said only when it has something to say */
        diag_init(&quiet, NULL);
        IrProgram *ir = mscclpp_import(p->arena, &quiet, o->path, o->nranks, n, &usage);
        if (ir)
            check_program(ir, &quiet, limits);
        bool bad = quiet.nerrors > 0;
        diag_free(&quiet);
        if (!bad)
            continue;
        diag_note(&p->diag, p->ir->loc, "in the size class of %d pipeline iterations (chunks over %llu and up to %llu "
                  "bytes):", n, (unsigned long long)(n - 1) * p->ir->pipe_unit, (unsigned long long)n * p->ir->pipe_unit);
        if ((ir = mscclpp_import(p->arena, &p->diag, o->path, o->nranks, n, &usage)))
            check_program(ir, &p->diag, limits);
    }
}

/* An MSCCL++ plan instead of load, resolve and eval: the plan is the IR. */
static int phase_import(Compilation *c)
{
    cdsl_program *p = c->p;
    const cdsl_compile_opts *o = c->o;
    if (o->stop_after == CDSL_STAGE_PARSE) {
        diag_fatal(&p->diag, "'%s' is an MSCCL++ plan: it has no syntax tree to dump (its IR dump shows what it became)",
                   o->path);
        return CDSL_ERR_USAGE;
    }
    bool usage;
    int pipe_iters = plan_size_class(p, o);
    if (!pipe_iters)
        return CDSL_ERR_USAGE;
    p->ir = mscclpp_import(p->arena, &p->diag, o->path, o->nranks, pipe_iters, &usage);
    if (!p->ir)
        return usage ? CDSL_ERR_USAGE : CDSL_ERR_PROGRAM;
    p->name = p->ir->name;
    p->collective = p->ir->coll_name;
    return CDSL_OK;
}

/* From evaluation on, the steps grow with the rank count: a terminal shows what is going on
 * when they take a while (a plan's line says "evaluating" too, as it always has). */
static int phase_eval(Compilation *c)
{
    cdsl_program *p = c->p;
    const cdsl_compile_opts *o = c->o;
    progress_begin(&p->progress, &p->diag, progress_wanted(p->progress_mode, p->diag.out),
                   "evaluating %s for %d ranks", p->name, o->nranks);
    if (c->plan)
        return CDSL_OK;
    double t = log_clock();
    EvalOptions eo = {o->nranks, o->defines, o->ndefines, o->in_place != 0};
    p->ir = eval_program(p->arena, &p->diag, c->program, &eo);
    timed("evaluate", t, p, o->nranks);
    return p->ir ? CDSL_OK : failed(p);
}

/* The packet slots take a buffer of the runtime's, which --dump-ir shows and the checker
 * counts: laid out before either (lower.h). An error here is the evaluation's. */
static int phase_packet_layout(Compilation *c)
{
    cdsl_program *p = c->p;
    if (!ir_packet_layout(p->ir, &p->diag)) {
        p->ir = NULL;
        return failed(p);
    }
    c->done = c->o->stop_after == CDSL_STAGE_EVAL;
    return CDSL_OK;
}

static CheckLimits check_limits(const cdsl_compile_opts *o)
{
    return (CheckLimits){o->check_memory ? o->check_memory : CDSL_CHECK_MEMORY_DEFAULT,
                         o->check_steps ? o->check_steps : CDSL_CHECK_STEPS_DEFAULT};
}

/* The rules, with order.c's sync_before computed first inside (lower.h says why). */
static int phase_check(Compilation *c)
{
    cdsl_program *p = c->p;
    const cdsl_compile_opts *o = c->o;
    CheckLimits limits = check_limits(o);
    progress_say(&p->progress, "checking %s for %d ranks", p->name, o->nranks);
    double t = log_clock();
    p->check = check_program(p->ir, &p->diag, &limits);
    if (c->plan && (p->ir->pipe_iters || p->ir->scratch_cap))
        check_more_classes(p, o, &limits);
    timed("check", t, p, o->nranks);
    return CDSL_OK;   /* errors stop the program after the phase list, with every finding said */
}

/* Warnings are about .cdsl text, and only for a program that checked clean. */
static int phase_warnings(Compilation *c)
{
    cdsl_program *p = c->p;
    if (p->diag.nerrors)
        return CDSL_OK;
    CheckLimits limits = check_limits(c->o);
    progress_say(&p->progress, "looking for synchronisation %s does not need", p->name);
    double t = log_clock();
    lint_program(p->ir, p->check, &p->diag, &limits);
    timed("warnings", t, p, c->o->nranks);
    return CDSL_OK;
}

/* Which data ops may signal block by block: only the emitter reads it, so only for a program
 * that passed (a warning made an error by -Werror included). */
static int phase_partition(Compilation *c)
{
    if (c->p->diag.nerrors == 0)
        partition_program(c->p->ir);
    return CDSL_OK;
}

/* Every phase, in order. A phase may be for .cdsl programs only (front, warnings) or plans
 * only (import); the rest take both (eval only starts a plan's progress line). After the list, on request: CUDA (emit/, through program.h's
 * code generator), the copy-engine plan (lower/ce_plan.c, likewise, and --dump-ce), the
 * dumps and the MSCCL++ export (emit/mscclpp_export.c). */
typedef enum { BOTH, CDSL_ONLY, PLAN_ONLY } PhaseFor;

typedef struct Phase {
    const char *stage, *name;
    int (*run)(Compilation *c);
    PhaseFor takes;
    const char *reads, *makes;
} Phase;

static const Phase phases[] = {
    {"front", "load", phase_load, CDSL_ONLY, "the file and its imports", "the syntax tree (p->ast)"},
    {"front", "resolve", phase_resolve, CDSL_ONLY, "the syntax tree", "names bound; the chosen program"},
    {"plan", "import", phase_import, PLAN_ONLY, "the plan's JSON", "the IR (p->ir), one unit per thread block"},
    {"ir", "eval", phase_eval, BOTH, "the chosen program, nranks, defines", "the IR (p->ir); rule 3"},
    {"lower", "packet layout", phase_packet_layout, BOTH, "the IR's packet ops", "IrOp.slot, the packet-slot buffer"},
    {"check", "check", phase_check, BOTH, "the IR", "the checker's facts and findings (p->check); sync_before"},
    {"check", "warnings", phase_warnings, CDSL_ONLY, "the IR and the checker's facts", "-W warnings"},
    {"lower", "partition", phase_partition, BOTH, "the checked IR", "IrOp.same_blocks"},
};

static bool phase_applies(const Phase *ph, const Compilation *c)
{
    return ph->takes == BOTH || (ph->takes == PLAN_ONLY) == c->plan;
}

/* The phases; any of them may unwind to cdsl_compile's trap when memory runs out. */
static int compile_phases(cdsl_program *p, const cdsl_compile_opts *o)
{
    Compilation c = {p, o, mscclpp_is_plan(o->path) != 0, NULL, false};
    int rc = CDSL_OK;
    for (size_t i = 0; i < sizeof phases / sizeof *phases && rc == CDSL_OK && !c.done; i++)
        if (phase_applies(&phases[i], &c))
            rc = phases[i].run(&c);
    progress_end(&p->progress);
    if (rc != CDSL_OK)
        return rc;
    if (c.done)
        return p->ok = true, CDSL_OK;
    p->ok = p->diag.nerrors == 0;   /* -Werror makes a warning one */
    return p->ok ? CDSL_OK : CDSL_ERR_PROGRAM;
}

void driver_out_of_memory(cdsl_program *p, const ArenaTrap *t)
{
    diag_fatal(&p->diag, "out of memory (asked for %zu more bytes, with %zu MiB in use)", t->asked,
               arena_used(p->arena) >> 20);
    errno = ENOMEM;
}

int cdsl_compile(const cdsl_compile_opts *o, cdsl_program **out)
{
    if (!out || !o)
        return usage_error(o ? o->diag : NULL, "cdsl: error: cdsl_compile needs options and a place for the "
                           "program%.0d\n", 0);
    *out = NULL;
    if (!o->path)
        return usage_error(o->diag, "cdsl: error: no input file%.0d\n", 0);
    if ((o->nranks < 1 && !(o->nranks == 0 && mscclpp_is_plan(o->path))) || o->nranks > IR_MAX_RANKS)
        return usage_error(o->diag, "cdsl: error: the rank count must be between 1 and " NUMBER_TEXT(CDSL_MAX_RANKS)
                           ", not %d\n",
                           o->nranks);
    if ((o->ndefines && !o->defines) || (o->ninclude_dirs && !o->include_dirs) || o->ndefines < 0 ||
        o->ninclude_dirs < 0)
        return usage_error(o->diag, "cdsl: error: defines or include_dirs counted without their lists%.0d\n", 0);
    cdsl_program *p = new_program(o);
    if (!p) {
        fputs("cdsl: error: out of memory\n", o->diag ? o->diag : stderr);
        return CDSL_ERR_SYSTEM;
    }
    ArenaTrap trap;
    arena_trap_push(p->arena, &trap);
    if (setjmp(trap.env)) {
        /* Whatever the phases built is half made: free it all, and the memory with it. */
        progress_end(&p->progress);
        driver_out_of_memory(p, &trap);
        diag_flush(&p->diag, true);
        cdsl_program_destroy(p);
        return CDSL_ERR_SYSTEM;
    }
    int rc = compile_phases(p, o);
    arena_trap_pop(p->arena, &trap);
    diag_flush(&p->diag, true);
    *out = p;
    return rc;
}

void cdsl_program_destroy(cdsl_program *p)
{
    if (!p)
        return;
    diag_free(&p->diag);
    pthread_mutex_destroy(&p->lazy);
    arena_destroy(p->arena);
    free(p);
}

static int program_dump(const cdsl_program *p, cdsl_dump what, FILE *out)
{
    switch (what) {
    case CDSL_DUMP_AST:
        if (!p->ast)
            return CDSL_ERR_PROGRAM;
        ast_dump(p->ast, out);
        return CDSL_OK;
    case CDSL_DUMP_IR:
        if (!p->ir)
            return CDSL_ERR_PROGRAM;
        ir_dump(p->ir, out);
        return CDSL_OK;
    case CDSL_DUMP_DOT:
        if (!p->ir)
            return CDSL_ERR_PROGRAM;
        check_emit_dot(p->ir, p->check, out);
        return CDSL_OK;
    case CDSL_DUMP_CE:
        if (!p->ir || !p->ok)
            return CDSL_ERR_PROGRAM;
        return ce_plan_print(p->ir, out);
    }
    return CDSL_ERR_USAGE;
}

/* Dumps allocate (the graph's labels, a file's line table for a quoted line): under a trap. */
static int program_dump_trapped(cdsl_program *p, cdsl_dump what, FILE *out)
{
    ArenaTrap trap;
    arena_trap_push(p->arena, &trap);
    if (setjmp(trap.env)) {
        driver_out_of_memory(p, &trap);
        return CDSL_ERR_SYSTEM;
    }
    int rc = program_dump(p, what, out);
    arena_trap_pop(p->arena, &trap);
    return rc;
}

int cdsl_program_dump(const cdsl_program *p, cdsl_dump what, FILE *out)
{
    if (!p || !out)
        return CDSL_ERR_USAGE;
    cdsl_program *mp = (cdsl_program *)p;   /* the arena grows; what p means does not change */
    pthread_mutex_lock(&mp->lazy);
    int rc = program_dump_trapped(mp, what, out);
    diag_flush(&mp->diag, false);
    pthread_mutex_unlock(&mp->lazy);
    if (rc == CDSL_OK && (fflush(out) != 0 || ferror(out)))
        rc = CDSL_ERR_SYSTEM;
    return rc;
}

const char *cdsl_program_name(const cdsl_program *p) { return p ? p->name : NULL; }
const char *cdsl_program_collective(const cdsl_program *p) { return p ? p->collective : NULL; }
int cdsl_program_nranks(const cdsl_program *p) { return p && p->ir ? p->ir->nranks : 0; }
int cdsl_program_chunks(const cdsl_program *p) { return p && p->ir ? p->ir->chunks : 0; }
int cdsl_program_in_place(const cdsl_program *p) { return p && p->ir && p->ir->in_place; }
int cdsl_program_root(const cdsl_program *p)
{
    return p && p->ir && coll_has_root(coll_info(p->ir->coll)) ? p->ir->root : -1;
}

int cdsl_program_size_class(const cdsl_program *p, size_t size)
{
    if (!p || !p->ir || !p->ir->pipe_unit || p->ir->chunk_scale < 1)
        return 0;
    int in = p->ir->bufs[IR_INPUT].nchunks, out = p->ir->bufs[IR_OUTPUT].nchunks;
    unsigned long long plan_chunks = (unsigned long long)(in > out ? in : out) / (unsigned long long)p->ir->chunk_scale;
    if (!plan_chunks)
        return 0;
    unsigned long long n = ((unsigned long long)size / plan_chunks + p->ir->pipe_unit - 1) / p->ir->pipe_unit;
    return n < 1 ? 1 : n > 65536 ? 65536 : (int)n; /* 65536: past the executor's counter, refused */
}

char *cdsl_cuda_standalone(const char *src)
{
    return src ? emit_paste_headers(src) : NULL;
}

int cdsl_is_plan(const char *path)
{
    return mscclpp_is_plan(path);
}

/* Exporting allocates in the arena: under a trap. */
static int mscclpp_export_trapped(cdsl_program *p, FILE *out)
{
    ArenaTrap trap;
    arena_trap_push(p->arena, &trap);
    if (setjmp(trap.env)) {
        driver_out_of_memory(p, &trap);
        return CDSL_ERR_SYSTEM;
    }
    bool ok = mscclpp_export(p->ir, out, &p->diag);
    arena_trap_pop(p->arena, &trap);
    return ok ? CDSL_OK : CDSL_ERR_PROGRAM;
}

int cdsl_emit_mscclpp(cdsl_program *p, FILE *out)
{
    if (!p || !out)
        return CDSL_ERR_USAGE;
    if (!p->ir || !p->ok || !p->check) {
        diag_fatal(&p->diag, "only a program that passed its checks is written as a plan");
        return CDSL_ERR_PROGRAM;
    }
    pthread_mutex_lock(&p->lazy);
    int rc = mscclpp_export_trapped(p, out);
    pthread_mutex_unlock(&p->lazy);
    if (rc != CDSL_OK)
        return rc;
    return fflush(out) != 0 || ferror(out) ? CDSL_ERR_SYSTEM : CDSL_OK;
}
