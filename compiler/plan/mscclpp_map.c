/*
 * mscclpp_map.c - a decoded plan op to IR ops, with rule 3 (bounds and shapes) checked here,
 * as eval.c checks it for .cdsl programs.
 *
 * What each op becomes (docs/mscclpp.md §3.2 has the table and why each is exact):
 *   nop -> IR_NOP; barrier -> IR_BARRIER;
 *   signal, rlxsignal, wait, rlxwait on memory channels -> one IR_SIGNAL/IR_WAIT per channel,
 *     on the channel's pairing ordinal, done by the block's thread j for the j-th channel;
 *   gsignal, grlxsignal, gwait, grlxwait (MSCCL++ PR #843) -> IR_SW_SIGNAL/IR_SW_WAIT;
 *   put, pws, pwsf (memory: the executor puts and does not signal) -> one IR_PUT per destination;
 *   on port channels, put, pws, pwsf, signal, wait and flush -> a block's requests to its proxy
 *     and the proxy's puts and signals (port_proxy.h);
 *   get -> one IR_GET per source, with the executor's offsets: it writes the destination's buffer at
 *     the source's index and reads the peer's at the destination's (execution_kernel.hpp handleGet);
 *   copy -> IR_COPY; re, rre -> IR_REDUCE chains (rre's sources on peers); res, rres -> the
 *     same, then one IR_PUT of the sum per remote destination;
 *   glres -> IR_SW_REDUCE_STORE; gstore -> IR_SW_STORE;
 *   the packet ops -> IR_MPKT_PUT (a write of packets), IR_MPKT_READ and IR_MPKT_REDUCE (reads
 *     that poll them), on the plan's packet buffer, paired by address by mscclpp_packets.c;
 *   sem_release, sem_acquire -> one IR_SEM_RELEASE/IR_SEM_ACQUIRE per semaphore id, the rank's own.
 * A reduction of n sources is n - 1 element-wise IR_REDUCEs into the destination, the first
 * reading the source the destination coincides with, if any (so none reads a chunk already
 * overwritten). Every piece of one plan op has the op's position and a context naming the
 * thread block and the op's index, which every message about it shows.
 *
 * Operands are in plan chunks, scaled by m->scale; with tbg_info the block does slice tbg_id of
 * tbg_size of each operand (each sliced by its own size, as the executor's calcOffset does),
 * of the size of the op's governing operand (the executor's: s0 for copies and reductions,
 * each destination for puts, each source for gets).
 */
#include "mscclpp_map.h"

#include <string.h>

typedef struct Map {
    Msc *m;
    const MscOp *op;
    IrOp base;          /* tb, loc, ctx */
    const char *ctx_named; /* the context of a piece whose IR name is not the op's own */
    bool failed;
} Map;

static void fail(Map *x, const json_t *at, const char *msg)
{
    if (!x->failed)
        msc_error(x->m, at ? at : x->op->name_at, "%s (gpu %d, threadblock %d, op %d)", msg, x->m->rank, x->m->tb,
                  x->m->k);
    x->failed = true;
}

static void refuse(Map *x, const char *why)
{
    if (!x->failed)
        msc_unsupported(x->m, x->op, "%s", why);
    x->failed = true;
}

static const char *buf_word(char t)
{
    return t == 'i' ? "input (i)" : t == 'o' ? "output (o)" : "scratch (s)";
}

/* The IR range of operand o, sliced for the op's thread-block group, `size` plan chunks long
   (the op's governing size). */
static IrRange range(Map *x, const MscOperand *o, long long size)
{
    Msc *m = x->m;
    IrRange r = {-1, 0, 0};
    long long L = m->scale, g = x->op->tbg_size, have = msc_buf_chunks(m, o->type);
    long long first = o->index * L + x->op->tbg_id * (o->size * L / g), count = size * L / g;
    if (o->index + o->size > have || (first + count + L - 1) / L > have) {
        long long hi = o->index + (o->size > size ? o->size : size);
        const char *which = hi - o->index == 1 ? arena_printf(m->a, "chunk %lld", o->index)
                                               : arena_printf(m->a, "chunks %lld to %lld", o->index, hi - 1);
        fail(x, o->at, arena_printf(m->a, "%s of the %s %s outside it: it has %lld chunk%s", which, buf_word(o->type),
                                    hi - o->index == 1 ? "is" : "are", have, have == 1 ? "" : "s"));
        return r;
    }
    const CollInfo *ci = coll_info(m->p->coll);
    if (o->type == 's') {
        r.buf = 2;
    } else if (m->inplace && ci->in_place == COLL_IN_PLACE_NCCL) {
        /* in place, operands name the holder only: the aliased buffer is its part of the holder
           (allgather's `i` in `o`, reducescatter's `o` in `i`), the rank's own part */
        int buf = o->type == 'i' ? IR_INPUT : IR_OUTPUT;
        r.buf = ci->holder;
        if (buf == ci->aliased && coll_alias_per_rank(ci, m->p->chunks)) {
            if (o->where == MSC_MULTICAST) {
                const char *part = m->p->bufs[buf].name;
                refuse(x, arena_printf(m->a, "a multicast operand on the %s of an in-place %s: the %s is at another "
                                       "place of the %s on each rank", part, ci->name, part,
                                       m->p->bufs[ci->holder].name));
                return r;
            }
            first += ci->first(o->rank, m->p->chunks);
        }
    } else {
        r.buf = o->type == 'o' ? IR_OUTPUT : IR_INPUT;
    }
    r.first = (int)first;
    r.count = (int)count;
    return r;
}

