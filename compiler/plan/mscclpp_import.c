/*
 * mscclpp_import.c - an MSCCL++ execution plan (JSON) to an IrProgram: the file, the plan's
 * top level, its gpus, channels and remote buffers, and each thread block's op list.
 *
 * The two format generations (docs/mscclpp.md §1: the current one of MSCCL++ 1f5f065d, the
 * older one of 1cc1b827) differ in names and in how channels are numbered; this file reads
 * both layouts into MscGpu/MscBlock, mscclpp_decode.c reads each op into an MscOp, and
 * mscclpp_map.c turns that into IR ops. One IR unit per plan thread block (ir.h), in order,
 * so that a rank's list is grouped by block. Buffers: `i` is IR_INPUT and `o` IR_OUTPUT, `s`
 * the scratch buffer; an in-place plan (inplace: true) reads and writes the caller's one
 * buffer, which the IR calls output: IrProgram.in_place, the aliasing `cdslc --in-place` gives a
 * .cdsl program (ir.h). Chunk counts are scaled by the lcm of the thread-block-group sizes, so that a
 * group's slices are whole IR chunks (IrProgram.chunk_align makes cdslrun pick sizes for
 * which that is exact).
 *
 * Errors are compiler errors at the JSON value they are about: a missing field at its object,
 * a wrong type or range at the value. After the plan is read, what must hold across thread
 * blocks is checked: a channel signalled (or waited on) from one block only, the switch
 * barrier from one block per rank, and a barrier met by as many blocks as it says.
 */
#include "mscclpp.h"

#include "mscclpp_decode.h"
#include "mscclpp_map.h"
#include "mscclpp_packets.h"
#include "mscclpp_read.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* An entry {type_key: "...", ids_key: [...]} of a list: false after an error. */
static bool typed_entry(Msc *m, const json_t *e, const char *type_key, const char *ids_key, const char *what,
                        const json_t **type, const json_t **ids)
{
    if (!json_is_object(e)) {
        msc_error(m, e, "%s must be an object", what);
        return false;
    }
    *type = msc_field(m, e, type_key, JSON_STRING, true, what);
    *ids = *type ? msc_field(m, e, ids_key, JSON_ARRAY, true, what) : NULL;
    return *ids != NULL;
}

static bool buf_type(Msc *m, const json_t *v, char *out, const char *what)
{
    const char *s = json_string_value(v);
    if (!s || strlen(s) != 1 || !strchr("ios", s[0])) {
        msc_error(m, v, "%s must be \"i\", \"o\" or \"s\" (input, output, scratch)", what);
        return false;
    }
    *out = s[0];
    return true;
}

/* ---- The file ------------------------------------------------------------------------------ */

bool mscclpp_is_plan(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    if (n >= 5 && !strcmp(path + n - 5, ".json"))
        return true;
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f)
        return false;
    int c;
    while ((c = fgetc(f)) == ' ' || c == '\t' || c == '\n' || c == '\r') {
    }
    fclose(f);
    return c == '{';
}

/* The plan's text, or NULL after an error; a file over the cap is refused before it is read
   (only its first line is read, to show it). */
static Source *read_plan(Arena *a, Diag *d, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {   /* the caller's error: CDSL_ERR_USAGE */
        diag_usage(d, "cannot read '%s': %s", path, stat(path, &st) != 0 ? strerror(errno) : "not a regular file");
        return NULL;
    }
    bool too_big = st.st_size > JSON_POS_MAX_BYTES;
    size_t want = too_big ? 4096 : (size_t)st.st_size;
    Source *src = ARENA_NEW(a, Source);
    char *text = arena_alloc(a, want + 1);
    src->path = arena_strdup(a, path);
    src->arena = a;
    FILE *f = fopen(path, "rb");
    if (!f) {
        diag_usage(d, "cannot read '%s': %s", path, strerror(errno));
        return NULL;
    }
    size_t got = fread(text, 1, want, f);
    fclose(f);
    src->text = text;
    src->len = got;
    if (too_big) {
        char *nl = memchr(text, '\n', got);
        src->len = nl ? (size_t)(nl - text) : got;
        text[src->len] = 0;
        diag_error(d, (Loc){src, 1, 1}, "the plan is %lld bytes; plans are read up to %d MiB", (long long)st.st_size,
                   JSON_POS_MAX_BYTES >> 20);
        return NULL;
    }
    return src;
}

/* ---- Channels ------------------------------------------------------------------------------ */

static MscChannel *add_channel(Msc *m, MscGpu *g, MscChan t, const json_t *at)
{
    if (g->nch[t] == MSC_MAX_CHANNELS) {
        msc_error(m, at, "gpu %d has more than %d %s channels", m->rank, MSC_MAX_CHANNELS, msc_chan_name(t));
        return NULL;
    }
    g->ch[t] = arena_grow(m->a, g->ch[t], (size_t)g->nch[t], (size_t)g->nch[t] + 1, sizeof(MscChannel));
    MscChannel *c = &g->ch[t][g->nch[t]++];
    c->at = at;
    c->sig_tb = c->wait_tb = -1;
    c->peer = -1;
    return c;
}

/* A memory or port channel to `peer`: its pairing ordinal counts this rank's earlier channels
   of the type to that peer (docs/mscclpp.md §1.7). */
static bool peer_channel(Msc *m, MscGpu *g, MscChan t, const json_t *peer_v, char src, char dst)
{
    long long peer;
    if (!json_pos_int(peer_v, 0, m->n - 1, &peer) || peer == m->rank) {
        msc_error(m, peer_v, "a channel's peer must be another gpu, 0 to %d other than %d", m->n - 1, m->rank);
        return false;
    }
    MscChannel *c = add_channel(m, g, t, peer_v);
    if (!c)
        return false;
    c->peer = (int)peer;
    c->buf = src;
    c->peer_buf = dst;
    for (int i = 0; i < g->nch[t] - 1; i++)
        c->pair += g->ch[t][i].peer == c->peer;
    return true;
}

