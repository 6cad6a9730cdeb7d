// uninit_read.cu: reads device-heap memory that nothing wrote, for
// `launch --sanitize initcheck`. Each block mallocs a scratch array, writes
// only its first half, then every thread reads its own slot: the second half
// is uninitialised global memory. Run by configs/bugs/uninit_read.yaml.

extern "C" __global__ void uninit_read(float* out, int n)
{
    __shared__ float* scratch;
    int t = threadIdx.x;
    if (t == 0)
        scratch = static_cast<float*>(malloc(blockDim.x * sizeof(float)));
    __syncthreads();
    if (scratch == nullptr)
        return;
    if (t < blockDim.x / 2)
        scratch[t] = 1.0f;              // only the first half is written
    __syncthreads();
    int i = blockIdx.x * blockDim.x + t;
    if (i < n)
        out[i] = scratch[t];            // the second half reads garbage
    __syncthreads();
    if (t == 0)
        free(scratch);
}
