// cooperative.cu: a grid-wide barrier (cooperative_groups::this_grid().sync()),
// which is only valid in a cooperative launch (launch.cooperative: true) with
// every block resident at once. Run by configs/cooperative.yaml.
//
// Phase 1: each block sums its grid-stride share of x into partials[block].
// Grid barrier.
// Phase 2: each block adds up all partials (the total of x) and writes
//   out[i] = total - x[i]      (the sum of all the other elements)
// so every output depends on every block's phase-1 result.
// Integer sums are exact and order-free, so the result is deterministic.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

extern "C" __global__ void grid_sum_others(const long long* x,
                                           long long* partials,
                                           long long* out, int n)
{
    cg::grid_group grid = cg::this_grid();
    __shared__ unsigned long long block_sum;
    __shared__ long long total;

    if (threadIdx.x == 0)
        block_sum = 0;
    __syncthreads();

    long long mine = 0;
    for (unsigned long long i = grid.thread_rank(); i < (unsigned long long)n;
         i += grid.size())
        mine += x[i];
    // Two's complement addition: adding as unsigned gives the signed sum.
    atomicAdd(&block_sum, (unsigned long long)mine);
    __syncthreads();
    if (threadIdx.x == 0)
        partials[blockIdx.x] = (long long)block_sum;

    grid.sync();  // every block's partial is written and visible

    if (threadIdx.x == 0) {
        long long sum = 0;
        for (unsigned b = 0; b < gridDim.x; ++b)
            sum += partials[b];
        total = sum;
    }
    __syncthreads();
    for (unsigned long long i = grid.thread_rank(); i < (unsigned long long)n;
         i += grid.size())
        out[i] = total - x[i];
}
