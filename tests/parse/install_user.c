/*
 * install_user.c - a program of the user's own, built by tests/parse/install.sh against an
 * installed cdsl only (its cdsl.h, and libcdsl through pkg-config or CMake), so that every way
 * of linking it is shown to carry what the library needs: cdsl_compile reaches the MSCCL++
 * importer's jansson, the runtime libdl and pthreads. It finds the stdlib's allgather_ring
 * (through CDSL_PATH or the installed stdlib), compiles it for 4 ranks, runs it on the sim
 * backend and checks every rank's output.
 *
 *     install_user        prints "install_user: allgather_ring verified on sim, 4 ranks"
 */
#include <cdsl.h>
#include <stdio.h>

enum { NRANKS = 4 };

static int run(const char *path)
{
    cdsl_compile_opts co = {0};
    co.path = path;
    co.nranks = NRANKS;
    co.stop_after = CDSL_STAGE_CHECK;   /* the whole compile: parse, evaluate, check */
    cdsl_program *prog = NULL;
    int err = cdsl_compile(&co, &prog);
    if (err) {
        cdsl_program_destroy(prog);
        return err;
    }
    cdsl_comm_opts o;
    cdsl_comm_opts_init(&o);
    o.backend = CDSL_BACKEND_SIM;
    o.nranks = NRANKS;
    cdsl_comm *comm = NULL;
    size_t chunk = 0;
    unsigned long long wrong = 1;
    if (!(err = cdsl_comm_create(&o, &comm)) && !(err = cdsl_chunk_bytes(prog, 1 << 20, &chunk, NULL)) &&
        !(err = cdsl_comm_alloc(comm, prog, chunk)) && !(err = cdsl_fill(comm, prog, CDSL_F32)) &&
        !(err = cdsl_run(comm, prog, CDSL_F32, 1, NULL)) && !(err = cdsl_check(comm, prog, CDSL_F32, &wrong)) && wrong)
        err = CDSL_ERR_RUNTIME;
    cdsl_comm_destroy(comm);
    cdsl_program_destroy(prog);
    return err;
}

int main(void)
{
    char path[4096];
    if (cdsl_find_program("allgather_ring", path, sizeof path)) {
        fprintf(stderr, "install_user: no allgather_ring.cdsl in the stdlib (set CDSL_PATH)\n");
        return 1;
    }
    int err = run(path);
    if (err) {
        fprintf(stderr, "install_user: %s failed (status %d)\n", path, err);
        return 1;
    }
    printf("install_user: allgather_ring verified on sim, %d ranks\n", NRANKS);
    return 0;
}