/* A piece of the plan op: its context names the op when the piece's own name differs (the
   put of a "res"), so that messages say both; a relaxed peer signal or wait (rlxsignal) goes
   by the piece's name too. */
static void emit(Map *x, IrOp op)
{
    const IrOpInfo *in = ir_op_info(op.kind);
    bool relaxed_form = (ir_is_signal(op.kind) || ir_is_wait(op.kind)) && in->msc_alt &&
                        !strcmp(in->msc_alt, x->op->name);
    if (strcmp(in->name, x->op->name) && !relaxed_form)
        op.ctx = x->ctx_named;
    if (!x->failed)
        ir_append(x->m->p, x->m->rank, op);
}

static IrOp data_op(Map *x, IrKind k, int peer, IrRange dst, IrRange src)
{
    IrOp op = x->base;
    op.kind = k;
    op.peer = peer;
    op.dst = dst;
    op.src = src;
    return op;
}

/* ---- Rule 3 --------------------------------------------------------------------------------- */

static bool overlaps(IrRange a, IrRange b)
{
    return a.buf >= 0 && a.buf == b.buf && a.first < b.first + b.count && b.first < a.first + a.count;
}

static bool same(IrRange a, IrRange b)
{
    return a.buf == b.buf && a.first == b.first && a.count == b.count;
}

static const char *ir_chunks(const Msc *m, IrRange r)
{
    char t[IR_CHUNKS_TEXT];
    return arena_printf(m->a, "%s%s", m->p->bufs[r.buf].name, ir_chunks_text(t, r.first, r.count));
}

/* A write into the caller's send buffer: an error in a .cdsl program (eval.c), but MSCCL++'s
   contract allows it, so an out-of-place plan gets a warning that names the two contracts. In
   place the caller passes one buffer: `i` reaches here only where the input holds the output
   (reducescatter), whose part of it is the output; a collective with no in-place layout
   cannot say where input and output meet. */
static void writes_input(Map *x, const IrOp *op, IrOn dst_on, const json_t *dst_at)
{
    Msc *m = x->m;
    const CollInfo *ci = coll_info(m->p->coll);
    if (m->inplace && ci->in_place != COLL_IN_PLACE_NCCL) {
        refuse(x, arena_printf(m->a, "in place, the caller passes one buffer as input and output "
                               "(CollectiveRequest::bufferMode, src/core/algorithm.cc:14), so this %s writes the "
                               "output, but cdsl has no in-place layout for %s to say where", x->op->name,
                               json_string_value(json_object_get(json_pos_root(m->jp), "collective"))));
        return;
    }
    if (m->inplace && dst_on != ON_ALL) {
        int owner = dst_on == ON_PEER ? op->peer : m->rank, first = (int)ci->first(owner, m->p->chunks);
        if (op->dst.first >= first && op->dst.first + op->dst.count <= first + m->p->bufs[IR_OUTPUT].nchunks)
            return;
    }
    const char *whose = dst_on == ON_PEER ? arena_printf(m->a, "gpu %d", op->peer)
                        : dst_on == ON_ALL ? "every gpu"
                                           : "its gpu";
    diag_warning(m->d, DIAG_W_WRITES_INPUT, json_pos_loc(m->jp, dst_at ? dst_at : x->op->name_at),
                 "this %s writes the input (i) of %s%s, the caller's send buffer (gpu %d, threadblock %d, op %d): "
                 "MSCCL++'s Executor::execute takes it as non-const void *sendbuff (include/mscclpp/executor.hpp:87), "
                 "NCCL's contract keeps it const, so a caller that reuses its input after the call, as NCCL's "
                 "callers may, sees it changed", x->op->name, whose, m->inplace ? " outside its output" : "", m->rank,
                 m->tb, m->k);
}

/* What eval.c refuses in a .cdsl program: a source that overlaps the destination otherwise
   than exactly (a copy not at all); and writing the caller's input, which a plan may. */
static void rule3(Map *x, const IrOp *op, const json_t *dst_at)
{
    Msc *m = x->m;
    if (x->failed)
        return;
    IrEffects fx = ir_effects(op); /* dst, then the sources */
    IrOn dst_on = fx.acc[0].on;
    if (op->dst.buf == IR_INPUT)
        writes_input(x, op, dst_on, dst_at);
    /* the sources that are the rank's own memory, when the destination is too */
    bool copy = ir_is_local_copy(op->kind);
    for (int k = 1; k < fx.n && dst_on != ON_PEER; k++) {
        IrRange src = fx.acc[k].range;
        if (fx.acc[k].on != ON_PEER && overlaps(op->dst, src) && (copy || !same(op->dst, src))) {
            fail(x, dst_at, arena_printf(m->a, "the %s's source %s and destination %s overlap%s", x->op->name,
                                         ir_chunks(m, src), ir_chunks(m, op->dst),
                                         copy ? "" : " otherwise than exactly, element for element"));
            return;
        }
    }
}

