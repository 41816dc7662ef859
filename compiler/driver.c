/*
 * driver.c - cdsl_compile: the phases in order, stopping after the first that failed.
 *
 *     load      read the file and its imports, lex and parse them     (load.c, parse.c)
 *     resolve   names, operations, argument counts, memory orders     (resolve.c)
 *     eval      per-rank operation sequences; bounds and shapes       (eval.c)
 *     check     races, synchronisation, deadlocks, postcondition      (check.c)
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
#include <unistd.h>

#include "ast.h"
#include "ce_plan.h"
#include "check.h"
#include "emit.h"
#include "eval.h"
#include "unneeded_sync.h"
#include "log.h"
#include "load.h"
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
    if (!p->arena) {
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

/* Evaluation, checking and linting: the steps that grow with the rank count, shown on a
 * terminal when they take a while. */
static int check_phases(cdsl_program *p, const cdsl_compile_opts *o, Decl *program)
{
    progress_begin(&p->progress, &p->diag, progress_wanted(p->progress_mode, p->diag.out),
                   "evaluating %s for %d ranks", p->name, o->nranks);
    double t = log_clock();
    if (program) {   /* a .cdsl program; an imported plan's IR is made already */
        EvalOptions eo = {o->nranks, o->defines, o->ndefines, o->in_place != 0};
        p->ir = eval_program(p->arena, &p->diag, program, &eo);
        timed("evaluate", t, p, o->nranks);
    }
    if (!p->ir || o->stop_after == CDSL_STAGE_EVAL) {
        progress_end(&p->progress);
        if (!p->ir)
            return p->diag.nusage ? CDSL_ERR_USAGE : CDSL_ERR_PROGRAM;
        return p->ok = true, CDSL_OK;
    }
    CheckLimits limits = {o->check_memory ? o->check_memory : CDSL_CHECK_MEMORY_DEFAULT,
                          o->check_steps ? o->check_steps : CDSL_CHECK_STEPS_DEFAULT};
    progress_say(&p->progress, "checking %s for %d ranks", p->name, o->nranks);
    t = log_clock();
    p->check = check_program(p->ir, &p->diag, &limits);
    timed("check", t, p, o->nranks);
    if (p->diag.nerrors == 0 && program) {   /* warnings are about .cdsl text */
        progress_say(&p->progress, "looking for synchronisation %s does not need", p->name);
        t = log_clock();
        lint_program(p->ir, p->check, &p->diag, &limits);
        timed("warnings", t, p, o->nranks);
    }
    progress_end(&p->progress);
    p->ok = p->diag.nerrors == 0;   /* -Werror makes a warning one */
    return p->ok ? CDSL_OK : CDSL_ERR_PROGRAM;
}

/* An MSCCL++ plan instead of load, resolve and eval: the plan is the IR. */
static int import_plan(cdsl_program *p, const cdsl_compile_opts *o)
{
    if (o->stop_after == CDSL_STAGE_PARSE) {
        diag_fatal(&p->diag, "'%s' is an MSCCL++ plan: it has no syntax tree to dump (its IR dump shows what it became)",
                   o->path);
        return CDSL_ERR_USAGE;
    }
    bool usage;
    p->ir = mscclpp_import(p->arena, &p->diag, o->path, o->nranks, &usage);
    if (!p->ir)
        return usage ? CDSL_ERR_USAGE : CDSL_ERR_PROGRAM;
    p->name = p->ir->name;
    p->collective = p->ir->coll_name;
    return CDSL_OK;
}


/* The phases; any of them may unwind to cdsl_compile's trap when memory runs out. */
static int compile_phases(cdsl_program *p, const cdsl_compile_opts *o)
{
    if (mscclpp_is_plan(o->path)) {
        int rc = import_plan(p, o);
        return rc ? rc : check_phases(p, o, NULL);
    }
    LoadOptions lo = {o->include_dirs, o->ninclude_dirs, o->source};
    double t = log_clock();
    p->ast = load_unit(p->arena, &p->diag, o->path, &lo);
    log_msg(LOG_INFO, "timing: parse %.3f ms (%s, %d file%s)", log_ms_since(t), o->path,
            p->ast ? p->ast->nfiles : 0, p->ast && p->ast->nfiles == 1 ? "" : "s");
    if (!p->ast)   /* the file itself unreadable is the caller's error */
        return p->diag.nusage ? CDSL_ERR_USAGE : CDSL_ERR_PROGRAM;
    t = log_clock();
    Decl *program = resolve_unit(p->arena, &p->diag, p->ast, o->program);
    if (!program)
        return p->diag.nusage ? CDSL_ERR_USAGE : CDSL_ERR_PROGRAM;
    p->name = program->name;
    p->collective = program->collective;
    timed("resolve", t, p, 0);
    if (o->stop_after == CDSL_STAGE_PARSE)
        return p->ok = true, CDSL_OK;
    return check_phases(p, o, program);
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
int cdsl_program_dump(const cdsl_program *p, cdsl_dump what, FILE *out)
{
    if (!p || !out)
        return CDSL_ERR_USAGE;
    cdsl_program *mp = (cdsl_program *)p;   /* the arena grows; what p means does not change */
    ArenaTrap trap;
    arena_trap_push(mp->arena, &trap);
    if (setjmp(trap.env)) {
        driver_out_of_memory(mp, &trap);
        diag_flush(&mp->diag, false);
        return CDSL_ERR_SYSTEM;
    }
    int rc = program_dump(p, what, out);
    arena_trap_pop(mp->arena, &trap);
    diag_flush(&mp->diag, false);
    if (rc == CDSL_OK && (fflush(out) != 0 || ferror(out)))
        rc = CDSL_ERR_SYSTEM;
    return rc;
}

const char *cdsl_program_name(const cdsl_program *p) { return p ? p->name : NULL; }
const char *cdsl_program_collective(const cdsl_program *p) { return p ? p->collective : NULL; }
int cdsl_program_nranks(const cdsl_program *p) { return p && p->ir ? p->ir->nranks : 0; }
int cdsl_program_chunks(const cdsl_program *p) { return p && p->ir ? p->ir->chunks : 0; }
int cdsl_program_in_place(const cdsl_program *p) { return p && p->ir && p->ir->in_place; }

char *cdsl_cuda_standalone(const char *src)
{
    return src ? emit_paste_headers(src) : NULL;
}

int cdsl_is_plan(const char *path)
{
    return mscclpp_is_plan(path);
}

int cdsl_emit_mscclpp(cdsl_program *p, FILE *out)
{
    if (!p || !out)
        return CDSL_ERR_USAGE;
    if (!p->ir || !p->ok || !p->check) {
        diag_fatal(&p->diag, "only a program that passed its checks is written as a plan");
        return CDSL_ERR_PROGRAM;
    }
    ArenaTrap trap;
    arena_trap_push(p->arena, &trap);
    if (setjmp(trap.env)) {
        driver_out_of_memory(p, &trap);
        return CDSL_ERR_SYSTEM;
    }
    bool ok = mscclpp_export(p->ir, out, &p->diag);
    arena_trap_pop(p->arena, &trap);
    if (!ok)
        return CDSL_ERR_PROGRAM;
    return fflush(out) != 0 || ferror(out) ? CDSL_ERR_SYSTEM : CDSL_OK;
}
