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
 * creation; nothing is global, so several programs and communicators can coexist. The
 * library never exits or aborts its host: running out of memory is CDSL_ERR_SYSTEM. A NULL
 * object or result pointer is refused with CDSL_ERR_USAGE, never dereferenced; a getter given
 * NULL returns what it returns for "none" (NULL, 0 or -1, as it says); destroy(NULL) does
 * nothing. Text that came from the user is shown escaped in every message (cdsl_escape).
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
/* The names the library takes, for help texts, messages and bindings: the i-th name (from 0)
 * of a list in the library's order, or NULL past its end or for an unknown list.
 *   CDSL_LIST_BACKENDS  cdsl_backend (cdsl_comm_opts.backend): sim, p2p, nvls
 *   CDSL_LIST_FLAVOURS  the backends with device code (cdsl_emit_cuda, cdsl_rank_config.flavour)
 *   CDSL_LIST_ENGINES   cdsl_engine (cdsl_get_unique_id_engine): sim, ipc, nccl ("auto" is none) */
typedef enum cdsl_list { CDSL_LIST_BACKENDS, CDSL_LIST_FLAVOURS, CDSL_LIST_ENGINES } cdsl_list;
const char *cdsl_list_name(cdsl_list list, int i);
const char *cdsl_dtype_name(cdsl_dtype t);
int cdsl_dtype_parse(const char *s, cdsl_dtype *out);         /* 0 on success */
size_t cdsl_dtype_size(cdsl_dtype t);
const char *cdsl_version(void);

/* Text that came from a user (a file name, an option's value), made safe to print on a
 * terminal as the library's own messages are: C0 and C1 controls, DEL, bytes that are not
 * UTF-8 and invisible format characters (bidi overrides and isolates, zero-width and tag
 * characters) are written escaped, as \x1b or \u202e. Writes at most size bytes to out,
 * NUL-terminated and cut at a whole character, and returns the length of the whole escaped
 * text, as snprintf does (out may be NULL when size is 0). NULL text counts as "". */
size_t cdsl_escape(const char *text, char *out, size_t size);

/* ---- Compiling ------------------------------------------------------------------------ */

/* The most ranks a program is compiled for (-n). The checker handles every stdlib program at
   this count within its default budgets (docs/language.md, "How the checker decides"). */
#define CDSL_MAX_RANKS 1024
/* What checking may spend unless cdsl_compile_opts says otherwise: bytes of its own structures
   (access histories, vector clocks, symbolic values) and steps of work. Past either, the
   program is rejected with an error that names the limit. */
#define CDSL_CHECK_MEMORY_DEFAULT ((size_t)2 << 30)
#define CDSL_CHECK_STEPS_DEFAULT (1ull << 32)

typedef enum cdsl_stage {
    CDSL_STAGE_PARSE,       /* parse and resolve names only (--dump-ast) */
    CDSL_STAGE_EVAL,        /* also evaluate per rank (--dump-ir) */
    CDSL_STAGE_CHECK,       /* also run every check (the default) */
} cdsl_stage;

/* Warnings (docs/warnings.md), by family; each can be turned off. They never make a compile
 * fail unless warnings_as_errors is set. */
typedef enum cdsl_warning {
    CDSL_WARN_UNUSED = 1,               /* a let or a scratch buffer that nothing uses (-Wunused) */
    CDSL_WARN_REDUNDANT_BARRIER = 2,    /* a signal/wait pair the program checks clean without
                                           (-Wredundant-barrier) */
    CDSL_WARN_STRONGER_ORDER = 4,       /* a release signal the program checks clean with relaxed
                                           (-Wstronger-order) */
    CDSL_WARN_WRITES_INPUT = 8,         /* an MSCCL++ plan writes the caller's send buffer, which
                                           NCCL's contract keeps const (-Wwrites-input) */
    CDSL_WARN_ALL = 15
} cdsl_warning;

/* How diagnostics are written: text for people, or gcc's JSON for editors and CI (one array
 * per call that reported something; cdsl_compile always writes one, "[]" when clean). */
typedef enum cdsl_diag_format { CDSL_DIAG_TEXT = 0, CDSL_DIAG_JSON = 1 } cdsl_diag_format;

