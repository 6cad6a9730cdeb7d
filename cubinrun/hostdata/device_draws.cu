// Inputs drawn on the GPU, value for value NumPy's host stream (hostdata/device_draws.py).
//
// One source for two compilers: NVRTC builds it for the device (gpu/device_data.py)
// and the tests build it with the host's C++ compiler and compare it with NumPy
// bit for bit. A kernel is a grid-stride loop; on the host CR_THREAD and
// CR_THREADS are two globals the caller sets, so the same loops run there.
// Built without fused multiply-add (NVRTC --fmad=false, g++ -ffp-contract=off):
// NumPy's `low + range * u` and `loc + scale * z` round twice.
// device_draws.py prepends the ziggurat's tables (ZIG_KI, ZIG_WI, ZIG_FI: the
// bits of the installed NumPy's own tables).

// device_common.cu comes first (device_draws.py puts the sources together).

// ---------------------------------------------------------------- PCG64 (XSL-RR 128/64)

struct U128 { u64 hi, lo; };

CR_DEV U128 mul128(U128 a, U128 b) {
    U128 r;
    r.lo = a.lo * b.lo;
    r.hi = mulhi64(a.lo, b.lo) + a.hi * b.lo + a.lo * b.hi;
    return r;
}

CR_DEV U128 add128(U128 a, U128 b) {
    U128 r;
    r.lo = a.lo + b.lo;
    r.hi = a.hi + b.hi + (r.lo < a.lo);
    return r;
}

CR_DEV U128 pcg_mult() { U128 m = {0x2360ED051FC65DA4ull, 0x4385DF649FCCF645ull}; return m; }

// The affine map of `delta` LCG steps: state -> mult * state + plus (pcg-cpp's advance).
struct Jump { U128 mult, plus; };

CR_DEV Jump pcg_jump(U128 inc, u64 delta) {
    U128 acc_mult = {0, 1}, acc_plus = {0, 0}, cur_mult = pcg_mult(), cur_plus = inc;
    U128 one = {0, 1};
    while (delta) {
        if (delta & 1) {
            acc_mult = mul128(acc_mult, cur_mult);
            acc_plus = add128(mul128(acc_plus, cur_mult), cur_plus);
        }
        cur_plus = mul128(add128(cur_mult, one), cur_plus);
        cur_mult = mul128(cur_mult, cur_mult);
        delta >>= 1;
    }
    Jump j = {acc_mult, acc_plus};
    return j;
}

struct Pcg { U128 state, inc; };

CR_DEV void pcg_apply(Pcg &g, Jump j) { g.state = add128(mul128(j.mult, g.state), j.plus); }

CR_DEV u64 pcg_output(U128 s) {
    u64 x = s.hi ^ s.lo;
    unsigned rot = (unsigned)(s.hi >> 58);
    return (x >> rot) | (x << ((64 - rot) & 63));
}

// NumPy's next_uint64: one LCG step, then the output of the new state.
CR_DEV u64 pcg_next(Pcg &g) {
    g.state = add128(mul128(g.state, pcg_mult()), g.inc);
    return pcg_output(g.state);
}

CR_DEV Pcg pcg_at(u64 sh, u64 sl, u64 ih, u64 il, u64 step) {
    Pcg g;
    g.state.hi = sh; g.state.lo = sl; g.inc.hi = ih; g.inc.lo = il;
    if (step) pcg_apply(g, pcg_jump(g.inc, step));
    return g;
}

CR_DEV double next_double(Pcg &g) { return (double)(pcg_next(g) >> 11) * (1.0 / 9007199254740992.0); }

CR_DEV void store_float(void *out, u64 i, int type, double v) {
    switch (type) {
    case T_FP64: ((double *)out)[i] = v; break;
    case T_FP32: ((float *)out)[i] = (float)v; break;
    case T_FP16: ((u16 *)out)[i] = (u16)round_small(v, 10, 15, 0x7C00, 0x7E00); break;
    case T_BF16: ((u16 *)out)[i] = (u16)round_small(v, 7, 127, 0x7F80, 0x7FC0); break;
    }
}

