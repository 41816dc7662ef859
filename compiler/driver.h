/*
 * driver.h - what a compiled program is inside libcdsl (the public cdsl_program).
 *
 * driver.c runs the phases in order from one table, like QBE's main: load (lex, parse,
 * imports), resolve names, evaluate per rank, lower (packet layout), check, warnings, lower
 * (partition); each phase reports into the program's Diag and the driver stops at the first
 * phase with errors. Later consumers read `ir` and nothing above it: the
 * emitter here, and the runtime (the JIT, the backends) through program.h, never this file.
 */
#ifndef CDSL_DRIVER_H
#define CDSL_DRIVER_H

#include <pthread.h>
#include <stdbool.h>

#include "arena.h"
#include "cdsl.h"
#include "diag.h"
#include "ir.h"
#include "progress_line.h"

struct AstUnit;
struct CheckResult;

struct cdsl_program {
    Arena *arena;               /* everything below lives here */
    Diag diag;
    struct AstUnit *ast;        /* the parsed files (NULL if the main file could not be read) */
    const char *name;           /* the chosen program's name and collective, as written */
    const char *collective;
    IrProgram *ir;              /* per-rank operations; NULL if evaluation did not succeed */
    struct CheckResult *check;  /* the checker's facts and findings, for --emit-dot */
    bool ok;                    /* every requested stage passed */
    int progress_mode;          /* cdsl_compile_opts.progress: 1 on, 0 off, -1 on a terminal */
    Progress progress;          /* the progress line of the work in hand, if any */
    const char *cuda[3][5];     /* emitted sources, [flavour][dtype], made on first request
                                   (program.c) */
    const char *cuda_rank[3][5];    /* one rank's source (cdsl_emit_cuda_rank), of rank */
    int cuda_rank_of[3][5];
    pthread_mutex_t lazy;       /* held while anything is added to the arena after cdsl_compile
                                   (the CUDA above, dumps, plans): ranks that are threads of one
                                   process share a program and emit their code at once */
    unsigned long long serial;  /* unique in the process: a program destroyed and another made at
                                   its address (and its IR's) are never taken for each other */
};

/* The message for a trap that caught out-of-memory (the entry points of cdsl.h that allocate);
 * sets errno to ENOMEM. */
void driver_out_of_memory(cdsl_program *p, const ArenaTrap *t);

#endif
