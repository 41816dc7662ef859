/*
 * verify.c - what inputs are filled with and what outputs must hold afterwards.
 *
 * cdsl_fill() writes every rank's input with the pattern of verify.h and sets outputs and
 * scratch buffers to all-ones bytes; cdsl_check() reads each rank's output back and compares
 * every element with the collective's postcondition (its row of compiler/ir/colls.def, as
 * docs/language.md's table says it):
 *   allgather      output[p*C + i] == input@p[i]
 *   reducescatter  output[i] == sum over p of input@p[r*C + i]
 *   allreduce      output[i] == sum over p of input@p[i]
 *   alltoall       output[p*C + i] == input@p[r*C + i]
 *   broadcast      output[i] == input@root[i]
 *   reduce         output[i] == sum over p of input@p[i] on the root; other ranks' not compared
 * It counts the wrong elements and reports the first one: rank, chunk, element, expected,
 * got, and where the expected value comes from. Barrier and custom programs have nothing to
 * compare. cdsl_chunk_bytes() holds the size convention (nccl-tests': the larger of one rank's
 * input and output) so that every tool turns a size into a chunk size the same way.
 *
 * Every size comes from the communicator's layout (the one the run uses: api.c), never from
 * the program again: a buffer is cdsl_comm_buf_bytes() long, and in place the input is written
 * through cdsl_comm_write(), which puts it where the run finds it in its holder.
 */
#include "verify.h"

#include <math.h>
#include <stdlib.h>

#include "backend.h"
#include "log.h"
#include "program.h"

/* Normal finite values the 16-bit types have: 2 signs x 30 (f16) or 254 (bf16) exponents. */
enum { F16_NORMALS = 2 * 30 * 1024, BF16_NORMALS = 2 * 254 * 128 };

/* The collective's row (colls.def) says what its outputs hold: sums need inputs whose sums are
 * exact; copies are compared bit for bit, so their inputs are all different. */
VfMode vf_mode(Collective c)
{
    return coll_sums(coll_info(c)) ? VF_SUM : VF_MOVE;
}

/* Whether there are outputs to compare (not a barrier's or a custom program's). */
static bool vf_has_result(const IrProgram *ir)
{
    return coll_copies(coll_info(ir->coll)) || coll_sums(coll_info(ir->coll));
}

/* The first input chunk rank r's output is made of (colls.def's from). */
static size_t vf_from(const IrProgram *ir, int r)
{
    return (size_t)coll_info(ir->coll)->from(r, ir->chunks);
}

/* A sum that is the same on every rank (allreduce's) is computed once for all of them. */
static bool vf_sums_once(const IrProgram *ir)
{
    return coll_sums(coll_info(ir->coll)) && vf_from(ir, 1) == vf_from(ir, 0);
}

/* Whether rank r's output is compared (a reduce's only on its root). */
static bool vf_rank_checked(const IrProgram *ir, int r)
{
    return coll_output_checked(coll_info(ir->coll), r, ir->root);
}

/* Fibonacci hashing: the top half of u times 2^64/phi. One multiply per element, and
 * neighbouring elements (and ranks) get values far apart. */
static uint32_t vf_hash(uint64_t u)
{
    return (uint32_t)((u * 0x9E3779B97F4A7C15ull) >> 32);
}

/* Distinct values for distinct u, as far as the dtype has them (see verify.h). Counting of the
 * 16-bit types starts at exponent 0 so that the first values read as 1, 1.0009765625, ... */
static uint32_t vf_move_value(cdsl_dtype t, uint64_t u)
{
    switch (t) {
    case CDSL_U32:
    case CDSL_S32: {
        uint32_t h = (uint32_t)u * 0x9E3779B1u; /* odd multiplier and xorshift: a bijection */
        h ^= h >> 16;
        return h == 0xFFFFFFFFu ? 0xFFFFFFFEu : h; /* never the poison */
    }
    case CDSL_F32:
        if (u < (1u << 24))
            return rt_f32_bits((float)(u + 1));
        u -= 1u << 24; /* then normal values below 1, disjoint from the integers */
        return (uint32_t)((u >> 29) & 1u) << 31 | (uint32_t)(126 - ((u >> 23) & 63u)) << 23 |
               (uint32_t)(u & 0x7FFFFFu);
    case CDSL_F16: {
        uint32_t i = (uint32_t)(u % F16_NORMALS), half = F16_NORMALS / 2, rest = i % half;
        return (i / half) << 15 | (1 + (rest / 1024 + 14) % 30) << 10 | rest % 1024;
    }
    case CDSL_BF16: {
        uint32_t i = (uint32_t)(u % BF16_NORMALS), half = BF16_NORMALS / 2, rest = i % half;
        return (i / half) << 15 | (1 + (rest / 128 + 126) % 254) << 7 | rest % 128;
    }
    }
    return 0;
}

