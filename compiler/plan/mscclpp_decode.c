/*
 * mscclpp_decode.c - one op of an MSCCL++ plan, of either format generation, to an MscOp: its
 * current-generation name, its channels as rank-level ids, and its operands as (where, rank,
 * buffer type, index, size), with every index checked against what the plan declares.
 *
 * The ops the format defines but cdsl does not run are refused here, each with its reason
 * (docs/mscclpp.md §3.3): the old format's packet ops, pipelines and glre. Port
 * channels' ops are read like the others; mscclpp_map.c lowers them through their proxy
 * (port_proxy.h). The current format's packet (LL) ops are read, all as one kind here;
 * mscclpp_map.c tells them apart by name (docs/mscclpp.md, "Packets").
 *
 * Current generation (MSCCL++ 1f5f065d, execution_plan.cc setupOperation): channel_ids index
 * the block's channel list of the op's channel_type; an operand is {type, index, size} (local),
 * {buffer_id, ...} (the block's remote buffer list of the channel type) or {switch_channel_id,
 * ...}. Old generation (1cc1b827): i_cids/o_cids index the block's channels of the key
 * (i_buff/o_buff src, dst, ctype), and operands come from srcbuff/srcoff, dstbuff/dstoff, srcs,
 * dsts and the channels' own buffers, all of `cnt` chunks.
 */
#include "mscclpp_decode.h"

#include <string.h>

typedef enum Refusal { OK, PACKET, PACKETS, PIPELINE, GLRE } Refusal;

/* The ops of either generation, as MSCCL++ defines them. Which IR kind an op reads as comes
   from ops.def's MSCCL++ column, by the name `as` (the op's own current name when NULL): pws
   and pwsf read as a put, res and rres as a reduction whose sum is then put (`send`). */
typedef struct OpName {
    const char *name;   /* as the generation writes it */
    const char *kind;   /* the current generation's name */
    bool old;           /* the old generation's name (else the current one's) */
    Refusal refusal;
    const char *as;     /* ops.def's MSCCL++ name it reads as; NULL: kind */
    bool send;          /* then puts the result to each remote destination */
} OpName;

static const OpName OPS[] = {
    {"nop", "nop", false, OK, NULL, false},           {"barrier", "barrier", false, OK, NULL, false},
    {"signal", "signal", false, OK, NULL, false},     {"rlxsignal", "rlxsignal", false, OK, NULL, false},
    {"wait", "wait", false, OK, NULL, false},         {"rlxwait", "rlxwait", false, OK, NULL, false},
    {"flush", "flush", false, OK, NULL, false},       {"put", "put", false, OK, NULL, false},
    {"pws", "pws", false, OK, "put", false},          {"pwsf", "pwsf", false, OK, "put", false},
    {"get", "get", false, OK, NULL, false},           {"copy", "copy", false, OK, NULL, false},
    {"re", "re", false, OK, NULL, false},             {"res", "res", false, OK, "re", true},
    {"rre", "rre", false, OK, NULL, false},           {"rres", "rres", false, OK, "rre", true},
    {"glres", "glres", false, OK, NULL, false},       {"gstore", "gstore", false, OK, NULL, false},
    {"gsignal", "gsignal", false, OK, NULL, false},   {"grlxsignal", "grlxsignal", false, OK, NULL, false},
    {"gwait", "gwait", false, OK, NULL, false},       {"grlxwait", "grlxwait", false, OK, NULL, false},
    {"ppkt", "ppkt", false, PACKET,  NULL, false},    {"rppkt", "rppkt", false, PACKET,  NULL, false},
    {"cpkt", "cpkt", false, PACKET,  NULL, false},    {"upkt", "upkt", false, PACKET,  NULL, false},
    {"repkt", "repkt", false, PACKET,  NULL, false},  {"respkt", "respkt", false, PACKET,  NULL, false},
    {"recpkt", "recpkt", false, PACKET,  NULL, false}, {"recspkt", "recspkt", false, PACKET,  NULL, false},
    {"gstorepkt", "gstorepkt", false, PACKET,  NULL, false},
    {"sem_acquire", "sem_acquire", false, OK, NULL, false},
    {"sem_release", "sem_release", false, OK, NULL, false},
    {"pipeline", "pipeline", false, PIPELINE, NULL, false}, {"glre", "glre", false, GLRE, NULL, false},
    /* old generation */
    {"nop", "nop", true, OK, NULL, false},            {"barrier", "barrier", true, OK, NULL, false},
    {"signal", "signal", true, OK, NULL, false},      {"wait", "wait", true, OK, NULL, false},
    {"flush", "flush", true, OK, NULL, false},        {"put", "put", true, OK, NULL, false},
    {"pws", "pws", true, OK, "put", false},           {"pwsf", "pwsf", true, OK, "put", false},
    {"get", "get", true, OK, NULL, false},            {"copy", "copy", true, OK, NULL, false},
    {"re", "re", true, OK, NULL, false},              {"rs", "res", true, OK, "re", true},
    {"rrc", "rre", true, OK, NULL, false},            {"rrcs", "rres", true, OK, "rre", true},
    {"glres", "glres", true, OK, NULL, false},
    {"ppkt", "ppkt", true, PACKET, NULL, false},      {"rppkt", "rppkt", true, PACKETS, NULL, false},
    {"rspkt", "respkt", true, PACKET, NULL, false},   {"rpkt", "repkt", true, PACKET, NULL, false},
    {"cpkt", "upkt", true, PACKET, NULL, false},      {"tpkt", "cpkt", true, PACKET, NULL, false},
};

