// smem_big.cu: dynamic shared memory far above the 48 KiB default
// (configs/smem_big.yaml asks for 200 KiB), which only launches once the
// function is opted in with CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
//
// Block b stages chunk b of x (`chunk` ints, i.e. all of its dynamic
// shared memory) and writes it back reversed:
//   out[base + j] = x[base + len - 1 - j],  base = b * chunk,
//   len = min(chunk, n - base)  (the last chunk may be short).
// `chunk` must be at most the dynamic shared bytes / 4; the spec derives both
// from one var.

extern "C" __global__ void reverse_chunks(const int* x, int* out, int n,
                                          int chunk)
{
    extern __shared__ int tile[];
    const long long base = (long long)blockIdx.x * chunk;
    if (base >= n)
        return;  // the whole block leaves together: no barrier is skipped
    const int len = (int)min((long long)chunk, n - base);

    for (int j = threadIdx.x; j < len; j += blockDim.x)
        tile[j] = x[base + j];
    __syncthreads();
    for (int j = threadIdx.x; j < len; j += blockDim.x)
        out[base + j] = tile[len - 1 - j];
}
