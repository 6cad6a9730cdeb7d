// A template kernel that NVRTC compiles only when a spec names an instance,
// written the way cuda-samples' reduction is: cooperative groups (whose
// <nv/target> comes from CCCL) with dynamic shared memory.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

// Each block sums a grid-strided share of `in` into out[blockIdx.x]; with
// nIsPow2 each thread loads two elements per stride. Needs blockSize * sizeof(T)
// bytes of dynamic shared memory.
template <class T, unsigned int blockSize, bool nIsPow2>
__global__ void reduce6(const T* in, T* out, unsigned int n)
{
    cg::thread_block cta = cg::this_thread_block();
    extern __shared__ unsigned char shared_bytes[];
    T* sdata = reinterpret_cast<T*>(shared_bytes);
    unsigned int tid = threadIdx.x;
    unsigned int stride = blockSize * (nIsPow2 ? 2 : 1) * gridDim.x;
    T sum = 0;
    for (unsigned int i = blockIdx.x * blockSize * (nIsPow2 ? 2 : 1) + tid; i < n; i += stride) {
        sum += in[i];
        if (nIsPow2 && i + blockSize < n) sum += in[i + blockSize];
    }
    sdata[tid] = sum;
    cg::sync(cta);
    for (unsigned int s = blockSize / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = sum = sum + sdata[tid + s];
        cg::sync(cta);
    }
    if (tid == 0) out[blockIdx.x] = sum;
}