// An integer value stored as an integer dtype keeps its low bits (NumPy's astype).
CR_DEV void store_int(void *out, u64 i, int type, u64 v) {
    switch (type) {
    case T_I8: case T_U8: ((u8 *)out)[i] = (u8)v; break;
    case T_I16: case T_U16: ((u16 *)out)[i] = (u16)v; break;
    case T_I32: case T_U32: ((u32 *)out)[i] = (u32)v; break;
    case T_I64: case T_U64: ((u64 *)out)[i] = v; break;
    case T_BOOL: ((u8 *)out)[i] = (u8)(v != 0); break;
    }
}

// ---------------------------------------------------------------- uniform, arange, fill

// out[i] = low + range * u_(first + i), NumPy's Generator.uniform, rounded to `type`.
CR_KERNEL cr_uniform(void *out, u64 n, int type, double low, double range,
                     u64 sh, u64 sl, u64 ih, u64 il, u64 first) {
    u64 t = CR_THREAD, threads = CR_THREADS;
    if (t >= n) return;
    Pcg g = pcg_at(sh, sl, ih, il, first + t + 1);  // the state after value t's step
    Jump stride = pcg_jump(g.inc, threads);
    for (u64 i = t; i < n; i += threads) {
        double u = (double)(pcg_output(g.state) >> 11) * (1.0 / 9007199254740992.0);
        store_float(out, i, type, low + range * u);
        pcg_apply(g, stride);
    }
}

// out[i] = first + i as the dtype: floats rounded, integers wrapped, booleans alternate.
CR_KERNEL cr_arange(void *out, u64 n, int type, u64 first) {
    for (u64 i = CR_THREAD; i < n; i += CR_THREADS) {
        u64 v = first + i;
        if (type <= T_BF16) store_float(out, i, type, (double)v);
        else store_int(out, i, type, type == T_BOOL ? (v & 1) : v);
    }
}

// Every element the same `size` bytes (8: what a memset cannot write).
CR_KERNEL cr_fill8(u64 *out, u64 n, u64 bits) {
    for (u64 i = CR_THREAD; i < n; i += CR_THREADS) out[i] = bits;
}

// ---------------------------------------------------------------- log1p (glibc's)