static const char *refusal_text(Refusal r)
{
    switch (r) {
    case PACKETS:
        return "the old format's rppkt is not read: no plan of that format in MSCCL++'s tree has one, so its "
               "operands' layout there is unknown (docs/mscclpp.md, \"Packets\")";
    case PIPELINE:
        return "a pipeline runs its ops a number of times that depends on the run-time size, and cdsl checks one "
               "program for every size";
    case GLRE:
        return "the executor rejects it too: it runs a switch load-reduce only fused with a store, as glres";
    case OK:
    case PACKET:
        break;
    }
    return "";
}

static const OpName *op_name(const char *s, bool old)
{
    for (size_t i = 0; i < sizeof OPS / sizeof *OPS; i++)
        if (OPS[i].old == old && !strcmp(OPS[i].name, s))
            return &OPS[i];
    return NULL;
}

/* ---- Operands ------------------------------------------------------------------------------- */

static bool chunks_of(Msc *m, const json_t *obj, const char *ki, const char *ks, MscOperand *o, const char *what)
{
    return msc_int(m, obj, ki, 0, MSC_MAX_CHUNKS, true, 0, &o->index, what) &&
           msc_int(m, obj, ks, 1, MSC_MAX_CHUNKS, true, 0, &o->size, what);
}

static bool type_of(Msc *m, const json_t *v, char *out)
{
    const char *s = json_string_value(v);
    if (!s || strlen(s) != 1 || !strchr("ios", s[0])) {
        msc_error(m, v, "a buffer type must be \"i\", \"o\" or \"s\" (input, output, scratch)");
        return false;
    }
    *out = s[0];
    return true;
}

