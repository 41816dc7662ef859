/*
 * grid_unit.c - unit tests for the grid a .cdsl program's launch gets (runtime/engines/gpu_common.c:
 * gpu_grid_cap, gpu_grid_for), without a GPU.
 *
 * The bound matters twice: every rank must launch the same grid (block b waits for block b of
 * its partners, compiler/lower/partition.c), and one process per rank agrees on the least of every
 * rank's gpu_grid_cap before it launches (rank_comm.c). A cap that came out as one block (an
 * overflow once made it so) still runs correctly, only slowly: this is where it shows.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "abi.h"
#include "gpu_common.h"

static int failures;

static void expect(const char *what, unsigned got, unsigned want)
{
    if (got == want) {
        printf("[PASS] %s\n", what);
    } else {
        printf("[FAIL] %s: got %u, want %u\n", what, got, want);
        failures++;
    }
}

int main(void)
{
    unsetenv("CDSL_GPU_BLOCKS");
    expect("the cap is every SM", gpu_grid_cap(1000, 132), 132);
    expect("the cap is the rank's share of its device", gpu_grid_cap(32, 132), 32);
    expect("the cap is at most CDSL_SYNC_BLOCKS", gpu_grid_cap(4096, 2048), CDSL_SYNC_BLOCKS);
    expect("the largest operation gets the cap, not one block", gpu_grid_for(132, 132, SIZE_MAX), 132);
    expect("a small operation gets one block", gpu_grid_for(132, 132, 1024), 1);
    expect("one block per GPU_BYTES_PER_BLOCK", gpu_grid_for(132, 132, 3 * (size_t)GPU_BYTES_PER_BLOCK + 1), 4);
    setenv("CDSL_GPU_BLOCKS", "8", 1);
    expect("CDSL_GPU_BLOCKS bounds the cap", gpu_grid_cap(132, 132), 8);
    setenv("CDSL_GPU_BLOCKS", "100000", 1);
    expect("CDSL_GPU_BLOCKS stays within CDSL_SYNC_BLOCKS", gpu_grid_cap(100000, 132), CDSL_SYNC_BLOCKS);
    return failures != 0;
}