typedef struct cdsl_compile_opts {
    const char *path;                  /* the .cdsl file, or an MSCCL++ plan (cdsl_is_plan) */
    int nranks;                        /* a plan: 0 takes its gpu count, else it must agree */
    const char *program;               /* --program NAME, or NULL for the only one */
    const char *const *defines;        /* "name=value", overriding program parameters */
    int ndefines;
    const char *const *include_dirs;   /* -I, searched after the importing file's folder */
    int ninclude_dirs;
    cdsl_stage stop_after;
    FILE *diag;                        /* diagnostics; NULL means stderr */
    int color;                         /* 1 on, 0 off, -1 when diag is a terminal */
    size_t check_memory;               /* bytes checking may use; 0: CDSL_CHECK_MEMORY_DEFAULT */
    unsigned long long check_steps;    /* steps of work it may take; 0: CDSL_CHECK_STEPS_DEFAULT */
    int in_place;                      /* 1: compile for NCCL's in-place form (cdslc --in-place):
                                          allgather's input is this rank's part of its output
                                          (output + rank * input size), reducescatter's output
                                          this rank's part of its input, allreduce's,
                                          alltoall's, broadcast's and reduce's input its
                                          output; the checker sees the aliasing, and the runtime
                                          lays the buffers out so (docs/language.md, "In place") */
    const char *source;                /* the program's text (NUL-terminated) instead of reading
                                          path, which then only names it in messages; imports
                                          are looked up from the current folder. NULL: read path */
    unsigned warnings_off;             /* cdsl_warning bits not to report; 0: every warning */
    int warnings_as_errors;            /* 1: a warning is an error (CDSL_ERR_PROGRAM), -Werror */
    int diag_format;                   /* a cdsl_diag_format; 0: text */
    int progress;                      /* a line saying what long work (evaluation, checking,
                                          NVRTC) is doing, on the diag stream once it has taken a
                                          second: 1 on, 0 off, -1 when diag is a terminal */
} cdsl_compile_opts;

typedef struct cdsl_program cdsl_program;

/* Whether cdsl_compile reads path as an MSCCL++ execution plan (JSON, either generation of
 * the format; docs/mscclpp.md): its name ends in .json or its first non-blank byte is '{'. */
int cdsl_is_plan(const char *path);

/* Compile. *out is set whenever the file could be read, also when the program has errors,
 * so that --emit-dot can draw what the checker found; destroy it in every case. Returns
 * CDSL_OK, CDSL_ERR_PROGRAM (diagnostics printed) or CDSL_ERR_USAGE/CDSL_ERR_SYSTEM (out of
 * memory: everything made so far is freed, a message printed, and *out is NULL). */
int cdsl_compile(const cdsl_compile_opts *opts, cdsl_program **out);
void cdsl_program_destroy(cdsl_program *p);

typedef enum cdsl_dump { CDSL_DUMP_AST, CDSL_DUMP_IR, CDSL_DUMP_DOT, CDSL_DUMP_CE } cdsl_dump;
/* Print the syntax tree, the per-rank operations, the happens-before graph (Graphviz), or the
 * copy-engine plan of a checked program (the stream operations p2p runs for bulk sizes, or why
 * the program has none).
 * Flushes out; CDSL_ERR_SYSTEM when writing failed (a full disk) or memory ran out (errno is
 * ENOMEM then), CDSL_ERR_PROGRAM when the stage it prints was not reached. */
int cdsl_program_dump(const cdsl_program *p, cdsl_dump what, FILE *out);

/* The checked program as an MSCCL++ execution plan (the current format; docs/mscclpp.md says
 * how each operation is written). CDSL_ERR_PROGRAM, with a diagnostic, for a program that did
 * not pass its checks or has what a plan cannot say; CDSL_ERR_SYSTEM when writing failed. */
int cdsl_emit_mscclpp(cdsl_program *p, FILE *out);

/* The program's name and collective as written: NULL when p is NULL or no program was chosen
 * (resolution failed). The rank count and C: 0 when p is NULL or was not evaluated. */
const char *cdsl_program_name(const cdsl_program *p);
const char *cdsl_program_collective(const cdsl_program *p);
int cdsl_program_nranks(const cdsl_program *p);
int cdsl_program_chunks(const cdsl_program *p);     /* the collective's C */
/* The root rank it was compiled for (broadcast, reduce: the define "root=R", default 0); -1
 * when its collective has no root or p was not evaluated. */
int cdsl_program_root(const cdsl_program *p);
/* 1 when p runs in NCCL's in-place form: compiled with cdsl_compile_opts.in_place, or an
 * MSCCL++ plan that says "inplace": true; 0 otherwise (also for NULL). */
int cdsl_program_in_place(const cdsl_program *p);
/* An MSCCL++ plan whose meaning depends on the size (pipelines, docs/mscclpp.md §3.3): how
 * many times its pipelines run at a collective size of `size` bytes, the size class that
 * -D pipeline_iterations=N compiles and checks it for (a run at a size of another class is
 * refused); 0 when the program does the same at every size. */
int cdsl_program_size_class(const cdsl_program *p, size_t size);