/* A switch channel: its rank groups must be every rank (cdsl's switch spans them all). */
static bool switch_channel(Msc *m, MscGpu *g, const json_t *ch, char buf, const char *groups_key)
{
    const json_t *groups = msc_field(m, ch, groups_key, JSON_ARRAY, true, "a switch channel");
    if (!groups)
        return false;
    size_t k;
    const json_t *grp;
    json_array_foreach(groups, k, grp) {
        const json_t *ranks = json_is_object(grp) ? msc_field(m, grp, "ranks", JSON_ARRAY, true, "a rank group")
                                                  : NULL;
        if (!json_is_object(grp)) {
            msc_error(m, grp, "a rank group must be an object");
            return false;
        }
        if (!ranks)
            return false;
        bool all = (int)json_array_size(ranks) == m->n;
        for (size_t i = 0; all && i < json_array_size(ranks); i++) {
            long long q;
            all = json_pos_int(json_array_get(ranks, i), 0, m->n - 1, &q) && q == (long long)i;
        }
        if (!all) {
            msc_error(m, ranks, "not supported: a switch channel over these ranks: cdsl's switch spans every rank "
                      "(0 to %d, in order)", m->n - 1);
            return false;
        }
        MscChannel *c = add_channel(m, g, MSC_SWITCH, grp);
        if (!c)
            return false;
        c->buf = buf;
        c->group = g->nch[MSC_SWITCH] - 1;
    }
    return true;
}

static bool read_channel(Msc *m, MscGpu *g, const json_t *ch)
{
    if (!json_is_object(ch)) {
        msc_error(m, ch, "a channel must be an object");
        return false;
    }
    const json_t *tv = msc_field(m, ch, m->old ? "type" : "channel_type", JSON_STRING, true, "a channel");
    if (!tv)
        return false;
    MscChan t = msc_chan_parse(json_string_value(tv), m->old);
    if (t == MSC_NCHAN || t == MSC_NONE) {
        msc_error(m, tv, "unknown channel type \"%s\"%s", json_string_value(tv),
                  m->old ? " (sm, memory, proxy, port or nvls)" : " (memory, port or switch)");
        return false;
    }
    char src = 0, dst = 0;
    if (t == MSC_SWITCH) {
        const json_t *bv = msc_field(m, ch, m->old ? "buff" : "buffer_type", JSON_STRING, true, "a switch channel");
        return bv && buf_type(m, bv, &src, "a switch channel's buffer") &&
               switch_channel(m, g, ch, src, m->old ? "rankGroups" : "rank_groups");
    }
    if (m->old) {
        const json_t *sv = msc_field(m, ch, "srcbuff", JSON_STRING, true, "a channel");
        const json_t *dv = sv ? msc_field(m, ch, "dstbuff", JSON_STRING, true, "a channel") : NULL;
        if (!dv || !buf_type(m, sv, &src, "srcbuff") || !buf_type(m, dv, &dst, "dstbuff"))
            return false;
    }
    const json_t *peers = msc_field(m, ch, m->old ? "connectedTo" : "connected_to", JSON_ARRAY, true, "a channel");
    if (!peers)
        return false;
    size_t i;
    const json_t *pv;
    json_array_foreach(peers, i, pv)
        if (!peer_channel(m, g, t, pv, src, dst))
            return false;
    return true;
}

static bool read_remote(Msc *m, MscGpu *g, const json_t *rb)
{
    if (!json_is_object(rb)) {
        msc_error(m, rb, "a remote buffer must be an object");
        return false;
    }
    long long rank;
    const json_t *tv = msc_field(m, rb, "type", JSON_STRING, true, "a remote buffer");
    const json_t *acc = tv ? msc_field(m, rb, "access_channel_types", JSON_ARRAY, true, "a remote buffer") : NULL;
    if (!acc || !msc_int(m, rb, "rank", 0, m->n - 1, true, 0, &rank, "a remote buffer"))
        return false;
    MscRemote r = {(int)rank, 0, false, false};
    if (!buf_type(m, tv, &r.type, "a remote buffer's type"))
        return false;
    size_t i;
    const json_t *av;
    json_array_foreach(acc, i, av) {
        MscChan t = msc_chan_parse(json_string_value(av), false);
        if (t != MSC_MEMORY && t != MSC_PORT) {
            msc_error(m, av, "an access channel type must be \"memory\" or \"port\"");
            return false;
        }
        r.memory |= t == MSC_MEMORY;
        r.port |= t == MSC_PORT;
    }
    g->remote = arena_grow(m->a, g->remote, (size_t)g->nremote, (size_t)g->nremote + 1, sizeof r);
    g->remote[g->nremote++] = r;
    return true;
}

/* gpus[r].semaphores: [{"init_value": v}], DeviceSemaphore i of the rank, set to v once per
   execution context (execution_plan.cc setupSemaphores). cdsl pairs the k-th acquire with the
   k-th release, which is what a semaphore that starts at 0 does; one that starts higher lets its
   first acquires through and hands a launch's last releases to the next launch. */
static bool read_semaphores(Msc *m, MscGpu *g, const json_t *sems)
{
    if (json_array_size(sems) > MSC_MAX_SEMAPHORES) {
        msc_error(m, sems, "gpu %d declares %zu semaphores; at most %d are read", m->rank, json_array_size(sems),
                  MSC_MAX_SEMAPHORES);
        return false;
    }
    g->nsem = (int)json_array_size(sems);
    g->sem_release_tb = ARENA_ARRAY(m->a, int, (size_t)g->nsem + 1);
    g->sem_acquire_tb = ARENA_ARRAY(m->a, int, (size_t)g->nsem + 1);
    size_t i;
    const json_t *v;
    json_array_foreach(sems, i, v) {
        long long init;
        g->sem_release_tb[i] = g->sem_acquire_tb[i] = -1;
        if (!json_is_object(v)) {
            msc_error(m, v, "a semaphore must be an object {\"init_value\": n}");
            return false;
        }
        if (!msc_int(m, v, "init_value", INT32_MIN, INT32_MAX, true, 0, &init, "a semaphore"))
            return false;
        if (init != 0) {
            msc_error(m, json_object_get(v, "init_value"), "not supported: semaphore %zu of gpu %d starts at %lld: "
                      "cdsl pairs the k-th sem_acquire with the k-th sem_release, as a semaphore that starts at 0 "
                      "does", i, m->rank, init);
            return false;
        }
    }
    return true;
}