/* A current-generation operand: {type | buffer_id | switch_channel_id, index, size}. */
static bool operand(Msc *m, const json_t *e, const MscOp *op, const MscBlock *blk, MscOperand *o)
{
    memset(o, 0, sizeof *o);
    o->at = e;
    if (!json_is_object(e)) {
        msc_error(m, e, "an operand must be an object");
        return false;
    }
    const MscGpu *g = &m->gpu[m->rank];
    const json_t *tv = json_object_get(e, "type"), *bv = json_object_get(e, "buffer_id");
    const json_t *sv = json_object_get(e, "switch_channel_id");
    long long id;
    if ((tv != NULL) + (bv != NULL) + (sv != NULL) != 1) {
        msc_error(m, e, "an operand has exactly one of \"type\" (local), \"buffer_id\" (remote) and "
                  "\"switch_channel_id\" (multicast)");
        return false;
    }
    if (tv) {
        o->where = MSC_LOCAL;
        o->rank = m->rank;
        if (!type_of(m, tv, &o->type))
            return false;
    } else if (bv) {
        int t = op->chan == MSC_PORT ? 1 : 0;
        if (op->chan != MSC_MEMORY && op->chan != MSC_PORT) {
            msc_error(m, bv, "a remote operand needs the op's \"channel_type\" to be memory or port");
            return false;
        }
        if (!json_pos_int(bv, 0, blk->nremote[t] - 1, &id)) {
            msc_error(m, bv, "buffer_id must index threadblock %d's %s remote buffers (it has %d)", m->tb,
                      msc_chan_name(op->chan), blk->nremote[t]);
            return false;
        }
        const MscRemote *r = &g->remote[blk->remote[t][id]];
        if (!(op->chan == MSC_MEMORY ? r->memory : r->port) || r->rank == m->rank) {
            msc_error(m, bv, "remote buffer %d of gpu %d is %s", blk->remote[t][id], m->rank,
                      r->rank == m->rank ? "the gpu's own" : "not accessible through this channel type");
            return false;
        }
        o->where = MSC_REMOTE;
        o->rank = r->rank;
        o->type = r->type;
    } else {
        if (!json_pos_int(sv, 0, blk->nch[MSC_SWITCH] - 1, &id)) {
            msc_error(m, sv, "switch_channel_id must index threadblock %d's switch channels (it has %d)", m->tb,
                      blk->nch[MSC_SWITCH]);
            return false;
        }
        o->where = MSC_MULTICAST;
        o->rank = -1;
        o->type = g->ch[MSC_SWITCH][blk->ch[MSC_SWITCH][id]].buf;
    }
    return chunks_of(m, e, "index", "size", o, "an operand");
}

static bool operands(Msc *m, const json_t *ov, const char *key, MscOp *op, const MscBlock *blk, MscOperand *out,
                     int *n)
{
    const json_t *list;
    if (!msc_optional_list(m, ov, key, "an op", &list) || !list)
        return list || !json_object_get(ov, key);
    if (json_array_size(list) > MSC_MAX_OPERANDS) {
        msc_error(m, list, "the executor cannot load this op: it has %zu operands on a side, and the executor keeps "
                  "%d (MAX_LOCAL_BUFFER_PER_OPERATION + MAX_CHANNEL_PER_OPERATION, execution_common.hpp:13-16) and "
                  "writes past them for more (execution_plan.cc:520-525)", json_array_size(list), MSC_MAX_OPERANDS);
        return false;
    }
    size_t i;
    const json_t *e;
    json_array_foreach(list, i, e)
        if (!operand(m, e, op, blk, &out[(*n)++]))
            return false;
    return true;
}

/* ---- The current generation ------------------------------------------------------------------ */

/* sem_acquire, sem_release: thread j works on semaphore_ids[j], an index into the gpu's
   semaphores (execution_plan.cc setupOperation, execution_kernel.hpp handleSemAcquire). */