/* The collectives, by index 0 .. cdsl_collective_count() - 1 (the order of compiler/ir/colls.def,
 * the one table that says what each means): what tools and bindings ask instead of keeping
 * lists of their own. cdsl_collective_find gives the index of a name (such as
 * cdsl_program_collective's), -1 for none; cdsl_collective_name is NULL out of range. */
int cdsl_collective_count(void);
const char *cdsl_collective_name(int coll);
int cdsl_collective_find(const char *name);
/* One rank's input and output chunks at nranks ranks and `chunks` (the program's C); -1 each
 * where the program declares its own (custom). CDSL_ERR_USAGE for an unknown collective,
 * nranks < 1 or chunks < 1. Either pointer may be NULL. */
int cdsl_collective_chunks(int coll, int nranks, int chunks, long long *input, long long *output);
/* nccl-tests' bus-bandwidth factor at nranks ranks: busbw = algbw x factor ((n-1)/n for
 * allgather, reducescatter and alltoall, 2(n-1)/n for allreduce, 1 for broadcast and reduce, 0
 * for a barrier, 1 for custom). */
double cdsl_collective_busbw_factor(int coll, int nranks);
/* What the checker proves and cdsl_check / cdsl_pattern_check compare: nothing (custom, or an
 * unknown index), a barrier's ordering (no data to compare), outputs that are copies of the
 * inputs (compared bit for bit), or sums of them; a broadcast's outputs are copies of the
 * root's input, a reduce's root output the sum (the other ranks' outputs are not compared). */
typedef enum cdsl_postcondition {
    CDSL_POST_NONE, CDSL_POST_BARRIER, CDSL_POST_GATHER, CDSL_POST_SUM, CDSL_POST_BROADCAST, CDSL_POST_REDUCE
} cdsl_postcondition;
cdsl_postcondition cdsl_collective_postcondition(int coll);
/* 1 when its programs have a root rank (broadcast, reduce): compiled per root with the define
 * "root=R" (default 0), as they are per rank count; 0 otherwise. */
int cdsl_collective_has_root(int coll);
/* 1 when a program of it compiles with cdsl_compile_opts.in_place (a barrier's runs the same),
 * 0 when it has no in-place form (custom) or the index is unknown. */
int cdsl_collective_in_place(int coll);

/* Programs by name. A program named without a folder ("allgather_ring", with or without
 * ".cdsl") is looked up as NAME.cdsl where imports are found after the importing file's
 * folder: each folder of $CDSL_PATH, the installed stdlib, the stdlib beside the running tool
 * (a checkout's stdlib/, or PREFIX/share/cdsl/stdlib). cdsl_find_program writes the path of
 * the first found to out and returns 0, or CDSL_ERR_USAGE when there is none (or it does not
 * fit in size bytes). cdsl_stdlib_dir writes the stdlib folder in use: the installed one, else
 * the one beside the running tool. */
int cdsl_find_program(const char *name, char *out, size_t size);
int cdsl_stdlib_dir(char *out, size_t size);

/* The CUDA source for one device flavour (P2P or NVLS) and element type. The string belongs
 * to p. Returns NULL, with a diagnostic, for a combination multimem does not have, for a
 * program that did not pass its checks, and when memory ran out (errno is ENOMEM then). */
const char *cdsl_emit_cuda(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype);

/* The emitted source src (cdsl_emit_cuda's or cdsl_emit_cuda_rank's) as one file: each
 * #include of cdsl's device library (cdsl_device.cuh and what it includes, embedded in
 * libcdsl) replaced by the header's text, for nvcc. malloc'd, free() it; NULL when src is NULL
 * or memory runs out. */
char *cdsl_cuda_standalone(const char *src);

typedef enum cdsl_artifact { CDSL_PTX, CDSL_CUBIN } cdsl_artifact;
/* Compile the CUDA source through NVRTC (loaded at run time) for arch ("sm_90"; NULL or ""
 * for that default), through the cubin cache. *data is malloc'd; free() it. An unknown
 * artifact kind is CDSL_ERR_USAGE. */
int cdsl_compile_device(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, const char *arch,
                        cdsl_artifact what, void **data, size_t *len);

/* One rank's code alone (one process per GPU needs only its own): the same as above with the
 * kernel holding rank_<rank>() only, 0 <= rank < nranks. The checker has still checked every
 * rank (cdsl_compile); this only emits and compiles less. */
const char *cdsl_emit_cuda_rank(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank);
int cdsl_compile_device_rank(cdsl_program *p, cdsl_backend flavour, cdsl_dtype dtype, int rank, const char *arch,
                             cdsl_artifact what, void **data, size_t *len);

