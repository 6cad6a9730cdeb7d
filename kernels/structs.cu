// structs.cu: parameters passed by value as a struct, a vector and a struct
// holding an array, as CUDA C++ kernels often take them.
// Run by configs/structs.yaml.
//
//   struct_saxpy(Saxpy p, float4 scale, Taps t, double* vec_sum, double* taps_sum)
//
// p.y = p.alpha * p.x + p.y over p.n elements (a grid-stride loop, so any
// grid works): the struct carries scalars and the two device pointers. The
// other two parameters are folded into one number each, every member with
// its own decimal weight, so a member read from the wrong bytes changes a
// digit of *vec_sum or *taps_sum:
//   *vec_sum  = scale.x + 10 scale.y + 100 scale.z + 1000 scale.w
//   *taps_sum = t.flag + 10 t.k[0] + 100 t.k[1] + 1000 t.k[2] + t.bias
// The layout is C's: p is 24 bytes (8-aligned), scale (float4, 16-aligned)
// sits at offset 32 after 8 bytes of padding, and in Taps the shorts follow
// the char at offset 2 and the double sits at 8.

struct Saxpy {
    int n;
    float alpha;
    const float* x;
    float* y;
};

struct Taps {
    signed char flag;
    short k[3];
    double bias;
};

extern "C" __global__ void struct_saxpy(Saxpy p, float4 scale, Taps t, double* vec_sum,
                                        double* taps_sum)
{
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < p.n;
         i += stride) {
        p.y[i] = p.alpha * p.x[i] + p.y[i];
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        *vec_sum = scale.x + 10.0 * scale.y + 100.0 * scale.z + 1000.0 * scale.w;
        *taps_sum = t.flag + 10.0 * t.k[0] + 100.0 * t.k[1] + 1000.0 * t.k[2] + t.bias;
    }
}