static bool semaphore_ids(Msc *m, const json_t *ov, MscOp *op)
{
    const json_t *ids = msc_field(m, ov, "semaphore_ids", JSON_ARRAY, true, arena_printf(m->a, "a %s", op->name));
    if (!ids)
        return false;
    if (!json_array_size(ids) || json_array_size(ids) > MSC_MAX_OP_SEMAPHORES) {
        msc_error(m, ids, "a %s names 1 to %d semaphores (the executor's limit), not %zu", op->name,
                  MSC_MAX_OP_SEMAPHORES, json_array_size(ids));
        return false;
    }
    int have = m->gpu[m->rank].nsem;
    size_t i;
    const json_t *v;
    json_array_foreach(ids, i, v) {
        long long id;
        if (!json_pos_int(v, 0, have - 1, &id)) {
            msc_error(m, v, "semaphore id %s: gpu %d declares %d semaphore%s (gpus[%d].semaphores)",
                      json_is_number(v) ? arena_printf(m->a, "%g", json_number_value(v)) : "(not a number)", m->rank,
                      have, have == 1 ? "" : "s", m->rank);
            return false;
        }
        op->sem_at[op->nsems] = v;
        op->sems[op->nsems++] = (int)id;
    }
    return true;
}

/* The op's channel type, "channel_type" (current) or "ctype" (old), as an MscChan (MSC_NONE
   without one); *ct the value, for later messages. */
static bool channel_type(Msc *m, const json_t *ov, MscOp *op, const json_t **ct)
{
    const char *key = m->old ? "ctype" : "channel_type";
    *ct = msc_field(m, ov, key, JSON_STRING, false, "an op");
    if (!*ct && json_object_get(ov, key))
        return false;
    op->chan = *ct ? msc_chan_parse(json_string_value(*ct), m->old) : MSC_NONE;
    if (op->chan == MSC_NCHAN) {
        msc_error(m, *ct, "unknown channel type \"%s\" (%s)", json_string_value(*ct),
                  m->old ? "sm, memory, proxy, port, nvls or none" : "memory, port, switch or none");
        return false;
    }
    return true;
}

static bool decode_current(Msc *m, const json_t *ov, const MscBlock *blk, MscOp *op)
{
    const json_t *ct;
    if (!channel_type(m, ov, op, &ct))
        return false;
    const json_t *ids;
    if (!msc_optional_list(m, ov, "channel_ids", "an op", &ids))
        return false;
    if (json_array_size(ids) > MSC_MAX_OP_CHANNELS) {
        msc_error(m, ids, "an op names at most %d channels (the executor's limit)", MSC_MAX_OP_CHANNELS);
        return false;
    }
    size_t i;
    const json_t *v;
    json_array_foreach(ids, i, v) {
        long long id;
        int have = op->chan < MSC_NONE ? blk->nch[op->chan] : 0;
        if (!json_pos_int(v, 0, have - 1, &id)) {
            msc_error(m, v, "channel id %s: threadblock %d has %d %s channel%s", json_is_number(v) ?
                      arena_printf(m->a, "%g", json_number_value(v)) : "(not a number)", m->tb, have,
                      msc_chan_name(op->chan), have == 1 ? "" : "s");
            return false;
        }
        op->chans[op->nchans++] = blk->ch[op->chan][id];
    }
    if (ir_is_switch(op->ir->kind) && ir_takes_order(op->ir->kind)) {
        long long id; /* PR #843: {"name": "gsignal", "switch_channel_id": k} */
        if (!msc_int(m, ov, "switch_channel_id", 0, blk->nch[MSC_SWITCH] - 1, true, 0, &id, "a switch signal or wait"))
            return false;
        op->chan = MSC_SWITCH;
        op->chans[op->nchans++] = blk->ch[MSC_SWITCH][id];
    }
    long long bid, nb;
    if (ir_is_barrier(op->ir->kind)) {
        if (!msc_int(m, ov, "barrier_id", 0, MSC_MAX_BARRIERS - 1, true, 0, &bid, "a barrier") ||
            !msc_int(m, ov, "num_threadblocks", 1, MSC_MAX_BLOCKS, true, 0, &nb, "a barrier"))
            return false;
        op->barrier_id = (int)bid, op->nblocks = (int)nb;
    }
    if (ir_is_semaphore(op->ir->kind) && !semaphore_ids(m, ov, op))
        return false;
    return operands(m, ov, "src_buff", op, blk, op->src, &op->nsrc) &&
           operands(m, ov, "dst_buff", op, blk, op->dst, &op->ndst);
}