/* ---- Operand shapes ------------------------------------------------------------------------- */

static bool need(Map *x, int have, int want, bool src)
{
    if (have >= want)
        return true;
    fail(x, x->op->at, arena_printf(x->m->a, "a %s needs %s%d %s operand%s", x->op->name, want > 1 ? "at least " : "",
                                    want, src ? "source (src_buff)" : "destination (dst_buff)", want == 1 ? "" : "s"));
    return false;
}

static bool is(Map *x, const MscOperand *o, MscWhere w)
{
    static const char *const words[] = {"local ({\"type\": ...})", "remote ({\"buffer_id\": ...})",
                                        "multicast ({\"switch_channel_id\": ...})"};
    if (o->where == w)
        return true;
    fail(x, o->at, arena_printf(x->m->a, "this operand of a %s must be %s", x->op->name, words[w]));
    return false;
}

static bool no_extra(Map *x, int have, int used, bool src)
{
    if (have <= used)
        return true;
    refuse(x, arena_printf(x->m->a, "its %s has %d operands and the executor uses only %d of them", src ? "src_buff"
                           : "dst_buff", have, used));
    return false;
}

/* ---- The ops ------------------------------------------------------------------------------------ */

/* signal, rlxsignal, wait, rlxwait on memory channels */
static void map_sync(Map *x)
{
    const MscOp *op = x->op;
    bool signal = op->ir->sync == SYNC_SIGNAL;
    if (op->chan != MSC_MEMORY) {
        refuse(x, arena_printf(x->m->a, "the executor does nothing for a %s on a %s channel, so a %s missing there "
                               "would go unseen", signal ? "signal" : "wait", msc_chan_name(op->chan),
                               signal ? "release" : "wait"));
        return;
    }
    if (!op->nchans)
        fail(x, op->at, "it names no channel");
    for (int j = 0; j < op->nchans; j++) {
        const MscChannel *c = &x->m->gpu[x->m->rank].ch[MSC_MEMORY][op->chans[j]];
        IrOp o = data_op(x, op->ir->kind, c->peer, (IrRange){-1, 0, 0}, (IrRange){-1, 0, 0});
        o.chan = c->pair;
        o.relaxed = op->alt;
        o.thread = (int16_t)j;
        emit(x, o);
    }
}

/* gsignal/gwait: cdsl's switch has one arrival counter, kept by one block per rank. */
static void map_switch_sync(Map *x)
{
    Msc *m = x->m;
    int group = m->gpu[m->rank].ch[MSC_SWITCH][x->op->chans[0]].group;
    if (m->sw_barrier >= 0 && m->sw_barrier != group) {
        refuse(x, "switch signals and waits on a second switch channel: cdsl's switch barrier is one counter");
        return;
    }
    if (m->sw_unit[m->rank] >= 0 && m->sw_unit[m->rank] != m->tb) {
        refuse(x, arena_printf(m->a, "switch signals and waits from threadblocks %d and %d of one gpu: the counter "
                               "counts every arrival together, so a wait could pass on its own gpu's arrivals",
                               m->sw_unit[m->rank], m->tb));
        return;
    }
    m->sw_barrier = group;
    m->sw_unit[m->rank] = m->tb;
    IrOp o = data_op(x, x->op->ir->kind, -1, (IrRange){-1, 0, 0}, (IrRange){-1, 0, 0});
    o.relaxed = x->op->alt;
    emit(x, o);
}

/* sem_release, sem_acquire: thread j releases or acquires semaphore_ids[j] of its own gpu, the
   release a fetch-add of +1 with release order, the acquire a fetch-add of -1 with acquire order
   that, when it found no unit left, spins with acquire loads until a release has put one back
   (concurrency_device.hpp DeviceSemaphore). With one acquiring block the k-th acquire passes
   once k releases were made; with one releasing block too, that is the k-th release in program
   order, and the IR pairs them so: a signal and wait of the pair (rank, rank), channel = id. */
static void map_semaphore(Map *x)
{
    Msc *m = x->m;
    MscGpu *g = &m->gpu[m->rank];
    bool release = x->op->ir->sync == SYNC_SIGNAL;
    for (int j = 0; j < x->op->nsems && !x->failed; j++) {
        int id = x->op->sems[j];
        int *user = release ? &g->sem_release_tb[id] : &g->sem_acquire_tb[id];
        if (*user >= 0 && *user != m->tb) {
            refuse(x, arena_printf(m->a, "semaphore %d of gpu %d is %s by threadblocks %d and %d: the executor "
                                   "counts them on one value, so which %s a threadblock's %s serves depends on "
                                   "timing", id, m->rank, release ? "released" : "acquired", *user, m->tb,
                                   release ? "sem_acquire" : "sem_release", x->op->name));
            return;
        }
        *user = m->tb;
        IrOp o = data_op(x, x->op->ir->kind, m->rank, (IrRange){-1, 0, 0}, (IrRange){-1, 0, 0});
        o.chan = (int16_t)id;
        o.thread = (int16_t)j;
        emit(x, o);
    }
}

/* Destination i of a put-like op (put, pws, pwsf, ppkt) and its source: the executor sends
   destination i from source i, a local buffer, all sources in the first's buffer. */
