// What the device-data sources share (device_draws.cu, the check kernels of
// device_check_source.py): the types, the macros that let one source build for
// the device (NVRTC) and for the host (the tests' C++ compiler), and rounding
// to and from the 16-bit float formats, bit for bit as NumPy and ml_dtypes do.

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

#if defined(__CUDACC__)
#define CR_DEV __device__ __forceinline__
#define CR_KERNEL extern "C" __global__ void
#define CR_TABLE __device__ const
#define CR_THREAD ((u64)blockIdx.x * blockDim.x + threadIdx.x)
#define CR_THREADS ((u64)gridDim.x * blockDim.x)
CR_DEV double as_double(u64 b) { return __longlong_as_double((long long)b); }
CR_DEV u64 as_bits(double x) { return (u64)__double_as_longlong(x); }
CR_DEV u64 mulhi64(u64 a, u64 b) { return __umul64hi(a, b); }
CR_DEV void memcpy_float(float *f, u32 b) { *f = __uint_as_float(b); }
CR_DEV u32 float_bits(float f) { return __float_as_uint(f); }
#else
#include <math.h>
#include <string.h>
#define CR_DEV static inline
#define CR_KERNEL extern "C" void
#define CR_TABLE static const
extern "C" { u64 cr_host_thread = 0, cr_host_threads = 1; }
#define CR_THREAD cr_host_thread
#define CR_THREADS cr_host_threads
CR_DEV double as_double(u64 b) { double x; memcpy(&x, &b, 8); return x; }
CR_DEV u64 as_bits(double x) { u64 b; memcpy(&b, &x, 8); return b; }
CR_DEV u64 mulhi64(u64 a, u64 b) { return (u64)(((unsigned __int128)a * b) >> 64); }
CR_DEV void memcpy_float(float *f, u32 b) { memcpy(f, &b, 4); }
CR_DEV u32 float_bits(float f) { u32 b; memcpy(&b, &f, 4); return b; }
#endif

// ---------------------------------------------------------------- element types

enum { T_FP64, T_FP32, T_FP16, T_BF16, T_I8, T_I16, T_I32, T_I64,
       T_U8, T_U16, T_U32, T_U64, T_BOOL };

// A double rounded (to nearest even) to a binary format with `mant` stored bits
// and exponent bias `bias`, straight from the double (as NumPy's float16 and
// ml_dtypes' bfloat16 casts do): its bits.
CR_DEV u32 round_small(double x, int mant, int bias, u32 inf_bits, u32 nan_bits) {
    u64 b = as_bits(x);
    u32 sign = (u32)(b >> 63) << 15;          // both targets are 16 bits wide
    u64 a = b & 0x7FFFFFFFFFFFFFFFull;
    if (a >= 0x7FF0000000000000ull) return sign | (a > 0x7FF0000000000000ull ? nan_bits : inf_bits);
    if (a == 0) return sign;
    int e = (int)(a >> 52) - 1023;
    u64 m = (a & 0x000FFFFFFFFFFFFFull) | (e > -1023 ? 0x0010000000000000ull : 0);
    if (e == -1023) e = -1022;                 // double subnormals: far below any target's
    int emin = 1 - bias;
    int shift = 52 - mant + (e < emin ? emin - e : 0);
    if (shift >= 55) return sign;              // below half the smallest subnormal
    u64 q = m >> shift, rem = m & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    u64 r = e < emin ? q : ((u64)(e + bias) << mant) + (q - (1ull << mant));
    if (rem > half || (rem == half && (r & 1))) r++;
    if (r >= inf_bits) return sign | inf_bits;
    return sign | (u32)r;
}


// A 16-bit float's bits as the double it holds (exact): 5 or 8 exponent bits.
CR_DEV double small_to_double(u32 h, int mant, int bias) {
    int ebits = 15 - mant, emax = (1 << ebits) - 1;
    u64 sign = (u64)(h >> 15) << 63;
    int e = (int)((h >> mant) & emax);
    u64 m = h & ((1u << mant) - 1);
    if (e == emax) return as_double(sign | 0x7FF0000000000000ull | (m << (52 - mant)));
    if (e == 0) {          // subnormal: m * 2**(1 - bias - mant), a product that is exact
        double v = (double)m * as_double((u64)(1023 + 1 - bias - mant) << 52);
        return sign ? -v : v;
    }
    return as_double(sign | ((u64)(e - bias + 1023) << 52) | (m << (52 - mant)));
}

#if defined(__CUDACC__)
#define CR_ADD(p, v) atomicAdd((p), (u64)(v))
#define CR_MAX(p, v) atomicMax((p), (u64)(v))
#define CR_MIN(p, v) atomicMin((p), (u64)(v))
#else
#define CR_ADD(p, v) (*(p) += (u64)(v))
#define CR_MAX(p, v) (*(p) = *(p) > (u64)(v) ? *(p) : (u64)(v))
#define CR_MIN(p, v) (*(p) = *(p) < (u64)(v) ? *(p) : (u64)(v))
#endif
