// vector_add.cu: out[i] = x[i] + y[i], the hello-world of cubinrun.
// Run by configs/vector_add.yaml (the example of docs/spec.md).
//
// A grid-stride loop makes the result right for any grid and block size,
// so `--set BLOCK=...` or another num_warps never leaves elements unwritten.

extern "C" __global__ void add_kernel(const float* x, const float* y,
                                      float* out, int n)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        out[i] = x[i] + y[i];
    }
}