static bool put_pair_ok(Map *x, int i)
{
    const MscOp *op = x->op;
    if (i >= op->nsrc) {
        refuse(x, "its src_buff is shorter than its dst_buff, and the executor sends nothing for the destinations "
                  "without a source");
        return false;
    }
    if (!is(x, &op->dst[i], MSC_REMOTE) || !is(x, &op->src[i], MSC_LOCAL))
        return false;
    if (op->src[i].type != op->src[0].type) {
        refuse(x, "its sources are in different buffers, and the executor reads every source from the first's");
        return false;
    }
    return true;
}

static void map_put(Map *x)
{
    const MscOp *op = x->op;
    if (!need(x, op->ndst, 1, false))
        return;
    for (int i = 0; i < op->ndst && !x->failed; i++) {
        if (!put_pair_ok(x, i))
            return;
        IrOp o = data_op(x, op->ir->kind, op->dst[i].rank, range(x, &op->dst[i], op->dst[i].size),
                         range(x, &op->src[i], op->dst[i].size));
        rule3(x, &o, op->dst[i].at);
        emit(x, o);
    }
    no_extra(x, op->nsrc, op->ndst, true);
}

static void map_get(Map *x)
{
    const MscOp *op = x->op;
    if (op->chan != MSC_MEMORY) {
        refuse(x, "a get reads through a memory channel's remote buffer; it has none here");
        return;
    }
    if (!need(x, op->nsrc, 1, true))
        return;
    for (int i = 0; i < op->nsrc && !x->failed; i++) {
        if (!need(x, op->ndst, i + 1, false) || !is(x, &op->src[i], MSC_REMOTE) || !is(x, &op->dst[i], MSC_LOCAL))
            return;
        /* The executor's offsets, swapped: the local buffer of dst's type at src's (sliced) offset,
           from the peer's buffer of src's type at dst's (sliced) offset, src's size. */
        MscOperand to = op->dst[i], from = op->src[i];
        to.index = op->src[i].index, to.size = op->src[i].size;
        from.index = op->dst[i].index, from.size = op->dst[i].size;
        IrOp o = data_op(x, op->ir->kind, op->src[i].rank, range(x, &to, op->src[i].size),
                         range(x, &from, op->src[i].size));
        rule3(x, &o, op->dst[i].at);
        emit(x, o);
    }
    no_extra(x, op->ndst, op->nsrc, false);
}

static void map_copy(Map *x)
{
    const MscOp *op = x->op;
    if (!need(x, op->nsrc, 1, true) || !need(x, op->ndst, 1, false) || !is(x, &op->src[0], MSC_LOCAL) ||
        !is(x, &op->dst[0], MSC_LOCAL) || !no_extra(x, op->nsrc, 1, true) || !no_extra(x, op->ndst, 1, false))
        return;
    IrOp o = data_op(x, op->ir->kind, -1, range(x, &op->dst[0], op->src[0].size),
                     range(x, &op->src[0], op->src[0].size));
    rule3(x, &o, op->dst[0].at);
    emit(x, o);
}

/* re, res, rre, rres: d0 = s0 + the other sources (local, or on peers for rre/rres), then for
   res/rres the sum into each remote destination. */
static void map_reduce(Map *x)
{
    const MscOp *op = x->op;
    bool remote_src = op->alt, send = op->send;
    if (!need(x, op->nsrc, 1, true) || !need(x, op->ndst, send ? 2 : 1, false) || !is(x, &op->src[0], MSC_LOCAL) ||
        !is(x, &op->dst[0], MSC_LOCAL) || (!send && !no_extra(x, op->ndst, 1, false)))
        return;
    long long size = op->src[0].size;
    IrRange d0 = range(x, &op->dst[0], size), src[MSC_MAX_OPERANDS];
    int peer[MSC_MAX_OPERANDS], first = 0;
    for (int k = 0; k < op->nsrc && !x->failed; k++) {
        if (k > 0 && !is(x, &op->src[k], remote_src ? MSC_REMOTE : MSC_LOCAL))
            return;
        src[k] = range(x, &op->src[k], size);
        peer[k] = k > 0 && remote_src ? op->src[k].rank : -1;
        if (peer[k] < 0 && same(src[k], d0))
            first = k; /* in place: read the destination before anything overwrites it */
    }
    if (x->failed)
        return;
    if (op->nsrc == 1 && !same(src[0], d0)) {
        IrOp o = data_op(x, IR_COPY, -1, d0, src[0]);
        rule3(x, &o, op->dst[0].at);
        emit(x, o);
    }
    IrRange acc = src[first];
    for (int k = 0; k < op->nsrc && !x->failed; k++) {
        if (k == first)
            continue;
        IrOp o = data_op(x, op->ir->kind, peer[k], d0, acc);
        o.src2 = src[k];
        rule3(x, &o, op->dst[0].at);
        emit(x, o);
        acc = d0;
    }
    for (int k = 1; send && k < op->ndst && !x->failed; k++) {
        if (!is(x, &op->dst[k], MSC_REMOTE))
            return;
        IrOp o = data_op(x, IR_PUT, op->dst[k].rank, range(x, &op->dst[k], size), d0);
        rule3(x, &o, op->dst[k].at);
        emit(x, o);
    }
}

