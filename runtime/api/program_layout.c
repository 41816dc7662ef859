/*
 * program_layout.c - a program against a communicator, checked and laid out once for both
 * front ends (program_layout.h).
 *
 * In place, the aliased buffer is a window into its holder on each rank, starting at chunk
 * ir_in_place_first(rank). The compiler's forms (allgather, reducescatter, allreduce, alltoall)
 * always fit; an imported plan of another collective (a sendrecv written in place) may give the
 * window more chunks than are left in the holder after its start. Such a layout has no memory
 * for the window, so it is refused before any buffer is allocated: a transfer, a fill or a
 * kernel would otherwise write past the holder's end. Two buffers of a rank may share memory
 * only as that window, at exactly its place: what runs must be what the checker looked at (as
 * NCCL requires sendbuff == recvbuff + rank * count for an in-place allgather).
 */
#include "program_layout.h"

#include <stdint.h>

#include "backend.h"

int rt_program_fits(const cdsl_program *p, int nranks, FILE *log, const char *who)
{
    const IrProgram *ir = program_ir(p);
    if (!program_ok(p)) {
        rt_error(log, "%s%s has errors; it cannot run", who, ir->name);
        return CDSL_ERR_USAGE;
    }
    if (ir->nranks != nranks) {
        rt_error(log, "%s%s was compiled for %d ranks; the communicator has %d", who, ir->name, ir->nranks, nranks);
        return CDSL_ERR_USAGE;
    }
    return CDSL_OK;
}

bool rt_dtype_known(cdsl_dtype t)
{
    return (unsigned)t <= CDSL_S32;
}

int rt_chunk_ok(size_t chunk_bytes, size_t elem_bytes, bool zero_ok, FILE *log, const char *who)
{
    if ((chunk_bytes || zero_ok) && chunk_bytes % 4 == 0 && chunk_bytes % elem_bytes == 0)
        return CDSL_OK;
    rt_error(log, "%sa chunk of %zu bytes: chunks are a %smultiple of 4 bytes", who, chunk_bytes,
             zero_ok ? "" : "positive ");
    return CDSL_ERR_USAGE;
}

int rt_size_class_ok(const IrProgram *ir, size_t chunk_bytes, FILE *log, const char *who)
{
    unsigned long long plan_chunk = (unsigned long long)chunk_bytes * (unsigned long long)(ir->chunk_scale ? ir->chunk_scale : 1);
    if (!ir->chunk_hi || (plan_chunk > ir->chunk_lo && plan_chunk <= ir->chunk_hi))
        return CDSL_OK;
    unsigned long long n = ir->pipe_unit ? (plan_chunk + ir->pipe_unit - 1) / ir->pipe_unit : 0;
    if (n && n <= 65535 && plan_chunk <= ir->chunk_hi / (unsigned long long)ir->pipe_iters * n)
        rt_error(log, "%s%s was checked for the size class of %d pipeline iteration%s (plan chunks over %llu and up to "
                 "%llu bytes); this size's chunks are %llu bytes, which run %llu: compile it with -D "
                 "pipeline_iterations=%llu", who, ir->name, ir->pipe_iters, ir->pipe_iters == 1 ? "" : "s", ir->chunk_lo,
                 ir->chunk_hi, plan_chunk, n, n);
    else
        rt_error(log, "%s%s was checked for plan chunks over %llu and up to %llu bytes; this size's are %llu bytes, "
                 "where the executor lays it out otherwise", who, ir->name, ir->chunk_lo, ir->chunk_hi, plan_chunk);
    return CDSL_ERR_USAGE;
}

bool rt_in_place_fits(const IrProgram *ir, FILE *log)
{
    int aliased, holder;
    if (!ir_in_place(ir, &aliased, &holder))
        return true;
    long long n = ir->bufs[aliased].nchunks, room = ir->bufs[holder].nchunks;
    for (int r = 0; r < ir->nranks; r++) {
        long long first = ir_in_place_first(ir, r);
        if (first + n <= room)
            continue;
        rt_error(log, "%s is in place, which puts rank %d's %s (%lld chunk%s) at %s[%lld .. %lld], past the end of "
                 "its %lld chunks: this program has no in-place layout", ir->name, r, ir->bufs[aliased].name, n,
                 n == 1 ? "" : "s", ir->bufs[holder].name, first, first + n, room);
        return false;
    }
    return true;
}

int rt_layout_bytes(const IrProgram *ir, size_t chunk_bytes, size_t most, size_t *bytes)
{
    for (int b = 0; b < ir->nbufs; b++) {
        size_t n = (size_t)ir->bufs[b].nchunks;
        if (n && chunk_bytes > most / n)
            return b;
        bytes[b] = n * chunk_bytes;
    }
    return -1;
}

size_t rt_alias_offset(const IrProgram *ir, int rank, size_t chunk_bytes)
{
    return (size_t)ir_in_place_first(ir, rank) * chunk_bytes;
}

RtShare rt_buffers_share(const IrProgram *ir, int rank, size_t chunk_bytes, const void *const *at, const size_t *bytes,
                         int x, int y)
{
    uintptr_t px = (uintptr_t)at[x], py = (uintptr_t)at[y];
    if (!bytes[x] || !bytes[y] || px >= py + bytes[y] || py >= px + bytes[x])
        return RT_SHARE_NONE;
    int aliased = -1, holder = -1;
    ir_in_place(ir, &aliased, &holder);
    if (!((x == aliased && y == holder) || (y == aliased && x == holder)))
        return RT_SHARE_REFUSED;
    uintptr_t want = (uintptr_t)at[holder] + rt_alias_offset(ir, rank, chunk_bytes);
    return (uintptr_t)at[aliased] == want ? RT_SHARE_IN_PLACE : RT_SHARE_MISPLACED;
}

int rt_slots_to_zero(const IrProgram *ir, const size_t *bytes)
{
    int b = ir_packet_buf(ir);
    return b >= 0 && bytes[b] ? b : -1;
}
