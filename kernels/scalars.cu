// scalars.cu: every scalar type of Triton's vocabulary passed by value and
// written back unchanged, so a test can compare exact bits.
// Run by configs/scalars.yaml.
//
// Each type T has two values, T_a and T_b, each with its own one-element
// output buffer: `*out_T_a = T_a; *out_T_b = T_b;`. Plain assignment copies
// the bits (no conversion happens for any type, __half and __nv_bfloat16
// included), so what lands in memory is exactly what the launcher packed.
// Scalars and pointers alternate per type, so the parameter offsets are not
// simply packed (a 1-byte bool is followed by an 8-byte-aligned pointer).
//
// i1 and u1 are booleans passed in one byte, as Triton's launcher does.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void scalars_roundtrip(
    bool i1_a, bool i1_b, bool* out_i1_a, bool* out_i1_b,
    signed char i8_a, signed char i8_b, signed char* out_i8_a, signed char* out_i8_b,
    short i16_a, short i16_b, short* out_i16_a, short* out_i16_b,
    int i32_a, int i32_b, int* out_i32_a, int* out_i32_b,
    long long i64_a, long long i64_b, long long* out_i64_a, long long* out_i64_b,
    bool u1_a, bool u1_b, bool* out_u1_a, bool* out_u1_b,
    unsigned char u8_a, unsigned char u8_b, unsigned char* out_u8_a, unsigned char* out_u8_b,
    unsigned short u16_a, unsigned short u16_b, unsigned short* out_u16_a, unsigned short* out_u16_b,
    unsigned int u32_a, unsigned int u32_b, unsigned int* out_u32_a, unsigned int* out_u32_b,
    unsigned long long u64_a, unsigned long long u64_b,
    unsigned long long* out_u64_a, unsigned long long* out_u64_b,
    __half fp16_a, __half fp16_b, __half* out_fp16_a, __half* out_fp16_b,
    __nv_bfloat16 bf16_a, __nv_bfloat16 bf16_b,
    __nv_bfloat16* out_bf16_a, __nv_bfloat16* out_bf16_b,
    float fp32_a, float fp32_b, float* out_fp32_a, float* out_fp32_b,
    double fp64_a, double fp64_b, double* out_fp64_a, double* out_fp64_b)
{
    // One writer: the values are the same for every thread anyway.
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    *out_i1_a = i1_a;     *out_i1_b = i1_b;
    *out_i8_a = i8_a;     *out_i8_b = i8_b;
    *out_i16_a = i16_a;   *out_i16_b = i16_b;
    *out_i32_a = i32_a;   *out_i32_b = i32_b;
    *out_i64_a = i64_a;   *out_i64_b = i64_b;
    *out_u1_a = u1_a;     *out_u1_b = u1_b;
    *out_u8_a = u8_a;     *out_u8_b = u8_b;
    *out_u16_a = u16_a;   *out_u16_b = u16_b;
    *out_u32_a = u32_a;   *out_u32_b = u32_b;
    *out_u64_a = u64_a;   *out_u64_b = u64_b;
    *out_fp16_a = fp16_a; *out_fp16_b = fp16_b;
    *out_bf16_a = bf16_a; *out_bf16_b = bf16_b;
    *out_fp32_a = fp32_a; *out_fp32_b = fp32_b;
    *out_fp64_a = fp64_a; *out_fp64_b = fp64_b;
}