/* glres, gstore */
static void map_switch_data(Map *x)
{
    const MscOp *op = x->op;
    bool reduce = op->ir->src.on == ON_ALL;
    if (!need(x, op->nsrc, 1, true) || !need(x, op->ndst, 1, false) ||
        !is(x, &op->src[0], reduce ? MSC_MULTICAST : MSC_LOCAL) || !is(x, &op->dst[0], MSC_MULTICAST) ||
        !no_extra(x, op->nsrc, 1, true) || !no_extra(x, op->ndst, 1, false))
        return;
    IrOp o = data_op(x, op->ir->kind, -1, range(x, &op->dst[0], op->src[0].size),
                     range(x, &op->src[0], op->src[0].size));
    rule3(x, &o, op->dst[0].at);
    emit(x, o);
}

/* ---- Packets (docs/mscclpp.md, "Packets") ---------------------------------------------------- */

/* The plan's packet buffer (IrProgram.msc_packets), made at the first packet op: the scratch
   the executor allocates, seen as packets: twice the scratch chunks with protocol LL (data and
   flag words, execution_plan.cc:206), and twice again with the double scratch buffer, whose
   halves the launch's flag parity picks (:212). */
static int packet_buf(Map *x)
{
    Msc *m = x->m;
    IrProgram *p = m->p;
    if (m->pkt_buf >= 0)
        return m->pkt_buf;
    if (p->nbufs < 3 || p->nbufs == IR_MAX_BUFS) {
        fail(x, x->op->at, "a packet op needs the plan's scratch buffer, and the plan has no scratch chunks");
        return -1;
    }
    p->msc_halves = m->double_scratch ? 2 : 1;
    p->bufs[p->nbufs] = (IrBuf){"packets", p->bufs[2].nchunks * (m->ll ? 2 : 1) * p->msc_halves, p->loc, true};
    p->msc_packets = p->nbufs;
    return m->pkt_buf = p->nbufs++;
}

/* Operand o as packets: its chunks of the scratch, on the packet buffer (in data chunks). The
   executor puts every packet into a scratch buffer, whatever the operand's type says. */
static IrRange packets_at(Map *x, const MscOperand *o, long long size)
{
    if (o->type != 's') {
        fail(x, o->at, arena_printf(x->m->a, "this %s keeps packets in the scratch buffer (s), and this operand is "
                                    "the %s", x->op->name, buf_word(o->type)));
        return (IrRange){-1, 0, 0};
    }
    IrRange r = range(x, o, size);
    int b = packet_buf(x), plain = x->m->p->bufs[2].nchunks;
    if (!x->m->ll && r.buf >= 0 && 2LL * (r.first + r.count) > plain)
        fail(x, o->at, arena_printf(x->m->a, "packets past the end of the scratch: the plan's protocol is not \"LL\", so "
                                    "the executor sizes the scratch for plain data (execution_plan.cc:206), and these "
                                    "packets, at twice their offset, reach %lld chunks into a scratch of %d",
                                    (2LL * (r.first + r.count) + x->m->scale - 1) / x->m->scale,
                                    plain / x->m->scale));
    r.buf = b;
    return r;
}

static IrOp packet_op(Map *x, IrKind k, int peer, IrRange dst, IrRange src)
{
    IrOp o = data_op(x, k, peer, dst, src);
    o.chan = IR_MPKT_CHAN;
    o.match = -2; /* msc_packets_pair pairs it */
    return o;
}

/* Poll packets in place: what rppkt and gstorepkt do before they send them on. */
static void poll_packets(Map *x, IrRange at)
{
    emit(x, packet_op(x, IR_MPKT_READ, -1, at, at));
}

/* ppkt (execution_kernel.hpp:259): each source into packets at each peer's scratch. */
static void map_ppkt(Map *x)
{
    const MscOp *op = x->op;
    if (!need(x, op->ndst, 1, false))
        return;
    for (int i = 0; i < op->ndst && !x->failed; i++) {
        if (!put_pair_ok(x, i))
            return;
        long long size = op->src[i].size;
        IrOp o = packet_op(x, IR_MPKT_PUT, op->dst[i].rank, packets_at(x, &op->dst[i], size), range(x, &op->src[i], size));
        emit(x, o);
    }
    no_extra(x, op->nsrc, op->ndst, true);
}

/* cpkt (:433): a source into packets at the rank's own scratch. */
static void map_cpkt(Map *x)
{
    const MscOp *op = x->op;
    if (!need(x, op->nsrc, 1, true) || !need(x, op->ndst, 1, false) || !is(x, &op->src[0], MSC_LOCAL) ||
        !is(x, &op->dst[0], MSC_LOCAL) || !no_extra(x, op->nsrc, 1, true) || !no_extra(x, op->ndst, 1, false))
        return;
    long long size = op->src[0].size;
    emit(x, packet_op(x, IR_MPKT_PUT, x->m->rank, packets_at(x, &op->dst[0], size), range(x, &op->src[0], size)));
}