/* ---- Gpus ---------------------------------------------------------------------------------- */

static bool read_gpu(Msc *m, const json_t *gv, int r)
{
    MscGpu *g = &m->gpu[r];
    m->rank = r;
    if (!json_is_object(gv)) {
        msc_error(m, gv, "gpus[%d] must be an object", r);
        return false;
    }
    long long id, in, out, scratch;
    const char *what = arena_printf(m->a, "gpus[%d]", r);
    if (!msc_int(m, gv, "id", 0, m->n - 1, true, 0, &id, what))
        return false;
    if (id != r) {
        msc_error(m, json_object_get(gv, "id"), "gpus[%d] has id %lld: the executor needs gpus[r].id == r", r, id);
        return false;
    }
    const char *ki = m->old ? "inputChunks" : "input_chunks", *ko = m->old ? "outputChunks" : "output_chunks";
    const char *ks = m->old ? "scratchChunks" : "scratch_chunks";
    if (!msc_int(m, gv, ki, 0, MSC_MAX_CHUNKS, true, 0, &in, what) ||
        !msc_int(m, gv, ko, 0, MSC_MAX_CHUNKS, true, 0, &out, what) ||
        !msc_int(m, gv, ks, 0, MSC_MAX_CHUNKS, true, 0, &scratch, what))
        return false;
    g->in = (int)in, g->out = (int)out, g->scratch = (int)scratch;
    if (!m->old && (!in || !out)) { /* MSCCL++'s checks before any run: (size / alignment) % chunks */
        const char *none = in ? "output" : "input", *key = in ? ko : ki;
        msc_error(m, json_object_get(gv, key), "the executor cannot load this plan: gpus[%d] has 0 %s chunks, and "
                  "MSCCL++'s checkMessageSize takes the %s size modulo %s (src/core/executor/execution_plan.cc:302), "
                  "a division by zero for every message size", r, none, none, key);
        return false;
    }
    if (r > 0 && (g->in != m->gpu[0].in || g->out != m->gpu[0].out)) {
        msc_error(m, gv, "not supported: gpus[%d] has %d input and %d output chunks, gpus[0] %d and %d: cdsl's "
                  "buffers are the same size on every rank", r, g->in, g->out, m->gpu[0].in, m->gpu[0].out);
        return false;
    }
    if (g->scratch > m->gpu[0].scratch)
        m->gpu[0].scratch = g->scratch; /* scratch is symmetric: the largest */
    const json_t *chans = msc_field(m, gv, "channels", JSON_ARRAY, true, what);
    g->tbs = chans ? msc_field(m, gv, "threadblocks", JSON_ARRAY, true, what) : NULL;
    if (!g->tbs)
        return false;
    size_t i;
    const json_t *v;
    json_array_foreach(chans, i, v)
        if (!read_channel(m, g, v))
            return false;
    if (!m->old) {
        const json_t *rbs, *sems;
        if (!msc_optional_list(m, gv, "remote_buffers", what, &rbs) ||
            !msc_optional_list(m, gv, "semaphores", what, &sems))
            return false;
        json_array_foreach(rbs, i, v)
            if (!read_remote(m, g, v))
                return false;
        if (!read_semaphores(m, g, sems))
            return false;
    }
    if (json_array_size(g->tbs) > MSC_MAX_BLOCKS) {
        msc_error(m, g->tbs, "gpu %d has %zu thread blocks; at most %d are read", r, json_array_size(g->tbs),
                  MSC_MAX_BLOCKS);
        return false;
    }
    return true;
}

/* Every rank's k-th switch channel must bind the same buffer type (the multicast object of a
   group binds each rank's own entry). */
static bool switch_channels_agree(Msc *m)
{
    for (int r = 1; r < m->n; r++) {
        const MscGpu *g = &m->gpu[r], *g0 = &m->gpu[0];
        for (int k = 0; k < g->nch[MSC_SWITCH] || k < g0->nch[MSC_SWITCH]; k++)
            if (k >= g->nch[MSC_SWITCH] || k >= g0->nch[MSC_SWITCH] ||
                g->ch[MSC_SWITCH][k].buf != g0->ch[MSC_SWITCH][k].buf) {
                const MscChannel *c = k < g->nch[MSC_SWITCH] ? &g->ch[MSC_SWITCH][k] : &g0->ch[MSC_SWITCH][k];
                msc_error(m, c->at, "not supported: switch channel %d differs between gpu 0 and gpu %d: cdsl's "
                          "switch operations address one buffer on every rank", k, r);
                return false;
            }
    }
    return true;
}

/* ---- Thread blocks ------------------------------------------------------------------------- */

/* A list of rank-level ids, each below `limit`. */
static bool id_list(Msc *m, const json_t *list, int limit, int **ids, int *n, const char *what)
{
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v) {
        long long id;
        if (!json_pos_int(v, 0, limit - 1, &id)) {
            if (limit > 0)
                msc_error(m, v, "%s must be from 0 to %d: gpu %d has %d", what, limit - 1, m->rank, limit);
            else
                msc_error(m, v, "%s: gpu %d has none", what, m->rank);
            return false;
        }
        *ids = arena_grow(m->a, *ids, (size_t)*n, (size_t)*n + 1, sizeof(int));
        (*ids)[(*n)++] = (int)id;
    }
    return true;
}

