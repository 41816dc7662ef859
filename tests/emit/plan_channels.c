/*
 * plan_channels.c - what tests/emit/plan_channels.sh cannot see in the emitted text alone: the
 * counters of an imported plan are sized from the plan (ir_plan_channels, which the runtime
 * allocates by) and the layout of runtime/abi.h holds them.
 *
 *   plan_channels PROGRAM NRANKS K   print "channels K", then for every channel c >= 1 and peer
 *                                    p "chan c p SYNC STATE", the words of abi.h
 * and check, printing [PASS]/[FAIL]: the program's channels per pair are K (the plan was made
 * with K; a .cdsl program has 1); for K channels per pair at NRANKS ranks, every channel word lies
 * after the fixed words and inside CDSL_SYNC_WORDS / CDSL_STATE_WORDS, no two share one, and a
 * program of one channel needs nothing beyond the fixed words.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "cdsl.h"
#include "program.h"

static int failures;

static void expect(int ok, const char *what, const char *why)
{
    printf("[%s] %s%s%s\n", ok ? "PASS" : "FAIL", what, ok ? "" : ": ", ok ? "" : why);
    failures += !ok;
}

/* The channel words of k channels per pair at n ranks: inside the sizes, after the fixed
   words, each its own. */
static void layout(int n, int k)
{
    char what[128], why[160] = "";
    int ok = CDSL_SYNC_WORDS(n, 1) == CDSL_SYNC_FIXED_WORDS(n) && CDSL_STATE_WORDS(n, 1) == CDSL_STATE_FIXED_WORDS(n);
    long words = (long)CDSL_STATE_WORDS(n, k);
    char *seen_sync = calloc((size_t)CDSL_SYNC_WORDS(n, k), 1), *seen_state = calloc((size_t)words, 1);
    for (int c = 1; ok && c < k; c++)
        for (int p = 0; ok && p < n; p++) {
            long s = CDSL_SYNC_CHAN(n, c, p), b = CDSL_STATE_CHAN(n, c, p);
            ok = s >= CDSL_SYNC_FIXED_WORDS(n) && s < CDSL_SYNC_WORDS(n, k) && !seen_sync[s] &&
                 b >= CDSL_STATE_FIXED_WORDS(n) && b < words && !seen_state[b];
            if (!ok)
                snprintf(why, sizeof why, "channel %d from %d: sync word %ld, state word %ld", c, p, s, b);
            else
                seen_sync[s] = seen_state[b] = 1;
        }
    for (int p = 0; ok && p < n; p++)
        ok = CDSL_SYNC_CHAN(n, 0, p) == CDSL_SYNC_PEER + p && CDSL_STATE_CHAN(n, 0, p) == CDSL_STATE_PEER + p;
    free(seen_sync);
    free(seen_state);
    snprintf(what, sizeof what, "abi.h holds %d channel%s per pair at %d ranks after the fixed words, each its own", k,
             k == 1 ? "" : "s", n);
    expect(ok, what, why[0] ? why : "a .cdsl program's layout has channel words, or channel 0 moved");
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    int n = atoi(argv[2]);
    cdsl_compile_opts o = {.path = argv[1], .nranks = n, .stop_after = CDSL_STAGE_CHECK, .color = 0};
    o.diag = fopen("/dev/null", "w");
    cdsl_program *prog = NULL;
    if (cdsl_compile(&o, &prog) != CDSL_OK || !prog) {
        printf("[FAIL] %s compiles\n", argv[1]);
        cdsl_program_destroy(prog);
        return 1;
    }
    const IrProgram *ir = program_ir(prog);
    int k = ir_plan_channels(ir), want = atoi(argv[3]);
    char why[64];
    snprintf(why, sizeof why, "%d, not %d", k, want);
    expect(k == want, "ir_plan_channels is the channels per pair the program's signals and waits use", why);
    printf("channels %d\n", k);
    for (int c = 1; c < k; c++)
        for (int p = 0; p < n; p++)
            printf("chan %d %d %d %d\n", c, p, CDSL_SYNC_CHAN(n, c, p), CDSL_STATE_CHAN(n, c, p));
    layout(n, k);
    layout(8, 64);
    cdsl_program_destroy(prog);
    fclose(o.diag);
    return failures != 0;
}