/* upkt (:417): packets of the rank's scratch, once this launch's, into a destination. */
static void map_upkt(Map *x)
{
    const MscOp *op = x->op;
    if (!need(x, op->nsrc, 1, true) || !need(x, op->ndst, 1, false) || !is(x, &op->src[0], MSC_LOCAL) ||
        !is(x, &op->dst[0], MSC_LOCAL) || !no_extra(x, op->nsrc, 1, true) || !no_extra(x, op->ndst, 1, false))
        return;
    long long size = op->src[0].size;
    IrOp o = packet_op(x, IR_MPKT_READ, -1, range(x, &op->dst[0], size), packets_at(x, &op->src[0], size));
    rule3(x, &o, op->dst[0].at);
    emit(x, o);
}

/* rppkt (:293): packets of the rank's scratch, once this launch's, on to each peer's scratch. */
static void map_rppkt(Map *x)
{
    const MscOp *op = x->op;
    if (!need(x, op->nsrc, 1, true) || !need(x, op->ndst, 1, false) || !is(x, &op->src[0], MSC_LOCAL) ||
        !no_extra(x, op->nsrc, 1, true))
        return;
    long long size = op->src[0].size;
    IrRange at = packets_at(x, &op->src[0], size);
    poll_packets(x, at);
    for (int i = 0; i < op->ndst && !x->failed; i++)
        if (is(x, &op->dst[i], MSC_REMOTE))
            emit(x, packet_op(x, IR_MPKT_PUT, op->dst[i].rank, packets_at(x, &op->dst[i], size), at));
}

/* gstorepkt (:624): packets of the rank's scratch, once this launch's, through the switch into
   every rank's scratch; a multimem store is a store to each rank, one packet put per rank here. */
static void map_gstorepkt(Map *x)
{
    const MscOp *op = x->op;
    if (!need(x, op->nsrc, 1, true) || !need(x, op->ndst, 1, false) || !is(x, &op->src[0], MSC_LOCAL) ||
        !is(x, &op->dst[0], MSC_MULTICAST) || !no_extra(x, op->nsrc, 1, true) || !no_extra(x, op->ndst, 1, false))
        return;
    long long size = op->src[0].size;
    IrRange at = packets_at(x, &op->src[0], size), to = packets_at(x, &op->dst[0], size);
    poll_packets(x, at);
    for (int q = 0; q < x->m->n && !x->failed; q++)
        if (q != x->m->rank || !same(to, at)) /* its own packets stored back onto themselves: no change */
            emit(x, packet_op(x, IR_MPKT_PUT, q, to, at));
}

/* repkt, respkt, recpkt, recspkt (:335, :374): d0 = s0 + the packets at s1.., then for rec* the
   sum as packets into the rank's own scratch at d1, and for *s* into each peer's scratch. */
static void map_reduce_packets(Map *x)
{
    const MscOp *op = x->op;
    const char *k = op->kind;
    bool copy = !strcmp(k, "recpkt") || !strcmp(k, "recspkt"), send = !strcmp(k, "respkt") || !strcmp(k, "recspkt");
    int first_send = copy ? 2 : 1;
    if (!need(x, op->nsrc, 1, true) || !need(x, op->ndst, first_send, false) || !is(x, &op->src[0], MSC_LOCAL) ||
        !is(x, &op->dst[0], MSC_LOCAL) || (copy && !is(x, &op->dst[1], MSC_LOCAL)) ||
        (!send && !no_extra(x, op->ndst, first_send, false)))
        return;
    long long size = op->src[0].size;
    IrRange d0 = range(x, &op->dst[0], size), acc = range(x, &op->src[0], size);
    if (op->nsrc == 1 && !same(acc, d0)) {
        IrOp o = data_op(x, IR_COPY, -1, d0, acc);
        rule3(x, &o, op->dst[0].at);
        emit(x, o);
    }
    for (int s = 1; s < op->nsrc && !x->failed; s++) {
        if (!is(x, &op->src[s], MSC_LOCAL))
            return;
        IrOp o = packet_op(x, IR_MPKT_REDUCE, -1, d0, acc);
        o.src2 = packets_at(x, &op->src[s], size);
        rule3(x, &o, op->dst[0].at);
        emit(x, o);
        acc = d0;
    }
    if (copy && !x->failed)
        emit(x, packet_op(x, IR_MPKT_PUT, x->m->rank, packets_at(x, &op->dst[1], size), d0));
    for (int i = first_send; send && i < op->ndst && !x->failed; i++)
        if (is(x, &op->dst[i], MSC_REMOTE))
            emit(x, packet_op(x, IR_MPKT_PUT, op->dst[i].rank, packets_at(x, &op->dst[i], size), d0));
}

static void map_packets(Map *x)
{
    static const struct {
        const char *name;
        void (*map)(Map *);
    } BY_NAME[] = {
        {"ppkt", map_ppkt},           {"cpkt", map_cpkt},           {"upkt", map_upkt},
        {"rppkt", map_rppkt},         {"gstorepkt", map_gstorepkt}, {"repkt", map_reduce_packets},
        {"respkt", map_reduce_packets}, {"recpkt", map_reduce_packets}, {"recspkt", map_reduce_packets},
    };
    for (size_t i = 0; i < sizeof BY_NAME / sizeof *BY_NAME; i++)
        if (!strcmp(BY_NAME[i].name, x->op->kind)) {
            BY_NAME[i].map(x);
            return;
        }
    refuse(x, "cdsl has no mapping for it");
}

