// A small CUDA C++ program for `cubinrun capture`'s GPU tests and
// bench/capture/capture_programs.py, built with nvcc: a kernel taking plain pointers,
// one taking a struct that holds two pointers into one allocation, and one
// launched with dynamic shared memory. It prints a checksum of each result.
#include <cstdio>
#include <cuda_runtime.h>

#include "checksum.h"

struct Pair { const float *in; float *out; int n; float scale; };

__global__ void saxpy(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void scaled_copy(Pair p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.out[i] = p.scale * p.in[i];
}

__global__ void block_sum(const float *x, float *sums, int n) {
    extern __shared__ float part[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    part[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = part[0];
}

int main() {
    const int n = 1 << 16, threads = 256, blocks = (n + threads - 1) / threads;
    float *x, *y, *both, *sums;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    cudaMalloc(&both, 2 * n * sizeof(float));       // in and out in one allocation
    cudaMalloc(&sums, blocks * sizeof(float));
    float *h = new float[n];
    for (int i = 0; i < n; i++) h[i] = (float)((i * 37) % 101) / 101.0f;
    cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(y, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(both, h, n * sizeof(float), cudaMemcpyHostToDevice);
    for (int step = 0; step < 3; step++) saxpy<<<blocks, threads>>>(n, 2.0f, x, y);
    Pair p = {both, both + n, n, 0.5f};
    scaled_copy<<<blocks, threads>>>(p);
    block_sum<<<blocks, threads, threads * sizeof(float)>>>(y, sums, n);
    cudaError_t status = cudaDeviceSynchronize();
    if (status != cudaSuccess) { printf("error: %s\n", cudaGetErrorString(status)); return 1; }
    printf("saxpy %.3f\nscaled_copy %.3f\nblock_sum %.3f\n", checksum(y, n), checksum(both + n, n),
           checksum(sums, blocks));
    delete[] h;
    return 0;
}