// The libm log1p NumPy's ziggurat calls on the host, written out so the device's
// tail values are its bits: glibc's fdlibm algorithm as its build contracts it
// into fused multiply-adds (x86-64's FMA variant, which glibc picks on every CPU
// with FMA, and aarch64's default build): each fma() below is one GCC made
// (-fdump-tree-widening_mul of glibc's source with -mfma), the rest round twice. A host CPU without FMA draws its rare
// tail values (about 1 in 4000 normals) 1 ulp apart in a few cases in 10**4.
CR_DEV double gl_log1p(double x) {
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    const double two54 = 1.80143985094819840000e+16;
    const double Lp1 = 6.666666666666735130e-01, Lp2 = 3.999999999940941908e-01,
                 Lp3 = 2.857142874366239149e-01, Lp4 = 2.222219843214978396e-01,
                 Lp5 = 1.818357216161805012e-01, Lp6 = 1.531383769920937332e-01,
                 Lp7 = 1.479819860511658591e-01;
    double hfsq, f = 0, c = 0, s, z, R, u;
    int k, hx, hu = 0, ax;
    hx = (int)(as_bits(x) >> 32);
    ax = hx & 0x7fffffff;
    k = 1;
    if (hx < 0x3FDA827A) {
        if (ax >= 0x3ff00000) {
            if (x == -1.0) return -as_double(0x7FF0000000000000ull);
            return as_double(0x7FF8000000000000ull);
        }
        if (ax < 0x3e200000) {
            if (two54 + x > 0.0 && ax < 0x3c900000) return x;
            return fma(-(x * x), 0.5, x);
        }
        if (hx > 0 || hx <= (int)0xbfd2bec3) { k = 0; f = x; hu = 1; }
    } else if (hx >= 0x7ff00000) {
        return x + x;
    }
    if (k != 0) {
        if (hx < 0x43400000) {
            u = 1.0 + x;
            hu = (int)(as_bits(u) >> 32);
            k = (hu >> 20) - 1023;
            c = (k > 0) ? 1.0 - (u - x) : x - (u - 1.0);
            c /= u;
        } else {
            u = x;
            hu = (int)(as_bits(u) >> 32);
            k = (hu >> 20) - 1023;
            c = 0;
        }
        hu &= 0x000fffff;
        if (hu < 0x6a09e) {
            u = as_double(((u64)(u32)(hu | 0x3ff00000) << 32) | (as_bits(u) & 0xffffffffull));
        } else {
            k += 1;
            u = as_double(((u64)(u32)(hu | 0x3fe00000) << 32) | (as_bits(u) & 0xffffffffull));
            hu = (0x00100000 - hu) >> 2;
        }
        f = u - 1.0;
    }
    double dk = (double)k;
    hfsq = 0.5 * f * f;
    if (hu == 0) {
        if (f == 0.0) {
            if (k == 0) return 0.0;
            c = fma(dk, ln2_lo, c);
            return fma(dk, ln2_hi, c);
        }
        R = hfsq * fma(-0.66666666666666666, f, 1.0);
        if (k == 0) return f - R;
        return fma(dk, ln2_hi, -((R - fma(dk, ln2_lo, c)) - f));
    }
    s = f / (2.0 + f);
    z = s * s;
    double z2 = z * z, z4 = z2 * z2, z6 = z4 * z2;
    double R2 = fma(z, Lp3, Lp2), R3 = fma(z, Lp5, Lp4), R4 = fma(z, Lp7, Lp6);
    R = fma(z6, R4, fma(z4, R3, fma(z, Lp1, z2 * R2)));
    double t = s * (hfsq + R);                 // not fused: GCC keeps it for both uses
    if (k == 0) return f - (hfsq - t);
    return fma(dk, ln2_hi, -((hfsq - (fma(dk, ln2_lo, c) + t)) - f));
}

// ---------------------------------------------------------------- normals (NumPy's ziggurat)

// One standard normal as NumPy's random_standard_normal draws it; returns the
// LCG steps it took. `*unsure` counts wedge tests whose two sides were within
// 4 ulp: the device's exp() need not round as the host libm's does, so such a
// draw might differ from NumPy's (the caller then draws the buffer on the host).
CR_DEV u32 ziggurat(Pcg &g, double *out, u32 *unsure) {
    const double r = 3.6541528853610088, inv_r = 0.27366123732975828;
    u32 steps = 0;
    for (;;) {
        u64 bits = pcg_next(g);
        steps++;
        int idx = (int)(bits & 0xff);
        bits >>= 8;
        int sign = (int)(bits & 1);
        u64 rabs = (bits >> 1) & 0x000fffffffffffffull;
        double x = (double)rabs * as_double(ZIG_WI[idx]);
        if (sign) x = -x;
        if (rabs < ZIG_KI[idx]) { *out = x; return steps; }
        if (idx == 0) {
            for (;;) {
                double xx = -inv_r * gl_log1p(-next_double(g));
                double yy = -gl_log1p(-next_double(g));
                steps += 2;
                if (yy + yy > xx * xx) {
                    *out = ((rabs >> 8) & 1) ? -(r + xx) : r + xx;
                    return steps;
                }
            }
        } else {
            double fi = as_double(ZIG_FI[idx]), fi1 = as_double(ZIG_FI[idx - 1]);
            double lhs = (fi1 - fi) * next_double(g) + fi;
            steps++;
            double rhs = exp(-0.5 * x * x);
            u64 lb = as_bits(lhs), rb = as_bits(rhs);
            if ((lb > rb ? lb - rb : rb - lb) <= 4) (*unsure)++;
            if (lhs < rhs) { *out = x; return steps; }
        }
    }
}

