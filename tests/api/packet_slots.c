/*
 * packet_slots.c - the packet slots belong to the runtime (docs/language.md, section 8):
 *   - a program without packets whose scratch has the slots' size may not run on buffers laid
 *     out for a program with packets (what it wrote there would pass for packets in the next
 *     run of the program that has them): cdsl_run refuses it with CDSL_ERR_USAGE;
 *   - the program with packets still verifies after that refusal;
 *   - CDSL_PKT_FLAG (runtime/abi.h, shared by sim and the device code) is never 0 and differs
 *     between the two epochs that share a parity slot, also where it wraps.
 * Usage: packet_slots WITH_PACKETS.cdsl WITHOUT.cdsl (tests/api/hardening.sh writes both).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "cdsl.h"
#include "fixture.h"

enum { CHUNK = 4096 };

static int run_verified(cdsl_comm *c, cdsl_program *p)
{
    unsigned long long wrong = 1;
    if (cdsl_fill(c, p, CDSL_U32) || cdsl_run(c, p, CDSL_U32, 3, NULL) || cdsl_check(c, p, CDSL_U32, &wrong))
        return 1;
    return wrong != 0;
}

static int flags_ok(void)
{
    unsigned long long es[] = {0, 1, 2, 0xfffffffdull, 0xfffffffeull, 0xffffffffull, 0x100000000ull, 0x1fffffffdull};
    for (size_t i = 0; i < sizeof es / sizeof es[0]; i++) {
        unsigned long long e = es[i];
        if (CDSL_PKT_FLAG(e) == 0 || CDSL_PKT_FLAG(e) == CDSL_PKT_FLAG(e + 2) || CDSL_PKT_FLAG(e) == CDSL_PKT_FLAG(e + 1)) {
            printf("[FAIL] CDSL_PKT_FLAG(%llu) = %u is 0 or equals a neighbour's\n", e, CDSL_PKT_FLAG(e));
            return 1;
        }
    }
    printf("[PASS] CDSL_PKT_FLAG is never 0 and differs between epochs that share a slot, also where it wraps\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    cdsl_program *with = compile(argv[1], 2), *without = compile(argv[2], 2);
    cdsl_comm_opts co;
    cdsl_comm_opts_init(&co);
    co.backend = CDSL_BACKEND_SIM;
    co.nranks = 2;
    char *said = NULL;
    size_t said_len = 0;
    co.log = open_memstream(&said, &said_len);   /* the refusal's message, checked below */
    cdsl_comm *c = NULL;
    int bad = !with || !without || cdsl_comm_create(&co, &c) || cdsl_comm_alloc(c, with, CHUNK);
    if (!bad)
        bad |= !CASE("the program with packets verifies", !run_verified(c, with));
    if (!bad)
        bad |= !CASE("a program without packets is refused on buffers whose slots have its scratch's size",
                     cdsl_run(c, without, CDSL_U32, 1, NULL) == CDSL_ERR_USAGE);
    if (!bad) {
        fflush(co.log);
        bad |= !CASE("the refusal says the buffers were not allocated for the program's layout",
                     said && strstr(said, "the communicator's buffers were not allocated for pb's layout"));
    }
    if (!bad)
        bad |= !CASE("the program with packets verifies after that refusal", !run_verified(c, with));
    bad |= flags_ok();
    cdsl_comm_destroy(c);
    cdsl_program_destroy(with);
    cdsl_program_destroy(without);
    fclose(co.log);
    free(said);
    return bad;
}
