/*
 * program_layout.h - a program against a communicator, the same for both front ends: the
 * communicator of all ranks (api.c), which allocates or registers the buffers and transfers,
 * and the per-rank communicator (rank_comm.c), which lays the buffers out in its region; and
 * through the first the verifier (verify.c), which fills and checks them.
 *
 * What both must agree on is defined here once: whether a program may run on a communicator,
 * whether a chunk size is one, the bytes of each buffer at a chunk size, where an in-place
 * program's aliased buffer lies in its holder, which of a rank's buffers may share memory, and
 * when the packet slots must be zeroed. A check that refuses reports on log, its message
 * prefixed by `who`: "" for the communicator of all ranks, "rank 3: " for one rank's.
 */
#ifndef CDSL_PROGRAM_LAYOUT_H
#define CDSL_PROGRAM_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "cdsl.h"
#include "program.h"

/* A checked program compiled for nranks ranks (the caller has made sure it was evaluated);
 * CDSL_ERR_USAGE after a message otherwise. */
int rt_program_fits(const cdsl_program *p, int nranks, FILE *log, const char *who);
/* An element type cdsl.h names. */
bool rt_dtype_known(cdsl_dtype t);
/* A chunk is a multiple of 4 bytes and of elem_bytes (the element type's size; 1 before a run
 * names the type), and more than none unless zero_ok; CDSL_ERR_USAGE after a message otherwise. */
int rt_chunk_ok(size_t chunk_bytes, size_t elem_bytes, bool zero_ok, FILE *log, const char *who);
/* A plan read for one size class (pipelines, reuse_resources: IrProgram.chunk_lo/hi) runs only
 * at a chunk size in that class; CDSL_ERR_USAGE after a message saying which class fits. */
int rt_size_class_ok(const IrProgram *ir, size_t chunk_bytes, FILE *log, const char *who);

/* In place (ir_in_place), whether the aliased buffer lies inside its holder on every rank;
 * false after a message on log naming the first rank where it would reach past the end. */
bool rt_in_place_fits(const IrProgram *ir, FILE *log);
/* bytes[b] = chunks(b) * chunk_bytes for each of ir's buffers. The first buffer that would be
 * larger than `most` bytes (its bytes and the later ones' are not set), or -1. */
int rt_layout_bytes(const IrProgram *ir, size_t chunk_bytes, size_t most, size_t *bytes);
/* In place: where rank's aliased buffer starts in its holder, in bytes. */
size_t rt_alias_offset(const IrProgram *ir, int rank, size_t chunk_bytes);

/* Whether two of a rank's buffers, x and y at at[x] and at[y] (bytes[x] and bytes[y] long),
 * share memory, and if they do, whether that is the in-place form: the program compiled in
 * place, x and y its aliased buffer and holder, the aliased one exactly its part of the holder. */
typedef enum RtShare {
    RT_SHARE_NONE,          /* apart (or one of them has no bytes) */
    RT_SHARE_IN_PLACE,      /* the in-place form */
    RT_SHARE_MISPLACED,     /* the aliased buffer and its holder, but not at its part of it */
    RT_SHARE_REFUSED,       /* two buffers that must not share memory */
} RtShare;
RtShare rt_buffers_share(const IrProgram *ir, int rank, size_t chunk_bytes, const void *const *at, const size_t *bytes,
                         int x, int y);

/* The packet slots' buffer when a new layout must zero it (ir has packet slots, of some bytes):
 * no packet's flag is 0, so nothing in them passes for a packet until one is written
 * (docs/language.md §8). -1 when there is nothing to zero. */
int rt_slots_to_zero(const IrProgram *ir, const size_t *bytes);

#endif