/* ---- The old generation ---------------------------------------------------------------------- */

/* The block's channels of the key (src, dst, ctype), in order, as the ids of `cids` pick them. */
static bool old_cids_key(Msc *m, const json_t *ov, const char *cids_key, char src, char dst, const MscBlock *blk,
                         MscOp *op, long long *offs)
{
    const json_t *cids = msc_field(m, ov, cids_key, JSON_ARRAY, true, arena_printf(m->a, "a %s", op->name));
    if (!cids)
        return false;
    if (json_array_size(cids) > MSC_MAX_OP_CHANNELS) {
        msc_error(m, cids, "an op names at most %d channels (the executor's limit)", MSC_MAX_OP_CHANNELS);
        return false;
    }
    int nkey = 0;
    for (int e = 0; e < blk->nold; e++)
        if (blk->old[e].type == op->chan && blk->old[e].src == src && blk->old[e].dst == dst)
            nkey += blk->old[e].nids;
    size_t i;
    const json_t *c;
    json_array_foreach(cids, i, c) {
        long long id;
        if (!json_is_object(c)) {
            msc_error(m, c, "a channel reference must be an object {\"id\", \"off\"}");
            return false;
        }
        if (!nkey) {
            msc_error(m, c, "threadblock %d has no %s channel for (%c, %c)", m->tb, msc_chan_name(op->chan), src, dst);
            return false;
        }
        if (!msc_int(m, c, "id", 0, nkey - 1, true, 0, &id, "a channel reference"))
            return false;
        if (offs && !msc_int(m, c, "off", 0, MSC_MAX_CHUNKS, true, 0, &offs[i], "a channel reference"))
            return false;
        for (int e = 0; e < blk->nold; e++) {
            const MscOldEntry *o = &blk->old[e];
            if (o->type != op->chan || o->src != src || o->dst != dst)
                continue;
            if (id < o->nids) {
                op->chans[op->nchans++] = o->ids[id];
                break;
            }
            id -= o->nids;
        }
    }
    return true;
}

/* The same, with the key's buffers from the op's buff_key object {src, dst}. */
static bool old_cids(Msc *m, const json_t *ov, const char *buff_key, const char *cids_key, const MscBlock *blk,
                     MscOp *op, long long *offs)
{
    const json_t *buff = msc_field(m, ov, buff_key, JSON_OBJECT, true, arena_printf(m->a, "a %s", op->name));
    const json_t *sv = buff ? msc_field(m, buff, "src", JSON_STRING, true, buff_key) : NULL;
    const json_t *dv = sv ? msc_field(m, buff, "dst", JSON_STRING, true, buff_key) : NULL;
    char src, dst;
    return dv && type_of(m, sv, &src) && type_of(m, dv, &dst) && old_cids_key(m, ov, cids_key, src, dst, blk, op, offs);
}

static bool old_local(Msc *m, const json_t *ov, const char *bk, const char *ok, long long cnt, MscOperand *o)
{
    memset(o, 0, sizeof *o);
    const json_t *bv = msc_field(m, ov, bk, JSON_STRING, true, "an op");
    o->at = bv;
    o->where = MSC_LOCAL;
    o->rank = m->rank;
    o->size = cnt;
    return bv && type_of(m, bv, &o->type) && msc_int(m, ov, ok, 0, MSC_MAX_CHUNKS, true, 0, &o->index, "an op");
}

/* Operands reached through channels: the channel's peer and the peer's buffer (dstbuff) or,
   local, the channel's own buffer (srcbuff), at each reference's offset. */
