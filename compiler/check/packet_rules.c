/*
 * packet_rules.c - the checker's rules for packets (send_packets / recv_packets), beyond what
 * matching, rule 1 and rule 2 already do with them as relaxed signals and waits.
 *
 * Sizes: the k-th recv_packets of rank p from rank r takes exactly what r's k-th
 * send_packets to p sends, chunk for chunk; otherwise the receiver would poll packets that
 * never come, or leave some in the slot, where the next packets of the pair expect their own.
 *
 * Slot reuse (docs/language.md, "Packets"): the runtime keeps, for every (sender, receiver)
 * pair, two slots and alternates them by launch parity; the flag in every packet is the launch
 * number, so a receiver never mistakes last launch's packets for this launch's. What parity
 * cannot prevent is a sender two launches ahead: its launch k+2 writes the slot of launch k,
 * which the receiver may not have read yet. The rule: some event of the receiver p in a launch
 * happens before (in execution, relaxed edges included) the sender r's end of that launch.
 * Then r ends launch k+1 only after p has begun launch k+1, i.e. after p ended launch k and
 * with it every read of launch k's packets; and r begins k+2 only after it ended k+1. A pair
 * where packets go one way and nothing comes back is reported at the first send.
 *
 * The rule reads the EXEC clocks that data_races.c's replay left at every rank's end, so it runs
 * only after a complete replay, when every rank ended (as switch_rounds.c does).
 */
#include "check_text.h"
#include "happens_before.h"

#include <stdint.h>
#include <string.h>

/* The same statement fails for every rank and iteration: say it once per place. */
static bool first_at(Loc *seen, int *nseen, Loc at)
{
    for (int k = 0; k < *nseen; k++)
        if (seen[k].src == at.src && seen[k].line == at.line && seen[k].col == at.col)
            return false;
    seen[(*nseen)++] = at;
    return true;
}

static const char *amount(const IrProgram *p, IrRange r)
{
    return arena_printf(p->arena, "%d chunk%s (%s)", r.count, r.count == 1 ? "" : "s",
                        check_chunks(p, r.buf, r.first, r.count));
}

static bool check_sizes(CheckResult *r, Diag *d)
{
    const IrProgram *p = r->p;
    Arena *a = p->arena;
    Loc seen[HB_MAX_REPORTS];
    int reported = 0;
    for (int q = 0; q < p->nranks && reported < HB_MAX_REPORTS; q++) {
        const IrSeq *s = &p->ranks[q];
        for (int i = 0; i < s->nops && reported < HB_MAX_REPORTS; i++) {
            const IrOp *op = &s->ops[i];
            int j = r->hb.partner[q][i];
            if (!ir_is_packet_recv(op->kind) || j < 0)
                continue;
            const IrOp *send = &p->ranks[op->peer].ops[j];
            if (send->src.count == op->dst.count || !first_at(seen, &reported, op->loc))
                continue;
            int k = r->hb.ordinal[q][i] + 1;
            diag_error(d, op->loc, "packet sizes differ: rank %d's %s recv_packets from rank %d%s takes %s, but "
                       "the send_packets it matches sends %s",
                       q, check_nth(a, k), op->peer, check_ctx(a, op), amount(p, op->dst), amount(p, send->src));
            diag_note(d, send->loc, "rank %d's %s send_packets to rank %d is here%s", op->peer, check_nth(a, k), q,
                      check_ctx(a, send));
        }
    }
    return reported == 0;
}

/* Rank `from` sends packets to `to`: does anything of `to` reach from's end? */
static bool reader_caught_up(CheckResult *r, int from, int to)
{
    HbClock *made;
    HbView end = hb_end_view(&r->replay, from, false, &made);
    bool ok = hb_knows_start(&r->hb, end, to);
    hb_end_view_done(&r->replay, made);
    return ok;
}

static void report_reuse(CheckResult *r, Diag *d, int from, int to, int i)
{
    const IrProgram *p = r->p;
    Arena *a = p->arena;
    const IrOp *op = &p->ranks[from].ops[i];
    diag_error(d, op->loc, "packet slot reused too early: rank %d sends packets to rank %d here%s, but nothing rank %d "
               "does is ordered before rank %d leaves, so rank %d may run two launches ahead and overwrite these "
               "packets before rank %d has read them",
               from, to, check_ctx(a, op), to, from, from, to);
    int j = r->hb.partner[from][i];
    if (j >= 0)
        diag_note(d, p->ranks[to].ops[j].loc, "rank %d receives them here%s", to, check_ctx(a, &p->ranks[to].ops[j]));
    diag_note(d, p->loc, "packets of a pair alternate between two slots by launch parity; rank %d must hear from "
              "rank %d (a signal it waits for, or packets back) before it ends, so that its next launch with "
              "the same parity comes after rank %d has read this one",
              from, to, to);
}