static bool block_channels_current(Msc *m, const MscGpu *g, const json_t *tb, MscBlock *blk)
{
    const json_t *chans, *refs, *e, *tv, *ids;
    if (!msc_optional_list(m, tb, "channels", "a threadblock", &chans) ||
        !msc_optional_list(m, tb, "remote_buffer_refs", "a threadblock", &refs))
        return false;
    size_t i;
    json_array_foreach(chans, i, e) {
        if (!typed_entry(m, e, "channel_type", "channel_ids", "a threadblock's channel list", &tv, &ids))
            return false;
        MscChan t = msc_chan_parse(json_string_value(tv), false);
        if (t == MSC_NCHAN || t == MSC_NONE) {
            msc_error(m, tv, "unknown channel type \"%s\" (memory, port or switch)", json_string_value(tv));
            return false;
        }
        const char *what = arena_printf(m->a, "a %s channel id", msc_chan_name(t));
        if (!id_list(m, ids, g->nch[t], &blk->ch[t], &blk->nch[t], what))
            return false;
    }
    json_array_foreach(refs, i, e) {
        if (!typed_entry(m, e, "access_channel_type", "remote_buffer_ids", "a threadblock's remote buffer list", &tv,
                         &ids))
            return false;
        MscChan t = msc_chan_parse(json_string_value(tv), false);
        if (t != MSC_MEMORY && t != MSC_PORT) {
            msc_error(m, tv, "an access channel type must be \"memory\" or \"port\"");
            return false;
        }
        if (!id_list(m, ids, g->nremote, &blk->remote[t], &blk->nremote[t], "a remote buffer id"))
            return false;
    }
    return true;
}

static bool block_channels_old(Msc *m, const MscGpu *g, const json_t *tb, MscBlock *blk)
{
    const json_t *chans, *e;
    if (!msc_optional_list(m, tb, "channels", "a threadblock", &chans))
        return false;
    size_t i;
    json_array_foreach(chans, i, e) {
        MscOldEntry o = {0};
        const json_t *sv = json_is_object(e) ? msc_field(m, e, "src", JSON_STRING, true, "a channel list") : NULL;
        const json_t *dv = sv ? msc_field(m, e, "dst", JSON_STRING, true, "a channel list") : NULL;
        const json_t *tv = dv ? msc_field(m, e, "ctype", JSON_STRING, true, "a channel list") : NULL;
        const json_t *ids = tv ? msc_field(m, e, "cids", JSON_ARRAY, true, "a channel list") : NULL;
        if (!json_is_object(e))
            msc_error(m, e, "a threadblock's channel list must be an object");
        if (!ids || !buf_type(m, sv, &o.src, "src") || !buf_type(m, dv, &o.dst, "dst"))
            return false;
        o.type = msc_chan_parse(json_string_value(tv), true);
        if (o.type == MSC_NCHAN || o.type == MSC_NONE) {
            msc_error(m, tv, "unknown channel type \"%s\" (sm, memory, proxy, port or nvls)", json_string_value(tv));
            return false;
        }
        /* cids index the rank's channels of this key (srcbuff, dstbuff, type) in file order */
        int nkey = 0, *key_ids = ARENA_ARRAY(m->a, int, (size_t)g->nch[o.type] + 1);
        for (int c = 0; c < g->nch[o.type]; c++) {
            const MscChannel *ch = &g->ch[o.type][c];
            if (o.type == MSC_SWITCH ? ch->buf == o.src : ch->buf == o.src && ch->peer_buf == o.dst)
                key_ids[nkey++] = c;
        }
        int *local = NULL, nlocal = 0;
        const char *what = arena_printf(m->a, "a %s channel id for (%c, %c)", msc_chan_name(o.type), o.src, o.dst);
        if (!id_list(m, ids, nkey, &local, &nlocal, what))
            return false;
        o.ids = ARENA_ARRAY(m->a, int, (size_t)nlocal + 1);
        for (int k = 0; k < nlocal; k++)
            o.ids[k] = key_ids[local[k]];
        o.nids = nlocal;
        blk->old = arena_grow(m->a, blk->old, (size_t)blk->nold, (size_t)blk->nold + 1, sizeof o);
        blk->old[blk->nold++] = o;
    }
    return true;
}

/* The largest thread-block-group size over the plan's ops, as the lcm of all of them. */
/* Every pipeline's iter_context: the size classes are those of one trip count only when all
   pipelines run the same number of times at every size. False after an error. */
static bool pipeline_context(Msc *m, const json_t *op)
{
    const json_t *ctx = json_object_get(op, "iter_context");
    long long unit, chunks;
    if (!json_is_object(ctx) || !json_pos_int(json_object_get(ctx, "unit_size"), 1, UINT32_MAX, &unit) ||
        !json_pos_int(json_object_get(ctx, "num_chunks"), 1, MSC_MAX_CHUNKS, &chunks))
        return true; /* said when the pipeline is read */
    if (!m->pipe_unit) {
        m->pipe_unit = unit, m->pipe_chunks = chunks, m->pipe_at = ctx;
        return true;
    }
    if (unit == m->pipe_unit && chunks == m->pipe_chunks)
        return true;
    msc_error(m, ctx, "not supported: pipelines of %lld-byte units over %lld chunk%s here and of %lld-byte units over "
              "%lld at %d:%d: their trip counts differ from size to size, and cdsl checks one trip count for all "
              "pipelines of a size class", unit, chunks, chunks == 1 ? "" : "s", m->pipe_unit, m->pipe_chunks,
              json_pos_loc(m->jp, m->pipe_at).line, json_pos_loc(m->jp, m->pipe_at).col);
    return false;
}

