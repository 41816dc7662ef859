/*
 * null_args.c - every public function of cdsl.h, called with NULL for each of its pointer
 * arguments in turn: a function that acts refuses with CDSL_ERR_USAGE, a getter returns its
 * documented "none" value, destroy(NULL) does nothing; none of them dereferences the NULL
 * (built and run under ASan/UBSan by tests/api/api.sh, which also checks that `functions`
 * below names every function cdsl.h declares, so that a new one cannot be forgotten here).
 *
 *     null_args FILE.cdsl        (an allgather; compiled for 2 ranks, run on the sim)
 *     null_args --list           (the functions this test covers, one a line)
 *
 * Prints "[PASS] function" or "[FAIL] function: what", one line per function.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdsl.h"
#include "fixture.h"

static const char *const functions[] = {
    "cdsl_backend_name", "cdsl_backend_parse", "cdsl_dtype_name", "cdsl_dtype_parse", "cdsl_dtype_size",
    "cdsl_version", "cdsl_escape", "cdsl_compile", "cdsl_program_destroy", "cdsl_program_dump",
    "cdsl_program_name", "cdsl_program_collective", "cdsl_program_nranks", "cdsl_program_chunks",
    "cdsl_emit_cuda", "cdsl_compile_device", "cdsl_comm_opts_init", "cdsl_comm_create", "cdsl_comm_destroy",
    "cdsl_comm_backend", "cdsl_comm_nranks", "cdsl_program_nbufs", "cdsl_program_buf_chunks",
    "cdsl_program_buf_name", "cdsl_chunk_bytes", "cdsl_comm_alloc", "cdsl_comm_chunk_bytes",
    "cdsl_comm_buf_bytes", "cdsl_comm_write", "cdsl_comm_read", "cdsl_run", "cdsl_comm_buffer",
    "cdsl_comm_register", "cdsl_run_async", "cdsl_comm_status", "cdsl_fill", "cdsl_check", "cdsl_cache_clean",
    "cdsl_emit_cuda_rank", "cdsl_cuda_standalone", "cdsl_compile_device_rank", "cdsl_engine_name", "cdsl_engine_parse",
    "cdsl_get_unique_id", "cdsl_get_unique_id_engine", "cdsl_unique_id_engine", "cdsl_rank_config_init",
    "cdsl_comm_init_rank", "cdsl_rank_comm_destroy", "cdsl_rank_comm_rank", "cdsl_rank_comm_nranks",
    "cdsl_rank_comm_engine", "cdsl_rank_comm_device", "cdsl_rank_alloc", "cdsl_rank_buffer",
    "cdsl_rank_buffer_bytes", "cdsl_rank_run", "cdsl_rank_status", "cdsl_pattern_fill", "cdsl_pattern_check",
    "cdsl_check_detail", "cdsl_comm_device_info", "cdsl_find_program", "cdsl_stdlib_dir",
    "cdsl_is_plan", "cdsl_emit_mscclpp", "cdsl_program_in_place", "cdsl_get_last_error",
    "cdsl_rank_get_last_error", "cdsl_collective_count", "cdsl_collective_name", "cdsl_collective_find",
    "cdsl_collective_chunks", "cdsl_collective_busbw_factor", "cdsl_collective_postcondition",
    "cdsl_collective_in_place", "cdsl_list_name", "cdsl_program_size_class",
    "cdsl_collective_in_place", "cdsl_list_name", "cdsl_collective_has_root", "cdsl_program_root",
};

static void names(void)
{
    cdsl_backend b = CDSL_BACKEND_P2P;
    cdsl_dtype t = CDSL_F16;
    EXPECT(!strcmp(cdsl_backend_name((cdsl_backend)99), "?"));
    test_case("cdsl_backend_name");
    EXPECT(cdsl_backend_parse(NULL, &b) == CDSL_ERR_USAGE && b == CDSL_BACKEND_P2P);
    EXPECT(cdsl_backend_parse("sim", NULL) == CDSL_ERR_USAGE);
    test_case("cdsl_backend_parse");
    EXPECT(cdsl_list_name((cdsl_list)99, 0) == NULL && cdsl_list_name(CDSL_LIST_ENGINES, -1) == NULL);
    EXPECT(cdsl_list_name(CDSL_LIST_FLAVOURS, 1 << 30) == NULL);
    test_case("cdsl_list_name");
    EXPECT(!strcmp(cdsl_dtype_name((cdsl_dtype)99), "?"));
    test_case("cdsl_dtype_name");
    EXPECT(cdsl_dtype_parse(NULL, &t) == CDSL_ERR_USAGE && t == CDSL_F16);
    EXPECT(cdsl_dtype_parse("f32", NULL) == CDSL_ERR_USAGE);
    test_case("cdsl_dtype_parse");
    EXPECT(cdsl_dtype_size(CDSL_BF16) == 2);
    test_case("cdsl_dtype_size");
    EXPECT(cdsl_version() != NULL);
    test_case("cdsl_version");
    char out[8] = "x";
    EXPECT(cdsl_escape(NULL, out, sizeof out) == 0 && out[0] == 0);
    EXPECT(cdsl_escape("\x1b", NULL, 0) == 4);
    EXPECT(cdsl_escape("\x1b", NULL, sizeof out) == 4);
    test_case("cdsl_escape");
    /* NULL streams: report nothing, log nothing; a folder that does not exist is clean already. */
    setenv("CDSL_CACHE_DIR", "/nonexistent-cdsl-cache", 1);
    EXPECT(cdsl_cache_clean(NULL, NULL) == CDSL_OK);
    test_case("cdsl_cache_clean");
    EXPECT(cdsl_find_program(NULL, out, sizeof out) == CDSL_ERR_USAGE);
    EXPECT(cdsl_find_program("allgather_ring", NULL, 0) == CDSL_ERR_USAGE);
    test_case("cdsl_find_program");
    EXPECT(cdsl_stdlib_dir(NULL, 64) == CDSL_ERR_USAGE);
    test_case("cdsl_stdlib_dir");
}

