// A whole program as cuda-samples write them: a template kernel and the host
// code that runs it, in one file. NVRTC refuses the host code; nvcc compiles
// the device side (`kernel.compiler: nvcc`) and instantiates what the host
// code names: scale_add<128> and scale_add<256>.
#include <cstdio>
#include <cuda_runtime.h>

// out = a * x + y, staged through shared memory a tile at a time.
template <int BLOCK_SIZE>
__global__ void scale_add(float* out, const float* x, const float* y, float a, int n)
{
    __shared__ float tile[BLOCK_SIZE];
    int i = blockIdx.x * BLOCK_SIZE + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = a * tile[threadIdx.x] + y[i];
}

int main()
{
    const int n = 1 << 20;
    float *out, *x, *y;
    cudaMalloc(&out, n * sizeof(float));
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    scale_add<128><<<(n + 127) / 128, 128>>>(out, x, y, 2.0f, n);
    scale_add<256><<<(n + 255) / 256, 256>>>(out, x, y, 2.0f, n);
    cudaError_t status = cudaDeviceSynchronize();
    printf("%s\n", cudaGetErrorString(status));
    cudaFree(out);
    cudaFree(x);
    cudaFree(y);
    return status == cudaSuccess ? 0 : 1;
}
