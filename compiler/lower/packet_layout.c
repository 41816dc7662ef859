/*
 * packet_layout.c - where packets travel: the slots of every (sender, receiver) pair, laid
 * out once for the whole program so that the sim and the emitted CUDA address them alike.
 *
 * Every receiver p holds, for each sender r in rank order, a slot as large as the larger of
 * what r sends p and what p takes from r in one launch (the two agree in a checked program);
 * a pair's k-th packet op of a launch goes after its earlier ones. IrOp.slot of a packet op is
 * that place, in data chunks from the start of p's slots. Data travels as 8-byte words of
 * {4 bytes of data, 4 bytes of flag} (MSCCL++'s LL8 packet), and the two launch parities are
 * interleaved word by word: data word w of parity π is slot word 2w + π. Interleaving keeps
 * the parities apart whatever the chunk size of each launch (halves would move with it), so
 * the slot rule (packet_rules.c) is all the reuse argument needs. The slots take 4 bytes per data
 * byte (the flag doubles a word, the parity doubles again): 4 * T chunks, T the most any rank
 * receives in a launch, in one internal buffer that is the same size on every rank.
 */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

enum { PKT_MAX_CHUNKS = 64 * IR_MAX_CHUNKS };

int ir_packet_buf(const IrProgram *p)
{
    for (int b = 0; b < p->nbufs; b++)
        if (p->bufs[b].internal)
            return b;
    return -1;
}

/* The pairs' slot sizes ([from * n + to], chunks), from what each side moves. */
static void pair_sizes(const IrProgram *p, int *sent, int *taken)
{
    int n = p->nranks;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            const IrOp *op = &p->ranks[r].ops[i];
            if (ir_is_packet_send(op->kind))
                sent[(size_t)r * n + op->peer] += op->src.count;
            else if (ir_is_packet_recv(op->kind))
                taken[(size_t)op->peer * n + r] += op->dst.count;
        }
}

bool ir_packet_layout(IrProgram *p, Diag *d)
{
    int n = p->nranks;
    size_t nn = (size_t)n * (size_t)n;
    int *sent = ARENA_ARRAY(p->arena, int, nn), *taken = ARENA_ARRAY(p->arena, int, nn);
    int *first = ARENA_ARRAY(p->arena, int, nn);
    pair_sizes(p, sent, taken);
    long long most = 0;
    bool any = false;
    for (int to = 0; to < n; to++) {
        long long at = 0;
        for (int from = 0; from < n; from++) {
            size_t k = (size_t)from * n + to;
            first[k] = (int)at;
            at += sent[k] > taken[k] ? sent[k] : taken[k];
            any |= sent[k] || taken[k];
        }
        most = at > most ? at : most;
    }
    bool has_ops = false;
    for (int r = 0; r < n && !has_ops; r++)
        for (int i = 0; i < p->ranks[r].nops && !has_ops; i++)
            has_ops = ir_is_packet(p->ranks[r].ops[i].kind);
    if (!has_ops && !any)
        return true;
    /* The slots are no program buffer (nothing checks them chunk by chunk): they may exceed
       IR_MAX_CHUNKS, as a one-shot allreduce's do at 1024 ranks, within reason. */
    if (4 * most > PKT_MAX_CHUNKS) {
        diag_error(d, p->loc, "packets: a rank receives %lld chunks in one launch; its packet slots would need %lld "
                   "chunks, more than %d", most, 4 * most, PKT_MAX_CHUNKS);
        return false;
    }
    if (p->nbufs == IR_MAX_BUFS) {
        diag_error(d, p->loc, "too many buffers: a program that sends packets has at most %d scratch buffers (the "
                   "packet slots take one of the runtime's)", IR_MAX_BUFS - 3);
        return false;
    }
    /* every pair's ops in program order: each goes after the pair's earlier ones */
    memset(sent, 0, nn * sizeof *sent);
    memset(taken, 0, nn * sizeof *taken);
    for (int r = 0; r < n; r++)
        for (int i = 0; i < p->ranks[r].nops; i++) {
            IrOp *op = &p->ranks[r].ops[i];
            if (ir_is_packet_send(op->kind)) {
                size_t k = (size_t)r * n + op->peer;
                op->slot = first[k] + sent[k];
                sent[k] += op->src.count;
            } else if (ir_is_packet_recv(op->kind)) {
                size_t k = (size_t)op->peer * n + r;
                op->slot = first[k] + taken[k];
                taken[k] += op->dst.count;
            }
        }
    p->bufs[p->nbufs++] = (IrBuf){"packet slots", (int)(4 * most), p->loc, true};
    return true;
}