/* cdsl_compile's refusals, then the program it compiles from path. */
static cdsl_program *compile_cases(const char *path, FILE *quiet)
{
    cdsl_compile_opts o = compile_opts(path, 2);
    o.diag = quiet;
    cdsl_program *p = NULL;
    EXPECT(cdsl_compile(NULL, &p) == CDSL_ERR_USAGE && p == NULL);
    EXPECT(cdsl_compile(&o, NULL) == CDSL_ERR_USAGE);
    o.path = NULL;
    EXPECT(cdsl_compile(&o, &p) == CDSL_ERR_USAGE && p == NULL);
    o.path = path;
    o.ndefines = 1;   /* a count without its list */
    EXPECT(cdsl_compile(&o, &p) == CDSL_ERR_USAGE && p == NULL);
    o.ndefines = 0;
    o.ninclude_dirs = 1;
    EXPECT(cdsl_compile(&o, &p) == CDSL_ERR_USAGE && p == NULL);
    o.ninclude_dirs = 0;
    EXPECT(cdsl_compile(&o, &p) == CDSL_OK && p != NULL);
    test_case("cdsl_compile");
    cdsl_program_destroy(NULL);
    test_case("cdsl_program_destroy");
    return p;
}

/* The collectives table takes no pointer but a name and two results; an unknown index is "none". */
static void collectives(void)
{
    EXPECT(cdsl_collective_count() > 0);
    test_case("cdsl_collective_count");
    EXPECT(cdsl_collective_name(-1) == NULL && cdsl_collective_name(cdsl_collective_count()) == NULL);
    test_case("cdsl_collective_name");
    EXPECT(cdsl_collective_find(NULL) == -1);
    test_case("cdsl_collective_find");
    long long in = 5;
    EXPECT(cdsl_collective_chunks(0, 2, 1, NULL, NULL) == CDSL_OK && cdsl_collective_chunks(0, 2, 1, &in, NULL) == CDSL_OK);
    EXPECT(in > 0 && cdsl_collective_chunks(-1, 2, 1, NULL, NULL) == CDSL_ERR_USAGE);
    test_case("cdsl_collective_chunks");
    EXPECT(cdsl_collective_busbw_factor(-1, 2) == 0);
    test_case("cdsl_collective_busbw_factor");
    EXPECT(cdsl_collective_postcondition(-1) == CDSL_POST_NONE);
    test_case("cdsl_collective_postcondition");
    EXPECT(cdsl_collective_in_place(-1) == 0);
    test_case("cdsl_collective_in_place");
    EXPECT(cdsl_collective_has_root(-1) == 0 && cdsl_collective_has_root(cdsl_collective_find("broadcast")) == 1);
    test_case("cdsl_collective_has_root");
}

