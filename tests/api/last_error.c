/*
 * last_error.c - cdsl_get_last_error and cdsl_rank_get_last_error: each failure provoked on
 * purpose, then its text read back and compared with the line the log received.
 *
 *     last_error FILE.cdsl       (an allgather; compiled for 2 ranks, run on the sim)
 *
 * Prints "[PASS] what" or "[FAIL] what: why", one line per case.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdsl.h"
#include "fixture.h"

static int starts(const char *s, const char *prefix)
{
    return s && !strncmp(s, prefix, strlen(prefix));
}

/* The log's last "cdsl: error: " line, without the prefix and the newline. */
static void log_last_error(FILE *log, char *out, size_t size)
{
    char line[4096];
    out[0] = 0;
    fflush(log);
    rewind(log);
    while (fgets(line, sizeof line, log))
        if (starts(line, "cdsl: error: ")) {
            line[strcspn(line, "\n")] = 0;
            snprintf(out, size, "%s", line + strlen("cdsl: error: "));
        }
    fseek(log, 0, SEEK_END);
}

typedef struct Reader {
    cdsl_comm *c;
    int rc;
} Reader;

static void *bad_read(void *arg)
{
    Reader *r = arg;
    char byte;
    r->rc = cdsl_comm_read(r->c, 7, 0, &byte, 1);
    return NULL;
}

static void comm_errors(cdsl_program *p, FILE *log)
{
    cdsl_comm_opts o;
    cdsl_comm_opts_init(&o);
    o.backend = CDSL_BACKEND_SIM;
    o.nranks = 2;
    o.log = log;
    cdsl_comm *c = NULL;
    if (cdsl_comm_create(&o, &c)) {
        CASE_GOT("a sim communicator", 0, cdsl_get_last_error(NULL));
        return;
    }
    const char *e = cdsl_get_last_error(c);
    CASE_GOT("no error yet: \"\"", e && !*e, e);

    char byte = 0, logged[4096];
    int rc = cdsl_comm_write(c, 0, 0, &byte, 1);
    e = cdsl_get_last_error(c);
    log_last_error(log, logged, sizeof logged);
    CASE_GOT("a write before alloc: its message", rc == CDSL_ERR_USAGE &&
             !strcmp(e, "cannot write a buffer before cdsl_comm_alloc or cdsl_comm_register"), e);
    CASE_GOT("the log received the same line", !strcmp(e, logged), logged);

    size_t chunk;
    if (cdsl_chunk_bytes(p, 4096, &chunk, NULL) || cdsl_comm_alloc(c, p, chunk) || cdsl_fill(c, p, CDSL_F32)) {
        CASE_GOT("alloc and fill", 0, cdsl_get_last_error(c));
        cdsl_comm_destroy(c);
        return;
    }
    unsigned long long wrong = 0;
    rc = cdsl_check(c, p, CDSL_F32, &wrong);   /* never run: the output is the poison */
    e = cdsl_get_last_error(c);
    CASE_GOT("a check before the run: the wrong element, then its note", rc == CDSL_ERR_VERIFY &&
             starts(e, "wrong result on rank 0: output chunk 0, element 0 is nan (never written)") &&
             strstr(e, "\nnote: ") && strstr(e, "output elements wrong"), e);

    Reader r = {c, 0};
    pthread_t t;
    pthread_create(&t, NULL, bad_read, &r);
    pthread_join(t, NULL);
    e = cdsl_get_last_error(c);
    CASE_GOT("an error in another thread is the communicator's last", r.rc == CDSL_ERR_USAGE &&
             starts(e, "cannot read 1 bytes of rank 7's buffer 0: out of range"), e);
    e = cdsl_get_last_error(NULL);
    CASE_GOT("... but not this thread's", !strstr(e, "rank 7"), e);
    cdsl_comm_destroy(c);

    o.nranks = 0;
    rc = cdsl_comm_create(&o, &c);
    e = cdsl_get_last_error(NULL);
    CASE_GOT("a failed create: this thread's last error (NULL)", rc == CDSL_ERR_USAGE && c == NULL &&
             starts(e, "a communicator has 1 to"), e);
    rc = cdsl_run(NULL, p, CDSL_F32, 1, NULL);
    e = cdsl_get_last_error(NULL);
    CASE_GOT("a NULL communicator: this thread's last error", rc == CDSL_ERR_USAGE &&
           !strcmp(e, "cdsl_run: the communicator is NULL"), e);

    /* The default backend tries p2p quietly first (on a machine without a GPU it fails): what
       it hid is not this thread's last error either. */
    o.nranks = 2;
    o.backend = CDSL_BACKEND_AUTO;
    rc = cdsl_comm_create(&o, &c);
    e = cdsl_get_last_error(NULL);
    CASE_GOT("a create that succeeds on the default backend leaves this thread's last error as it was",
           rc == CDSL_OK && !strcmp(e, "cdsl_run: the communicator is NULL"), e);
    cdsl_comm_destroy(c);
}