/* M = L / nranks: any sum over the ranks of values in [-M, M] stays within +-L, exact. */
static int64_t vf_small_limit(cdsl_dtype t, int nranks)
{
    int64_t limit = t == CDSL_F32 ? 1 << 24 : t == CDSL_F16 ? 2048 : 256;
    return limit / nranks;
}

/* An integer in [-m, m] from the hash (multiply-high instead of a slow modulo). */
static int64_t vf_small(int64_t m, uint64_t u)
{
    return (int64_t)(((uint64_t)vf_hash(u) * (uint64_t)(2 * m + 1)) >> 32) - m;
}

static uint32_t vf_int_bits(cdsl_dtype t, int64_t v)
{
    switch (t) {
    case CDSL_F32: return rt_f32_bits((float)v);
    case CDSL_F16: return rt_f32_to_f16((float)v);
    case CDSL_BF16: return rt_f32_to_bf16((float)v);
    default: return (uint32_t)v;
    }
}

uint32_t vf_value(cdsl_dtype t, VfMode m, int nranks, int rank, uint64_t elem)
{
    uint64_t u = elem * (uint64_t)nranks + (uint64_t)rank;
    if (m == VF_MOVE)
        return vf_move_value(t, u);
    if (t == CDSL_U32 || t == CDSL_S32)
        return vf_hash(u);
    return vf_int_bits(t, vf_small(vf_small_limit(t, nranks), u));
}

uint32_t vf_sum(cdsl_dtype t, int nranks, uint64_t elem)
{
    if (t == CDSL_U32 || t == CDSL_S32) {
        uint32_t s = 0;
        for (int p = 0; p < nranks; p++)
            s += vf_hash(elem * (uint64_t)nranks + (uint64_t)p);
        return s;
    }
    int64_t s = 0, m = vf_small_limit(t, nranks);
    for (int p = 0; p < nranks; p++)
        s += vf_small(m, elem * (uint64_t)nranks + (uint64_t)p);
    return vf_int_bits(t, s);
}

/* ---- the same, a block at a time (the dtype switch outside the loops) ---------------------- */

enum { VF_BLOCK = 4096 };

/* out[i] = vf_value(t, m, nranks, rank, first + i) */
static void vf_values(cdsl_dtype t, VfMode m, int nranks, int rank, uint64_t first, size_t count, uint32_t *out)
{
    uint64_t n = (uint64_t)nranks, u = first * n + (uint64_t)rank;
    if (m == VF_MOVE) {
        for (size_t i = 0; i < count; i++, u += n)
            out[i] = vf_move_value(t, u);
    } else if (t == CDSL_U32 || t == CDSL_S32) {
        for (size_t i = 0; i < count; i++, u += n)
            out[i] = vf_hash(u);
    } else {
        int64_t lim = vf_small_limit(t, nranks);
        for (size_t i = 0; i < count; i++, u += n)
            out[i] = vf_int_bits(t, vf_small(lim, u));
    }
}

/* out[i] = vf_sum(t, nranks, first + i) */
static void vf_sums(cdsl_dtype t, int nranks, uint64_t first, size_t count, uint32_t *out)
{
    uint64_t n = (uint64_t)nranks;
    if (t == CDSL_U32 || t == CDSL_S32) {
        for (size_t i = 0; i < count; i++) {
            uint32_t s = 0;
            for (uint64_t p = 0, u = (first + i) * n; p < n; p++)
                s += vf_hash(u + p);
            out[i] = s;
        }
        return;
    }
    int64_t lim = vf_small_limit(t, nranks);
    for (size_t i = 0; i < count; i++) {
        int64_t s = 0;
        for (uint64_t p = 0, u = (first + i) * n; p < n; p++)
            s += vf_small(lim, u + p);
        out[i] = vf_int_bits(t, s);
    }
}

static void vf_store_block(cdsl_dtype t, char *dst, const uint32_t *v, size_t count)
{
    if (cdsl_dtype_size(t) == 4) {
        memcpy(dst, v, 4 * count);
        return;
    }
    for (size_t i = 0; i < count; i++) {
        uint16_t h = (uint16_t)v[i];
        memcpy(dst + 2 * i, &h, 2);
    }
}