// Pass 1 over segments of `seg_len` LCG steps: segment j (j = first_seg + k) draws
// normals from step `start` (its own first step j * seg_len unless `start` is
// given, ~0 otherwise) until a draw ends at or past (j + 1) * seg_len. It keeps how
// many values began inside it, the step where the next begins, and where its
// first ZIG_KEEP values began (steps past its start): the true stream's value
// that begins in it is among them unless the draws had not fallen into step yet.
#define ZIG_KEEP 8
CR_KERNEL cr_normal_segments(u64 segments, u64 first_seg, u64 seg_len, u64 start,
                             u64 sh, u64 sl, u64 ih, u64 il,
                             u32 *counts, u64 *exits, u16 *kept, u32 *unsure) {
    for (u64 k = CR_THREAD; k < segments; k += CR_THREADS) {
        u64 j = first_seg + k;
        u64 begin = start != ~0ull ? start : j * seg_len, end = (j + 1) * seg_len;
        Pcg g = pcg_at(sh, sl, ih, il, begin);
        u64 pos = begin;
        u32 count = 0, doubt = 0;
        while (pos < end) {
            if (count < ZIG_KEEP) kept[k * ZIG_KEEP + count] = (u16)(pos - begin < 0xFFFF ? pos - begin : 0xFFFF);
            double z;
            pos += ziggurat(g, &z, &doubt);
            count++;
        }
        for (u32 c = count; c < ZIG_KEEP; c++) kept[k * ZIG_KEEP + c] = 0xFFFF;
        counts[k] = count;
        exits[k] = pos;
        if (doubt) unsure[0] += doubt;     // racy but never lost to zero: any nonzero will do
    }
}

// Pass 2: segment k's values, from its true first step starts[k], are the stream's
// values offsets[k] .. offsets[k + 1] - 1 (those below n): loc + scale * z, clipped
// to [lo, hi] when `clip`, then rounded to `type` (integers: to nearest, ties to even).
CR_KERNEL cr_normal_values(void *out, u64 n, int type, double loc, double scale,
                           int clip, double lo, double hi, u64 segments,
                           const u64 *starts, const u64 *offsets,
                           u64 sh, u64 sl, u64 ih, u64 il, u32 *unsure) {
    for (u64 k = CR_THREAD; k < segments; k += CR_THREADS) {
        u64 i = offsets[k], stop = offsets[k + 1] < n ? offsets[k + 1] : n;
        if (i >= stop) continue;
        Pcg g = pcg_at(sh, sl, ih, il, starts[k]);
        u32 doubt = 0;
        for (; i < stop; i++) {
            double z;
            ziggurat(g, &z, &doubt);
            double v = loc + scale * z;
            if (clip) v = v < lo ? lo : (v > hi ? hi : v);
            if (type <= T_BF16) store_float(out, i, type, v);
            else {
                double w = rint(v);
                store_int(out, i, type, (type == T_U64 || type == T_BOOL) ? (u64)w : (u64)(i64)w);
            }
        }
        if (doubt) unsure[0] += doubt;
    }
}

// ---------------------------------------------------------------- bounded integers

// NumPy's Generator.integers: every value takes `unit_bits`-wide pieces of the
// 64-bit draws, least significant first (64; 32 through PCG64's buffered
// next_uint32; 16 and 8 through _bounded_integers' buffered bytes),
// scaled by Lemire's method: m = unit * rng_excl, a piece whose low half is below
// `threshold` is rejected and the next taken. A piece is kept or not by itself,
// so value i is the i-th kept piece: segments of pieces are counted (pass 1), and
// each writes its kept values at the offsets the counts add up to (pass 2).
CR_DEV u64 int_unit(Pcg &g, u64 &word, u64 j, int unit_bits) {
    int per = 64 / unit_bits, at = (int)(j % per);
    if (at == 0) word = pcg_next(g);          // segments start on a draw (INT_SEGMENT % 64 == 0)
    return unit_bits == 64 ? word : (word >> (at * unit_bits)) & ((1ull << unit_bits) - 1);
}

