// race_sum.cu: two ways a result can change from run to run, for
// `launch --repeat N`:
//  - atomic_sum: every thread atomicAdds its float into one total; float
//    addition is not associative, so the order the atomics land in changes
//    the low bits of the sum.
//  - racy_histogram: every thread increments a bin with a plain load and
//    store (no atomic), so increments from different blocks are lost, a
//    different number each run.
// Run by configs/bugs/race_sum.yaml and configs/bugs/racy_histogram.yaml.

extern "C" __global__ void atomic_sum(const float* x, float* total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        atomicAdd(total, x[i]);
}

extern "C" __global__ void racy_histogram(const int* keys, int* bins, int n, int nbins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        volatile int* bin = bins + (keys[i] % nbins + nbins) % nbins;
        *bin = *bin + 1;                // the bug: not atomicAdd(bin, 1)
    }
}