static void old_through(Msc *m, MscOp *op, int first, const long long *offs, bool remote, const json_t *at,
                        long long cnt, MscOperand *out, int *n)
{
    for (int j = first; j < op->nchans; j++) {
        const MscChannel *c = &m->gpu[m->rank].ch[op->chan][op->chans[j]];
        MscOperand *o = &out[(*n)++];
        memset(o, 0, sizeof *o);
        o->at = at;
        o->where = remote ? MSC_REMOTE : MSC_LOCAL;
        o->rank = remote ? c->peer : m->rank;
        o->type = remote ? c->peer_buf : c->buf;
        o->index = offs[j - first];
        o->size = cnt;
    }
}

/* A list like srcs/dsts: [{buff, off}], local. */
static bool old_list(Msc *m, const json_t *ov, const char *key, long long cnt, MscOperand *out, int *n, bool need)
{
    const json_t *list = msc_field(m, ov, key, JSON_ARRAY, need, "an op");
    if (!list)
        return !need && !json_object_get(ov, key);
    size_t i;
    const json_t *e;
    json_array_foreach(list, i, e) {
        if (*n == MSC_MAX_OPERANDS) {
            msc_error(m, e, "an op has at most %d operands on a side (the executor's limit)", MSC_MAX_OPERANDS);
            return false;
        }
        if (!json_is_object(e)) {
            msc_error(m, e, "an entry of \"%s\" must be an object {\"buff\", \"off\"}", key);
            return false;
        }
        if (!old_local(m, e, "buff", "off", cnt, &out[(*n)++]))
            return false;
    }
    return true;
}

/* The old format's packet ops, read as the current kinds they are (OPS): ppkt like a put (the
   channel's srcbuff at srcs[i].off, to the peer's dstbuff at o_cids[i].off); cpkt (unpack) and
   tpkt (copy into packets) from srcbuff/srcoff to dstbuff/dstoff; rspkt and rpkt like rs and
   re (srcbuff/srcoff, the packets at srcs, dstbuff/dstoff, and for rspkt the peers at o_cids). */
static bool decode_old_packets(Msc *m, const json_t *ov, const MscBlock *blk, MscOp *op)
{
    long long cnt = 1, offs[MSC_MAX_OP_CHANNELS];
    if (!msc_int(m, ov, "cnt", 1, MSC_MAX_CHUNKS, true, 0, &cnt, "an op"))
        return false;
    if (!strcmp(op->kind, "ppkt")) {
        MscOperand srcs[MSC_MAX_OPERANDS];
        int nsrcs = 0;
        if (!old_cids(m, ov, "o_buff", "o_cids", blk, op, offs) || !old_list(m, ov, "srcs", cnt, srcs, &nsrcs, true))
            return false;
        old_through(m, op, 0, offs, true, json_object_get(ov, "o_cids"), cnt, op->dst, &op->ndst);
        for (int i = 0; i < op->nchans && i < nsrcs; i++) {
            op->src[op->nsrc] = srcs[i];
            op->src[op->nsrc++].type = m->gpu[m->rank].ch[op->chan][op->chans[i]].buf;
        }
        return true;
    }
    if (!old_local(m, ov, "srcbuff", "srcoff", cnt, &op->src[op->nsrc++]) ||
        !old_local(m, ov, "dstbuff", "dstoff", cnt, &op->dst[op->ndst++]))
        return false;
    if (!strcmp(op->kind, "upkt") || !strcmp(op->kind, "cpkt"))
        return true;
    if (!old_list(m, ov, "srcs", cnt, op->src, &op->nsrc, false))
        return false;
    if (!strcmp(op->kind, "respkt")) {
        if (!old_cids(m, ov, "o_buff", "o_cids", blk, op, offs))
            return false;
        old_through(m, op, 0, offs, true, json_object_get(ov, "o_cids"), cnt, op->dst, &op->ndst);
    }
    op->nchans = 0;
    return true;
}

