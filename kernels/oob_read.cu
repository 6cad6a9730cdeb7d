// oob_read.cu: reads past the end of its input, for `launch --sanitize`
// (memcheck). out[i] = x[i + SHIFT] reads SHIFT floats beyond x's last
// element. The read lands in whatever follows x, so the check may well pass:
// only memcheck (with padding between allocations) sees the bug.
// Run by configs/bugs/oob_read.yaml.

#define SHIFT 8

extern "C" __global__ void oob_read(const float* x, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = x[i + SHIFT];  // the last SHIFT threads read past the end
}
