// A CUDA C++ program for `cubinrun capture`'s GPU tests and
// bench/capture/capture_programs.py: kernels launched with cudaLaunchKernelEx, one
// with cluster dimensions (sm_90 and later) and one cooperative, and a stream
// captured into a graph that is launched twice. It prints a checksum of each.
#include <cstdio>
#include <cuda_runtime.h>

#include "checksum.h"

__global__ void clustered_scale(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3.0f * x[i];
}

__global__ void shift(float *y, float by, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += by;
}

int main() {
    const int n = 1 << 15, threads = 128, blocks = n / threads;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    float *h = new float[n];
    for (int i = 0; i < n; i++) h[i] = (float)(i % 13);
    cudaMemcpy(x, h, n * sizeof(float), cudaMemcpyHostToDevice);
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(threads);
    cudaLaunchAttribute cluster;
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = 2;
    cluster.val.clusterDim.y = cluster.val.clusterDim.z = 1;
    config.attrs = &cluster;
    config.numAttrs = 1;
    cudaLaunchKernelEx(&config, clustered_scale, (const float *)x, y, n);
    cudaLaunchAttribute cooperative;
    cooperative.id = cudaLaunchAttributeCooperative;
    cooperative.val.cooperative = 1;
    config.attrs = &cooperative;
    config.gridDim = dim3(16);
    cudaLaunchKernelEx(&config, shift, y, 0.25f, n);
    cudaStream_t stream;
    cudaStreamCreate(&stream);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
    shift<<<blocks, threads, 0, stream>>>(y, 1.0f, n);
    clustered_scale<<<blocks, threads, 0, stream>>>(y, x, n);
    cudaStreamEndCapture(stream, &graph);
    cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphLaunch(exec, stream);
    cudaGraphLaunch(exec, stream);
    cudaError_t status = cudaDeviceSynchronize();
    if (status != cudaSuccess) { printf("error: %s\n", cudaGetErrorString(status)); return 1; }
    printf("y %.3f\nx %.3f\n", checksum(y, n, 5), checksum(x, n, 5));
    delete[] h;
    return 0;
}