static float vf_float(cdsl_dtype t, uint32_t bits)
{
    switch (t) {
    case CDSL_F16: return rt_f16_to_f32((uint16_t)bits);
    case CDSL_BF16: return rt_bf16_to_f32((uint16_t)bits);
    default: return rt_bits_f32(bits);
    }
}

bool vf_equal(cdsl_dtype t, VfMode m, uint32_t want, uint32_t got)
{
    if (m == VF_MOVE || t == CDSL_U32 || t == CDSL_S32)
        return want == got;
    return vf_float(t, want) == vf_float(t, got); /* sums: by value, so -0 == +0 */
}

void vf_format(cdsl_dtype t, uint32_t bits, char *out, size_t len)
{
    if (t == CDSL_U32) {
        snprintf(out, len, "%u", bits);
    } else if (t == CDSL_S32) {
        int32_t v;
        memcpy(&v, &bits, sizeof v);
        snprintf(out, len, "%d", v);
    } else {
        float f = vf_float(t, bits);
        if (isnan(f))
            snprintf(out, len, "nan");
        else
            snprintf(out, len, "%.9g", (double)f);
    }
}

uint32_t vf_poison(cdsl_dtype t)
{
    return cdsl_dtype_size(t) == 2 ? 0xFFFFu : 0xFFFFFFFFu;
}

/* ---- the size convention ------------------------------------------------------------------- */

int cdsl_chunk_bytes(const cdsl_program *p, size_t size, size_t *chunk_bytes, size_t *granule)
{
    int in = cdsl_program_buf_chunks(p, CDSL_BUF_INPUT), out = cdsl_program_buf_chunks(p, CDSL_BUF_OUTPUT);
    int most = in > out ? in : out;
    size_t chunks = most > 0 ? (size_t)most : 1;
    const IrProgram *ir = program_ir(p);
    size_t align = ir && ir->chunk_align > 4 ? (size_t)ir->chunk_align : 4; /* a plan's alignment */
    if (granule)
        *granule = align * chunks;
    if (!ir || !chunk_bytes || size == 0 || size % (align * chunks))
        return CDSL_ERR_USAGE;
    *chunk_bytes = size / chunks;
    return CDSL_OK;
}

/* ---- fill ------------------------------------------------------------------------------------ */

/* p's IR when it fits the communicator (its rank count and buffers) and t is an element type;
 * NULL after a message otherwise (a usage error: the result would be meaningless). */
static const IrProgram *vf_program(cdsl_comm *c, const cdsl_program *p, cdsl_dtype t)
{
    const IrProgram *ir = program_ir(p);
    if (!c) {
        rt_error(NULL, "there is no communicator (NULL) to fill or check");
        return NULL;
    }
    if (!ir) {
        rt_error(rt_comm_log(c), "the program was not evaluated; there is nothing to fill or check");
        return NULL;
    }
    if (ir->nranks != cdsl_comm_nranks(c)) {
        rt_error(rt_comm_log(c), "%s was compiled for %d ranks; the communicator has %d", ir->name, ir->nranks,
                 cdsl_comm_nranks(c));
        return NULL;
    }
    if ((unsigned)t > CDSL_S32) {
        rt_error(rt_comm_log(c), "unknown element type %d", (int)t);
        return NULL;
    }
    if (!rt_comm_layout_matches(c, ir)) {
        rt_error(rt_comm_log(c), "the communicator's buffers were not allocated for %s", ir->name);
        return NULL;
    }
    return ir;
}

static void *vf_host(cdsl_comm *c, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 1);
    if (!h)
        rt_error(rt_comm_log(c), "out of memory: %zu bytes of host memory to fill or check buffers", bytes);
    return h;
}

/* Rank r's input pattern: elems elements at dst. */
static void vf_pattern(const IrProgram *ir, cdsl_dtype t, int r, size_t elems, char *dst)
{
    uint32_t v[VF_BLOCK];
    for (size_t e = 0; e < elems; e += VF_BLOCK) {
        size_t n = elems - e < VF_BLOCK ? elems - e : VF_BLOCK;
        vf_values(t, vf_mode(ir->coll), ir->nranks, r, e, n, v);
        vf_store_block(t, dst + e * cdsl_dtype_size(t), v, n);
    }
}