/* Empty the JIT cache folder ($CDSL_CACHE_DIR, else $XDG_CACHE_HOME/cdsl, else ~/.cache/cdsl) of
 * the cache's own files: entries and temporary files, nothing else. Writes "removed PATH" for
 * each and a last line "N files, B bytes removed from DIR" to report (NULL: nothing). A folder
 * that other users can write to, or that is not this user's, is refused: CDSL_ERR_SYSTEM, with
 * a "cdsl: error: ..." line on log (NULL: stderr). A folder that does not exist is empty. */
int cdsl_cache_clean(FILE *report, FILE *log);

/* ---- Running (runtime/api/api.c) ---------------------------------------------------------- */
/* CDSL-RUNTIME-API: the runtime's declarations follow this line. */

/* A communicator: nranks ranks on one backend, each with its own copy of a program's
 * symmetric buffers (input, output, scratch). Typical use, as cdslrun does it:
 *
 *     cdsl_comm_opts o;  cdsl_comm_opts_init(&o);  o.nranks = 8;
 *     cdsl_comm_create(&o, &comm);
 *     cdsl_chunk_bytes(prog, 64 << 20, &chunk, NULL);     // a 64 MiB collective
 *     cdsl_comm_alloc(comm, prog, chunk);
 *     cdsl_fill(comm, prog, CDSL_F32);                      // or cdsl_comm_write() your data
 *     cdsl_run(comm, prog, CDSL_F32, 1, NULL);
 *     cdsl_check(comm, prog, CDSL_F32, &wrong);             // or cdsl_comm_read() it back
 *     cdsl_comm_destroy(comm);
 *
 * Messages (why a backend cannot run here, a wait that ran out, the first wrong element) go
 * to opts.log as "cdsl: error: ..." lines; the functions return a cdsl_status. */
typedef struct cdsl_comm cdsl_comm;

/* cdsl_comm_opts.backend: p2p when this machine's GPUs can run the communicator, else sim.
 * nvls is never chosen by default. */
enum { CDSL_BACKEND_AUTO = -1 };

typedef struct cdsl_comm_opts {
    int backend;                    /* a cdsl_backend, or CDSL_BACKEND_AUTO */
    int nranks;
    int ranks_per_gpu;              /* p2p/nvls: ranks sharing one GPU; 0: one, or with
                                       CDSL_BACKEND_AUTO the fewest that the GPUs allow */
    int first_device;               /* p2p/nvls: the first device ordinal used */
    unsigned seed;                  /* sim: schedule jitter seed; 0 = no jitter */
    int jitter_us;                  /* sim: most microseconds of random delay between
                                       operations (0: 20 when a seed is set) */
    unsigned long long spin_limit;  /* polls before a wait gives up; 0 = the backend's default
                                       (sim: 5 seconds in which no rank makes progress) */
    FILE *log;                      /* messages; NULL means stderr */
} cdsl_comm_opts;

/* Defaults: CDSL_BACKEND_AUTO, ranks per GPU as the GPUs allow, no jitter, the default wait
 * bound, stderr. */
void cdsl_comm_opts_init(cdsl_comm_opts *opts);
/* Returns CDSL_ERR_SYSTEM, with a message, when the backend cannot run here (no GPU, too
 * few GPUs, no multicast); *out is NULL then. */
int cdsl_comm_create(const cdsl_comm_opts *opts, cdsl_comm **out);
void cdsl_comm_destroy(cdsl_comm *comm);
/* For NULL: (cdsl_backend)CDSL_BACKEND_AUTO, which names no backend, and 0 ranks. */
cdsl_backend cdsl_comm_backend(const cdsl_comm *comm);
int cdsl_comm_nranks(const cdsl_comm *comm);

/* Buffers of a program, by index: input, output, then the scratch buffers in declaration
 * order, then, for a program with packets, "packet slots": the runtime's, allocated (or
 * registered) like scratch, zeroed by cdsl_comm_alloc/cdsl_comm_register and never to be
 * written by the caller (docs/language.md section 8). Sizes are in chunks; one chunk's bytes
 * are chosen at allocation. */
enum { CDSL_BUF_INPUT = 0, CDSL_BUF_OUTPUT = 1 };
int cdsl_program_nbufs(const cdsl_program *p);
int cdsl_program_buf_chunks(const cdsl_program *p, int buf);    /* -1 when there is none */
const char *cdsl_program_buf_name(const cdsl_program *p, int buf);  /* NULL when there is none */

/* The chunk size for a collective of `size` bytes, nccl-tests' convention: the size of the
 * larger of one rank's input and output buffers (allgather: the whole output; reducescatter:
 * the whole input; allreduce, alltoall: either). A program without input or output chunks
 * (barrier) takes `size` as its chunk size. Returns CDSL_ERR_USAGE when size is not a positive multiple
 * of *granule = 4 bytes (an MSCCL++ plan: its buffer_alignment) times that buffer's chunk
 * count (granule may be NULL). */