static int group_scale(Msc *m)
{
    long long scale = 1;
    for (int r = 0; r < m->n; r++) {
        size_t t, k;
        const json_t *tb, *op;
        json_array_foreach(m->gpu[r].tbs, t, tb) {
            json_array_foreach(json_object_get(tb, "ops"), k, op) {
                if (!m->old && json_is_string(json_object_get(op, "name")) &&
                    !strcmp(json_string_value(json_object_get(op, "name")), "pipeline") && !pipeline_context(m, op))
                    return 0;
                const json_t *info = json_object_get(op, "tbg_info");
                long long g;
                if (!json_is_object(info) || !json_pos_int(json_object_get(info, "tbg_size"), 1, MSC_MAX_SCALE, &g))
                    continue;
                long long a = scale, b = g;
                while (b) {
                    long long c = a % b;
                    a = b;
                    b = c;
                }
                scale = scale / a * g;
                if (scale > MSC_MAX_SCALE) {
                    msc_error(m, info, "not supported: thread-block groups whose sizes have a least common multiple "
                              "over %d", MSC_MAX_SCALE);
                    return 0;
                }
            }
        }
    }
    if (m->pipe_unit && (m->pipe_iters < 1 || m->pipe_iters > 65535)) {
        msc_error(m, m->pipe_at, "a size class of %d pipeline iterations: the executor counts them in 16 bits "
                  "(execution_kernel.hpp handlePipeline), so from 65536 on they wrap and part of the data is never "
                  "moved; the classes are 1 to 65535", m->pipe_iters);
        return 0;
    }
    return m->pipe_unit ? (int)scale * m->pipe_iters : (int)scale; /* a pipeline's iteration i: slice i */
}

/* An inner op of a pipeline must do its share of every iteration: operands of num_chunks
   chunks (the executor's min(size - offset, unit) underflows on a smaller one), no
   thread-block group of its own. */
static bool pipelined_op(Msc *m, MscOp *op)
{
    if (op->tbg_size > 1) {
        msc_unsupported(m, op, "a thread-block group inside a pipeline: the executor slices the operand for the group "
                        "and then runs every iteration of the whole pipeline over the slice");
        return false;
    }
    for (int k = 0; k < op->nsrc + op->ndst; k++) {
        const MscOperand *o = k < op->nsrc ? &op->src[k] : &op->dst[k - op->nsrc];
        if (o->size != m->pipe_chunks) {
            msc_error(m, o->at, "this operand of a %s in a pipeline has %lld chunk%s and the pipeline runs over %lld: "
                      "the executor's iterations would run past its end (gpu %d, threadblock %d, op %d)", op->name,
                      o->size, o->size == 1 ? "" : "s", m->pipe_chunks, m->rank, m->tb, m->k);
            return false;
        }
    }
    op->tbg_id = m->pipe_iter, op->tbg_size = m->pipe_iters;
    return true;
}

/* pipeline {iter_context {unit_size, num_chunks}, ops}: the executor runs its ops
   ceil(num_chunks x chunk / unit_size) times, iteration i on bytes [i x unit, (i + 1) x unit)
   of every operand (execution_plan.cc setupOperation, execution_kernel.hpp handlePipeline).
   In the size class of n iterations, with one-chunk pipelines, iteration i is slice i of n of
   each operand: a plan chunk is n IR chunks (group_scale) and iteration i's ops take the i-th. */
static void read_pipeline(Msc *m, const json_t *ov, const MscBlock *blk)
{
    MscOp pipe = {.name = "pipeline", .at = ov, .name_at = json_object_get(ov, "name")};
    const json_t *ctx = msc_field(m, ov, "iter_context", JSON_OBJECT, true, "a pipeline");
    const json_t *ops = ctx ? msc_field(m, ov, "ops", JSON_ARRAY, true, "a pipeline") : NULL;
    long long unit, chunks;
    if (!ops || !msc_int(m, ctx, "unit_size", 1, UINT32_MAX, true, 0, &unit, "iter_context") ||
        !msc_int(m, ctx, "num_chunks", 1, MSC_MAX_CHUNKS, true, 0, &chunks, "iter_context"))
        return;
    if (chunks != 1) {
        msc_unsupported(m, &pipe, "a pipeline over %lld chunks: where its iterations cross from one chunk to the next "
                        "depends on the size; cdsl reads pipelines over one chunk (what MSCCL++'s DSL writes)", chunks);
        return;
    }
    int errors = m->d->nerrors;
    for (int i = 0; i < m->pipe_iters && m->d->nerrors == errors; i++) {
        size_t j;
        const json_t *iv;
        json_array_foreach(ops, j, iv) {
            MscOp op;
            m->pipe_iter = i, m->pipe_op = (int)j;
            const json_t *name = json_is_object(iv) ? json_object_get(iv, "name") : NULL;
            if (json_is_string(name) && !strcmp(json_string_value(name), "pipeline")) {
                MscOp inner = {.name = "pipeline", .at = iv, .name_at = name};
                msc_unsupported(m, &inner, "a pipeline inside a pipeline: the executor loads only one level "
                                "(execution_plan.cc setupOperations), so the inner one's ops would not run");
                break;
            }
            if (msc_decode(m, iv, blk, &op) && pipelined_op(m, &op))
                msc_map(m, &op);
            if (m->d->nerrors != errors)
                break;
        }
    }
    m->pipe_iter = m->pipe_op = -1;
}

static bool read_block(Msc *m, const json_t *tb, int t)
{
    const MscGpu *g = &m->gpu[m->rank];
    m->tb = t;
    if (!json_is_object(tb)) {
        msc_error(m, tb, "threadblocks[%d] must be an object", t);
        return false;
    }
    long long id;
    if (!msc_int(m, tb, "id", 0, MSC_MAX_BLOCKS, true, 0, &id, "a threadblock"))
        return false;
    if (id != t) {
        msc_error(m, json_object_get(tb, "id"), "threadblocks[%d] has id %lld: the executor needs threadblocks[t].id "
                  "== t", t, id);
        return false;
    }
    MscBlock blk = {.at = tb};
    if (!(m->old ? block_channels_old(m, g, tb, &blk) : block_channels_current(m, g, tb, &blk)))
        return false;
    const json_t *ops = msc_field(m, tb, "ops", JSON_ARRAY, true, "a threadblock");
    if (!ops)
        return false;
    if (json_array_size(ops) > MSC_MAX_OPS) {
        msc_error(m, ops, "threadblock %d of gpu %d has %zu ops; at most %d are read", t, m->rank, json_array_size(ops),
                  MSC_MAX_OPS);
        return false;
    }
    size_t k;
    const json_t *ov;
    json_array_foreach(ops, k, ov) {
        m->k = (int)k;
        MscOp op;
        const json_t *name = json_is_object(ov) ? json_object_get(ov, "name") : NULL;
        if (!m->old && json_is_string(name) && !strcmp(json_string_value(name), "pipeline"))
            read_pipeline(m, ov, &blk);
        else if (msc_decode(m, ov, &blk, &op))
            msc_map(m, &op);
        if (m->d->nerrors - m->errors_before >= 20)
            return false; /* enough to go on with */
    }
    return true;
}

