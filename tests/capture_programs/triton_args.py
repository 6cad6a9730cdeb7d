"""Triton kernels with a tuple argument and host tensor descriptors (TMA, sm_90
and later) for `cubinrun capture`'s GPU tests and bench/capture/capture_programs.py,
launched through Triton's own launcher. It prints a digest of each result."""
import hashlib

import torch
import triton
import triton.language as tl


@triton.jit
def scale_pair(ptrs, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(ptrs[1] + offs, tl.load(ptrs[0] + offs, mask=mask) * 2.0, mask=mask)


@triton.jit
def tma_copy(in_desc, out_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M
    off_n = tl.program_id(1) * BLOCK_N
    out_desc.store([off_m, off_n], in_desc.load([off_m, off_n]) * 3)


torch.manual_seed(0)
results = {}
n = 5000
x, y = torch.randn(n, device="cuda"), torch.zeros(n, device="cuda")
scale_pair[(triton.cdiv(n, 256),)]((x, y), n, BLOCK=256)
results["scale_pair"] = y
if torch.cuda.get_device_capability()[0] >= 9:
    from triton.tools.tensor_descriptor import TensorDescriptor
    a = torch.randn(256, 128, device="cuda", dtype=torch.float16)
    b = torch.empty_like(a)
    tma_copy[(256 // 64, 128 // 64)](TensorDescriptor.from_tensor(a, [64, 64]),
                                    TensorDescriptor.from_tensor(b, [64, 64]),
                                    BLOCK_M=64, BLOCK_N=64)
    results["tma_copy"] = b
torch.cuda.synchronize()
for name, value in results.items():
    print(name, hashlib.sha256(value.float().cpu().numpy().tobytes()).hexdigest()[:16])
