// work.cu: a kernel whose run time is proportional to the scalar `iters`, for
// the timing test "twice the work takes about twice the time".
// Run by configs/work.yaml.
//
// Each thread runs a dependent chain of `iters` FMAs, v = v * a + b, starting
// from x[i]. a and b are runtime values so the compiler cannot fold the chain
// (it has no fast-math licence to reassociate it either). With a = 1 and
// b = 0.5 every step is exact while |v| < 2^23, so
//   out[i] = x[i] + iters * b.

extern "C" __global__ void fma_chain(const float* x, float* out, int n,
                                     float a, float b, int iters)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float v = x[i];
    for (int k = 0; k < iters; ++k)
        v = fmaf(v, a, b);
    out[i] = v;
}
