/*
 * layout.c - the in-place part of a program's buffer layout, checked once for every user.
 *
 * In place, the aliased buffer is a window into its holder on each rank, starting at chunk
 * ir_in_place_first(rank). The compiler's forms (allgather, reducescatter, allreduce) always
 * fit; an imported plan of another collective (an alltoall written in place) may give the
 * window more chunks than are left in the holder after its start. Such a layout has no memory
 * for the window, so it is refused before any buffer is allocated: a transfer, a fill or a
 * kernel would otherwise write past the holder's end.
 */
#include "layout.h"

#include "backend.h"

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
