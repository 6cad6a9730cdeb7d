// A check on the device: check.py's comparison of one output with an elementwise
// reference, element by element, reduced to a few words. device_check_source.py
// fills in the reference (/*REF*/), its inputs and scalars, and the output's type;
// device_common.cu comes first. Built without fused multiply-add, as NumPy's
// float64 reference is computed.

#define LOAD_F64(p, i) ((double)(p)[i])
#define LOAD_F32(p, i) ((double)(p)[i])
#define LOAD_F16(p, i) small_to_double((p)[i], 10, 15)
#define LOAD_BF16(p, i) small_to_double((p)[i], 7, 127)
#define LOAD_I8(p, i) ((i64)(p)[i])
#define LOAD_I16(p, i) ((i64)(p)[i])
#define LOAD_I32(p, i) ((i64)(p)[i])
#define LOAD_I64(p, i) ((i64)(p)[i])
#define LOAD_U8(p, i) ((i64)(p)[i])
#define LOAD_U16(p, i) ((i64)(p)[i])
#define LOAD_U32(p, i) ((i64)(p)[i])

// An input broadcast to the output (NumPy's rules): the element of output index i,
// its dims decomposed from the last; strides 0 where the input repeats.
struct Shape8 { u64 d[8]; };

CR_DEV u64 cr_index(u64 i, Shape8 dims, Shape8 strides) {
    u64 at = 0;
    for (int d = 7; d >= 0 && i; d--) {
        u64 q = i / dims.d[d];
        at += (i - q * dims.d[d]) * strides.d[d];
        i = q;
    }
    return at;
}

// NumPy's minimum / maximum: a NaN on either side is the result.
CR_DEV double cr_min_f(double a, double b) { return (a <= b || a != a) ? a : b; }
CR_DEV double cr_max_f(double a, double b) { return (a >= b || a != a) ? a : b; }
CR_DEV i64 cr_min_i(i64 a, i64 b) { return a <= b ? a : b; }
CR_DEV i64 cr_max_i(i64 a, i64 b) { return a >= b ? a : b; }

typedef /*OUT_TYPE*/ out_t;
typedef /*REF_TYPE*/ ref_t;
#define OUT_CODE /*OUT_CODE*/
#define OUT_BOOL /*OUT_BOOL*/           // i1 / u1: int8 / uint8 elements, a reference != 0
#define REF_KIND /*REF_KIND*/
#define OUT_FLOAT (OUT_CODE <= T_BF16)
#define OUT_SIGNED (OUT_CODE >= T_I8 && OUT_CODE <= T_I64)

enum { MODE_BITS, MODE_CLOSE, MODE_EQUAL };

CR_DEV ref_t cr_reference(/*PARAMS*/u64 i) { return /*REF*/; }

CR_DEV int is_nan(double x) { return x != x; }
CR_DEV int is_finite(double x) { return x - x == 0.0; }

// An integer as the output's type keeps (NumPy's astype): its bits, sign-extended.
CR_DEV u64 narrow(u64 v) {
    switch (OUT_CODE) {
    case T_I8: return (u64)(i64)(signed char)v;
    case T_I16: return (u64)(i64)(short)v;
    case T_I32: return (u64)(i64)(int)v;
    case T_U8: return (u8)v;
    case T_U16: return (u16)v;
    case T_U32: return (u32)v;
    default: return v;
    }
}

// The reference stored into the output's integer type (check.py's _wrap).
CR_DEV u64 wrapped(ref_t r) {
    if (OUT_BOOL) return REF_KIND == 0 ? (u64)((double)r != 0.0) : (u64)((i64)r != 0);
    if (REF_KIND == 0) return (u64)(i64)(double)r;
    return narrow((u64)(i64)r);
}

CR_DEV double int_value(u64 v) { return OUT_SIGNED ? (double)(i64)v : (double)v; }

CR_DEV u64 out_raw(const out_t *out, u64 i) {
    switch (OUT_CODE) {
    case T_FP64: return as_bits(((const double *)out)[i]);
    case T_FP32: case T_I32: case T_U32: return ((const u32 *)out)[i];
    case T_FP16: case T_BF16: case T_I16: case T_U16: return ((const u16 *)out)[i];
    case T_I8: case T_U8: return ((const u8 *)out)[i];
    default: return ((const u64 *)out)[i];
    }
}

CR_DEV double float_of_raw(u64 raw) {
    switch (OUT_CODE) {
    case T_FP64: return as_double(raw);
    case T_FP32: { u32 b = (u32)raw; float f; memcpy_float(&f, b); return (double)f; }
    case T_FP16: return small_to_double((u32)raw, 10, 15);
    default: return small_to_double((u32)raw, 7, 127);
    }
}