int cdsl_chunk_bytes(const cdsl_program *p, size_t size, size_t *chunk_bytes, size_t *granule);

/* Symmetric buffers for p's layout on every rank, chunk_bytes (a multiple of 4) per chunk;
 * replaces any earlier allocation. Contents start zeroed. For a program compiled in place
 * (cdsl_compile_opts.in_place), the aliased buffer is its part of the other one: writing,
 * reading and cdsl_comm_buffer of it reach that part (allgather's input: the output from
 * rank * input bytes on); a program compiled out of place cannot run on that layout, nor the
 * reverse. */
int cdsl_comm_alloc(cdsl_comm *comm, const cdsl_program *p, size_t chunk_bytes);
size_t cdsl_comm_chunk_bytes(const cdsl_comm *comm);            /* 0 before any allocation */
size_t cdsl_comm_buf_bytes(const cdsl_comm *comm, int buf);      /* 0 when there is none */

/* Host <-> rank `rank`'s buffer `buf`: the first `bytes` bytes of it (src/dst may be NULL
 * only when bytes is 0). */
int cdsl_comm_write(cdsl_comm *comm, int rank, int buf, const void *src, size_t bytes);
int cdsl_comm_read(cdsl_comm *comm, int rank, int buf, void *dst, size_t bytes);

/* Run p (compiled for this communicator's rank count, on a layout cdsl_comm_alloc() made
 * for it) `iters` times back to back, elements of type dtype. When us_per_iter is not NULL
 * it receives the mean time of one run in microseconds. Returns CDSL_ERR_RUNTIME when a wait
 * ran out of its bound (each stuck rank is reported with its .cdsl location). */
int cdsl_run(cdsl_comm *comm, cdsl_program *p, cdsl_dtype dtype, int iters, double *us_per_iter);

/* ---- Your buffers and streams ---------------------------------------------------------------
 * Like NCCL: fill inputs and read outputs with your own kernels and copies, run the collective
 * on your streams, synchronise when you choose. A sketch for p2p (one rank per GPU, rank r on
 * device r; error checks left out):
 *
 *     void *ptrs[NRANKS * NBUFS];                   // ptrs[r * nbufs + b], cuMemAlloc'd on r's GPU
 *     cdsl_comm_register(comm, prog, chunk, ptrs);  // instead of cdsl_comm_alloc
 *     ... enqueue work that writes the inputs, on streams[r] ...
 *     cdsl_run_async(comm, prog, CDSL_F32, streams);
 *     ... enqueue work that reads the outputs ...;  cuStreamSynchronize(streams[r]) for every r
 *     cdsl_comm_status(comm);                       // did every rank's waits complete?
 *
 * examples/api_example.c is the whole program, for sim and p2p. */

/* The address of rank `rank`'s buffer `buf` (allocated or registered): a device pointer,
 * valid on the rank's GPU, for p2p and nvls; a host pointer for sim. A buffer of no chunks
 * (a barrier's) may have none: *ptr is NULL then. Valid until the next cdsl_comm_alloc,
 * cdsl_comm_register or cdsl_comm_destroy. */
int cdsl_comm_buffer(cdsl_comm *comm, int rank, int buf, void **ptr);

/* Run p on the caller's buffers instead of allocating: ptrs[rank * nbufs + b] for every rank
 * and every buffer b of p (input, output, scratch; nbufs = cdsl_program_nbufs(p)), each at
 * least chunk_bytes * cdsl_program_buf_chunks(p, b) bytes and 16-byte aligned (refused
 * otherwise; NULL only for a buffer of no chunks). Replaces any earlier allocation; the
 * caller keeps ownership and frees the memory after the communicator no longer uses it
 * (the next alloc/register, or destroy). Contents are not touched.
 *   p2p: device memory allocated by the caller in rank r's GPU's primary context (cuMemAlloc,
 *        cudaMalloc); the communicator enabled peer access between its GPUs when it was
 *        created, so peers reach these pointers directly. No symmetric layout is needed.
 *   sim: host memory.
 *   nvls: refused (CDSL_ERR_USAGE): multicast binds memory that the backend itself creates
 *        with cuMemCreate; use cdsl_comm_alloc and cdsl_comm_buffer there.
 * Two buffers of a rank may share memory only as the in-place form of a program compiled in
 * place (allgather: input == output + rank * input bytes; reducescatter: output == input +
 * rank * output bytes; allreduce, alltoall: input == output); anything else is refused. */