/* ---- A plan's packets (MSCCL++ LL) --------------------------------------------------------
 *
 * The executor's flag is its launch counter (executor.cc:516, :534) and a packet's place is
 * fixed by the plan, so launch k+1's write of a place may land before launch k's read of it:
 * the reader then polls for flag k and finds k+1, forever, or the data is lost. With the double
 * scratch buffer (executor.cc:498) launch k+1 writes the other half, and only launch k+2 comes
 * back: the rule is cdsl's own for its slots above (something of the reader happens before the
 * writer's end). Without it every read of the writer's packets must happen before the writer's
 * end, so that its next launch writes them after they were read. Either way a write that comes
 * after its reader began the launch (writes_heard) is safe: next launch it comes after the
 * reader began that one, so after this launch's read. */

/* Which plan packet writes come after their reader began the launch: heard[w][i] for rank w's
   IR_MPKT_PUT i, when some event of the reader rank reaches it (EXEC). Then the write of the
   next launch comes after the reader began that launch, so after it ended this one and read
   these packets. Ranks heard from are a bitset per unit, carried along the schedule: a signal
   keeps a copy, its wait joins it, a barrier's members join theirs; switch rounds carry nothing
   here, which can only make the rule stricter. */
static bool **writes_heard(CheckResult *r)
{
    const IrProgram *p = r->p;
    const HbFacts *f = &r->hb;
    Arena *a = p->arena;
    size_t words = ((size_t)p->nranks + 63) / 64;
    uint64_t *know = ARENA_ARRAY(a, uint64_t, (size_t)f->nunits * words);
    uint64_t ***sig = ARENA_ARRAY(a, uint64_t **, (size_t)p->nranks);
    bool **heard = ARENA_ARRAY(a, bool *, (size_t)p->nranks);
    memset(know, 0, (size_t)f->nunits * words * sizeof *know);
    for (int q = 0; q < p->nranks; q++) {
        sig[q] = ARENA_ARRAY(a, uint64_t *, (size_t)p->ranks[q].nops + 1);
        memset(sig[q], 0, ((size_t)p->ranks[q].nops + 1) * sizeof *sig[q]);
        heard[q] = ARENA_ARRAY(a, bool, (size_t)p->ranks[q].nops + 1);
        memset(heard[q], 0, (size_t)p->ranks[q].nops + 1);
        for (int u = f->rank_unit[q]; u < f->rank_unit[q + 1]; u++)
            know[(size_t)u * words + (size_t)q / 64] |= 1ull << (q % 64);
    }
    for (size_t k = 0; k < r->run.nsched; k++) {
        HbEv e = r->run.sched[k];
        if (e.idx < 0 || e.idx >= p->ranks[e.rank].nops)
            continue;
        const IrOp *op = &p->ranks[e.rank].ops[e.idx];
        uint64_t *mine = &know[(size_t)hb_unit(f, e.rank, e.idx) * words];
        int j = f->partner[e.rank][e.idx];
        if (ir_is_barrier(op->kind)) { /* the meeting's uses come one after another (sync_schedule.c) */
            size_t end = k;
            uint64_t *all = ARENA_ARRAY(a, uint64_t, words);
            memset(all, 0, words * sizeof *all);
            for (; end < r->run.nsched; end++) {
                HbEv m = r->run.sched[end];
                if (m.idx < 0 || m.idx >= p->ranks[m.rank].nops || m.rank != e.rank ||
                    !ir_is_barrier(p->ranks[m.rank].ops[m.idx].kind) || f->partner[m.rank][m.idx] != j ||
                    f->ordinal[m.rank][m.idx] != f->ordinal[e.rank][e.idx])
                    break;
                for (size_t w = 0; w < words; w++)
                    all[w] |= know[(size_t)hb_unit(f, m.rank, m.idx) * words + w];
            }
            for (size_t m = k; m < end; m++)
                memcpy(&know[(size_t)hb_unit(f, r->run.sched[m].rank, r->run.sched[m].idx) * words], all,
                       words * sizeof *all);
            k = end - 1;
            continue;
        }
        if (ir_is_wait(op->kind) && j >= 0 && sig[op->peer][j])
            for (size_t w = 0; w < words; w++)
                mine[w] |= sig[op->peer][j][w];
        if (ir_is_msc_packet_write(op->kind) && op->peer >= 0)
            heard[e.rank][e.idx] = (mine[op->peer / 64] >> (op->peer % 64)) & 1;
        if (ir_is_signal(op->kind) && j >= 0) {
            sig[e.rank][e.idx] = ARENA_ARRAY(a, uint64_t, words);
            memcpy(sig[e.rank][e.idx], mine, words * sizeof *mine);
        }
    }
    return heard;
}