static void map_nop(Map *x)
{
    emit(x, data_op(x, x->op->ir->kind, -1, (IrRange){-1, 0, 0}, (IrRange){-1, 0, 0}));
}

static void map_barrier(Map *x)
{
    IrOp o = data_op(x, x->op->ir->kind, -1, (IrRange){-1, 0, 0}, (IrRange){-1, 0, 0});
    o.barrier = (int16_t)x->op->barrier_id;
    o.blocks = (int16_t)x->op->nblocks;
    emit(x, o);
}

/* ---- Port channels (port_proxy.h) ------------------------------------------------------------ */

/* One thread block signals, and one waits, on a port channel: its semaphore counts every
   signal together, as a memory channel's does (channel_users in mscclpp_import.c). */
static bool port_user(Map *x, MscChannel *c, bool signal)
{
    int *user = signal ? &c->sig_tb : &c->wait_tb;
    if (*user < 0)
        *user = x->m->tb;
    if (*user == x->m->tb)
        return true;
    refuse(x, arena_printf(x->m->a, "%ss on one port channel of gpu %d (to gpu %d) from threadblocks %d and %d: "
                           "the executor counts them on one semaphore, so which %s a threadblock's %s serves "
                           "depends on timing", signal ? "signal" : "wait", x->m->rank, c->peer, *user, x->m->tb,
                           signal ? "wait" : "signal", signal ? "signal" : "wait"));
    return false;
}

static void too_many_proxies(Map *x)
{
    refuse(x, arena_printf(x->m->a, "more than %d (thread block, port channel) pairs on gpu %d: cdsl models each "
                           "pair's proxy as a unit of its own, and has channels for that many", IR_PORT_MAX_PROXIES,
                           x->m->rank));
}

static IrOp port_issue(Map *x, int thread)
{
    IrOp o = x->base;
    o.thread = (int16_t)thread;
    o.ctx = x->ctx_named;
    return o;
}

/* put, pws, pwsf: the executor's thread i pushes destination i through the op's channel i
   (execution_kernel.hpp:168-184, handlePut). */
static void map_port_put(Map *x, unsigned work)
{
    const MscOp *op = x->op;
    if (!need(x, op->ndst, 1, false))
        return;
    if (op->nchans < op->ndst) {
        fail(x, op->at, arena_printf(x->m->a, "a port put sends destination i through channel i, and it names %d "
                                     "channel%s for %d destinations", op->nchans, op->nchans == 1 ? "" : "s", op->ndst));
        return;
    }
    for (int i = 0; i < op->ndst && !x->failed; i++) {
        MscChannel *c = &x->m->gpu[x->m->rank].ch[MSC_PORT][op->chans[i]];
        if (i >= op->nsrc) {
            refuse(x, "its src_buff is shorter than its dst_buff, and the executor sends nothing for the destinations "
                      "without a source");
            return;
        }
        if (!is(x, &op->dst[i], MSC_REMOTE) || !is(x, &op->src[i], MSC_LOCAL))
            return;
        if (op->dst[i].rank != c->peer) {
            fail(x, op->dst[i].at, arena_printf(x->m->a, "destination %d is on gpu %d, but its channel (channel_ids[%d]) "
                                                "goes to gpu %d", i, op->dst[i].rank, i, c->peer));
            return;
        }
        if ((work & PORT_SIGNAL) && !port_user(x, c, true))
            return;
        IrOp o = data_op(x, IR_PUT, c->peer, range(x, &op->dst[i], op->dst[i].size),
                         range(x, &op->src[i], op->dst[i].size));
        rule3(x, &o, op->dst[i].at);
        if (!x->failed && !port_request(x->m->p, &x->m->proxies, port_issue(x, i), c->peer, c->pair, work, &o))
            too_many_proxies(x);
    }
    no_extra(x, op->nsrc, op->ndst, true);
}

/* signal, wait (execution_kernel.hpp:96-98, 115-117) and flush, whose thread i flushes channel
   i for i below the op's number of destinations (execution_kernel.hpp:120-127; nOutputs is the
   size of dst_buff, 0 without one: execution_plan.cc:463, 551), so a flush with no dst_buff
   does nothing. */
static void map_port_sync(Map *x)
{
    const MscOp *op = x->op;
    bool signal = !strcmp(op->kind, "signal"), wait = !strcmp(op->kind, "wait");
    int n = signal || wait ? op->nchans : (op->ndst < op->nchans ? op->ndst : op->nchans);
    if (!op->nchans)
        fail(x, op->at, "it names no channel");
    for (int j = 0; j < n && !x->failed; j++) {
        MscChannel *c = &x->m->gpu[x->m->rank].ch[MSC_PORT][op->chans[j]];
        if ((signal || wait) && !port_user(x, c, signal))
            return;
        if (wait)
            port_wait(x->m->p, x->m->rank, port_issue(x, j), c->peer, c->pair);
        else if (!port_request(x->m->p, &x->m->proxies, port_issue(x, j), c->peer, c->pair,
                               signal ? PORT_SIGNAL : PORT_FLUSH, NULL))
            too_many_proxies(x);
    }
}

