/*
 * layout_stride.c - a run checks where the in-place window starts, not only the buffers'
 * sizes. An in-place allreduce puts every rank's input at chunk 0 of its output; an in-place
 * sendrecv plan (checked as custom) of the same buffer sizes (8/8/6 chunks at 4 ranks) puts
 * rank r's at chunk 2r, past the end of the output for ranks 1..3: it has no in-place layout
 * at all. Buffers allocated for the allreduce must not pass for the sendrecv's: the sim, with
 * a seed, would poison the holder around a window that is not there and write past its end.
 *
 *     layout_stride ALLREDUCE_IN_PLACE.json SENDRECV_IN_PLACE.json
 *
 * Prints "[PASS] name" / "[FAIL] name".
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

enum { NRANKS = 4, CHUNK = 256 };

static FILE *log_file;

int main(int argc, char **argv)
{
    if (argc != 3)
        return 99;
    log_file = tmpfile();
    cdsl_comm_opts o;
    cdsl_comm_opts_init(&o);
    o.backend = CDSL_BACKEND_SIM;
    o.nranks = NRANKS;
    o.log = log_file;
    o.seed = 7;
    cdsl_comm *c = NULL;
    cdsl_program *ar = compile_in_place(argv[1], NRANKS), *a2a = compile_in_place(argv[2], NRANKS);
    if (!log_file || !ar || !a2a || cdsl_comm_create(&o, &c) != CDSL_OK) {
        printf("[FAIL] setting up a %d-rank sim communicator and its programs\n", NRANKS);
        return 1;
    }
    CASE("the allreduce in place: its buffers are allocated", cdsl_comm_alloc(c, ar, CHUNK) == CDSL_OK);
    CASE("the sendrecv in place on the allreduce's buffers (same sizes, another window): cdsl_run refuses it",
           cdsl_run(c, a2a, CDSL_F32, 1, NULL) == CDSL_ERR_USAGE && log_said(log_file, "not allocated for"));
    CASE("the sendrecv in place on the allreduce's buffers: cdsl_fill refuses it",
           cdsl_fill(c, a2a, CDSL_F32) == CDSL_ERR_USAGE && log_said(log_file, "not allocated for"));
    unsigned long long wrong = 0;
    CASE("the sendrecv in place on the allreduce's buffers: cdsl_check refuses it",
           cdsl_check(c, a2a, CDSL_F32, &wrong) == CDSL_ERR_USAGE && log_said(log_file, "not allocated for"));
    CASE("the allreduce still runs on its own buffers", cdsl_run(c, ar, CDSL_F32, 1, NULL) == CDSL_OK);
    cdsl_comm_destroy(c);
    cdsl_program_destroy(ar);
    cdsl_program_destroy(a2a);
    fclose(log_file);
    return test_failures != 0;
}