static void rank_errors(cdsl_program *p, FILE *log)
{
    cdsl_unique_id id;
    memset(&id, 0, sizeof id);
    cdsl_rank_config cfg;
    cdsl_rank_config_init(&cfg);
    cfg.log = log;
    cdsl_rank_comm *c = NULL;
    int rc = cdsl_comm_init_rank(&c, 1, &id, 0, &cfg);
    const char *e = cdsl_rank_get_last_error(NULL);
    CASE_GOT("a failed cdsl_comm_init_rank: this thread's last error", rc == CDSL_ERR_USAGE && !c &&
             starts(e, "rank 0: this is not a unique id"), e);
    if (cdsl_get_unique_id_engine(CDSL_ENGINE_SIM, &id) || cdsl_comm_init_rank(&c, 1, &id, 0, &cfg)) {
        CASE_GOT("a one-rank sim communicator", 0, cdsl_rank_get_last_error(NULL));
        return;
    }
    e = cdsl_rank_get_last_error(c);
    CASE_GOT("rank: no error yet: \"\"", e && !*e, e);
    void *ptr;
    rc = cdsl_rank_buffer(c, 5, &ptr);
    e = cdsl_rank_get_last_error(c);
    char logged[4096];
    log_last_error(log, logged, sizeof logged);
    CASE_GOT("rank: a buffer that is not there", rc == CDSL_ERR_USAGE && starts(e, "rank 0: there is no buffer 5"), e);
    CASE_GOT("rank: the log received the same line", !strcmp(e, logged), logged);
    rc = cdsl_rank_run(c, p, CDSL_F32, 64, NULL, NULL);   /* p is for 2 ranks */
    e = cdsl_rank_get_last_error(c);
    CASE_GOT("rank: a program for another rank count, and only that (a new call's errors replace the last's)",
             rc == CDSL_ERR_USAGE && strstr(e, "was compiled for 2 ranks; the communicator has 1") &&
             !strstr(e, "buffer 5"), e);
    cdsl_rank_comm_destroy(c);

    rc = cdsl_rank_alloc(NULL, p, 64);
    e = cdsl_rank_get_last_error(NULL);
    CASE_GOT("rank: cdsl_rank_alloc(NULL): this thread's last error says so",
           rc == CDSL_ERR_USAGE && !strcmp(e, "cdsl_rank_alloc: the communicator is NULL"), e);
    rc = cdsl_rank_run(NULL, p, CDSL_F32, 64, NULL, NULL);
    e = cdsl_rank_get_last_error(NULL);
    CASE_GOT("rank: cdsl_rank_run(NULL): this thread's last error says so",
           rc == CDSL_ERR_USAGE && !strcmp(e, "cdsl_rank_run: the communicator is NULL"), e);
    rc = cdsl_rank_status(NULL);
    e = cdsl_rank_get_last_error(NULL);
    CASE_GOT("rank: cdsl_rank_status(NULL): this thread's last error says so",
           rc == CDSL_ERR_USAGE && !strcmp(e, "cdsl_rank_status: the communicator is NULL"), e);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: last_error FILE.cdsl\n");
        return 2;
    }
    FILE *log = tmpfile();
    cdsl_compile_opts o = compile_opts(argv[1], 2);
    o.diag = log;
    cdsl_program *p = log ? compile_with(&o) : NULL;
    if (!p) {
        printf("[FAIL] compile %s with a temporary file for its log\n", argv[1]);
        return 1;
    }
    comm_errors(p, log);
    rank_errors(p, log);
    cdsl_program_destroy(p);
    fclose(log);
    return test_failures != 0;
}