/* rppkt on port channels (execution_kernel.hpp:311-329): the block polls its packets until
   they are this launch's, then thread i asks channel i's proxy to copy them, flags and all, to
   destination i: to the checker a packet put of the proxy, paired by address as any other. */
static void map_port_rppkt(Map *x)
{
    const MscOp *op = x->op;
    if (!need(x, op->nsrc, 1, true) || !need(x, op->ndst, 1, false) || !is(x, &op->src[0], MSC_LOCAL) ||
        !no_extra(x, op->nsrc, 1, true))
        return;
    if (op->nchans < op->ndst) {
        fail(x, op->at, arena_printf(x->m->a, "a port rppkt sends destination i through channel i, and it names %d "
                                     "channel%s for %d destinations", op->nchans, op->nchans == 1 ? "" : "s", op->ndst));
        return;
    }
    long long size = op->src[0].size;
    IrRange at = packets_at(x, &op->src[0], size);
    poll_packets(x, at);
    emit(x, data_op(x, IR_NOP, -1, (IrRange){-1, 0, 0}, (IrRange){-1, 0, 0})); /* its __syncthreads (:318) */
    for (int i = 0; i < op->ndst && !x->failed; i++) {
        MscChannel *c = &x->m->gpu[x->m->rank].ch[MSC_PORT][op->chans[i]];
        if (!is(x, &op->dst[i], MSC_REMOTE))
            return;
        IrOp put = packet_op(x, IR_MPKT_PUT, c->peer, packets_at(x, &op->dst[i], size), at);
        if (!x->failed && !port_request(x->m->p, &x->m->proxies, port_issue(x, i), c->peer, c->pair, PORT_PUT, &put))
            too_many_proxies(x);
    }
}

static void map_port(Map *x)
{
    const char *k = x->op->kind;
    if (!strcmp(k, "rppkt"))
        map_port_rppkt(x);
    else if (!strcmp(k, "ppkt") && x->m->old)
        refuse(x, "on a port channel a ppkt copies a source that is already in packet format, flags included "
                  "(execution_kernel.hpp:276-289), which cdsl does not model; MSCCL++'s DSL writes rppkt there, and "
                  "MSCCL++'s executor no longer loads a plan of this older format (it reads input_chunks, "
                  "execution_plan.cc:260)");
    else if (!strcmp(k, "ppkt"))
        refuse(x, "on a port channel a ppkt copies a source that is already in packet format, flags included "
                  "(execution_kernel.hpp:276-289), which cdsl does not model; MSCCL++'s DSL writes rppkt there");
    else if (!strcmp(k, "put") || !strcmp(k, "pws") || !strcmp(k, "pwsf"))
        map_port_put(x, PORT_PUT | (strcmp(k, "put") ? PORT_SIGNAL : 0) | (!strcmp(k, "pwsf") ? PORT_FLUSH : 0));
    else if (!strcmp(k, "signal") || !strcmp(k, "wait") || !strcmp(k, "flush"))
        map_port_sync(x);
    else
        refuse(x, "the executor does not run it on a port channel");
}

/* How each kind with an MSCCL++ name (ops.def) is read; NULL: it is never read from a plan. */
static void (*const MAPPERS[IR_NKINDS])(Map *) = {
    [IR_NOP] = map_nop,       [IR_BARRIER] = map_barrier,    [IR_SIGNAL] = map_sync,
    [IR_WAIT] = map_sync,     [IR_SW_SIGNAL] = map_switch_sync, [IR_SW_WAIT] = map_switch_sync,
    [IR_PUT] = map_put,       [IR_GET] = map_get,            [IR_COPY] = map_copy,
    [IR_REDUCE] = map_reduce, [IR_SW_STORE] = map_switch_data, [IR_SW_REDUCE_STORE] = map_switch_data,
    [IR_MPKT_PUT] = map_packets,
    [IR_SEM_RELEASE] = map_semaphore, [IR_SEM_ACQUIRE] = map_semaphore,
};

void msc_map(Msc *m, const MscOp *op)
{
    Map x = {m, op, {0}, NULL, false};
    x.base.peer = -1;
    x.base.tb = m->tb;
    x.base.dst.buf = x.base.src.buf = x.base.src2.buf = -1;
    x.base.loc = json_pos_loc(m->jp, op->name_at);
    const char *pipe = m->pipe_iter >= 0 ? arena_printf(m->a, ", pipeline op %d, iteration %d", m->pipe_op,
                                                        m->pipe_iter + 1) : "";
    x.base.ctx = arena_printf(m->a, "threadblock %d, op %d%s", m->tb, m->k, pipe);
    x.ctx_named = arena_printf(m->a, "%s at threadblock %d, op %d%s", op->name, m->tb, m->k, pipe);
    void (*map)(Map *) = op->chan == MSC_PORT ? map_port : MAPPERS[op->ir->kind];
    if (op->ir->chan == CH_PORT && op->chan != MSC_PORT)
        fail(&x, op->name_at, arena_printf(m->a, "%s is an operation of port channels, and this op's channel_type is "
                                           "\"%s\"", op->name, msc_chan_name(op->chan)));
    else if (map)
        map(&x);
    else
        refuse(&x, "cdsl has no mapping for it"); /* every kind msc_decode reads is above */
}
