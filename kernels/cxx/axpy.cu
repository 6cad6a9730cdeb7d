// C++ kernels (not extern "C"): names as written in C++ resolve to their
// mangled symbols. `axpy` is overloaded, so a spec names one by its full
// signature; `scale` is not, so its plain name is enough.

__global__ void axpy(float a, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void axpy(double a, const double* x, double* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void scale(float a, float* x, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        x[i] *= a;
}