/* Each rank's buffer b, other than the input, as the run must find it: all poison. The
 * aliased buffer is its holder's memory and the packet slots are the runtime's: neither is
 * written here. */
static int vf_poison_buffer(cdsl_comm *c, const IrProgram *ir, int b, char *host)
{
    int aliased = -1;
    ir_in_place(ir, &aliased, NULL);
    size_t bytes = cdsl_comm_buf_bytes(c, b);
    if (b == IR_INPUT || b == aliased || ir->bufs[b].internal)
        return CDSL_OK;
    memset(host, VF_POISON_BYTE, bytes);
    for (int r = 0; r < ir->nranks; r++) {
        int rc = cdsl_comm_write(c, r, b, host, bytes);
        if (rc)
            return rc;
    }
    return CDSL_OK;
}

/* Each rank's input pattern, written last: in place (allgather, allreduce) the input is a part
 * of the output, which the communicator addresses, after the rest of the output was poisoned. */
static int vf_fill_input(cdsl_comm *c, const IrProgram *ir, cdsl_dtype t, char *host)
{
    size_t bytes = cdsl_comm_buf_bytes(c, IR_INPUT);
    for (int r = 0; r < ir->nranks; r++) {
        vf_pattern(ir, t, r, bytes / cdsl_dtype_size(t), host);
        int rc = cdsl_comm_write(c, r, IR_INPUT, host, bytes);
        if (rc)
            return rc;
    }
    return CDSL_OK;
}

int cdsl_fill(cdsl_comm *c, const cdsl_program *p, cdsl_dtype t)
{
    const IrProgram *ir = vf_program(c, p, t);
    if (!ir)
        return CDSL_ERR_USAGE;
    size_t biggest = 0;
    for (int b = 0; b < ir->nbufs; b++)
        if (cdsl_comm_buf_bytes(c, b) > biggest)
            biggest = cdsl_comm_buf_bytes(c, b);
    char *host = vf_host(c, biggest);
    if (!host)
        return CDSL_ERR_SYSTEM;
    double t0 = log_clock();
    int rc = CDSL_OK;
    for (int b = 0; !rc && b < ir->nbufs; b++)
        rc = vf_poison_buffer(c, ir, b, host);
    if (!rc && ir->nbufs > IR_INPUT)
        rc = vf_fill_input(c, ir, t, host);
    free(host);
    log_msg(LOG_TRACE, "timing: fill %.3f ms (%s, %s)", log_ms_since(t0), ir->name, cdsl_dtype_name(t));
    return rc;
}

/* ---- check ----------------------------------------------------------------------------------- */

typedef struct VfCheck {
    const IrProgram *ir;
    cdsl_dtype t;
    VfMode mode;
    size_t chunk_elems;
    uint32_t *sums;                     /* allreduce: the expected output, the same on every rank */
    unsigned long long wrong;
    int ranks_wrong;
    int first_rank;                     /* -1 until a wrong element is seen */
    size_t first_elem;
    uint32_t first_want, first_got;
} VfCheck;

/* Expected output elements [first, first + count) of rank r; the range lies in one chunk. */
static void vf_expected(const VfCheck *k, int r, size_t first, size_t count, uint32_t *want)
{
    const IrProgram *ir = k->ir;
    size_t ce = k->chunk_elems, C = (size_t)ir->chunks, chunk = first / ce, from = vf_from(ir, r);
    if (coll_info(ir->coll)->post == COLL_POST_GATHER)
        vf_values(k->t, VF_MOVE, ir->nranks, (int)(chunk / C), (from + chunk % C) * ce + first % ce, count, want);
    else if (coll_info(ir->coll)->post == COLL_POST_BROADCAST)
        vf_values(k->t, VF_MOVE, ir->nranks, ir->root, from * ce + first, count, want);
    else if (k->sums)
        memcpy(want, k->sums + first, count * sizeof *want);
    else
        vf_sums(k->t, ir->nranks, from * ce + first, count, want);
}

/* Compares a block: bytes first (the common, right case), then element by element. */
static void vf_compare(VfCheck *k, int r, size_t first, const uint32_t *want, const char *got, size_t count)
{
    uint16_t half[VF_BLOCK];
    size_t es = cdsl_dtype_size(k->t);
    const void *bytes = want;
    if (es == 2) {
        for (size_t i = 0; i < count; i++)
            half[i] = (uint16_t)want[i];
        bytes = half;
    }
    if (memcmp(bytes, got, es * count) == 0)
        return;
    for (size_t i = 0; i < count; i++) {
        uint32_t g = vf_load(k->t, got, i);
        if (vf_equal(k->t, k->mode, want[i], g))
            continue;
        if (k->wrong++ == 0) {
            k->first_rank = r;
            k->first_elem = first + i;
            k->first_want = want[i];
            k->first_got = g;
        }
    }
}

