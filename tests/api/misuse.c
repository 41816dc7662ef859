/*
 * misuse.c - calls that fit the API's types but not each other are usage errors, not wrong
 * results:
 *   - cdsl_fill and cdsl_check with a program compiled for another rank count than the
 *     communicator's (on buffers that would hold it), or with an unknown element type;
 *   - cdsl_compile_device with an unknown artifact kind (refused, not compiled as PTX).
 * And the right calls on the same objects still verify.
 *
 *     misuse ALLGATHER.cdsl     (an allgather, compiled here for 2 and 4 ranks)
 *
 * Prints "[PASS] name" / "[FAIL] name".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdsl.h"
#include "fixture.h"

int main(int argc, char **argv)
{
    if (argc != 2)
        return 99;
    cdsl_program *p2 = compile(argv[1], 2), *p4 = compile(argv[1], 4);
    cdsl_comm_opts o;
    cdsl_comm_opts_init(&o);
    o.backend = CDSL_BACKEND_SIM;
    o.nranks = 4;
    cdsl_comm *c = NULL;
    if (!p2 || !p4 || cdsl_comm_create(&o, &c) != CDSL_OK || cdsl_comm_alloc(c, p4, 64) != CDSL_OK) {
        printf("[FAIL] setting up: programs and a 4-rank sim communicator\n");
        return 1;
    }
    unsigned long long wrong = 0;
    /* p2's buffers are smaller than p4's: they fit in what was allocated for p4. */
    CASE("cdsl_fill: a program for 2 ranks on a communicator of 4 is a usage error",
         cdsl_fill(c, p2, CDSL_F32) == CDSL_ERR_USAGE);
    CASE("cdsl_check: a program for 2 ranks on a communicator of 4 is a usage error",
         cdsl_check(c, p2, CDSL_F32, &wrong) == CDSL_ERR_USAGE && wrong == 0);
    CASE("cdsl_fill: an unknown element type is a usage error", cdsl_fill(c, p4, (cdsl_dtype)7) == CDSL_ERR_USAGE);
    CASE("cdsl_check: an unknown element type is a usage error",
         cdsl_check(c, p4, (cdsl_dtype)-1, &wrong) == CDSL_ERR_USAGE);
    void *data = NULL;
    size_t len = 0;
    CASE("cdsl_compile_device: an unknown artifact kind is a usage error",
         cdsl_compile_device(p4, CDSL_BACKEND_P2P, CDSL_F32, "sm_90", (cdsl_artifact)2, &data, &len) ==
                 CDSL_ERR_USAGE &&
             data == NULL);
    int rc = cdsl_fill(c, p4, CDSL_F32);
    rc = rc ? rc : cdsl_run(c, p4, CDSL_F32, 1, NULL);
    rc = rc ? rc : cdsl_check(c, p4, CDSL_F32, &wrong);
    CASE("the right program and type on the same communicator verify", rc == CDSL_OK && wrong == 0);
    cdsl_comm_destroy(c);
    cdsl_program_destroy(p2);
    cdsl_program_destroy(p4);
    return test_failures != 0;
}
