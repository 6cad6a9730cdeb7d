// empty.cu: kernels that do nothing, to measure launch overhead (host-side
// argument packing plus the driver's launch path).
//   empty3   3 parameters (the shape of vector_add): configs/empty3.yaml
//   empty16  16 parameters of mixed types and sizes: configs/empty16.yaml
//   empty0   no parameters at all (`signature: {}`): configs/empty0.yaml
// fp16 and bf16 arrive as raw 16-bit patterns (unsigned short), i1 as bool.
// The bodies are empty on purpose: the parameters are still part of the
// kernel's ABI (ptxas keeps every one in the parameter layout).

extern "C" __global__ void empty3(float* x, float* y, int n)
{
}

extern "C" __global__ void empty16(
    float* a_ptr, const float* b_ptr, int n, long long offset,
    float alpha, double beta, unsigned char flags, unsigned short scale_fp16,
    int* idx_ptr, unsigned int mask, bool is_last, short stride,
    unsigned long long seed, unsigned short scale_bf16, signed char shift,
    double* acc_ptr)
{
}

extern "C" __global__ void empty0()
{
}
