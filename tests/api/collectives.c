/*
 * collectives.c - cdsl.h's cdsl_collective_* accessors say what the compiler does: the chunk
 * counts they give are the buffers every program of that collective gets, a collective without
 * an in-place form refuses cdsl_compile_opts.in_place, and the postcondition they name is what
 * cdsl_check compares (a gather's or a sum's outputs verify after a sim run; a wrong element is
 * found). A collective with a root (broadcast, reduce) is compiled for the last rank as root:
 * the root is the one asked for, its output is the one compared, and a reduce's other ranks'
 * outputs are not compared. Names and indices go both ways; bad indices and names get the
 * documented "none".
 * The bus-bandwidth factors and in-place forms are compared with nccl-tests' and NCCL's.
 *
 *     collectives PROGRAM.cdsl...      (each compiled at 2, 3 and 4 ranks)
 *
 * Prints "[PASS] what" or "[FAIL] what: why".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

/* One case: "[PASS] what", or "[FAIL] what" with why. */
static void expect(int ok, const char *what, const char *why)
{
    CASE_GOT(what, ok, why);
}

static void names_and_indices(void)
{
    int n = cdsl_collective_count(), round_trip = n > 0;
    for (int i = 0; i < n; i++)
        round_trip &= cdsl_collective_name(i) && cdsl_collective_find(cdsl_collective_name(i)) == i;
    expect(round_trip, "every collective's name finds its index", "a name that finds another index");
    expect(!cdsl_collective_name(-1) && !cdsl_collective_name(n) && cdsl_collective_find("no such") == -1 &&
               cdsl_collective_find(NULL) == -1,
           "unknown indices and names: NULL and -1", "a collective where there is none");
    long long in = 7, out = 7;
    expect(cdsl_collective_chunks(n, 2, 1, &in, &out) == CDSL_ERR_USAGE &&
               cdsl_collective_chunks(0, 0, 1, &in, &out) == CDSL_ERR_USAGE &&
               cdsl_collective_chunks(0, 2, 0, &in, &out) == CDSL_ERR_USAGE && in == 7 && out == 7 &&
               cdsl_collective_chunks(0, 2, 1, NULL, NULL) == CDSL_OK,
           "cdsl_collective_chunks refuses a bad index, nranks or chunks, and takes NULL pointers",
           "accepted, or wrote the outputs");
    expect(cdsl_collective_busbw_factor(n, 4) == 0 && cdsl_collective_postcondition(-1) == CDSL_POST_NONE &&
               cdsl_collective_in_place(n) == 0,
           "an unknown index has factor 0, no postcondition, no in-place form", "it has one");
}

/* What NCCL and nccl-tests say, which the table must agree with: the bus-bandwidth factors of
 * nccl-tests' doc/PERFORMANCE.md, and which collectives have NCCL's in-place form. */
static void as_nccl_says(void)
{
    static const struct {
        const char *name;
        double factor_at_4;
        int in_place;
    } want[] = {{"allgather", 0.75, 1}, {"reducescatter", 0.75, 1}, {"allreduce", 1.5, 1}, {"barrier", 0, 1},
                {"custom", 1, 0}, {"alltoall", 0.75, 1}, {"broadcast", 1, 1}, {"reduce", 1, 1}};
    char what[128], why[128];
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        int c = cdsl_collective_find(want[i].name);
        double f = cdsl_collective_busbw_factor(c, 4);
        snprintf(what, sizeof what, "%s: bus-bandwidth factor %g at 4 ranks, %s", want[i].name, want[i].factor_at_4,
                 want[i].in_place ? "compiles in place" : "no in-place form");
        snprintf(why, sizeof why, "index %d, factor %g, in place %d", c, f, cdsl_collective_in_place(c));
        expect(c >= 0 && f == want[i].factor_at_4 && cdsl_collective_in_place(c) == want[i].in_place, what, why);
    }
}

/* A program with a root is compiled for the last rank (not the default 0). */
static cdsl_program *compile_quiet(const char *path, int nranks, int in_place, FILE *quiet)
{
    cdsl_compile_opts o = compile_opts(path, nranks);
    char root[32];
    const char *defines[] = {root};
    snprintf(root, sizeof root, "root=%d", nranks - 1);
    cdsl_program *head = compile_try(&o); /* its collective, to know whether it has a root */
    if (head && cdsl_collective_has_root(cdsl_collective_find(cdsl_program_collective(head)))) {
        o.defines = defines;
        o.ndefines = 1;
    }
    cdsl_program_destroy(head);
    o.in_place = in_place;
    o.diag = quiet;
    return compile_try(&o);
}

