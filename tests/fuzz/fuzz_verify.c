/*
 * fuzz_verify.c - libFuzzer target over what cdslrun does with a plan once it is compiled:
 * the chunk size for a collective size, the communicator's buffers, cdsl_fill, a run on the
 * sim and cdsl_check. The input is not the plan's text (fuzz_plan covers the importer) but
 * the plan's shape, so that nearly every input reaches fill and check: the bytes choose
 *
 *     byte 0      the collective: allgather, reducescatter, allreduce, alltoall, custom, broadcast
 *                 (a plan names no root: root 0's)
 *     byte 1      ranks, 1 to 8
 *     bytes 2-4   input, output and scratch chunks per gpu (0 to 16, 16, 8): odd counts,
 *                 counts that fit no collective, and empty buffers
 *     byte 5      bit 0: in place; bits 1-3: the element type
 *     byte 6      the collective's size, in granules (1 to 16)
 *     byte 7      the seed of the sim's jitter (0: none), which also poisons a rank's output
 *                 and scratch at its start the way the sim does in place
 *     then        up to MAX_OPS local copies of 5 bytes each: rank, source buffer and chunk,
 *                 destination buffer and chunk (indices may fall outside: the importer's error)
 *
 * and the harness writes that plan as MSCCL++ JSON into a memory file and compiles it with
 * cdsl_compile from there, as cdslrun reads a plan. A plan the checker refuses (a collective
 * that local copies cannot implement) is not run, but its buffers are still filled and checked. Every input must end in a verified run, a wrong result
 * or a message: no crash, no leak, no undefined behaviour (-fsanitize=fuzzer,address,undefined).
 */
#define _GNU_SOURCE     /* memfd_create */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cdsl.h"

enum { MAX_OPS = 16, PLAN_BYTES = 64 * 1024 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const collectives[] = {"allgather", "reducescatter", "allreduce", "alltoall", "custom", "broadcast"};
static const char buffer_types[] = {'i', 'o', 's'};

typedef struct Shape {
    int coll, nranks, in, out, scratch, in_place, dtype, granules;
    unsigned seed;
    const uint8_t *ops;
    int nops;
} Shape;

typedef struct Text {
    char buf[PLAN_BYTES];
    size_t len;
} Text;

static Text plan;   /* the input's plan: static, as 64 KiB is much for a fuzzer's stack */

static void put(Text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->buf + t->len, sizeof t->buf - t->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += (size_t)n < sizeof t->buf - t->len ? (size_t)n : sizeof t->buf - t->len - 1;
}

static Shape read_shape(const uint8_t *d, size_t size)
{
    uint8_t h[8] = {0};
    memcpy(h, d, size < sizeof h ? size : sizeof h);
    Shape s = {
        .coll = h[0] % (int)(sizeof collectives / sizeof *collectives),
        .nranks = 1 + h[1] % 8,
        .in = h[2] % 17,
        .out = h[3] % 17,
        .scratch = h[4] % 9,
        .in_place = h[5] & 1,
        .dtype = (h[5] >> 1) % 5,
        .granules = 1 + h[6] % 16,
        .seed = h[7],
    };
    if (size > sizeof h) {
        s.ops = d + sizeof h;
        s.nops = (int)((size - sizeof h) / 5);
        if (s.nops > MAX_OPS)
            s.nops = MAX_OPS;
    }
    return s;
}

static void put_copy(Text *t, const uint8_t *op)
{
    put(t, ",{\"name\":\"copy\",\"src_buff\":[{\"type\":\"%c\",\"index\":%d,\"size\":1}],"
           "\"dst_buff\":[{\"type\":\"%c\",\"index\":%d,\"size\":1}],\"channel_type\":\"none\"}",
        buffer_types[op[1] % 3], op[2] % 20, buffer_types[op[3] % 3], op[4] % 20);
}

static void put_gpu(Text *t, const Shape *s, int r)
{
    put(t, "%s{\"id\":%d,\"input_chunks\":%d,\"output_chunks\":%d,\"scratch_chunks\":%d,\"channels\":[],"
           "\"remote_buffers\":[],\"threadblocks\":[{\"id\":0,\"ops\":[{\"name\":\"nop\"}",
        r ? "," : "", r, s->in, s->out, s->scratch);
    for (int k = 0; k < s->nops; k++)
        if (s->ops[5 * k] % s->nranks == r)
            put_copy(t, s->ops + 5 * k);
    put(t, "],\"channels\":[],\"remote_buffer_refs\":[]}]}");
}

static void write_plan(Text *t, const Shape *s)
{
    put(t, "{\"name\":\"fuzz_verify\",\"collective\":\"%s\",\"protocol\":\"Simple\",\"inplace\":%s,"
           "\"reuse_resources\":false,\"num_threads_per_block\":1024,\"use_double_scratch_buffer\":false,"
           "\"buffer_alignment\":16,\"min_message_size\":0,\"max_message_size\":18446744073709551615,\"gpus\":[",
        collectives[s->coll], s->in_place ? "true" : "false");
    for (int r = 0; r < s->nranks; r++)
        put_gpu(t, s, r);
    put(t, "]}\n");
}

/* cdslrun's run_one_size: chunk size, buffers, fill, one run, check. */
static void run_plan(cdsl_program *p, const Shape *s, FILE *sink)
{
    size_t chunk, granule = 0;
    cdsl_chunk_bytes(p, 1, &chunk, &granule);
    if (granule == 0 || cdsl_chunk_bytes(p, granule * (size_t)s->granules, &chunk, NULL))
        return;
    cdsl_comm_opts o;
    cdsl_comm_opts_init(&o);
    o.backend = CDSL_BACKEND_SIM;
    o.nranks = s->nranks;
    o.seed = s->seed;
    o.jitter_us = s->seed ? 1 : 0;
    o.log = sink;
    cdsl_comm *c = NULL;
    if (cdsl_comm_create(&o, &c))
        return;
    cdsl_dtype t = (cdsl_dtype)s->dtype;
    unsigned long long wrong = 0;
    if (!cdsl_comm_alloc(c, p, chunk) && !cdsl_fill(c, p, t)) {
        cdsl_run(c, p, t, 1, NULL);     /* refused when the checker found errors: then the fill is checked */
        cdsl_check(c, p, t, &wrong);
    }
    cdsl_comm_destroy(c);
}

/* The plan as a file: a memory file, rewritten for each input (no file is left behind). */
static const char *plan_file(const Text *t)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0 && (fd = memfd_create("fuzz_verify.json", 0)) < 0)
        return NULL;
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    if (ftruncate(fd, 0) || pwrite(fd, t->buf, t->len, 0) != (ssize_t)t->len)
        return NULL;
    return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        return 0;
    Shape s = read_shape(data, size);
    plan.len = 0;
    write_plan(&plan, &s);
    cdsl_compile_opts opts = {
        .path = plan_file(&plan),
        .diag = sink,
        .stop_after = CDSL_STAGE_CHECK,
        .check_memory = (size_t)64 << 20,
        .check_steps = 1u << 24,
    };
    cdsl_program *p = NULL;
    /* A plan the checker refused (most shapes of a collective are not one) still has its
     * buffers: fill and check run on them, as they would on a program that ran wrong. */
    if (opts.path)
        cdsl_compile(&opts, &p);
    if (cdsl_program_nbufs(p) > 0)
        run_plan(p, &s, sink);
    cdsl_program_destroy(p);
    return 0;
}