int cdsl_comm_register(cdsl_comm *comm, const cdsl_program *p, size_t chunk_bytes, void *const *ptrs);

/* Enqueue ONE run of p on the caller's streams and return without waiting: streams[rank] is
 * a CUstream of rank's GPU's primary context (a NULL entry, or a NULL array, means the
 * communicator's own stream for that rank). Every rank's kernel is launched before this
 * returns, each rank's after the work already queued on its stream. Two ranks on one GPU
 * need two different streams (refused otherwise: one kernel would wait behind the other).
 * Runs of one communicator must follow each other on every rank: keep one stream per rank,
 * or order the streams yourself; synchronise them before any other call on the
 * communicator. Returns an error only when the runs could not be enqueued (then nothing is
 * left in flight); whether the run itself completed is cdsl_comm_status's answer.
 *   sim: runs the program before returning (streams are ignored); a failure is printed when
 *        it happens and also returned by the next cdsl_comm_status. */
int cdsl_run_async(cdsl_comm *comm, cdsl_program *p, cdsl_dtype dtype, void *const *streams);

/* After the caller has synchronised the streams of cdsl_run_async (every rank's): CDSL_OK,
 * or CDSL_ERR_RUNTIME when a rank's wait ran out of its bound ("rank r gave up waiting at
 * file:line:col ..." for each one, on the log), after which the communicator's counters are
 * reset so that the next run starts as on a fresh communicator. */
int cdsl_comm_status(cdsl_comm *comm);

/* ---- One process per rank (runtime/api/rank_comm.c) -----------------------------------------------
 * How NCCL, torchrun and mpirun users run collectives: one process per GPU, each holding only
 * its own buffers. NCCL's shape:
 *
 *     cdsl_unique_id id;
 *     if (rank == 0) cdsl_get_unique_id(&id);
 *     MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);     // or torch.distributed
 *     cdsl_rank_comm *comm;
 *     cdsl_comm_init_rank(&comm, nranks, &id, rank, NULL);         // every process
 *     cdsl_rank_alloc(comm, prog, chunk_bytes);                    // symmetric buffers, optional
 *     cdsl_rank_run(comm, prog, CDSL_F32, chunk_bytes, &io, stream);   // this rank's part
 *     cuStreamSynchronize(stream); cdsl_rank_status(comm);
 *     cdsl_rank_comm_destroy(comm);
 *
 * Every process compiles the same program for nranks (cdsl_compile: the checker checks every
 * rank) and loads only its own rank's code. The engine under a communicator (the id says
 * which) provides the bootstrap and memory every rank can address (docs/multiprocess.md):
 *   sim   CPU processes of one host; buffers and counters in shared memory (CI runs this);
 *   ipc   the GPUs of one host: CUDA VMM memory passed between the processes as file
 *         descriptors; also several ranks on one GPU;
 *   nccl  NCCL >= 2.28 (loaded at run time): ncclCommInitRank, symmetric windows, one rank
 *         per GPU (NCCL refuses two ranks on one GPU).
 * Collective calls (init, alloc, the first run of a program, size or type) must be made by
 * every rank in the same order; each has the communicator's time bound, and an error names
 * the rank that did not come, disagrees, or died. A run that fails leaves the communicator
 * failed: destroy it (as ncclCommAbort). */
typedef enum cdsl_engine {
    CDSL_ENGINE_AUTO = -1,          /* CDSL_ENGINE from the environment, else: nccl when
                                       NCCL >= 2.28 and a GPU are here, ipc with a GPU and no
                                       NCCL, sim without a GPU */
    CDSL_ENGINE_SIM = 0,
    CDSL_ENGINE_IPC = 1,
    CDSL_ENGINE_NCCL = 2,
} cdsl_engine;
const char *cdsl_engine_name(cdsl_engine e);
int cdsl_engine_parse(const char *s, cdsl_engine *out);   /* "sim", "ipc", "nccl", "auto" */

enum { CDSL_UNIQUE_ID_BYTES = 256 };
typedef struct cdsl_unique_id {
    char internal[CDSL_UNIQUE_ID_BYTES];
} cdsl_unique_id;

/* Made by one process (any), passed by the caller to every rank, used for one communicator.
 * It carries the engine, a random nonce, where rank 0 will wait for the others (an abstract
 * Unix socket name, sim and ipc) or NCCL's unique id (nccl; ncclGetUniqueId starts NCCL's
 * bootstrap listener in this process). */
int cdsl_get_unique_id(cdsl_unique_id *id);
int cdsl_get_unique_id_engine(cdsl_engine engine, cdsl_unique_id *id);
cdsl_engine cdsl_unique_id_engine(const cdsl_unique_id *id);   /* -1 for an invalid id */

