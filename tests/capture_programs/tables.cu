// A CUDA C++ program for `cubinrun capture`'s GPU tests and
// bench/capture/capture_programs.py: a kernel that reads its inputs through a pointer
// array in device memory (as grouped GEMMs do), and one that reads a
// __constant__ table the program set with cudaMemcpyToSymbol and counts its
// calls in a __device__ variable. It prints a checksum of each result.
#include <cstdio>
#include <cuda_runtime.h>

#include "checksum.h"

__constant__ float weights[16];
__device__ unsigned int calls;

__global__ void sum_rows(const float *const *rows, int count, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0;
    for (int r = 0; r < count; r++) s += rows[r][i];
    out[i] = s;
}

__global__ void weighted(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) atomicAdd(&calls, 1u);
    if (i < n) y[i] = weights[i % 16] * x[i];
}

int main() {
    const int n = 1 << 14, count = 4, threads = 256, blocks = n / threads;
    float *rows[count], **table, *out, *y;
    float *h = new float[n];
    for (int r = 0; r < count; r++) {
        cudaMalloc(&rows[r], n * sizeof(float));
        for (int i = 0; i < n; i++) h[i] = (float)((i + r) % 9);
        cudaMemcpy(rows[r], h, n * sizeof(float), cudaMemcpyHostToDevice);
    }
    cudaMalloc(&table, sizeof rows);
    cudaMemcpy(table, rows, sizeof rows, cudaMemcpyHostToDevice);
    cudaMalloc(&out, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    sum_rows<<<blocks, threads>>>(table, count, out, n);
    float w[16];
    for (int i = 0; i < 16; i++) w[i] = 0.5f + i;
    cudaMemcpyToSymbol(weights, w, sizeof w);
    weighted<<<blocks, threads>>>(out, y, n);
    unsigned int counted = 0;
    cudaError_t status = cudaDeviceSynchronize();
    cudaMemcpyFromSymbol(&counted, calls, sizeof counted);
    if (status != cudaSuccess) { printf("error: %s\n", cudaGetErrorString(status)); return 1; }
    printf("sum_rows %.3f\nweighted %.3f\ncalls %u\n", checksum(out, n, 3), checksum(y, n, 3), counted);
    delete[] h;
    return 0;
}
