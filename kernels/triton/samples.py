"""Real-world Triton kernels for cubinrun's samples, and their NumPy references.

Run with the newest Triton release in a throw-away venv (no GPU needed):

    python3 -m venv /tmp/triton39 && /tmp/triton39/bin/pip install triton==3.9.0 numpy
    /tmp/triton39/bin/python kernels/triton/samples.py

Each kernel is compiled for sm_90 exactly as Triton's JIT would compile the
call written beside it (the same signature, constexprs, folded arguments and
tt.divisibility attributes), and its cache entry's `.json`, `.cubin` and
`.source` go to kernels/triton/<name>/. The inputs and the reference outputs
(computed in float64 by NumPy) go to kernels/triton/data/, for the specs in
configs/triton_*.yaml.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
D16 = [["tt.divisibility", 16]]     # what the JIT sets for 16-aligned pointers, ints % 16 == 0

# matmul sizes: fp16 A (M x K) @ B (K x N) -> fp32 C, 128x128x64 tiles, 3 stages
M, N, K = 256, 256, 256
# softmax: ROWS rows of COLS, fewer programs than rows (persistent)
ROWS, COLS = 800, 100
# layer norm: LN_ROWS rows of LN_COLS fp16
LN_ROWS, LN_COLS = 128, 768


def kernels():
    import triton
    import triton.language as tl

    # matmul_kernel[(cdiv(M, 128) * cdiv(N, 128),)](a, b, c, M, N, K, a.stride(0),
    #     a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), 128, 128, 64, 8,
    #     num_warps=8, num_stages=3): the unit strides are folded, the rest % 16 == 0.
    @triton.jit
    def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                      stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
        pid = tl.program_id(0)
        num_pid_m = tl.cdiv(M, BLOCK_M)
        num_pid_n = tl.cdiv(N, BLOCK_N)
        group = GROUP_M * num_pid_n
        first_m = (pid // group) * GROUP_M
        group_m = min(num_pid_m - first_m, GROUP_M)
        pid_m = first_m + (pid % group) % group_m
        pid_n = (pid % group) // group_m
        offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
        offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BLOCK_K)):
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
        rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
        tl.store(c_ptrs, acc, mask=(rows[:, None] < M) & (cols[None, :] < N))

    # softmax_kernel[(min(4 * NUM_SMS, n_rows),)](y, x, x.stride(0), y.stride(0), n_rows,
    #     n_cols, BLOCK=128): a persistent kernel, each program loops over rows.
    @triton.jit
    def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                       BLOCK: tl.constexpr):
        start = tl.program_id(0)
        step = tl.num_programs(0)
        cols = tl.arange(0, BLOCK)
        for row in tl.range(start, n_rows, step):
            x = tl.load(in_ptr + row * in_row_stride + cols, mask=cols < n_cols,
                        other=-float("inf"))
            x = x - tl.max(x, axis=0)
            num = tl.exp(x)
            tl.store(out_ptr + row * out_row_stride + cols, num / tl.sum(num, axis=0),
                     mask=cols < n_cols)

    # layer_norm_kernel[(n_rows,)](x, y, w, b, mean, rstd, x.stride(0), N, 1e-5, BLOCK_N=1024)
    @triton.jit
    def layer_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, stride, N, eps,
                          BLOCK_N: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        mean = tl.sum(x, axis=0) / N
        diff = tl.where(mask, x - mean, 0.0)
        rstd = 1 / tl.sqrt(tl.sum(diff * diff, axis=0) / N + eps)
        w = tl.load(w_ptr + cols, mask=mask)
        b = tl.load(b_ptr + cols, mask=mask)
        y = diff * rstd * w + b
        tl.store(y_ptr + row * stride + cols, y.to(tl.float16), mask=mask)
        tl.store(mean_ptr + row, mean)
        tl.store(rstd_ptr + row, rstd)

    return [
        ("matmul_kernel", matmul_kernel,
         {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "M": "i32", "N": "i32",
          "K": "i32", "stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32",
          "stride_bn": "constexpr", "stride_cm": "i32", "stride_cn": "constexpr",
          "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr",
          "GROUP_M": "constexpr"},
         {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": 128, "BLOCK_N": 128,
          "BLOCK_K": 64, "GROUP_M": 8},
         {(i,): D16 for i in (0, 1, 2, 3, 4, 5, 6, 8, 10)},
         {"num_warps": 8, "num_stages": 3}),
        ("softmax_kernel", softmax_kernel,
         {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_row_stride": "i32",
          "out_row_stride": "i32", "n_rows": "i32", "n_cols": "i32", "BLOCK": "constexpr"},
         {"BLOCK": 128},
         {(0,): D16, (1,): D16, (4,): D16},    # n_rows 800 % 16 == 0; strides 100 not
         {"num_warps": 4}),
        ("layer_norm_kernel", layer_norm_kernel,
         {"x_ptr": "*fp16", "y_ptr": "*fp16", "w_ptr": "*fp32", "b_ptr": "*fp32",
          "mean_ptr": "*fp32", "rstd_ptr": "*fp32", "stride": "i32", "N": "i32",
          "eps": "fp32", "BLOCK_N": "constexpr"},
         {"BLOCK_N": 1024},
         {(i,): D16 for i in (0, 1, 2, 3, 4, 5, 6, 7)},
         {"num_warps": 8}),
    ]


def compile_one(name, fn, signature, constexprs, attrs, options) -> None:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=options)
    cache = Path(os.environ["TRITON_CACHE_DIR"])
    (entry,) = [p.parent for p in cache.glob(f"*/{compiled.name}.json")]
    dest = HERE / name
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir()
    for suffix in (".json", ".cubin", ".source"):
        shutil.copyfile(entry / f"{compiled.name}{suffix}", dest / f"{compiled.name}{suffix}")


def write_data() -> None:
    """Inputs and references, fixed seeds; references in float64, stored in the
    output's dtype (fp32, or fp16 for the layer norm's y)."""
    import numpy as np
    rng = np.random.default_rng(16)
    DATA.mkdir(exist_ok=True)
    a = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    np.save(DATA / "matmul_a.npy", a)
    np.save(DATA / "matmul_b.npy", b)
    np.save(DATA / "matmul_c.npy", (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32))

    x = rng.normal(0, 3, (ROWS, COLS)).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.save(DATA / "softmax_x.npy", x)
    np.save(DATA / "softmax_y.npy", (e / e.sum(axis=1, keepdims=True)).astype(np.float32))

    x = rng.normal(1, 2, (LN_ROWS, LN_COLS)).astype(np.float16)
    w = rng.uniform(0.5, 1.5, LN_COLS).astype(np.float32)
    bias = rng.uniform(-0.5, 0.5, LN_COLS).astype(np.float32)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1)
    rstd = 1 / np.sqrt(((x64 - mean[:, None]) ** 2).mean(axis=1) + 1e-5)
    y = (x64 - mean[:, None]) * rstd[:, None] * w + bias
    for label, array in (("x", x), ("w", w), ("b", bias), ("y", y.astype(np.float16)),
                         ("mean", mean.astype(np.float32)), ("rstd", rstd.astype(np.float32))):
        np.save(DATA / f"layer_norm_{label}.npy", array)


def main() -> None:
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-samples-")
    import triton
    for name, *rest in kernels():
        compile_one(name, *rest)
        print(f"triton {triton.__version__}: {name} ok")
    write_data()
    shutil.rmtree(os.environ["TRITON_CACHE_DIR"], ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