/* Does the writer's end know op ri of rank `reader` (EXEC, relaxed edges included)? */
static bool end_knows(CheckResult *r, int writer, int reader, int ri)
{
    HbClock *made;
    HbView end = hb_end_view(&r->replay, writer, false, &made);
    bool ok = hb_get(end, hb_unit(&r->hb, reader, ri)) >= hb_time(ri);
    hb_end_view_done(&r->replay, made);
    return ok;
}

static void report_plan_reuse(CheckResult *r, Diag *d, int w, int i, int reader, int ri, bool halves)
{
    const IrProgram *p = r->p;
    Arena *a = p->arena;
    const IrOp *op = &p->ranks[w].ops[i];
    diag_error(d, op->loc, "packet slot reused too early: gpu %d writes packets into gpu %d's scratch here%s, but %s, "
               "so gpu %d's next launch%s may write these packets again before gpu %d has read them (the read then "
               "polls for this launch's flag forever)", w, reader, check_ctx(a, op),
               halves ? arena_printf(a, "nothing gpu %d does is ordered before gpu %d ends", reader, w)
                      : arena_printf(a, "their read is not ordered before gpu %d ends", w),
               w, halves ? " but one" : "", reader);
    diag_note(d, p->ranks[reader].ops[ri].loc, "gpu %d reads them here%s", reader,
              check_ctx(a, &p->ranks[reader].ops[ri]));
    diag_note(d, p->loc, "%s", halves ? "with use_double_scratch_buffer, launches alternate between two scratch "
              "halves by the parity of the executor's flag; the writer must hear from the reader before it ends"
              : "without use_double_scratch_buffer every launch writes the same scratch places; the read must be "
              "ordered before the writer ends (packets or a signal back), or the plan should set "
              "use_double_scratch_buffer");
}

static void plan_packets_check(CheckResult *r, Diag *d)
{
    const IrProgram *p = r->p;
    if (!p->msc_packets)
        return;
    bool halves = p->msc_halves == 2;
    bool **heard = writes_heard(r);
    Loc at[HB_MAX_REPORTS];
    int reported = 0;
    bool *seen = ARENA_ARRAY(p->arena, bool, (size_t)p->nranks);
    for (int w = 0; w < p->nranks && reported < HB_MAX_REPORTS; w++) {
        const IrSeq *s = &p->ranks[w];
        memset(seen, 0, (size_t)p->nranks * sizeof *seen);
        for (int i = 0; i < s->nops && reported < HB_MAX_REPORTS; i++) {
            const IrOp *op = &s->ops[i];
            int ri = r->hb.partner[w][i], reader = op->peer;
            /* the rank's own packets are read before its own end */
            if (!ir_is_msc_packet_write(op->kind) || ri < 0 || reader == w || heard[w][i] || (halves && seen[reader]))
                continue;
            seen[reader] = halves;
            bool ok = halves ? reader_caught_up(r, w, reader) : end_knows(r, w, reader, ri);
            if (!ok && first_at(at, &reported, op->loc))
                report_plan_reuse(r, d, w, i, reader, ri, halves);
        }
    }
}

void packets_check(CheckResult *r, Diag *d)
{
    const IrProgram *p = r->p;
    if (!check_sizes(r, d) || !r->replayed)
        return;
    plan_packets_check(r, d);
    Loc at[HB_MAX_REPORTS];
    int reported = 0;
    bool *seen = ARENA_ARRAY(p->arena, bool, (size_t)p->nranks);
    for (int from = 0; from < p->nranks && reported < HB_MAX_REPORTS; from++) {
        const IrSeq *s = &p->ranks[from];
        memset(seen, 0, (size_t)p->nranks * sizeof *seen);
        for (int i = 0; i < s->nops && reported < HB_MAX_REPORTS; i++) {
            const IrOp *op = &s->ops[i];
            /* each pair once, at its first send */
            if (!ir_is_packet_send(op->kind) || seen[op->peer])
                continue;
            seen[op->peer] = true;
            if (!reader_caught_up(r, from, op->peer) && first_at(at, &reported, op->loc))
                report_reuse(r, d, from, op->peer, i);
        }
    }
}