static void program(cdsl_program *p, FILE *quiet)
{
    EXPECT(cdsl_program_dump(NULL, CDSL_DUMP_IR, quiet) == CDSL_ERR_USAGE);
    EXPECT(cdsl_program_dump(p, CDSL_DUMP_IR, NULL) == CDSL_ERR_USAGE);
    test_case("cdsl_program_dump");
    EXPECT(cdsl_program_name(NULL) == NULL);
    test_case("cdsl_program_name");
    EXPECT(cdsl_program_collective(NULL) == NULL);
    test_case("cdsl_program_collective");
    EXPECT(cdsl_program_nranks(NULL) == 0);
    test_case("cdsl_program_nranks");
    EXPECT(cdsl_program_chunks(NULL) == 0);
    test_case("cdsl_program_chunks");
    EXPECT(cdsl_program_in_place(NULL) == 0 && cdsl_program_in_place(p) == 0);
    test_case("cdsl_program_in_place");
    EXPECT(cdsl_program_size_class(NULL, 1 << 20) == 0 && cdsl_program_size_class(p, 1 << 20) == 0);
    test_case("cdsl_program_size_class");
    EXPECT(cdsl_program_root(NULL) == -1 && cdsl_program_root(p) == -1);
    test_case("cdsl_program_root");
    collectives();
    EXPECT(cdsl_emit_cuda(NULL, CDSL_BACKEND_P2P, CDSL_F32) == NULL);
    test_case("cdsl_emit_cuda");
    EXPECT(cdsl_is_plan(NULL) == 0);
    test_case("cdsl_is_plan");
    EXPECT(cdsl_emit_mscclpp(NULL, quiet) == CDSL_ERR_USAGE);
    EXPECT(cdsl_emit_mscclpp(p, NULL) == CDSL_ERR_USAGE);
    test_case("cdsl_emit_mscclpp");
    void *data = (void *)1;
    size_t len = 1;
    EXPECT(cdsl_compile_device(NULL, CDSL_BACKEND_P2P, CDSL_F32, "sm_90", CDSL_PTX, &data, &len) == CDSL_ERR_USAGE);
    EXPECT(data == NULL && len == 0);
    EXPECT(cdsl_compile_device(p, CDSL_BACKEND_P2P, CDSL_F32, "sm_90", CDSL_PTX, NULL, &len) == CDSL_ERR_USAGE);
    EXPECT(cdsl_compile_device(p, CDSL_BACKEND_P2P, CDSL_F32, "sm_90", CDSL_PTX, &data, NULL) == CDSL_ERR_USAGE);
    /* arch NULL is the default architecture; the sim flavour has no device code: refused. */
    EXPECT(cdsl_compile_device(p, CDSL_BACKEND_SIM, CDSL_F32, NULL, CDSL_PTX, &data, &len) == CDSL_ERR_USAGE);
    test_case("cdsl_compile_device");
    EXPECT(cdsl_program_nbufs(NULL) == 0);
    test_case("cdsl_program_nbufs");
    EXPECT(cdsl_program_buf_chunks(NULL, 0) == -1);
    test_case("cdsl_program_buf_chunks");
    EXPECT(cdsl_program_buf_name(NULL, 0) == NULL);
    test_case("cdsl_program_buf_name");
    size_t chunk = 0, granule = 0;
    EXPECT(cdsl_chunk_bytes(NULL, 64, &chunk, &granule) == CDSL_ERR_USAGE);
    EXPECT(cdsl_chunk_bytes(p, 64, NULL, NULL) == CDSL_ERR_USAGE);
    EXPECT(cdsl_chunk_bytes(p, 64, &chunk, NULL) == CDSL_OK && chunk == 32);
    test_case("cdsl_chunk_bytes");
}

