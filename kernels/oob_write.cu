// oob_write.cu: writes one element past the end of its output, for guard
// bands (on by default): out[n] is written by the thread i == n, because the
// bound check uses <= instead of <. The check of out passes; the guard band
// after out fails. Run by configs/bugs/oob_write.yaml.

extern "C" __global__ void oob_write(const float* x, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n)                     // the bug: one thread too many
        out[i] = i < n ? 2.0f * x[i] : -1.0f;
}