static void vf_check_rank(VfCheck *k, int r, const char *host, size_t elems)
{
    unsigned long long before = k->wrong;
    size_t ce = k->chunk_elems, es = cdsl_dtype_size(k->t);
    uint32_t want[VF_BLOCK];
    for (size_t chunk = 0; chunk < elems; chunk += ce) {
        for (size_t e = chunk; e < chunk + ce; e += VF_BLOCK) {
            size_t n = chunk + ce - e < VF_BLOCK ? chunk + ce - e : VF_BLOCK;
            vf_expected(k, r, e, n, want);
            vf_compare(k, r, e, want, host + e * es, n);
        }
    }
    k->ranks_wrong += k->wrong > before;
}

static void vf_report(FILE *log, const VfCheck *k, size_t out_elems, int ranks_checked)
{
    const IrProgram *ir = k->ir;
    size_t ce = k->chunk_elems, chunk = k->first_elem / ce, elem = k->first_elem % ce;
    char want[48], got[48], from[96];
    vf_format(k->t, k->first_want, want, sizeof want);
    vf_format(k->t, k->first_got, got, sizeof got);
    size_t start = vf_from(ir, k->first_rank);
    if (coll_info(ir->coll)->post == COLL_POST_GATHER)
        snprintf(from, sizeof from, "rank %zu's input chunk %zu", chunk / (size_t)ir->chunks,
                 start + chunk % (size_t)ir->chunks);
    else if (coll_info(ir->coll)->post == COLL_POST_BROADCAST)
        snprintf(from, sizeof from, "the root %d's input chunk %zu", ir->root, start + chunk);
    else
        snprintf(from, sizeof from, "the sum over ranks of input chunk %zu", start + chunk);
    bool poison = k->first_got == vf_poison(k->t);
    rt_error(log, "wrong result on rank %d: output chunk %zu, element %zu is %s%s, expected %s (from %s)",
             k->first_rank, chunk, elem, got, poison ? " (never written)" : "", want, from);
    log = log ? log : stderr;
    fprintf(log, "cdsl: note: %llu of %llu output elements wrong, on %d of %d ranks\n", k->wrong,
            (unsigned long long)out_elems * (unsigned long long)ranks_checked, k->ranks_wrong, ranks_checked);
    fflush(log);
}

static int vf_prepare_sums(cdsl_comm *c, VfCheck *k, size_t out_elems)
{
    if (!vf_sums_once(k->ir))
        return CDSL_OK;
    k->sums = vf_host(c, out_elems * sizeof *k->sums);
    if (!k->sums)
        return CDSL_ERR_SYSTEM;
    vf_sums(k->t, k->ir->nranks, vf_from(k->ir, 0) * k->chunk_elems, out_elems, k->sums);
    return CDSL_OK;
}

/* The first wrong element as cdsl_check_detail reports it. */
static void vf_first_wrong(const VfCheck *k, cdsl_check_result *out)
{
    out->wrong = k->wrong;
    if (!k->wrong)
        return;
    out->rank = k->first_rank;
    out->chunk = k->first_elem / k->chunk_elems;
    out->element = k->first_elem % k->chunk_elems;
    vf_format(k->t, k->first_want, out->expected, sizeof out->expected);
    vf_format(k->t, k->first_got, out->got, sizeof out->got);
    out->never_written = k->first_got == vf_poison(k->t);
}

int cdsl_check(cdsl_comm *c, const cdsl_program *p, cdsl_dtype t, unsigned long long *wrong)
{
    cdsl_check_result r;
    int rc = cdsl_check_detail(c, p, t, &r);
    if (wrong)
        *wrong = r.wrong;
    return rc;
}