static cdsl_comm *comm_create(FILE *quiet)
{
    cdsl_comm_opts_init(NULL);
    test_case("cdsl_comm_opts_init");
    cdsl_comm_opts o;
    cdsl_comm_opts_init(&o);
    o.backend = CDSL_BACKEND_SIM;
    o.nranks = 2;
    o.log = quiet;
    cdsl_comm *c = (cdsl_comm *)1;
    EXPECT(cdsl_comm_create(NULL, &c) == CDSL_ERR_USAGE && c == NULL);
    EXPECT(cdsl_comm_create(&o, NULL) == CDSL_ERR_USAGE);
    EXPECT(cdsl_comm_create(&o, &c) == CDSL_OK && c != NULL);
    test_case("cdsl_comm_create");
    cdsl_comm_destroy(NULL);
    test_case("cdsl_comm_destroy");
    EXPECT((int)cdsl_comm_backend(NULL) == CDSL_BACKEND_AUTO);
    test_case("cdsl_comm_backend");
    EXPECT(cdsl_comm_nranks(NULL) == 0);
    test_case("cdsl_comm_nranks");
    return c;
}

static void comm_buffers(cdsl_comm *c, cdsl_program *p)
{
    EXPECT(cdsl_comm_alloc(NULL, p, 64) == CDSL_ERR_USAGE);
    EXPECT(cdsl_comm_alloc(c, NULL, 64) == CDSL_ERR_USAGE);
    EXPECT(cdsl_comm_alloc(c, p, 64) == CDSL_OK);
    test_case("cdsl_comm_alloc");
    EXPECT(cdsl_comm_chunk_bytes(NULL) == 0);
    test_case("cdsl_comm_chunk_bytes");
    EXPECT(cdsl_comm_buf_bytes(NULL, 0) == 0);
    test_case("cdsl_comm_buf_bytes");
    char host[64] = {0};
    EXPECT(cdsl_comm_write(NULL, 0, 0, host, 16) == CDSL_ERR_USAGE);
    EXPECT(cdsl_comm_write(c, 0, 0, NULL, 16) == CDSL_ERR_USAGE);
    EXPECT(cdsl_comm_write(c, 0, 0, NULL, 0) == CDSL_OK);
    test_case("cdsl_comm_write");
    EXPECT(cdsl_comm_read(NULL, 0, 0, host, 16) == CDSL_ERR_USAGE);
    EXPECT(cdsl_comm_read(c, 0, 0, NULL, 16) == CDSL_ERR_USAGE);
    test_case("cdsl_comm_read");
    void *ptr = (void *)1;
    EXPECT(cdsl_comm_buffer(NULL, 0, 0, &ptr) == CDSL_ERR_USAGE);
    EXPECT(cdsl_comm_buffer(c, 0, 0, NULL) == CDSL_ERR_USAGE);
    test_case("cdsl_comm_buffer");
    void *ptrs[2 * 2] = {0};
    EXPECT(cdsl_comm_register(NULL, p, 64, ptrs) == CDSL_ERR_USAGE);
    EXPECT(cdsl_comm_register(c, NULL, 64, ptrs) == CDSL_ERR_USAGE);
    EXPECT(cdsl_comm_register(c, p, 64, NULL) == CDSL_ERR_USAGE);
    test_case("cdsl_comm_register");
    /* The refusals left the allocation alone: a run on it still verifies. */
    EXPECT(cdsl_comm_alloc(c, p, 64) == CDSL_OK);
}

