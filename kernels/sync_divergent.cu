// sync_divergent.cu: __syncthreads() inside a branch that only some threads
// of the block take, for `launch --sanitize synccheck`. Run by
// configs/bugs/sync_divergent.yaml.

extern "C" __global__ void sync_divergent(const float* x, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    if (threadIdx.x < 16) {
        v *= 2.0f;
        __syncthreads();                // the bug: not every thread reaches it
    }
    if (i < n)
        out[i] = v;
}
