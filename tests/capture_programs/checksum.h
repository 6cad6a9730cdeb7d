// A checksum of a device array, shared by the CUDA programs here: the sum of
// its elements, each weighted by 1 + i % period, so a moved element shows.
#pragma once
#include <cuda_runtime.h>

static double checksum(const float *d, int n, int period = 7) {
    float *h = new float[n];
    cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost);
    double s = 0;
    for (int i = 0; i < n; i++) s += h[i] * (1 + i % period);
    delete[] h;
    return s;
}