static void comm_runs(cdsl_comm *c, cdsl_program *p)
{
    unsigned long long wrong = 0;
    EXPECT(cdsl_fill(NULL, p, CDSL_F32) == CDSL_ERR_USAGE);
    EXPECT(cdsl_fill(c, NULL, CDSL_F32) == CDSL_ERR_USAGE);
    EXPECT(cdsl_fill(c, p, CDSL_F32) == CDSL_OK);
    test_case("cdsl_fill");
    EXPECT(cdsl_run(NULL, p, CDSL_F32, 1, NULL) == CDSL_ERR_USAGE);
    EXPECT(cdsl_run(c, NULL, CDSL_F32, 1, NULL) == CDSL_ERR_USAGE);
    EXPECT(cdsl_run(c, p, CDSL_F32, 1, NULL) == CDSL_OK);   /* us_per_iter may be NULL */
    test_case("cdsl_run");
    EXPECT(cdsl_run_async(NULL, p, CDSL_F32, NULL) == CDSL_ERR_USAGE);
    EXPECT(cdsl_run_async(c, NULL, CDSL_F32, NULL) == CDSL_ERR_USAGE);
    EXPECT(cdsl_run_async(c, p, CDSL_F32, NULL) == CDSL_OK);   /* streams may be NULL */
    test_case("cdsl_run_async");
    EXPECT(cdsl_comm_status(NULL) == CDSL_ERR_USAGE);
    EXPECT(cdsl_comm_status(c) == CDSL_OK);
    test_case("cdsl_comm_status");
    EXPECT(cdsl_check(NULL, p, CDSL_F32, &wrong) == CDSL_ERR_USAGE);
    EXPECT(cdsl_check(c, NULL, CDSL_F32, &wrong) == CDSL_ERR_USAGE);
    EXPECT(cdsl_check(c, p, CDSL_F32, NULL) == CDSL_OK);   /* wrong may be NULL */
    test_case("cdsl_check");
    cdsl_check_result cr;
    EXPECT(cdsl_check_detail(NULL, p, CDSL_F32, &cr) == CDSL_ERR_USAGE);
    EXPECT(cdsl_check_detail(c, NULL, CDSL_F32, &cr) == CDSL_ERR_USAGE);
    EXPECT(cdsl_check_detail(c, p, CDSL_F32, NULL) == CDSL_OK);   /* result may be NULL */
    EXPECT(cdsl_check_detail(c, p, CDSL_F32, &cr) == CDSL_OK && cr.wrong == 0 && cr.rank == -1);
    test_case("cdsl_check_detail");
    cdsl_device_info info;
    EXPECT(cdsl_comm_device_info(NULL, 0, &info) == CDSL_ERR_USAGE);
    EXPECT(cdsl_comm_device_info(c, 0, NULL) == CDSL_ERR_USAGE);
    EXPECT(cdsl_comm_device_info(c, 0, &info) == CDSL_OK && info.device == -1);
    test_case("cdsl_comm_device_info");
    /* NULL: this thread's last error, which the NULL communicator above just was */
    EXPECT(strstr(cdsl_get_last_error(NULL), "cdsl_comm_device_info needs") != NULL);
    EXPECT(cdsl_get_last_error(c) != NULL);
    test_case("cdsl_get_last_error");
}

