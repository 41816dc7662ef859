/*
 * rank_example.c - one process per rank with libcdsl's per-rank API (cdsl.h), as NCCL users
 * write it: rank 0 makes a unique id, the launcher's own channel passes it on, every process
 * joins, compiles the same program (the checker checks every rank) and runs its own part.
 *
 *   mpirun -n 2 build/rank_example_mpi [file.cdsl]          (built with MPI: make rank_example_mpi)
 *   examples/rank_launch.sh 2 build/rank_example [file.cdsl]   (no MPI: the launcher's file)
 *
 * Without MPI the id travels through a file: rank 0 writes it to $CDSL_ID_FILE (whole, with
 * mode 0600 because it holds the control plane's nonce, then renamed into place), the others
 * wait for it; rank and size come from CDSL_RANK and CDSL_NRANKS. The engine is the id's
 * (CDSL_ENGINE=sim|ipc|nccl where rank 0 runs, else the best this machine has); on GPUs rank
 * r uses GPU (local rank) % (GPUs here).
 *
 * It runs the allgather of examples/allgather.cdsl (or the file given) twice per size, at
 * 4 KiB and 16 MiB per rank: on buffers of its own (the library copies them through its
 * symmetric buffers on the stream) and on the symmetric buffers themselves (no copy). Every
 * rank checks its output (cdsl_pattern_check). Memory and copies on a GPU use the CUDA driver,
 * loaded with dlopen so that this file builds without a CUDA toolkit; nothing of libcdsl but
 * the per-rank half of cdsl.h is used. Ends with "rank_example: rank R verified N runs".
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdsl.h"
#ifdef CDSL_WITH_MPI
#include <mpi.h>
#endif

/* ---- memory: host memory on sim, the CUDA driver's on a GPU ------------------------------------ */

typedef unsigned long long CUdeviceptr;
static struct {
    void *lib;
    void *ctx;
    int dev;
    int (*Init)(unsigned);
    int (*PrimaryCtxRetain)(void **, int);
    int (*PrimaryCtxRelease)(int);
    int (*CtxSetCurrent)(void *);
    int (*CtxSynchronize)(void);
    int (*MemAlloc)(CUdeviceptr *, size_t);
    int (*MemFree)(CUdeviceptr);
    int (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    int (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
} cu;

static int gpu_open(int device)
{
    if (!(cu.lib = dlopen("libcuda.so.1", RTLD_NOW)))
        return -1;
    const char *names[] = {"cuInit", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2", "cuCtxSetCurrent",
                           "cuCtxSynchronize", "cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2"};
    void *fns[9];
    for (int i = 0; i < 9; i++)
        if (!(fns[i] = dlsym(cu.lib, names[i])))
            return -1;
    memcpy(&cu.Init, &fns[0], sizeof fns[0]);          /* POSIX: a function's address */
    memcpy(&cu.PrimaryCtxRetain, &fns[1], sizeof fns[1]);
    memcpy(&cu.PrimaryCtxRelease, &fns[2], sizeof fns[2]);
    memcpy(&cu.CtxSetCurrent, &fns[3], sizeof fns[3]);
    memcpy(&cu.CtxSynchronize, &fns[4], sizeof fns[4]);
    memcpy(&cu.MemAlloc, &fns[5], sizeof fns[5]);
    memcpy(&cu.MemFree, &fns[6], sizeof fns[6]);
    memcpy(&cu.MemcpyHtoD, &fns[7], sizeof fns[7]);
    memcpy(&cu.MemcpyDtoH, &fns[8], sizeof fns[8]);
    cu.dev = device;
    return cu.Init(0) || cu.PrimaryCtxRetain(&cu.ctx, device) || cu.CtxSetCurrent(cu.ctx) ? -1 : 0;
}

static void *mem_alloc(size_t n)
{
    if (!cu.lib)
        return malloc(n);
    CUdeviceptr p = 0;
    return cu.MemAlloc(&p, n) ? NULL : (void *)(uintptr_t)p;
}

static void mem_free(void *p)
{
    if (!cu.lib)
        free(p);
    else if (p)
        cu.MemFree((CUdeviceptr)(uintptr_t)p);
}

/* A copy from pageable memory may still be in flight when cuMemcpyHtoD returns, and the run's
 * stream does not wait for the legacy stream: finish it before the run. */
static int mem_put(void *dst, const void *src, size_t n)
{
    if (!cu.lib)
        return memcpy(dst, src, n), 0;
    return cu.MemcpyHtoD((CUdeviceptr)(uintptr_t)dst, src, n) || cu.CtxSynchronize();
}

static int mem_get(void *dst, const void *src, size_t n)
{
    if (!cu.lib)
        return memcpy(dst, src, n), 0;
    return cu.CtxSynchronize() || cu.MemcpyDtoH(dst, (CUdeviceptr)(uintptr_t)src, n);
}

/* ---- who we are, and the id ----------------------------------------------------------------------- */

static int env_int(const char *name, int def)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : def;
}

#ifdef CDSL_WITH_MPI
static int share_id(int rank, int nranks, cdsl_unique_id *id)
{
    (void)nranks;
    int st = rank == 0 ? cdsl_get_unique_id(id) : 0;
    MPI_Bcast(&st, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!st)
        MPI_Bcast(id, sizeof *id, MPI_BYTE, 0, MPI_COMM_WORLD);
    return st;
}
#else
/* The id holds the control plane's nonce: only our user may read it, whatever the umask. A
 * new file (O_EXCL), so that nobody else's file, or a link, is written through. */
static int write_id(const char *path, const cdsl_unique_id *id)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int bad = fchmod(fd, 0600) != 0 || write(fd, id, sizeof *id) != (ssize_t)sizeof *id;
    return close(fd) != 0 || bad ? -1 : 0;
}