/* ---- The top level ------------------------------------------------------------------------- */

/* A plan's collective: cdsl's own when its table has one by that MSCCL++ name (colls.def), else
   one of MSCCL++'s other collectives, checked as custom. */
static Collective plan_collective(const char *s, bool *known)
{
    Collective c;
    *known = true;
    if (coll_find_mscclpp(s, &c))
        return c;
    *known = !strcmp(s, "sendrecv") || !strcmp(s, "test") || !strcmp(s, "custom");
    return COLL_CUSTOM;
}

static bool read_top(Msc *m, const json_t *root, const json_t **gpus)
{
    if (!json_is_object(root)) {
        msc_error(m, root, "a plan is a JSON object, not %s", msc_type_name(json_typeof(root)));
        return false;
    }
    IrProgram *p = m->p;
    const json_t *name = msc_field(m, root, "name", JSON_STRING, true, "the plan");
    const json_t *coll = name ? msc_field(m, root, "collective", JSON_STRING, true, "the plan") : NULL;
    const json_t *proto = coll ? msc_field(m, root, "protocol", JSON_STRING, true, "the plan") : NULL;
    const json_t *inplace = proto ? msc_field(m, root, "inplace", JSON_TRUE, true, "the plan") : NULL;
    *gpus = inplace ? msc_field(m, root, "gpus", JSON_ARRAY, true, "the plan") : NULL;
    if (!*gpus)
        return false;
    long long threads, align;
    if (!msc_int(m, root, "num_threads_per_block", 1, 1024, false, 1024, &threads, "the plan") ||
        !msc_int(m, root, "buffer_alignment", 1, 1 << 20, false, 16, &align, "the plan"))
        return false;
    if (align % 16) {
        msc_error(m, json_object_get(root, "buffer_alignment"), "not supported: a buffer alignment of %lld bytes: the "
                  "executor's loops assume a multiple of 16", align);
        return false;
    }
    const json_t *dbl = msc_field(m, root, "use_double_scratch_buffer", JSON_TRUE, false, "the plan");
    if (!dbl && json_object_get(root, "use_double_scratch_buffer"))
        return false;
    m->double_scratch = json_is_true(dbl);
    m->ll = !strcmp(json_string_value(proto), "LL");
    const json_t *reuse = msc_field(m, root, "reuse_resources", JSON_TRUE, false, "the plan");
    if (!reuse && json_object_get(root, "reuse_resources"))
        return false;
    m->reuse = json_is_true(reuse);
    static const char *const sizes[] = {"min_message_size", "max_message_size"};
    for (int i = 0; i < 2; i++) { /* read by the executor only: just their type */
        const json_t *sv = json_object_get(root, sizes[i]);
        if (sv && (!json_is_number(sv) || json_number_value(sv) < 0)) {
            msc_error(m, sv, "\"%s\" must be a number of bytes", sizes[i]);
            return false;
        }
    }
    bool known;
    p->name = arena_strdup(m->a, json_string_value(name));
    p->loc = json_pos_loc(m->jp, name);
    p->coll = plan_collective(json_string_value(coll), &known);
    if (!known) {
        msc_error(m, coll, "unknown collective \"%s\" (allgather, allreduce, reducescatter, alltoall, sendrecv, test, "
                  "custom)", json_string_value(coll));
        return false;
    }
    p->coll_name = ir_coll_name(p->coll);
    p->root = coll_has_root(coll_info(p->coll)) ? 0 : -1; /* a plan names no root: a broadcast's is 0 */
    p->chunk_align = (int)align;
    m->inplace = json_is_true(inplace);
    return true;
}

/* Which generation: gpus[0] says input_chunks (current) or inputChunks (old). */
static bool read_format(Msc *m, const json_t *gpus)
{
    const json_t *g0 = json_array_get(gpus, 0);
    if (!json_is_object(g0)) {
        msc_error(m, g0 ? g0 : gpus, "gpus must list one object per rank");
        return false;
    }
    m->old = json_object_get(g0, "inputChunks") && !json_object_get(g0, "input_chunks");
    /* The old format's executor always keeps packets in two halves of the scratch, by the
       flag's parity (1cc1b827: execution_plan.cc:191, execution_kernel.hpp:290). */
    if (m->old)
        m->double_scratch = true;
    if (!m->old && !json_object_get(g0, "input_chunks")) {
        msc_error(m, g0, "gpus[0] has neither \"input_chunks\" (current format) nor \"inputChunks\" (old format)");
        return false;
    }
    return true;
}

/* In place, a plan may list fewer output chunks than the input implies: an output that is all
   input (allreduce's) is at least the input, and a plan that lists none (an allgather's) has
   the output the input implies (the old format only: read_gpu refuses a current plan with
   none). An output that is a slice of the input (reducescatter's) is that slice of it, which
   the plan's `o` operands are moved into (mscclpp_map.c's range). Never false today. */
static bool in_place_output(Msc *m, const CollInfo *ci, int in, int *out)
{
    if (!m->inplace || ci->in_place != COLL_IN_PLACE_NCCL || ci->in(m->n, 1) < 1)
        return true;
    long long whole = (long long)in * ci->out(m->n, 1) / ci->in(m->n, 1);
    if (coll_alias_per_rank(ci, 1) ? !*out : *out < whole)
        *out = (int)whole;
    return true;
}