// m = unit * rng_excl: its high part (the value past `off`) and whether it is kept.
CR_DEV int lemire(u64 unit, int unit_bits, u64 rng_excl, u64 threshold, u64 *high) {
    if (unit_bits == 64) {
        u64 lo = unit * rng_excl;
        *high = mulhi64(unit, rng_excl);
        return lo >= threshold;
    }
    u64 m = unit * rng_excl;
    *high = m >> unit_bits;
    return (m & ((1ull << unit_bits) - 1)) >= threshold;
}

CR_DEV Pcg int_start(u64 sh, u64 sl, u64 ih, u64 il, u64 first_unit, int unit_bits) {
    return pcg_at(sh, sl, ih, il, first_unit / (u64)(64 / unit_bits));
}

// Pass 1: pieces kept in segments k = 0 .. segments - 1 (seg_len pieces each).
CR_KERNEL cr_int_counts(u64 segments, u64 seg_len, int unit_bits, u64 rng_excl, u64 threshold,
                        u64 sh, u64 sl, u64 ih, u64 il, u32 *counts) {
    for (u64 k = CR_THREAD; k < segments; k += CR_THREADS) {
        u64 first = k * seg_len, word = 0;
        Pcg g = int_start(sh, sl, ih, il, first, unit_bits);
        u32 kept = 0;
        for (u64 j = first; j < first + seg_len; j++) {
            u64 unit = int_unit(g, word, j, unit_bits), high;
            kept += lemire(unit, unit_bits, rng_excl, threshold, &high);
        }
        counts[k] = kept;
    }
}

// Pass 2: segment k's kept values are values offsets[k] .. offsets[k + 1] - 1
// (those below n): off + high, stored into `type` (wrapping, as NumPy's unsigned
// arithmetic does). `mode`: 0 Lemire, 1 the whole range (off + unit), 2 every
// value `off` (no draws).
CR_KERNEL cr_int_values(void *out, u64 n, int type, int unit_bits, int mode, u64 off,
                        u64 rng_excl, u64 threshold, u64 segments, u64 seg_len,
                        const u64 *offsets, u64 sh, u64 sl, u64 ih, u64 il) {
    for (u64 k = CR_THREAD; k < segments; k += CR_THREADS) {
        u64 i = offsets ? offsets[k] : k * seg_len;
        u64 stop = offsets ? offsets[k + 1] : (k + 1) * seg_len;
        if (stop > n) stop = n;
        if (i >= stop) continue;
        if (mode == 2) {
            for (; i < stop; i++) store_int(out, i, type, off);
            continue;
        }
        u64 first = k * seg_len, word = 0;
        Pcg g = int_start(sh, sl, ih, il, first, unit_bits);
        for (u64 j = first; i < stop; j++) {
            u64 unit = int_unit(g, word, j, unit_bits), high;
            if (mode == 1) { store_int(out, i++, type, off + unit); continue; }
            if (lemire(unit, unit_bits, rng_excl, threshold, &high)) store_int(out, i++, type, off + high);
        }
    }
}

// ---------------------------------------------------------------- digests

// An order-free digest of `nbytes` at `data` (any alignment): the sum of every
// 8-byte word mixed with its index (splitmix64's finaliser). A check run on the
// device reads its inputs from device memory after the launch, so it compares
// their digests before and after: a kernel that wrote an input sends the check
// to the host, which reads the input as it was made.
CR_DEV u64 mix64(u64 z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

CR_KERNEL cr_digest(const u8 *data, u64 nbytes, u64 *out) {
    u64 words = (nbytes + 7) / 8, sum = 0;
    int aligned = ((u64)data & 7) == 0;          // the usual case: whole words at once
    for (u64 i = CR_THREAD; i < words; i += CR_THREADS) {
        u64 w = 0, end = 8 * i + 8 < nbytes ? 8 * i + 8 : nbytes;
        if (aligned && end == 8 * i + 8) {
            w = ((const u64 *)data)[i];          // little-endian: the bytes' order below
        } else {
            for (u64 b = 8 * i; b < end; b++) w |= (u64)data[b] << (8 * (b - 8 * i));
        }
        sum += mix64(w + (i + 1) * 0x9E3779B97F4A7C15ull);
    }
    if (sum) CR_ADD(out, sum);
}