/* rank 0 writes the id whole to a new name and renames it into place; the others wait. */
static int share_id(int rank, int nranks, cdsl_unique_id *id)
{
    (void)nranks;
    const char *path = getenv("CDSL_ID_FILE");
    if (!path) {
        fprintf(stderr, "rank_example: set CDSL_ID_FILE (examples/rank_launch.sh does), or build with MPI\n");
        return 2;
    }
    if (rank == 0) {
        char tmp[4200];
        snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
        int st = cdsl_get_unique_id(id);
        if (!st && write_id(tmp, id) != 0) {
            fprintf(stderr, "rank_example: cannot write the id to %s: %s\n", tmp, strerror(errno));
            st = 3;
        }
        if (!st && rename(tmp, path)) {
            fprintf(stderr, "rank_example: cannot rename %s to %s: %s\n", tmp, path, strerror(errno));
            unlink(tmp);
            st = 3;
        }
        return st;
    }
    for (int waited = 0; waited < 60 * 100; waited++) {     /* a minute, in 10 ms steps */
        FILE *f = fopen(path, "rb");
        if (f) {
            size_t got = fread(id, sizeof *id, 1, f);
            fclose(f);
            if (got == 1)
                return 0;
        }
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    fprintf(stderr, "rank_example: rank %d: no id in %s after a minute\n", rank, path);
    return 3;
}
#endif

/* ---- one run ------------------------------------------------------------------------------------- */

/* Run p at chunk bytes per chunk, on our own buffers (staged) or on the symmetric ones. */
static int run_once(cdsl_rank_comm *c, cdsl_program *p, int rank, size_t chunk, int staged)
{
    size_t in_b = (size_t)cdsl_program_buf_chunks(p, CDSL_BUF_INPUT) * chunk;
    size_t out_b = (size_t)cdsl_program_buf_chunks(p, CDSL_BUF_OUTPUT) * chunk;
    char *host_in = malloc(in_b), *host_out = malloc(out_b);
    void *in = NULL, *out = NULL;
    int st = host_in && host_out ? cdsl_pattern_fill(p, CDSL_F32, rank, chunk, host_in, in_b) : CDSL_ERR_SYSTEM;
    if (!st && staged) {
        in = mem_alloc(in_b);
        out = mem_alloc(out_b);
        st = in && out ? mem_put(in, host_in, in_b) : CDSL_ERR_SYSTEM;
        cdsl_rank_io io = {in, in_b, out, out_b};
        if (!st)
            st = cdsl_rank_run(c, p, CDSL_F32, chunk, &io, NULL);
    } else if (!st) {
        st = cdsl_rank_alloc(c, p, chunk);
        if (!st)
            st = cdsl_rank_buffer(c, CDSL_BUF_INPUT, &in);
        if (!st)
            st = mem_put(in, host_in, in_b);
        if (!st)
            st = cdsl_rank_run(c, p, CDSL_F32, chunk, NULL, NULL);
        if (!st)
            st = cdsl_rank_buffer(c, CDSL_BUF_OUTPUT, &out);
    }
    if (!st)
        st = mem_get(host_out, out, out_b);     /* waits for the run (the GPU, the stream) */
    if (!st)
        st = cdsl_rank_status(c);
    if (!st)
        st = cdsl_pattern_check(p, CDSL_F32, rank, chunk, host_out, out_b, NULL, stderr);
    if (staged) {
        mem_free(in);
        mem_free(out);
    }
    free(host_in);
    free(host_out);
    return st;
}

static int example(int rank, int nranks, const char *file)
{
    cdsl_unique_id id;
    int st = share_id(rank, nranks, &id);
    if (st)
        return st;
    cdsl_compile_opts o = {.path = file, .nranks = nranks, .stop_after = CDSL_STAGE_CHECK, .color = -1};
    cdsl_program *p = NULL;
    if ((st = cdsl_compile(&o, &p))) {
        cdsl_program_destroy(p);
        return st;
    }
    cdsl_rank_config cfg;
    cdsl_rank_config_init(&cfg);
    cdsl_rank_comm *c = NULL;
    if (cdsl_unique_id_engine(&id) != CDSL_ENGINE_SIM) {
        int ngpu = env_int("CDSL_NGPU", 0), local = env_int("OMPI_COMM_WORLD_LOCAL_RANK", env_int("CDSL_LOCAL_RANK", rank));
        cfg.device = ngpu > 0 ? local % ngpu : local;
        if (gpu_open(cfg.device)) {
            fprintf(stderr, "rank_example: rank %d: cannot open GPU %d with the CUDA driver\n", rank, cfg.device);
            cdsl_program_destroy(p);
            return 3;
        }
    }
    st = cdsl_comm_init_rank(&c, nranks, &id, rank, &cfg);
    int runs = 0;
    static const size_t sizes[] = {4096, 16u << 20};
    for (int k = 0; !st && k < 2; k++)
        for (int staged = 1; !st && staged >= 0; staged--, runs++) {
            size_t chunk;
            st = cdsl_chunk_bytes(p, sizes[k] * (size_t)nranks, &chunk, NULL);
            if (!st)
                st = run_once(c, p, rank, chunk, staged);
        }
    if (!st)
        printf("rank_example: rank %d verified %d runs (engine %s%s)\n", rank, runs,
               cdsl_engine_name(cdsl_rank_comm_engine(c)), cu.lib ? ", GPU memory" : "");
    cdsl_rank_comm_destroy(c);
    cdsl_program_destroy(p);
    if (cu.lib)
        cu.PrimaryCtxRelease(cu.dev);
    return st;
}

int main(int argc, char **argv)
{
    const char *file = argc > 1 ? argv[1] : "examples/allgather.cdsl";
    int rank, nranks;
#ifdef CDSL_WITH_MPI
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
#else
    rank = env_int("CDSL_RANK", -1);
    nranks = env_int("CDSL_NRANKS", -1);
    if (rank < 0 || nranks < 1) {
        fprintf(stderr, "usage: CDSL_RANK=r CDSL_NRANKS=n CDSL_ID_FILE=f rank_example [file.cdsl]\n"
                        "       (examples/rank_launch.sh N rank_example sets them), or build with MPI\n");
        return 2;
    }
#endif
    int st = example(rank, nranks, file);
    fflush(stdout);
#ifdef CDSL_WITH_MPI
    if (st)
        MPI_Abort(MPI_COMM_WORLD, st);
    MPI_Finalize();
#endif
    return st;
}
