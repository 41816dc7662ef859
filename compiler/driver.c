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
#include <stdlib.h>
#include <unistd.h>

#include "ast.h"
#include "check.h"
#include "emit.h"
#include "eval.h"
#include "load.h"
#include "mscclpp.h"
#include "resolve.h"

static cdsl_program *new_program(const cdsl_compile_opts *o)
{
    cdsl_program *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->arena = arena_create();
    if (!p->arena) {
        free(p);
        return NULL;
    }
    FILE *out = o->diag ? o->diag : stderr;
    diag_init(&p->diag, out);
    if (o->color >= 0)
        p->diag.color = o->color != 0;
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

static int check_phase(cdsl_program *p, const cdsl_compile_opts *o)
{
    CheckLimits limits = {o->check_memory ? o->check_memory : CDSL_CHECK_MEMORY_DEFAULT,
                          o->check_steps ? o->check_steps : CDSL_CHECK_STEPS_DEFAULT};
    p->check = check_program(p->ir, &p->diag, &limits);
    p->ok = p->diag.nerrors == 0;
    return p->ok ? CDSL_OK : CDSL_ERR_PROGRAM;
}

/* An MSCCL++ plan instead of load, resolve and eval: the plan is the IR. */
static int import_plan(cdsl_program *p, const cdsl_compile_opts *o)
{
    if (o->stop_after == CDSL_STAGE_PARSE) {
        diag_fatal(&p->diag, "'%s' is an MSCCL++ plan: it has no syntax tree to dump (--dump-ir shows what it became)",
                   o->path);
        return CDSL_ERR_USAGE;
    }
    bool usage;
    p->ir = mscclpp_import(p->arena, &p->diag, o->path, o->nranks, &usage);
    if (!p->ir)
        return usage ? CDSL_ERR_USAGE : CDSL_ERR_PROGRAM;
    return CDSL_OK;
}

/* The phases; any of them may unwind to cdsl_compile's trap when memory runs out. */
static int compile_phases(cdsl_program *p, const cdsl_compile_opts *o)
{
    if (mscclpp_is_plan(o->path)) {
        int rc = import_plan(p, o);
        if (rc)
            return rc;
        return o->stop_after == CDSL_STAGE_CHECK ? check_phase(p, o) : (p->ok = true, CDSL_OK);
    }
    LoadOptions lo = {o->include_dirs, o->ninclude_dirs};
    p->ast = load_unit(p->arena, &p->diag, o->path, &lo);
    if (!p->ast)
        return CDSL_ERR_PROGRAM;
    Decl *program = resolve_unit(p->arena, &p->diag, p->ast, o->program);
    if (!program)
        return CDSL_ERR_PROGRAM;
    if (o->stop_after == CDSL_STAGE_PARSE)
        return p->ok = true, CDSL_OK;
    EvalOptions eo = {o->nranks, o->defines, o->ndefines};
    p->ir = eval_program(p->arena, &p->diag, program, &eo);
    if (!p->ir)
        return CDSL_ERR_PROGRAM;
    if (o->stop_after == CDSL_STAGE_EVAL)
        return p->ok = true, CDSL_OK;
    return check_phase(p, o);
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
        return usage_error(o->diag, "cdsl: error: -D or -I counts without their lists%.0d\n", 0);
    cdsl_program *p = new_program(o);
    if (!p) {
        fputs("cdsl: error: out of memory\n", o->diag ? o->diag : stderr);
        return CDSL_ERR_SYSTEM;
    }
    ArenaTrap trap;
    arena_trap_push(p->arena, &trap);
    if (setjmp(trap.env)) {
        /* Whatever the phases built is half made: free it all, and the memory with it. */
        driver_out_of_memory(p, &trap);
        cdsl_program_destroy(p);
        return CDSL_ERR_SYSTEM;
    }
    int rc = compile_phases(p, o);
    arena_trap_pop(p->arena, &trap);
    *out = p;
    return rc;
}

void cdsl_program_destroy(cdsl_program *p)
{
    if (!p)
        return;
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
    }
    return CDSL_ERR_USAGE;
}

const char *driver_emit_cuda(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank)
{
    ArenaTrap trap;
    arena_trap_push(p->arena, &trap);
    if (setjmp(trap.env)) {
        driver_out_of_memory(p, &trap);
        return NULL;
    }
    const char *src = rank < 0 ? emit_cuda(p->ir, flavour, dtype, p->arena, &p->diag)
                               : emit_cuda_rank(p->ir, flavour, dtype, rank, p->arena, &p->diag);
    arena_trap_pop(p->arena, &trap);
    return src;
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
        return CDSL_ERR_SYSTEM;
    }
    int rc = program_dump(p, what, out);
    arena_trap_pop(mp->arena, &trap);
    if (rc == CDSL_OK && (fflush(out) != 0 || ferror(out)))
        rc = CDSL_ERR_SYSTEM;
    return rc;
}

const char *cdsl_program_name(const cdsl_program *p) { return p && p->ir ? p->ir->name : NULL; }
const char *cdsl_program_collective(const cdsl_program *p) { return p && p->ir ? p->ir->coll_name : NULL; }
int cdsl_program_nranks(const cdsl_program *p) { return p && p->ir ? p->ir->nranks : 0; }
int cdsl_program_chunks(const cdsl_program *p) { return p && p->ir ? p->ir->chunks : 0; }

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
