/*
 * in_place.c - in-place collectives through the API (cdsl.h, cdsl_compile_opts.in_place), on
 * the sim backend, as NCCL's in-place calls pass their buffers:
 *   - an allgather, allreduce, reducescatter and alltoall compiled in place verify on allocated buffers
 *     and on the caller's own buffers laid out in the in-place form (input inside the output,
 *     or the reverse), and the result is in the caller's memory;
 *   - the aliased buffer's address, writes and reads reach its part of the other buffer;
 *   - refusals, with their messages: buffers that share memory given to a program compiled
 *     out of place, the in-place form at the wrong offset, an out-of-place program run on an
 *     in-place layout and the reverse;
 *   - cdsl_check_detail names the first wrong element of a result spoiled on purpose.
 *
 *     in_place ALLGATHER.cdsl ALLREDUCE.cdsl REDUCESCATTER.cdsl [MORE.cdsl...]
 *
 * Prints "[PASS] name" / "[FAIL] name".
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdsl.h"
#include "fixture.h"

enum { NRANKS = 4, CHUNK = 256 };

static FILE *log_file;      /* the communicators' messages, read back by log_said() */

static int verify(cdsl_comm *c, cdsl_program *p)
{
    unsigned long long wrong = 1;
    int rc = cdsl_fill(c, p, CDSL_F32);
    rc = rc ? rc : cdsl_run(c, p, CDSL_F32, 1, NULL);
    rc = rc ? rc : cdsl_check(c, p, CDSL_F32, &wrong);
    return rc ? rc : wrong != 0;
}

/* ptrs for every rank: the in-place form of p's collective in one block per rank (the holder),
 * scratch buffers separate; `skew` moves rank 1's aliased buffer off its place. */
static void **in_place_ptrs(const cdsl_program *p, size_t skew)
{
    int nb = cdsl_program_nbufs(p);
    bool rs = !strcmp(cdsl_program_collective(p), "reducescatter");
    int holder = rs ? CDSL_BUF_INPUT : CDSL_BUF_OUTPUT, aliased = rs ? CDSL_BUF_OUTPUT : CDSL_BUF_INPUT;
    bool whole = cdsl_program_buf_chunks(p, CDSL_BUF_INPUT) == cdsl_program_buf_chunks(p, CDSL_BUF_OUTPUT);
    size_t stride = whole ? 0 : (size_t)cdsl_program_chunks(p) * CHUNK; /* allreduce, alltoall: input is output */
    void **ptrs = calloc((size_t)(NRANKS * nb), sizeof *ptrs);
    for (int r = 0; ptrs && r < NRANKS; r++)
        for (int b = 0; b < nb; b++) {
            size_t bytes = (size_t)cdsl_program_buf_chunks(p, b) * CHUNK;
            if (b != aliased)
                ptrs[r * nb + b] = aligned_alloc(16, bytes ? bytes : 16);
        }
    for (int r = 0; ptrs && r < NRANKS; r++)
        ptrs[r * nb + aliased] = (char *)ptrs[r * nb + holder] + (size_t)r * stride + (r == 1 ? skew : 0);
    return ptrs;
}

static void free_ptrs(const cdsl_program *p, void **ptrs)
{
    bool rs = !strcmp(cdsl_program_collective(p), "reducescatter");
    int nb = cdsl_program_nbufs(p), aliased = rs ? CDSL_BUF_OUTPUT : CDSL_BUF_INPUT;
    for (int i = 0; ptrs && i < NRANKS * nb; i++)
        if (i % nb != aliased)
            free(ptrs[i]);
    free(ptrs);
}

/* The collective compiled in place verifies on allocated buffers and on the caller's. */
static void collective(cdsl_comm *c, const char *path)
{
    cdsl_program *ip = compile_in_place(path, NRANKS), *oop = compile(path, NRANKS);
    if (!ip || !oop) {
        CASE(path, false);
        return;
    }
    const char *coll = cdsl_program_collective(ip);
    char name[160];
    snprintf(name, sizeof name, "%s in place verifies on allocated buffers", coll);
    CASE(name, cdsl_comm_alloc(c, ip, CHUNK) == CDSL_OK && verify(c, ip) == CDSL_OK);
    snprintf(name, sizeof name, "%s: an out-of-place program on the in-place layout is refused", coll);
    CASE(name, cdsl_run(c, oop, CDSL_F32, 1, NULL) == CDSL_ERR_USAGE &&
                   log_said(log_file, "laid out for a program compiled in place"));
    snprintf(name, sizeof name, "%s: the program compiled in place on an out-of-place layout is refused", coll);
    CASE(name, cdsl_comm_alloc(c, oop, CHUNK) == CDSL_OK && cdsl_run(c, ip, CDSL_F32, 1, NULL) == CDSL_ERR_USAGE &&
                   log_said(log_file, "laid out for a program compiled out of place"));
    void **ptrs = in_place_ptrs(ip, 0);
    snprintf(name, sizeof name, "%s in place verifies on the caller's buffers, in NCCL's in-place form", coll);
    CASE(name, ptrs && cdsl_comm_register(c, ip, CHUNK, ptrs) == CDSL_OK && verify(c, ip) == CDSL_OK);
    snprintf(name, sizeof name, "%s: buffers that share memory, given to the program compiled out of place", coll);
    CASE(name, cdsl_comm_register(c, oop, CHUNK, ptrs) == CDSL_ERR_USAGE &&
                   log_said(log_file, "an input that shares the output's memory needs the program compiled in place"));
    free_ptrs(ip, ptrs);
    ptrs = in_place_ptrs(ip, CHUNK);
    snprintf(name, sizeof name, "%s: the in-place form at the wrong offset is refused", coll);
    CASE(name, cdsl_comm_register(c, ip, CHUNK, ptrs) == CDSL_ERR_USAGE && log_said(log_file, "but is not its part of it"));
    free_ptrs(ip, ptrs);
    cdsl_program_destroy(ip);
    cdsl_program_destroy(oop);
}