/* One sim run of p, then cdsl_check; with `spoil` >= 0, one output element of that rank is
   changed first. */
static int run_checked(cdsl_program *p, int spoil, unsigned long long *wrong)
{
    cdsl_comm_opts o;
    cdsl_comm_opts_init(&o);
    o.backend = CDSL_BACKEND_SIM;
    o.nranks = cdsl_program_nranks(p);
    o.log = fopen("/dev/null", "w");
    cdsl_comm *c = NULL;
    int rc = cdsl_comm_create(&o, &c);
    if (!rc)
        rc = cdsl_comm_alloc(c, p, 64);
    if (!rc)
        rc = cdsl_fill(c, p, CDSL_F32);
    if (!rc)
        rc = cdsl_run(c, p, CDSL_F32, 1, NULL);
    if (!rc && spoil >= 0) {
        float bad = -12345.5f;
        rc = cdsl_comm_write(c, spoil, CDSL_BUF_OUTPUT, &bad, sizeof bad);
    }
    if (!rc)
        rc = cdsl_check(c, p, CDSL_F32, wrong);
    cdsl_comm_destroy(c);
    if (o.log)
        fclose(o.log);
    return rc;
}

/* The table's facts about p's collective at n ranks hold for p; why: the first that does not. */
static int program_at(const char *path, int n, FILE *quiet, char *why, size_t size)
{
    cdsl_program *p = compile_quiet(path, n, 0, quiet);
    if (!p) {
        snprintf(why, size, "it does not compile at %d ranks", n);
        return 0;
    }
    int coll = cdsl_collective_find(cdsl_program_collective(p)), ok = 1;
    long long in = -2, out = -2;
    cdsl_collective_chunks(coll, n, cdsl_program_chunks(p), &in, &out);
    int got_in = cdsl_program_buf_chunks(p, CDSL_BUF_INPUT), got_out = cdsl_program_buf_chunks(p, CDSL_BUF_OUTPUT);
    if (coll < 0 || (in >= 0 && in != got_in) || (out >= 0 && out != got_out) || (in < 0) != (out < 0)) {
        snprintf(why, size, "at %d ranks the table says %lld and %lld chunks, the program has %d and %d", n, in, out,
                 got_in, got_out);
        ok = 0;
    }
    cdsl_program *ip = compile_quiet(path, n, 1, quiet);
    if (ok && !cdsl_collective_in_place(coll) && ip) {
        snprintf(why, size, "no in-place form, but it compiled in place at %d ranks", n);
        ok = 0;
    }
    cdsl_program_destroy(ip);
    int root = cdsl_program_root(p), rooted = cdsl_collective_has_root(coll);
    if (ok && root != (rooted ? n - 1 : -1)) {
        snprintf(why, size, "compiled for root %d at %d ranks, cdsl_program_root says %d", rooted ? n - 1 : -1, n, root);
        ok = 0;
    }
    cdsl_postcondition post = cdsl_collective_postcondition(coll);
    if (ok && n == 3 && post == CDSL_POST_REDUCE) {
        unsigned long long other = 1;
        int rc = run_checked(p, 0, &other);
        if (rc != CDSL_OK || other != 0) {
            snprintf(why, size, "a reduce's non-root output changed: status %d with %llu wrong", rc, other);
            ok = 0;
        }
    }
    if (ok && n == 3 && post != CDSL_POST_NONE && post != CDSL_POST_BARRIER) {
        unsigned long long right = 1, spoilt = 0;
        int rc = run_checked(p, -1, &right), rc2 = run_checked(p, rooted ? root : 1, &spoilt);
        if (rc != CDSL_OK || right != 0 || rc2 != CDSL_ERR_VERIFY || spoilt != 1) {
            snprintf(why, size, "a run: status %d with %llu wrong; one element changed: status %d with %llu wrong", rc,
                     right, rc2, spoilt);
            ok = 0;
        }
    }
    cdsl_program_destroy(p);
    return ok;
}

static void program(const char *path, FILE *quiet)
{
    char what[512], why[256] = "";
    int ok = 1;
    for (int n = 2; n <= 4 && ok; n++)
        ok = program_at(path, n, quiet, why, sizeof why);
    snprintf(what, sizeof what, "%s (2, 3, 4 ranks): the chunk counts are its buffers, in place as the table says, "
             "its result compared", path);
    expect(ok, what, why);
}

int main(int argc, char **argv)
{
    FILE *quiet = fopen("/dev/null", "w");
    names_and_indices();
    as_nccl_says();
    for (int i = 1; i < argc; i++)
        program(argv[i], quiet);
    if (quiet)
        fclose(quiet);
    return test_failures != 0;
}