/* Why in and out chunks (of a plan's unit) cannot be the collective's input and output
   (colls.def's in and out at C = 1, up to a common factor), or NULL. The words say the shape
   at any number of ranks (as at 2: at 1 every shape is the same). */
static const char *shape_mismatch(Msc *m, const CollInfo *ci, int in, int out)
{
    if (coll_declares_buffers(ci) || (long long)out * ci->in(m->n, 1) == (long long)in * ci->out(m->n, 1))
        return NULL;
    long long ni = ci->in(2, 1), no = ci->out(2, 1);
    const char *a = strchr("aeiou", ci->name[0]) ? "an" : "a";
    if (ni == no)
        return arena_printf(m->a, "%s %s's input and output have the same chunks", a, ci->name);
    return arena_printf(m->a, "%s %s's %s holds nranks x its %s chunks", a, ci->name, no > ni ? "output" : "input",
                        no > ni ? "input" : "output");
}

/* The executor's calMaxScratchChunkSize(PREDFINED_SCRATCH_SIZE) for rank r: a reuse_resources
   plan's scratch chunk holds this many bytes (execution_plan.cc:218, execution_common.hpp:22). */
static unsigned long long reuse_capacity(const Msc *m, int r)
{
    unsigned long long size = 64ull << 20, align = (unsigned long long)m->p->chunk_align;
    if (m->double_scratch)
        size /= 2;
    size = (size + (unsigned long long)m->gpu[r].scratch - 1) / (unsigned long long)m->gpu[r].scratch;
    return (size + align - 1) / align * align;
}

/* The sizes this IR is exact for. Pipelines: a plan chunk of more than (n - 1) x unit and at
   most n x unit bytes runs n iterations (execution_plan.cc:592-598, num_chunks 1).
   reuse_resources: scratch keeps its plain layout while a chunk fits the capacity of a scratch
   chunk (execution_plan.cc:643; beyond it, chunks and pipeline offsets wrap, getOffset). */
static void size_class(Msc *m)
{
    IrProgram *p = m->p;
    p->chunk_scale = m->scale;
    if (m->pipe_unit) {
        p->pipe_iters = m->pipe_iters;
        p->pipe_unit = (unsigned long long)m->pipe_unit;
        p->chunk_lo = (unsigned long long)(m->pipe_iters - 1) * (unsigned long long)m->pipe_unit;
        p->chunk_hi = (unsigned long long)m->pipe_iters * (unsigned long long)m->pipe_unit;
    }
    unsigned long long cap = 0;
    for (int r = 0; m->reuse && r < m->n; r++)
        if (m->gpu[r].scratch > 0 && (!cap || reuse_capacity(m, r) < cap))
            cap = reuse_capacity(m, r);
    if (cap && (!p->chunk_hi || cap < p->chunk_hi))
        p->chunk_hi = cap;
    if (cap && p->chunk_hi <= p->chunk_lo) {
        msc_error(m, m->pipe_at, "a size class of %d pipeline iterations needs chunks over %llu bytes, and "
                  "reuse_resources wraps scratch from %llu bytes on: cdsl checks scratch in its plain layout only",
                  m->pipe_iters, p->chunk_lo, cap);
        return;
    }
    p->scratch_cap = cap;
}

/* Buffers: input, output (also what an in-place plan's `i` and `o` are), scratch. */
static bool make_buffers(Msc *m)
{
    IrProgram *p = m->p;
    const CollInfo *ci = coll_info(p->coll);
    const MscGpu *g = &m->gpu[0];
    int in = g->in, out = g->out, L = m->scale;
    if (!in_place_output(m, ci, in, &out))
        return false;
    const char *why = shape_mismatch(m, ci, in, out);
    if ((!coll_declares_buffers(ci) && !in) || why) {
        msc_error(m, json_array_get(json_object_get(json_pos_root(m->jp), "gpus"), 0), "gpus[0] has %d input and %d "
                  "output chunks for %s of %d ranks: %s", g->in, g->out, p->coll_name, m->n,
                  why ? why : "the collective needs input chunks");
        return false;
    }
    /* C: the input holds ci->in(n, 1) blocks of C chunks (an allreduce plan whose input does
       not split into nranks blocks takes all of it as one) */
    long long most = in > out ? in : out;
    most = most > g->scratch ? most : g->scratch;
    if (most * L > IR_MAX_CHUNKS) {
        msc_error(m, m->pipe_at ? m->pipe_at : json_pos_root(m->jp), "not supported: %d chunks of a buffer, each cut "
                  "into %d (thread-block groups and pipeline iterations), make %lld; cdsl reads at most %d",
                  (int)most, L, most * L, IR_MAX_CHUNKS);
        return false;
    }
    size_class(m);
    long long blocks = coll_declares_buffers(ci) || ci->in(m->n, 1) < 1 ? m->n : ci->in(m->n, 1);
    p->chunks = in % blocks ? in * L : (int)(in / blocks) * L;
    p->bufs[IR_INPUT] = (IrBuf){"input", in * L, p->loc, false};
    p->bufs[IR_OUTPUT] = (IrBuf){"output", out * L, p->loc, false};
    p->bufs[2] = (IrBuf){"scratch", g->scratch * L, p->loc, false};
    p->nbufs = g->scratch ? 3 : 2;
    p->in_place = m->inplace;
    return true;
}

/* A memory channel signalled (or waited on) from two blocks of a rank: the executor counts
   both blocks' signals on one semaphore, so which wait a signal serves depends on timing. */
