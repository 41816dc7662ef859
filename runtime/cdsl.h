/*
 * cdsl.h - libcdsl's public interface.
 *
 * Two halves. Compiling: parse a .cdsl program, evaluate it for a rank count, check it for
 * cross-rank races, deadlocks and a wrong result, and turn it into CUDA source, PTX or a
 * cubin (through NVRTC, cached). Running: create a communicator over local GPUs (or CPU
 * threads), allocate symmetric buffers, run a compiled program on them, destroy. The tools
 * cdslc and cdslrun are thin users of this header and nothing else.
 *
 * Conventions: functions return 0 on success and a non-zero cdsl_status otherwise; objects
 * are created and destroyed explicitly; messages for the user go to the FILE* given at
 * creation; nothing is global, so several programs and communicators can coexist.
 */
#ifndef CDSL_H
#define CDSL_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cdsl_status {
    CDSL_OK = 0,
    CDSL_ERR_PROGRAM = 1,   /* the program has errors (reported as diagnostics) */
    CDSL_ERR_USAGE = 2,     /* bad arguments */
    CDSL_ERR_SYSTEM = 3,    /* no GPU, no driver, NVRTC missing, out of memory, I/O */
    CDSL_ERR_RUNTIME = 4,   /* a run failed: a wait ran out of its bound, a kernel fault */
    CDSL_ERR_VERIFY = 5,    /* a run finished with a wrong result */
} cdsl_status;

typedef enum cdsl_backend { CDSL_BACKEND_SIM, CDSL_BACKEND_P2P, CDSL_BACKEND_NVLS } cdsl_backend;
typedef enum cdsl_dtype { CDSL_F32, CDSL_F16, CDSL_BF16, CDSL_U32, CDSL_S32 } cdsl_dtype;

const char *cdsl_backend_name(cdsl_backend b);
int cdsl_backend_parse(const char *s, cdsl_backend *out);     /* 0 on success */
const char *cdsl_dtype_name(cdsl_dtype t);
int cdsl_dtype_parse(const char *s, cdsl_dtype *out);         /* 0 on success */
size_t cdsl_dtype_size(cdsl_dtype t);
const char *cdsl_version(void);

/* ---- Compiling ------------------------------------------------------------------------ */

typedef enum cdsl_stage {
    CDSL_STAGE_PARSE,       /* parse and resolve names only (--dump-ast) */
    CDSL_STAGE_EVAL,        /* also evaluate per rank (--dump-ir) */
    CDSL_STAGE_CHECK,       /* also run every check (the default) */
} cdsl_stage;

typedef struct cdsl_compile_opts {
    const char *path;                  /* the .cdsl file */
    int nranks;
    const char *program;               /* --program NAME, or NULL for the only one */
    const char *const *defines;        /* "name=value", overriding program parameters */
    int ndefines;
    const char *const *include_dirs;   /* -I, searched after the importing file's folder */
    int ninclude_dirs;
    cdsl_stage stop_after;
    FILE *diag;                        /* diagnostics; NULL means stderr */
    int color;                         /* 1 on, 0 off, -1 when diag is a terminal */
} cdsl_compile_opts;

typedef struct cdsl_program cdsl_program;

/* Compile. *out is set whenever the file could be read, also when the program has errors,
 * so that --emit-dot can draw what the checker found; destroy it in every case. Returns
 * CDSL_OK, CDSL_ERR_PROGRAM (diagnostics printed) or CDSL_ERR_USAGE/CDSL_ERR_SYSTEM. */
int cdsl_compile(const cdsl_compile_opts *opts, cdsl_program **out);
void cdsl_program_destroy(cdsl_program *p);

typedef enum cdsl_dump { CDSL_DUMP_AST, CDSL_DUMP_IR, CDSL_DUMP_DOT } cdsl_dump;
/* Print the syntax tree, the per-rank operations, or the happens-before graph (Graphviz). */
int cdsl_program_dump(const cdsl_program *p, cdsl_dump what, FILE *out);

const char *cdsl_program_name(const cdsl_program *p);
const char *cdsl_program_collective(const cdsl_program *p);
int cdsl_program_nranks(const cdsl_program *p);
int cdsl_program_chunks(const cdsl_program *p);     /* the collective's C */

/* The CUDA source for one device flavour (P2P or NVLS) and element type. The string belongs
 * to p. Returns NULL, with a diagnostic, for a combination multimem does not have. */
const char *cdsl_emit_cuda(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype);

typedef enum cdsl_artifact { CDSL_PTX, CDSL_CUBIN } cdsl_artifact;
/* Compile the CUDA source through NVRTC (loaded at run time) for arch ("sm_90"), through the
 * cubin cache. *data is malloc'd; free() it. */
int cdsl_compile_device(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, const char *arch,
                        cdsl_artifact what, void **data, size_t *len);

/* ---- Running (runtime/api.c) ---------------------------------------------------------- */
/* CDSL-RUNTIME-API: the runtime's declarations follow this line. */

#ifdef __cplusplus
}
#endif

#endif