/* The per-rank API, on a one-rank sim communicator in this process. */
static void rank_api(cdsl_program *p, FILE *quiet)
{
    void *data = (void *)1;
    size_t len = 1;
    EXPECT(cdsl_emit_cuda_rank(NULL, CDSL_BACKEND_P2P, CDSL_F32, 0) == NULL);
    test_case("cdsl_emit_cuda_rank");
    EXPECT(cdsl_cuda_standalone(NULL) == NULL);
    test_case("cdsl_cuda_standalone");
    EXPECT(cdsl_compile_device_rank(NULL, CDSL_BACKEND_P2P, CDSL_F32, 0, NULL, CDSL_PTX, &data, &len) ==
           CDSL_ERR_USAGE);
    EXPECT(cdsl_compile_device_rank(p, CDSL_BACKEND_P2P, CDSL_F32, -1, NULL, CDSL_PTX, NULL, NULL) ==
           CDSL_ERR_USAGE);
    EXPECT(cdsl_compile_device_rank(p, CDSL_BACKEND_P2P, CDSL_F32, 0, NULL, CDSL_PTX, NULL, &len) ==
           CDSL_ERR_USAGE);
    test_case("cdsl_compile_device_rank");
    cdsl_engine e = CDSL_ENGINE_IPC;
    EXPECT(!strcmp(cdsl_engine_name((cdsl_engine)99), "?"));
    test_case("cdsl_engine_name");
    EXPECT(cdsl_engine_parse(NULL, &e) == CDSL_ERR_USAGE && e == CDSL_ENGINE_IPC);
    EXPECT(cdsl_engine_parse("sim", NULL) == CDSL_ERR_USAGE);
    test_case("cdsl_engine_parse");
    cdsl_unique_id id;
    EXPECT(cdsl_get_unique_id(NULL) == CDSL_ERR_USAGE);
    test_case("cdsl_get_unique_id");
    EXPECT(cdsl_get_unique_id_engine(CDSL_ENGINE_SIM, NULL) == CDSL_ERR_USAGE);
    EXPECT(cdsl_get_unique_id_engine(CDSL_ENGINE_SIM, &id) == CDSL_OK);
    test_case("cdsl_get_unique_id_engine");
    EXPECT((int)cdsl_unique_id_engine(NULL) == -1);
    EXPECT(cdsl_unique_id_engine(&id) == CDSL_ENGINE_SIM);
    test_case("cdsl_unique_id_engine");
    cdsl_rank_config cfg;
    cdsl_rank_config_init(NULL);
    cdsl_rank_config_init(&cfg);
    cfg.log = quiet;
    test_case("cdsl_rank_config_init");
    cdsl_rank_comm *c = (cdsl_rank_comm *)1;
    EXPECT(cdsl_comm_init_rank(NULL, 1, &id, 0, &cfg) == CDSL_ERR_USAGE);
    EXPECT(cdsl_comm_init_rank(&c, 1, NULL, 0, &cfg) == CDSL_ERR_USAGE && c == NULL);
    EXPECT(cdsl_comm_init_rank(&c, 1, &id, 0, &cfg) == CDSL_OK && c != NULL);
    test_case("cdsl_comm_init_rank");
    EXPECT(cdsl_rank_comm_rank(NULL) == -1 && cdsl_rank_comm_rank(c) == 0);
    test_case("cdsl_rank_comm_rank");
    EXPECT(cdsl_rank_comm_nranks(NULL) == 0 && cdsl_rank_comm_nranks(c) == 1);
    test_case("cdsl_rank_comm_nranks");
    EXPECT((int)cdsl_rank_comm_engine(NULL) == -1 && cdsl_rank_comm_engine(c) == CDSL_ENGINE_SIM);
    test_case("cdsl_rank_comm_engine");
    EXPECT(cdsl_rank_comm_device(NULL) == -1);
    test_case("cdsl_rank_comm_device");
    EXPECT(cdsl_rank_alloc(NULL, p, 64) == CDSL_ERR_USAGE);
    EXPECT(cdsl_rank_alloc(c, NULL, 64) == CDSL_ERR_USAGE);
    test_case("cdsl_rank_alloc");
    void *ptr = (void *)1;
    EXPECT(cdsl_rank_buffer(NULL, 0, &ptr) == CDSL_ERR_USAGE);
    EXPECT(cdsl_rank_buffer(c, 0, NULL) == CDSL_ERR_USAGE);
    test_case("cdsl_rank_buffer");
    EXPECT(cdsl_rank_buffer_bytes(NULL, 0) == 0);
    test_case("cdsl_rank_buffer_bytes");
    EXPECT(cdsl_rank_run(NULL, p, CDSL_F32, 64, NULL, NULL) == CDSL_ERR_USAGE);
    EXPECT(cdsl_rank_run(c, NULL, CDSL_F32, 64, NULL, NULL) == CDSL_ERR_USAGE);
    test_case("cdsl_rank_run");
    EXPECT(cdsl_rank_status(NULL) == CDSL_ERR_USAGE);
    test_case("cdsl_rank_status");
    char buf[256];
    EXPECT(cdsl_pattern_fill(NULL, CDSL_F32, 0, 64, buf, sizeof buf) == CDSL_ERR_USAGE);
    EXPECT(cdsl_pattern_fill(p, CDSL_F32, 0, 64, NULL, sizeof buf) == CDSL_ERR_USAGE);
    test_case("cdsl_pattern_fill");
    EXPECT(cdsl_pattern_check(NULL, CDSL_F32, 0, 64, buf, sizeof buf, NULL, quiet) == CDSL_ERR_USAGE);
    EXPECT(cdsl_pattern_check(p, CDSL_F32, 0, 64, NULL, sizeof buf, NULL, quiet) == CDSL_ERR_USAGE);
    test_case("cdsl_pattern_check");
    EXPECT(strstr(cdsl_rank_get_last_error(NULL), "the pattern needs") != NULL);
    EXPECT(cdsl_rank_get_last_error(c) != NULL);
    test_case("cdsl_rank_get_last_error");
    cdsl_rank_comm_destroy(NULL);
    cdsl_rank_comm_destroy(c);
    test_case("cdsl_rank_comm_destroy");
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (size_t i = 0; i < sizeof functions / sizeof *functions; i++)
            puts(functions[i]);
        return 0;
    }
    if (argc != 2)
        return 99;
    FILE *quiet = fopen("/dev/null", "w");
    names();
    cdsl_program *p = compile_cases(argv[1], quiet);
    if (!p)
        return 1;
    program(p, quiet);
    rank_api(p, quiet);
    cdsl_comm *c = comm_create(quiet);
    if (c) {
        comm_buffers(c, p);
        comm_runs(c, p);
    }
    cdsl_comm_destroy(c);
    cdsl_program_destroy(p);
    fclose(quiet);
    return test_failures != 0;
}