static bool channel_users(Msc *m)
{
    IrProgram *p = m->p;
    for (int r = 0; r < m->n; r++) {
        const IrSeq *s = &p->ranks[r];
        for (int i = 0; i < s->nops; i++) {
            const IrOp *op = &s->ops[i];
            if ((!ir_is_signal(op->kind) && !ir_is_wait(op->kind)) || ir_is_packet(op->kind))
                continue;
            MscChannel *c = NULL;
            for (int k = 0; k < m->gpu[r].nch[MSC_MEMORY] && !c; k++)
                if (m->gpu[r].ch[MSC_MEMORY][k].peer == op->peer && m->gpu[r].ch[MSC_MEMORY][k].pair == op->chan)
                    c = &m->gpu[r].ch[MSC_MEMORY][k];
            if (!c)
                continue;
            int *user = ir_is_signal(op->kind) ? &c->sig_tb : &c->wait_tb;
            if (*user < 0)
                *user = op->tb;
            if (*user != op->tb) {
                diag_error(m->d, op->loc, "not supported: %ss on one memory channel of gpu %d (its %s to gpu %d) from "
                           "threadblocks %d and %d: the executor counts them on one semaphore, so which %s a "
                           "threadblock's %s serves depends on timing", ir_kind_name(op->kind), r,
                           c->pair == 0 ? "first" : arena_printf(m->a, "channel %d", c->pair), op->peer, *user, op->tb,
                           ir_kind_name(ir_op_info(op->kind)->pair), ir_kind_name(op->kind));
                return false;
            }
        }
    }
    return true;
}

/* A barrier id must be used by as many blocks of the rank as each use says. */
static bool barrier_users(Msc *m)
{
    IrProgram *p = m->p;
    for (int r = 0; r < m->n; r++) {
        const IrSeq *s = &p->ranks[r];
        for (int id = 0; id < MSC_MAX_BARRIERS; id++) {
            int users = 0, last_tb = -1, want = -1;
            const IrOp *first = NULL;
            for (int i = 0; i < s->nops; i++) {
                const IrOp *op = &s->ops[i];
                if (!ir_is_barrier(op->kind) || op->barrier != id)
                    continue;
                if (!first)
                    first = op, want = op->blocks;
                if (op->blocks != want) {
                    diag_error(m->d, op->loc, "barrier %d of gpu %d is used with %d threadblocks here and %d at %d:%d",
                               id, r, op->blocks, want, first->loc.line, first->loc.col);
                    return false;
                }
                users += op->tb != last_tb;
                last_tb = op->tb;
            }
            if (first && users != want) {
                diag_error(m->d, first->loc, "barrier %d of gpu %d says %d threadblocks meet there, but %d use it: %s",
                           id, r, want, users, users < want ? "it never completes" :
                           "which of them meet depends on timing");
                return false;
            }
        }
    }
    return true;
}

static bool read_plan_body(Msc *m, const json_t *gpus)
{
    for (int r = 0; r < m->n; r++)
        if (!read_gpu(m, json_array_get(gpus, (size_t)r), r))
            return false;
    if (!switch_channels_agree(m) || !(m->scale = group_scale(m)) || !make_buffers(m))
        return false;
    IrProgram *p = m->p;
    p->ranks = ARENA_ARRAY(m->a, IrSeq, (size_t)m->n);
    p->ntbs = ARENA_ARRAY(m->a, int, (size_t)m->n);
    p->plan = true;
    m->sw_unit = ARENA_ARRAY(m->a, int, (size_t)m->n);
    m->sw_barrier = -1;
    for (int r = 0; r < m->n; r++) {
        size_t t;
        const json_t *tb;
        m->rank = r;
        m->sw_unit[r] = -1;
        p->ntbs[r] = json_array_size(m->gpu[r].tbs) ? (int)json_array_size(m->gpu[r].tbs) : 1;
        m->proxies = (PortProxies){.rank = r};
        json_array_foreach(m->gpu[r].tbs, t, tb)
            if (!read_block(m, tb, (int)t))
                return false;
        port_finish(p, &m->proxies);
    }
    return m->d->nerrors == m->errors_before && channel_users(m) && barrier_users(m) && msc_packets_pair(m);
}

static IrProgram *import_json(Msc *m, int nranks, bool *usage)
{
    const json_t *root = json_pos_root(m->jp), *gpus;
    if (!read_top(m, root, &gpus))
        return NULL;
    size_t n = json_array_size(gpus);
    if (n < 1 || n > IR_MAX_RANKS) {
        msc_error(m, gpus, "a plan has 1 to %d gpus, not %zu", IR_MAX_RANKS, n);
        return NULL;
    }
    if (nranks && (size_t)nranks != n) {
        msc_error(m, gpus, "the plan has %zu gpus, but %d ranks were asked for", n, nranks);
        *usage = true;
        return NULL;
    }
    m->n = m->p->nranks = (int)n;
    m->gpu = ARENA_ARRAY(m->a, MscGpu, n);
    if (!read_format(m, gpus) || !read_plan_body(m, gpus))
        return NULL;
    return m->p;
}

IrProgram *mscclpp_import(Arena *a, Diag *d, const char *path, int nranks, int pipe_iters, bool *usage)
{
    int usage_before = d->nusage;
    Source *src = read_plan(a, d, path);
    *usage = d->nusage > usage_before;
    return src ? mscclpp_import_source(a, d, src, nranks, pipe_iters, usage) : NULL;
}

IrProgram *mscclpp_import_source(Arena *a, Diag *d, const Source *src, int nranks, int pipe_iters, bool *usage)
{
    *usage = false;
    Msc m = {.a = a, .d = d, .errors_before = d->nerrors, .pkt_buf = -1, .pipe_iters = pipe_iters, .pipe_op = -1,
             .pipe_iter = -1};
    m.jp = json_pos_parse(a, d, src);
    if (!m.jp)
        return NULL;
    m.p = ARENA_NEW(a, IrProgram);
    m.p->arena = a;
    m.p->loc = (Loc){src, 1, 1};
    /* The tree is malloc'ed: running out of memory frees it, then unwinds on (arena.h). */
    ArenaTrap trap;
    arena_trap_push(a, &trap);
    if (setjmp(trap.env)) {
        json_pos_free(m.jp);
        arena_rethrow(a, trap.asked);
    }
    IrProgram *p = import_json(&m, nranks, usage);
    arena_trap_pop(a, &trap);
    json_pos_free(m.jp);
    return p && d->nerrors == m.errors_before ? p : NULL;
}
