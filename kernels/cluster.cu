// cluster.cu: thread block clusters of two blocks that swap their data
// through distributed shared memory (each block reads its partner's tile).
//
//   cluster_swap_dims    cluster size compiled in (__cluster_dims__(2,1,1));
//                        launched with no cluster attribute.
//                        Run by configs/cluster_dims.yaml.
//   cluster_swap_launch  no compiled-in size; must be launched with a
//                        cluster of 2 in x (num_ctas: 2).
//                        Run by configs/cluster_launch.yaml.
//
// With a 1-D grid and clusters of (2,1,1), block b's partner is block b ^ 1,
// so both kernels compute, for i = b * blockDim.x + t:
//   out[i] = x[(b ^ 1) * blockDim.x + t]
// Launched without a cluster, the partner rank does not exist and the kernel
// fails (CUDA_ERROR_ILLEGAL_INSTRUCTION on an H200) rather than writing a
// plausible wrong answer.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

constexpr int MAX_THREADS = 1024;

// Both blocks of the cluster store their tile, then each reads the other's.
__device__ __forceinline__ void swap_with_partner(int* tile, const int* x,
                                                  int* out, int n)
{
    cg::cluster_group cluster = cg::this_cluster();
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;

    tile[threadIdx.x] = i < n ? x[i] : 0;
    cluster.sync();  // the partner's tile is complete

    const int* partner_tile = cluster.map_shared_rank(tile, cluster.block_rank() ^ 1);
    const int value = partner_tile[threadIdx.x];
    if (i < n)
        out[i] = value;
    cluster.sync();  // keep our tile alive until the partner has read it
}

extern "C" __global__ void __cluster_dims__(2, 1, 1)
cluster_swap_dims(const int* x, int* out, int n)
{
    __shared__ int tile[MAX_THREADS];
    swap_with_partner(tile, x, out, n);
}

extern "C" __global__ void cluster_swap_launch(const int* x, int* out, int n)
{
    __shared__ int tile[MAX_THREADS];
    swap_with_partner(tile, x, out, n);
}
