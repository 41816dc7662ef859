/*
 * front_ends.c - the refusals that the communicator of all ranks (cdsl_comm) and the per-rank
 * communicator (cdsl_rank_comm) share, word for word: both take them from one place
 * (runtime/api/program_layout.c), each with its own prefix ("" or "rank 0: ") and its own
 * rule where the two differ (a chunk of 0 bytes lays out empty buffers for cdsl_comm; a rank's
 * chunk is never empty). The texts are the ones each front end gave before they shared them.
 *
 *     front_ends ALLGATHER.cdsl
 *
 * Prints "[PASS] name" / "[FAIL] name".
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

enum { CHUNK = 256 };

static FILE *log_file;

/* cdsl_comm, two ranks on the sim. */
static void all_ranks(const char *path)
{
    cdsl_comm_opts o;
    cdsl_comm_opts_init(&o);
    o.backend = CDSL_BACKEND_SIM;
    o.nranks = 2;
    o.log = log_file;
    cdsl_comm *c = NULL;
    cdsl_program *ag = compile(path, 2), *ag3 = compile(path, 3), *ip = compile_in_place(path, 2);
    if (!ag || !ag3 || !ip || cdsl_comm_create(&o, &c) != CDSL_OK) {
        printf("[FAIL] setting up a 2-rank sim communicator and its programs\n");
        test_failures++;
        goto out;
    }
    CASE("cdsl_comm_alloc: a chunk that is not a multiple of 4 bytes",
         cdsl_comm_alloc(c, ag, 6) == CDSL_ERR_USAGE &&
             log_said(log_file, "cdsl: error: a chunk of 6 bytes: chunks are a multiple of 4 bytes\n"));
    CASE("cdsl_comm_alloc: a chunk of 0 bytes lays out empty buffers", cdsl_comm_alloc(c, ag, 0) == CDSL_OK);
    CASE("cdsl_comm_alloc: the buffers of the allgather", cdsl_comm_alloc(c, ag, CHUNK) == CDSL_OK);
    CASE("cdsl_run: a program compiled for another rank count",
         cdsl_run(c, ag3, CDSL_F32, 1, NULL) == CDSL_ERR_USAGE &&
             log_said(log_file, "cdsl: error: allgather was compiled for 3 ranks; the communicator has 2\n"));
    CASE("cdsl_run: an unknown element type",
         cdsl_run(c, ag, (cdsl_dtype)9, 1, NULL) == CDSL_ERR_USAGE &&
             log_said(log_file, "cdsl: error: a run needs at least one iteration and a known element type\n"));
    CASE("cdsl_run: the allgather runs", cdsl_run(c, ag, CDSL_F32, 1, NULL) == CDSL_OK);
    /* In place, rank r's input is output + r * CHUNK: rank 1's given at output + 0 is refused. */
    static _Alignas(16) char mem[2][2 * CHUNK];
    void *ptrs[] = {mem[0], mem[0], mem[1], mem[1]};
    CASE("cdsl_comm_register: an in-place input that is not its part of the output",
         cdsl_comm_register(c, ip, CHUNK, ptrs) == CDSL_ERR_USAGE &&
             log_said(log_file, "cdsl: error: rank 1's input (ptrs[2]) overlaps its output but is not its part of it: "
                                "allgather compiled in place needs input == output + 256 bytes on rank 1\n"));
    ptrs[2] = mem[1] + CHUNK;
    CASE("cdsl_comm_register: the in-place form on every rank", cdsl_comm_register(c, ip, CHUNK, ptrs) == CDSL_OK);
    CASE("cdsl_comm_register: an out-of-place program's input and output that share memory",
         cdsl_comm_register(c, ag, CHUNK, ptrs) == CDSL_ERR_USAGE &&
             log_said(log_file, "cdsl: error: rank 0's buffers input (ptrs[0]) and output (ptrs[1]) overlap; an input "
                                "that shares the output's memory needs the program compiled in place"));
out:
    cdsl_comm_destroy(c);
    cdsl_program_destroy(ag);
    cdsl_program_destroy(ag3);
    cdsl_program_destroy(ip);
}