/* Allgather in place: the input is rank r's part of its output, by address and by transfers. */
static void aliasing(cdsl_comm *c, const char *allgather)
{
    cdsl_program *ip = compile_in_place(allgather, NRANKS);
    void *in = NULL, *out = NULL;
    bool ok = ip && cdsl_comm_alloc(c, ip, CHUNK) == CDSL_OK && cdsl_comm_buffer(c, 2, CDSL_BUF_INPUT, &in) == CDSL_OK &&
              cdsl_comm_buffer(c, 2, CDSL_BUF_OUTPUT, &out) == CDSL_OK;
    size_t at = 2 * (size_t)cdsl_program_chunks(ip) * CHUNK;
    CASE("allgather in place: rank 2's input is at its output + 2 x the input's size", ok && (char *)in == (char *)out + at);
    unsigned char mine[CHUNK], back[CHUNK * NRANKS];
    for (int i = 0; i < CHUNK; i++)
        mine[i] = (unsigned char)(i * 7 + 1);
    ok = ok && cdsl_comm_write(c, 2, CDSL_BUF_INPUT, mine, CHUNK) == CDSL_OK &&
         cdsl_comm_read(c, 2, CDSL_BUF_OUTPUT, back, sizeof back) == CDSL_OK;
    CASE("allgather in place: writing rank 2's input writes its part of the output", ok && !memcmp(back + at, mine, CHUNK));
    ok = ok && cdsl_comm_write(c, 2, CDSL_BUF_INPUT, mine, 0) == CDSL_OK &&
         cdsl_comm_read(c, 2, CDSL_BUF_INPUT, back, 0) == CDSL_OK;
    CASE("allgather in place: no bytes of rank 2's input, written and read, move nothing", ok);
    cdsl_program_destroy(ip);
}

/* A result spoiled after the run: the first wrong element, as cdsl_check prints it. */
static void first_wrong(cdsl_comm *c, const char *allgather)
{
    cdsl_program *p = compile(allgather, NRANKS);
    cdsl_check_result r;
    float bad = -3.5f;
    size_t elem = (2 * CHUNK + 12) / sizeof(float);    /* output chunk 2, element 3 */
    float out[NRANKS * CHUNK / sizeof(float)];
    int rc = p ? cdsl_comm_alloc(c, p, CHUNK) : CDSL_ERR_USAGE;
    rc = rc ? rc : cdsl_fill(c, p, CDSL_F32);
    rc = rc ? rc : cdsl_run(c, p, CDSL_F32, 1, NULL);
    rc = rc ? rc : cdsl_comm_read(c, 1, CDSL_BUF_OUTPUT, out, sizeof out);
    out[elem] = bad;
    rc = rc ? rc : cdsl_comm_write(c, 1, CDSL_BUF_OUTPUT, out, sizeof out);
    rc = rc ? rc : cdsl_check_detail(c, p, CDSL_F32, &r);
    CASE("cdsl_check_detail: a wrong result, its first wrong element and both values",
         rc == CDSL_ERR_VERIFY && r.wrong == 1 && r.rank == 1 && r.chunk == 2 && r.element == 3 &&
             !strcmp(r.got, "-3.5") && strcmp(r.expected, "-3.5") && !r.never_written &&
             log_said(log_file, "wrong result on rank 1: output chunk 2, element 3 is -3.5"));
    cdsl_program_destroy(p);
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 99;
    log_file = tmpfile();
    cdsl_comm_opts o;
    cdsl_comm_opts_init(&o);
    o.backend = CDSL_BACKEND_SIM;
    o.nranks = NRANKS;
    o.log = log_file;
    cdsl_comm *c = NULL;
    if (!log_file || cdsl_comm_create(&o, &c) != CDSL_OK) {
        printf("[FAIL] setting up a %d-rank sim communicator\n", NRANKS);
        return 1;
    }
    for (int i = 1; i < argc; i++)
        collective(c, argv[i]);
    aliasing(c, argv[1]);
    first_wrong(c, argv[1]);
    cdsl_comm_destroy(c);
    fclose(log_file);
    return test_failures != 0;
}