static bool decode_old(Msc *m, const json_t *ov, const MscBlock *blk, MscOp *op)
{
    const json_t *ct;
    if (!channel_type(m, ov, op, &ct))
        return false;
    const IrOpInfo *in = op->ir;
    long long cnt = 1, offs[MSC_MAX_OP_CHANNELS];
    if (op->packet)
        return decode_old_packets(m, ov, blk, op);
    if (in->sync == SYNC_NOP)
        return true;
    if (ir_is_barrier(in->kind)) {
        long long bid, nb;
        if (!msc_int(m, ov, "barrier_id", 0, MSC_MAX_BARRIERS - 1, true, 0, &bid, "a barrier") ||
            !msc_int(m, ov, "nthread_blocks", 1, MSC_MAX_BLOCKS, true, 0, &nb, "a barrier"))
            return false;
        op->barrier_id = (int)bid, op->nblocks = (int)nb;
        return true;
    }
    if (ir_is_signal(in->kind))
        return old_cids(m, ov, "o_buff", "o_cids", blk, op, NULL);
    if (ir_is_wait(in->kind))
        return old_cids(m, ov, "i_buff", "i_cids", blk, op, NULL);
    if (!msc_int(m, ov, "cnt", 1, MSC_MAX_CHUNKS, true, 0, &cnt, "an op"))
        return false;
    if (ir_is_switch(in->kind)) { /* glres: nvls channels i_cids[0] of (srcbuff, srcbuff), o_cids[0] of dstbuff's */
        if (op->chan != MSC_SWITCH) {
            msc_error(m, ct ? ct : ov, "a glres goes through nvls channels (ctype \"nvls\")");
            return false;
        }
        for (int s = 0; s < 2; s++) {
            MscOperand *o = s ? &op->dst[op->ndst++] : &op->src[op->nsrc++];
            if (!old_local(m, ov, s ? "dstbuff" : "srcbuff", s ? "dstoff" : "srcoff", cnt, o) ||
                !old_cids_key(m, ov, s ? "o_cids" : "i_cids", o->type, o->type, blk, op, NULL))
                return false;
            if (op->nchans != s + 1) {
                msc_error(m, json_object_get(ov, s ? "o_cids" : "i_cids"), "a glres names one nvls channel in "
                          "i_cids and one in o_cids");
                return false;
            }
            o->where = MSC_MULTICAST;
            o->rank = -1;
            o->type = m->gpu[m->rank].ch[MSC_SWITCH][op->chans[s]].buf;
        }
        op->nchans = 0;
        return true;
    }
    if (ir_is_local_copy(in->kind))
        return old_local(m, ov, "srcbuff", "srcoff", cnt, &op->src[op->nsrc++]) &&
               old_local(m, ov, "dstbuff", "dstoff", cnt, &op->dst[op->ndst++]);
    if (in->dst.on == ON_PEER) { /* put, pws, pwsf */
        /* the channel's own srcbuff at srcs[i].off, to the peer's dstbuff at o_cids[i].off */
        MscOperand srcs[MSC_MAX_OPERANDS];
        int nsrcs = 0;
        if (!old_cids(m, ov, "o_buff", "o_cids", blk, op, offs) || !old_list(m, ov, "srcs", cnt, srcs, &nsrcs, true))
            return false;
        old_through(m, op, 0, offs, true, json_object_get(ov, "o_cids"), cnt, op->dst, &op->ndst);
        for (int i = 0; i < op->nchans && i < nsrcs; i++) {
            op->src[op->nsrc] = srcs[i];
            op->src[op->nsrc++].type = m->gpu[m->rank].ch[op->chan][op->chans[i]].buf;
        }
        return true;
    }
    if (in->src.on == ON_PEER) { /* get */
        /* the peer's dstbuff at i_cids[i].off, into the channel's srcbuff at dsts[i].off */
        MscOperand dsts[MSC_MAX_OPERANDS];
        int ndsts = 0;
        if (!old_cids(m, ov, "i_buff", "i_cids", blk, op, offs) || !old_list(m, ov, "dsts", cnt, dsts, &ndsts, true))
            return false;
        old_through(m, op, 0, offs, true, json_object_get(ov, "i_cids"), cnt, op->src, &op->nsrc);
        for (int i = 0; i < op->nchans && i < ndsts; i++) {
            op->dst[op->ndst] = dsts[i];
            op->dst[op->ndst++].type = m->gpu[m->rank].ch[op->chan][op->chans[i]].buf;
        }
        return true;
    }
    /* reductions: srcbuff/srcoff, then local srcs (re, rs) or peers at i_cids (rrc, rrcs); the
       sum into dstbuff/dstoff, and for rs/rrcs into the peers at o_cids */
    bool remote_src = op->alt, send = op->send;
    if (!old_local(m, ov, "srcbuff", "srcoff", cnt, &op->src[op->nsrc++]) ||
        !old_local(m, ov, "dstbuff", "dstoff", cnt, &op->dst[op->ndst++]))
        return false;
    if (remote_src) {
        if (!old_cids(m, ov, "i_buff", "i_cids", blk, op, offs))
            return false;
        old_through(m, op, 0, offs, true, json_object_get(ov, "i_cids"), cnt, op->src, &op->nsrc);
    } else if (!old_list(m, ov, "srcs", cnt, op->src, &op->nsrc, false)) {
        return false;
    }
    if (send) {
        int first = op->nchans;
        if (!old_cids(m, ov, "o_buff", "o_cids", blk, op, offs))
            return false;
        old_through(m, op, first, offs, true, json_object_get(ov, "o_cids"), cnt, op->dst, &op->ndst);
    }
    op->nchans = 0; /* data ops of this generation use channels for their peers only */
    return true;
}