/* cdsl_rank_comm, one rank of one on the sim engine. */
static void one_rank(const char *path)
{
    cdsl_unique_id id;
    cdsl_rank_config cfg;
    cdsl_rank_config_init(&cfg);
    cfg.log = log_file;
    cdsl_rank_comm *r = NULL;
    cdsl_program *ag = compile(path, 1), *ag2 = compile(path, 2), *ip = compile_in_place(path, 1);
    if (!ag || !ag2 || !ip || cdsl_get_unique_id_engine(CDSL_ENGINE_SIM, &id) != CDSL_OK ||
        cdsl_comm_init_rank(&r, 1, &id, 0, &cfg) != CDSL_OK) {
        printf("[FAIL] setting up a 1-rank sim engine and its programs\n");
        test_failures++;
        goto out;
    }
    log_said(log_file, "");
    CASE("cdsl_rank_alloc: a chunk that is not a multiple of 4 bytes",
         cdsl_rank_alloc(r, ag, 6) == CDSL_ERR_USAGE &&
             log_said(log_file, "cdsl: error: rank 0: a chunk of 6 bytes: chunks are a positive multiple of 4 bytes\n"));
    CASE("cdsl_rank_run: a chunk of 0 bytes",
         cdsl_rank_run(r, ag, CDSL_F32, 0, NULL, NULL) == CDSL_ERR_USAGE &&
             log_said(log_file, "cdsl: error: rank 0: a chunk of 0 bytes: chunks are a positive multiple of 4 bytes\n"));
    CASE("cdsl_rank_run: a program compiled for another rank count",
         cdsl_rank_run(r, ag2, CDSL_F32, CHUNK, NULL, NULL) == CDSL_ERR_USAGE &&
             log_said(log_file, "cdsl: error: rank 0: allgather was compiled for 2 ranks; the communicator has 1\n"));
    CASE("cdsl_rank_run: an unknown element type",
         cdsl_rank_run(r, ag, (cdsl_dtype)9, CHUNK, NULL, NULL) == CDSL_ERR_USAGE &&
             log_said(log_file, "cdsl: error: rank 0: unknown element type 9\n"));
    static _Alignas(16) char mem[2 * CHUNK];
    cdsl_rank_io io = {.input = mem, .input_bytes = CHUNK, .output = mem, .output_bytes = CHUNK};
    CASE("cdsl_rank_run: an out-of-place program's input and output that share memory",
         cdsl_rank_run(r, ag, CDSL_F32, CHUNK, &io, NULL) == CDSL_ERR_USAGE &&
             log_said(log_file, "cdsl: error: rank 0: the input and output given to the run share memory; allgather was "
                                "compiled out of place"));
    io.input = mem + 4;
    CASE("cdsl_rank_run: an in-place input that is not its part of the output",
         cdsl_rank_run(r, ip, CDSL_F32, CHUNK, &io, NULL) == CDSL_ERR_USAGE &&
             log_said(log_file, "cdsl: error: rank 0: the input and output given to the run share memory, but not as "
                                "allgather in place: its input must be its output + 0 bytes on rank 0\n"));
    io.input = mem;
    CASE("cdsl_rank_run: the in-place form runs", cdsl_rank_run(r, ip, CDSL_F32, CHUNK, &io, NULL) == CDSL_OK);
out:
    cdsl_rank_comm_destroy(r);
    cdsl_program_destroy(ag);
    cdsl_program_destroy(ag2);
    cdsl_program_destroy(ip);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return 99;
    log_file = tmpfile();
    if (!log_file)
        return 99;
    all_ranks(argv[1]);
    one_rank(argv[1]);
    CASE("a NULL communicator, either kind: the calling thread's last error says so",
         cdsl_run(NULL, NULL, CDSL_F32, 1, NULL) == CDSL_ERR_USAGE &&
             !strcmp(cdsl_get_last_error(NULL), "cdsl_run: the communicator is NULL") &&
             cdsl_rank_run(NULL, NULL, CDSL_F32, CHUNK, NULL, NULL) == CDSL_ERR_USAGE &&
             !strcmp(cdsl_rank_get_last_error(NULL), "cdsl_rank_run: the communicator is NULL"));
    fclose(log_file);
    return test_failures != 0;
}
