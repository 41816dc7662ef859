/*
 * last_error.h - the text of the last error, for cdsl_get_last_error() and
 * cdsl_rank_get_last_error() (runtime/api/rt_error.c).
 *
 * A communicator's messages all pass through one stdio stream of its own; the record reads the
 * bytes as they pass and keeps the last "cdsl: error: " line, with the "cdsl: note: " lines
 * that follow it (or, where calls are marked, every error line of the last call that had one). Whichever thread writes (a sim rank's thread, the caller), a mutex keeps
 * the text whole, and a reader gets a copy of its own. Errors outside any communicator (a
 * failed create, a NULL communicator) are the calling thread's: rt_error keeps the last one
 * per thread.
 */
#ifndef CDSL_LAST_ERROR_H
#define CDSL_LAST_ERROR_H

#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>

typedef struct RtLastError RtLastError;

/* NULL when out of memory (the communicator then keeps no record). */
RtLastError *rt_last_error_new(void);
void rt_last_error_free(RtLastError *e);
/* A public function of the communicator begins: the errors it reports, its own reason first
 * and then what it learnt of other ranks, make up one text (without this mark, each error
 * replaces the one before). */
void rt_last_error_begin(RtLastError *e);
/* len bytes of the communicator's message stream, as written (lines may arrive in pieces). */
void rt_last_error_feed(RtLastError *e, const char *buf, size_t len);
/* The recorded text in a buffer of the calling thread's (valid until its next call); "" for
 * none. e NULL: the calling thread's last error (rt_error). */
const char *rt_last_error_text(RtLastError *e);
/* on: rt_error in the calling thread stops recording its last error (off: records again), for
 * errors the caller hides because they are not the call's (a backend tried and given up). */
void rt_last_error_quiet(bool on);
/* A public function was given no communicator: the calling thread's last error says so
 * ("cdsl_run: the communicator is NULL", on stderr); CDSL_ERR_USAGE. */
int rt_comm_null(const char *function);
/* A stream that writes through to `to` (flushed at every line) and feeds e; NULL when out of
 * memory. Closing it leaves `to` and e open. */
FILE *rt_last_error_stream(RtLastError *e, FILE *to);

#endif