bool msc_decode(Msc *m, const json_t *ov, const MscBlock *blk, MscOp *op)
{
    memset(op, 0, sizeof *op);
    op->at = ov;
    op->tbg_size = 1;
    if (!json_is_object(ov)) {
        msc_error(m, ov, "an op must be an object");
        return false;
    }
    const json_t *nv = msc_field(m, ov, "name", JSON_STRING, true, "an op");
    if (!nv)
        return false;
    op->name = json_string_value(nv);
    op->name_at = nv;
    const OpName *on = op_name(op->name, m->old);
    if (!on) {
        msc_error(m, nv, "unknown operation \"%s\" at gpu %d, threadblock %d, op %d (the %s format has no such op)",
                  op->name, m->rank, m->tb, m->k, m->old ? "old" : "current");
        return false;
    }
    op->kind = on->kind;
    op->packet = on->refusal == PACKET;
    if (on->refusal != OK && !op->packet) {
        msc_unsupported(m, op, "%s", refusal_text(on->refusal));
        return false;
    }
    op->ir = op->packet ? ir_op_info(IR_MPKT_PUT) : ir_op_by_msc(on->as ? on->as : on->kind, &op->alt);
    op->send = on->send;
    if (!op->ir) {
        msc_unsupported(m, op, "cdsl has no mapping for it");
        return false;
    }
    const json_t *tbg = msc_field(m, ov, "tbg_info", JSON_OBJECT, false, "an op");
    if (tbg) {
        long long id, size;
        if (!msc_int(m, tbg, "tbg_size", 1, MSC_MAX_SCALE, true, 1, &size, "tbg_info") ||
            !msc_int(m, tbg, "tb_id", 0, size - 1, true, 0, &id, "tbg_info"))
            return false;
        op->tbg_id = (int)id, op->tbg_size = (int)size;
    } else if (json_object_get(ov, "tbg_info")) {
        return false;
    }
    if (!strcmp(op->kind, "flush") && m->old) {
        msc_unsupported(m, op, "the old format's flush is not read (no plan of that generation has one)");
        return false;
    }
    return m->old ? decode_old(m, ov, blk, op) : decode_current(m, ov, blk, op);
}
