"""A CuPy program for `cubinrun capture`'s GPU tests and bench/capture/capture_programs.py:
a RawKernel (compiled by NVRTC and loaded with cuModuleLoadData), an
ElementwiseKernel, a reduction and a CuPy GEMM. It prints a digest of each
result."""
import hashlib

import cupy as cp

scale = cp.RawKernel(r'''
extern "C" __global__ void scale_add(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}''', "scale_add")
squared_diff = cp.ElementwiseKernel("float32 x, float32 y", "float32 z",
                                    "z = (x - y) * (x - y)", "squared_diff")
n = 1 << 16
rng = cp.random.default_rng(0)
x = rng.standard_normal(n, dtype=cp.float32)
y = rng.standard_normal(n, dtype=cp.float32)
scale((n // 256,), (256,), (x, y, cp.float32(1.5), cp.int32(n)))
results = {"scale_add": y, "squared_diff": squared_diff(x, y), "sum": x.sum(),
           "gemm": x[:65536].reshape(256, 256) @ y[:65536].reshape(256, 256)}
cp.cuda.Device().synchronize()
for name, value in results.items():
    print(name, hashlib.sha256(cp.asnumpy(value).tobytes()).hexdigest()[:16])