int cdsl_check_detail(cdsl_comm *c, const cdsl_program *p, cdsl_dtype t, cdsl_check_result *result)
{
    cdsl_check_result none = {.rank = -1};
    cdsl_check_result *out = result ? result : &none;
    *out = none;
    const IrProgram *ir = vf_program(c, p, t);
    if (!ir)
        return CDSL_ERR_USAGE;
    if (!vf_has_result(ir))
        return CDSL_OK;
    double t0 = log_clock();
    VfCheck k = {.ir = ir, .t = t, .mode = vf_mode(ir->coll), .first_rank = -1};
    k.chunk_elems = cdsl_comm_chunk_bytes(c) / cdsl_dtype_size(t);
    size_t bytes = cdsl_comm_buf_bytes(c, IR_OUTPUT), elems = bytes / cdsl_dtype_size(t);
    char *host = vf_host(c, bytes);
    int rc = host ? vf_prepare_sums(c, &k, elems) : CDSL_ERR_SYSTEM;
    int checked = 0;
    for (int r = 0; !rc && r < ir->nranks; r++) {
        if (!vf_rank_checked(ir, r))
            continue;
        checked++;
        rc = cdsl_comm_read(c, r, IR_OUTPUT, host, bytes);
        if (!rc)
            vf_check_rank(&k, r, host, elems);
    }
    free(host);
    free(k.sums);
    log_msg(LOG_INFO, "timing: verify %.3f ms (%s, %llu wrong elements)", log_ms_since(t0), ir->name, k.wrong);
    if (rc)
        return rc;
    vf_first_wrong(&k, out);
    if (!k.wrong)
        return CDSL_OK;
    vf_report(rt_comm_log(c), &k, elems, checked);
    return CDSL_ERR_VERIFY;
}

/* ---- one rank's part, for the per-rank API (rank_comm.c) ------------------------------------ */

static const IrProgram *vf_rank_args(const cdsl_program *p, cdsl_dtype t, int rank, size_t chunk, int buf,
                                     size_t bytes, FILE *log, size_t *elems)
{
    const IrProgram *ir = program_ir(p);
    if (!ir || rank < 0 || rank >= ir->nranks || (unsigned)t > CDSL_S32 || chunk == 0 || chunk % 4) {
        rt_error(log, "the pattern needs an evaluated program, a rank of it, a known type and chunks of a "
                 "positive multiple of 4 bytes");
        return NULL;
    }
    size_t need = buf < ir->nbufs ? (size_t)ir->bufs[buf].nchunks * chunk : 0;
    if (bytes < need) {
        rt_error(log, "rank %d's %s for the pattern holds %zu bytes; %s needs %zu", rank,
                 buf == IR_INPUT ? "input" : "output", bytes, ir->name, need);
        return NULL;
    }
    *elems = need / cdsl_dtype_size(t);
    return ir;
}

int cdsl_pattern_fill(const cdsl_program *p, cdsl_dtype t, int rank, size_t chunk_bytes, void *input, size_t bytes)
{
    size_t elems;
    const IrProgram *ir = vf_rank_args(p, t, rank, chunk_bytes, IR_INPUT, bytes, NULL, &elems);
    if (!ir || (elems && !input))
        return CDSL_ERR_USAGE;
    vf_pattern(ir, t, rank, elems, input);
    return CDSL_OK;
}

int cdsl_pattern_check(const cdsl_program *p, cdsl_dtype t, int rank, size_t chunk_bytes, const void *output,
                       size_t bytes, unsigned long long *wrong, FILE *log)
{
    size_t elems;
    if (wrong)
        *wrong = 0;
    const IrProgram *ir = vf_rank_args(p, t, rank, chunk_bytes, IR_OUTPUT, bytes, log, &elems);
    if (!ir || (elems && !output))
        return CDSL_ERR_USAGE;
    if (!vf_has_result(ir) || !vf_rank_checked(ir, rank))
        return CDSL_OK;
    VfCheck k = {.ir = ir, .t = t, .mode = vf_mode(ir->coll), .first_rank = -1};
    k.chunk_elems = chunk_bytes / cdsl_dtype_size(t);
    if (vf_sums_once(ir)) {
        if (!(k.sums = malloc(elems ? elems * sizeof *k.sums : 1))) {
            rt_error(log, "out of memory checking rank %d's output", rank);
            return CDSL_ERR_SYSTEM;
        }
        vf_sums(t, ir->nranks, vf_from(ir, 0) * k.chunk_elems, elems, k.sums);
    }
    vf_check_rank(&k, rank, output, elems);
    free(k.sums);
    if (wrong)
        *wrong = k.wrong;
    if (!k.wrong)
        return CDSL_OK;
    vf_report(log, &k, elems, 1);
    return CDSL_ERR_VERIFY;
}