typedef struct cdsl_rank_config {
    int flavour;                    /* GPU engines: CDSL_BACKEND_P2P (default) or _NVLS */
    int device;                     /* GPU engines: this rank's CUDA device; -1 (default):
                                       the calling thread's current one, else device 0 */
    double timeout_s;               /* bound of every collective call (default 60, or
                                       CDSL_TIMEOUT seconds from the environment) */
    unsigned long long spin_limit;  /* polls before a wait in a run gives up; 0: default */
    unsigned seed;                  /* sim: schedule jitter seed; 0 = no jitter */
    int jitter_us;                  /* sim: the longest random delay (0: 20 with a seed) */
    FILE *log;                      /* messages; NULL means stderr */
} cdsl_rank_config;
void cdsl_rank_config_init(cdsl_rank_config *config);

typedef struct cdsl_rank_comm cdsl_rank_comm;

/* Every process, with the same id and nranks and its own rank (0 <= rank < nranks); config
 * may be NULL (the defaults). Returns when every rank has arrived, or an error naming the
 * ranks that did not come, came with another nranks, or came twice. */
int cdsl_comm_init_rank(cdsl_rank_comm **comm, int nranks, const cdsl_unique_id *id, int rank,
                        const cdsl_rank_config *config);
/* Not collective. Frees this rank's memory; peers must not run on the communicator after. */
void cdsl_rank_comm_destroy(cdsl_rank_comm *comm);
int cdsl_rank_comm_rank(const cdsl_rank_comm *comm);
int cdsl_rank_comm_nranks(const cdsl_rank_comm *comm);
cdsl_engine cdsl_rank_comm_engine(const cdsl_rank_comm *comm);
int cdsl_rank_comm_device(const cdsl_rank_comm *comm);     /* -1 on sim */

/* Collective: symmetric buffers for p's layout with chunk_bytes per chunk (a multiple of 4),
 * on every rank (every rank must ask for the same; refused with the rank that differs).
 * Keeps a larger allocation. Not needed before cdsl_rank_run, which grows it itself. */
int cdsl_rank_alloc(cdsl_rank_comm *comm, const cdsl_program *p, size_t chunk_bytes);
/* This rank's symmetric buffer `buf` (CDSL_BUF_INPUT, CDSL_BUF_OUTPUT, scratch): a device
 * pointer on this rank's GPU (a host pointer on sim), valid until the allocation grows or the
 * communicator is destroyed. Running on these needs no copy at all. */
int cdsl_rank_buffer(cdsl_rank_comm *comm, int buf, void **ptr);
size_t cdsl_rank_buffer_bytes(const cdsl_rank_comm *comm, int buf);

/* This rank's buffers for a run. NULL input: the symmetric input as it stands; NULL output:
 * the result stays in the symmetric output. Other memory (a PyTorch tensor: any device memory
 * of this rank's GPU, host memory on sim) is staged: copied into the symmetric input before
 * the kernel and out of the symmetric output after it, on the run's stream; input_bytes and
 * output_bytes say how much memory is there, and a run that needs more is refused. input and
 * output may share memory only as NCCL's in-place form of a program compiled in place
 * (cdsl_compile_opts.in_place: allgather input == output + rank * input bytes, reducescatter
 * output == input + rank * output bytes, allreduce and alltoall input == output); otherwise
 * refused. For a
 * program compiled in place the symmetric input (cdsl_rank_buffer) is that part of the
 * symmetric output (reducescatter: the output that part of the input). */
typedef struct cdsl_rank_io {
    const void *input;
    size_t input_bytes;
    void *output;
    size_t output_bytes;
} cdsl_rank_io;

/* Run p once on this rank, chunk_bytes per chunk, enqueued on `stream` (a CUstream /
 * cudaStream_t of this rank's GPU's primary context; NULL: the communicator's own stream,
 * which waits for nothing of the caller's; (void *)1, CU_STREAM_LEGACY: the legacy default
 * stream; sim: runs before it returns) after the work already queued there. The first run of a program, dtype and chunk size is a
 * collective handshake (every rank must run the same checked program: its digest is compared)
 * and may grow the symmetric allocation; later identical runs only enqueue. io may be NULL. */
int cdsl_rank_run(cdsl_rank_comm *comm, cdsl_program *p, cdsl_dtype dtype, size_t chunk_bytes,
                  const cdsl_rank_io *io, void *stream);
/* After the caller synchronised the stream of the last run: CDSL_OK, or CDSL_ERR_RUNTIME when
 * this rank's wait ran out of its bound ("rank r gave up waiting at file:line:col for ...",
 * naming a peer that has died when one has); the communicator is then failed. */
