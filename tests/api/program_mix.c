/*
 * program_mix.c - one communicator runs a .cdsl program and an imported MSCCL++ plan in turn,
 * several times each, and every run verifies.
 *
 * Their kernels count on different sync words (runtime/abi.h): a .cdsl program on a word per
 * thread block, a plan on one word per counter, with the bases of each handed from launch to
 * launch and never reset between programs. A program that moved the other kind's bases (a
 * .cdsl program once added its waits to the plans' peer and switch bases, on words it never
 * arrives on) leaves the next run of the other waiting for arrivals that never come. On sim
 * (the suite, tests/api/hardening.sh) this checks the API path; on a GPU (bench/gpu_session.sh,
 * BACKEND p2p) the words themselves.
 * Usage: program_mix BACKEND PROGRAM.cdsl PLAN.json [RANKS_PER_GPU]
 */
#include <stdio.h>
#include <stdlib.h>

#include "cdsl.h"
#include "fixture.h"

enum { CHUNK = 64 * 1024, ROUNDS = 3 };

/* Lay p out, run it `iters` times, verify: 0 when it verified. */
static int run_verified(cdsl_comm *c, cdsl_program *p, int iters)
{
    unsigned long long wrong = 1;
    if (cdsl_comm_alloc(c, p, CHUNK) || cdsl_fill(c, p, CDSL_F32) || cdsl_run(c, p, CDSL_F32, iters, NULL) ||
        cdsl_check(c, p, CDSL_F32, &wrong))
        return 1;
    return wrong != 0;
}

int main(int argc, char **argv)
{
    cdsl_comm_opts co;
    cdsl_comm_opts_init(&co);
    if (argc < 4 || argc > 5 || cdsl_backend_parse(argv[1], (cdsl_backend *)&co.backend)) {
        fprintf(stderr, "usage: program_mix BACKEND PROGRAM.cdsl PLAN.json [RANKS_PER_GPU]\n");
        return 2;
    }
    co.nranks = 2;
    co.ranks_per_gpu = argc == 5 ? atoi(argv[4]) : 0;
    cdsl_program *prog = compile(argv[2], 2), *plan = compile(argv[3], 2);
    cdsl_comm *c = NULL;
    int bad = !prog || !plan || cdsl_comm_create(&co, &c);
    for (int round = 0; round < ROUNDS && !bad; round++) {
        int p = run_verified(c, prog, 2), q = p ? 1 : run_verified(c, plan, 2);
        printf("[%s] %s round %d: %s then %s, each run twice, both verify\n", p || q ? "FAIL" : "PASS", argv[1],
               round + 1, argv[2], argv[3]);
        bad = p || q;
    }
    cdsl_comm_destroy(c);
    cdsl_program_destroy(prog);
    cdsl_program_destroy(plan);
    return bad;
}