// The reference rounded to the output's float type: its bits.
CR_DEV u64 rounded_raw(double x) {
    switch (OUT_CODE) {
    case T_FP64: return as_bits(x);
    case T_FP32: { float f = (float)x; return float_bits(f); }
    case T_FP16: return round_small(x, 10, 15, 0x7C00, 0x7E00);
    default: return round_small(x, 7, 127, 0x7F80, 0x7FC0);
    }
}

struct Judged { int bad; double out64; u64 out_int; double err; double expected64; u64 wrap_int; };

CR_DEV Judged judge(u64 raw, ref_t r, int mode, int wrap, double rtol, double atol, int nan_ok) {
    Judged j;
    j.out_int = OUT_FLOAT ? raw : narrow(raw);
    j.out64 = OUT_FLOAT ? float_of_raw(raw) : int_value(j.out_int);
    j.wrap_int = (OUT_FLOAT || !wrap) ? 0 : wrapped(r);
    double o = j.out64;
    if (mode == MODE_BITS && !OUT_FLOAT) {
        double e = int_value(j.wrap_int);
        j.bad = j.out_int != j.wrap_int;
        j.err = fabs(o - e);
        j.expected64 = e;
        return j;
    }
    double ref64 = wrap ? int_value(j.wrap_int) : (double)r;
    if (mode == MODE_BITS) {
        u64 bits = rounded_raw(ref64);
        double e = float_of_raw(bits);
        int representable = !(is_nan(e) && !is_nan(ref64));
        int onan = is_nan(o), rnan = is_nan(ref64);
        int ok = (raw == bits) && representable && !onan && !rnan;
        if (nan_ok) ok = ok || (onan && rnan);
        j.expected64 = representable ? e : ref64;
        j.bad = !ok;
        j.err = fabs(o - j.expected64);
        return j;
    }
    j.expected64 = ref64;
    j.err = fabs(o - ref64);
    if (mode == MODE_EQUAL) {
        j.bad = !(o == ref64);
        return j;
    }
    double tolerance = fabs(ref64) * rtol;
    tolerance += atol;
    int ok;
    if (is_finite(j.err)) ok = !(j.err > tolerance);
    else ok = o == ref64;                                  // inf == inf
    if (nan_ok) ok = ok || (is_nan(o) && is_nan(ref64));
    j.bad = !ok;
    return j;
}

// stats: [0] mismatches, [1] max |err| (bits), [2] max relative error (bits),
// [3] pairs with a finite error, [4] the first mismatch's index. With `after`
// other than ~0, only [4]: the first mismatch past `after` (the next shown one).
CR_KERNEL cr_check(/*PARAMS*/const out_t *out, u64 n, u64 after, int mode, int wrap,
                   double rtol, double atol, int nan_ok, u64 *stats) {
    u64 mismatches = 0, finite = 0, first = ~0ull;
    double max_abs = 0.0, max_rel = 0.0;
    u64 begin = after == ~0ull ? 0 : after + 1;
    for (u64 i = begin + CR_THREAD; i < n; i += CR_THREADS) {
        Judged j = judge(out_raw(out, i), cr_reference(/*ARGS*/i), mode, wrap, rtol, atol, nan_ok);
        if (j.bad) {
            mismatches++;
            if (i < first) first = i;
        }
        if (after == ~0ull && is_finite(j.err)) {
            finite++;
            if (j.err > max_abs) max_abs = j.err;
            double scale = fabs(j.expected64);
            double rel = scale != 0.0 ? j.err / scale : 0.0;
            if (rel > max_rel) max_rel = rel;
        }
    }
    if (after == ~0ull) {
        if (mismatches) CR_ADD(&stats[0], mismatches);
        if (finite) {
            CR_ADD(&stats[3], finite);
            CR_MAX(&stats[1], as_bits(max_abs));           // non-negative: bits order as values
            CR_MAX(&stats[2], as_bits(max_rel));
        }
    }
    if (first != ~0ull) CR_MIN(&stats[4], first);
}

// The shown values of `count` elements: per element out64 (bits), the output's
// integer, the expected value as a float (bits) and the reference wrapped into
// the output's integer type.
CR_KERNEL cr_check_show(/*PARAMS*/const out_t *out, const u64 *index, u64 count, int mode,
                        int wrap, double rtol, double atol, int nan_ok, u64 *shown) {
    for (u64 k = CR_THREAD; k < count; k += CR_THREADS) {
        u64 i = index[k];
        Judged j = judge(out_raw(out, i), cr_reference(/*ARGS*/i), mode, wrap, rtol, atol, nan_ok);
        shown[4 * k] = as_bits(j.out64);
        shown[4 * k + 1] = j.out_int;
        shown[4 * k + 2] = as_bits(j.expected64);
        shown[4 * k + 3] = j.wrap_int;
    }
}