int cdsl_rank_status(cdsl_rank_comm *comm);

/* The verification pattern of one rank (runtime/api/verify.h), for checking a per-rank run as
 * cdsl_fill and cdsl_check do a whole communicator: cdsl_pattern_fill writes rank's input for p
 * at chunk_bytes into host memory (bytes of it, at least the input buffer's size);
 * cdsl_pattern_check compares rank's output (host memory) with the collective's
 * postcondition, reports the first wrong element on log (NULL: stderr), stores the number of
 * wrong elements in *wrong (may be NULL) and returns CDSL_ERR_VERIFY when there are any.
 * barrier and custom programs have no postcondition on data: CDSL_OK. */
int cdsl_pattern_fill(const cdsl_program *p, cdsl_dtype dtype, int rank, size_t chunk_bytes, void *input,
                      size_t bytes);
int cdsl_pattern_check(const cdsl_program *p, cdsl_dtype dtype, int rank, size_t chunk_bytes, const void *output,
                       size_t bytes, unsigned long long *wrong, FILE *log);

/* Verification (runtime/api/verify.c; the pattern is described in runtime/api/verify.h).
 * cdsl_fill writes every rank's input with a pattern in which elements are distinct as far
 * as dtype allows exactly (small integers for the summing collectives, so that f16/bf16 sums
 * are exact) and sets output and scratch buffers to all-ones bytes. cdsl_check reads every
 * rank's output back and compares it with the collective's postcondition; it reports the
 * first wrong rank, chunk and element (expected vs got) to the log, stores the number of
 * wrong elements in *wrong (may be NULL) and returns CDSL_ERR_VERIFY when there are any.
 * barrier and custom programs have no postcondition on data: cdsl_check returns CDSL_OK.
 * Both refuse (CDSL_ERR_USAGE) a program compiled for another rank count than the
 * communicator's, buffers not allocated for it, and an unknown element type. */
int cdsl_fill(cdsl_comm *comm, const cdsl_program *p, cdsl_dtype dtype);
int cdsl_check(cdsl_comm *comm, const cdsl_program *p, cdsl_dtype dtype, unsigned long long *wrong);

/* cdsl_check, with what it found kept for a report (cdsl-perf's results files): the number of
 * wrong elements and the first one, which cdsl_check also prints. result may be NULL. */
typedef struct cdsl_check_result {
    unsigned long long wrong;       /* wrong output elements, over every rank */
    int rank;                       /* the first wrong element's rank; -1 when none is wrong */
    size_t chunk, element;          /* its output chunk, and the element in that chunk */
    char expected[48], got[48];     /* as cdsl_check prints them: "42", "-1.5", "nan" */
    int never_written;              /* got is the fill (all-ones bytes): nothing wrote it */
} cdsl_check_result;
int cdsl_check_detail(cdsl_comm *comm, const cdsl_program *p, cdsl_dtype dtype, cdsl_check_result *result);

/* The device a rank of a communicator runs on, for reports (cdsl-perf's "Using devices"
 * lines and results files). On sim: device -1, the name "sim (CPU threads)", zeros. */
typedef struct cdsl_device_info {
    int device;                     /* CUDA ordinal; -1 on sim */
    char name[96];                  /* cuDeviceGetName: "NVIDIA H200" */
    int pci_domain, pci_bus, pci_device;
    int driver_version;             /* cuDriverGetVersion: 12080 is 12.8; 0 on sim */
} cdsl_device_info;
int cdsl_comm_device_info(const cdsl_comm *comm, int rank, cdsl_device_info *info);

/* ---- The last error -----------------------------------------------------------------------------
 * Every failing call also writes its "cdsl: error: ..." line to the log; these return that
 * text instead, for a caller that keeps no log (ncclGetLastError's shape): the last error
 * reported on the communicator, from whichever thread, without the "cdsl: error: " prefix and
 * followed by the "note: ..." lines that came with it (one message, lines separated by '\n').
 * On a per-rank communicator, every error of the last call that failed, in order: this rank's
 * own reason first, then what it learnt of the others ("rank 1 cannot take part ...").
 * For NULL: the last error the calling thread reported, communicator or not (a failed
 * cdsl_comm_create or cdsl_comm_init_rank, a NULL communicator, cdsl_pattern_check). ""
 * when there was none. The text is the calling thread's copy, valid until its next call of
 * either function; an error keeps being the last one until another replaces it, so read it
 * right after the call that failed. Compiling reports its diagnostics to opts.diag instead. */
const char *cdsl_get_last_error(const cdsl_comm *comm);
const char *cdsl_rank_get_last_error(const cdsl_rank_comm *comm);

#ifdef __cplusplus
}
#endif

#endif
