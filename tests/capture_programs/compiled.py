"""A small torch.compile program for `cubinrun capture`'s GPU tests and
bench/capture/capture_programs.py: pointwise, a softmax, a layer norm + GELU in fp16,
a column sum and a cumsum, each compiled by Inductor into Triton kernels.
It prints a digest of each result, so a capture that changed one shows."""
import hashlib
import os

import torch

torch.manual_seed(0)
if os.environ.get("STATIC_LAUNCHER") == "0":
    torch._inductor.config.use_static_cuda_launcher = False


def pointwise(x, y):
    return torch.sin(x) * y + 1.0


def softmax(x):
    return torch.softmax(x, dim=-1)


def norm_gelu(x, w, b):
    return torch.nn.functional.gelu(torch.nn.functional.layer_norm(x, x.shape[-1:], w, b))


def column_sum(x):
    return x.sum(dim=0)


def scan(x):
    return torch.cumsum(x, dim=1)


x = torch.randn(1024, 512, device="cuda")
y = torch.randn(1024, 512, device="cuda")
h = torch.randn(256, 768, device="cuda", dtype=torch.float16)
w = torch.randn(768, device="cuda", dtype=torch.float16)
b = torch.randn(768, device="cuda", dtype=torch.float16)
cases = [("pointwise", pointwise, (x, y)), ("softmax", softmax, (x,)),
         ("norm_gelu", norm_gelu, (h, w, b)), ("column_sum", column_sum, (x,)),
         ("scan", scan, (x,))]
for name, fn, args in cases:
    out = torch.compile(fn)(*args)
    for _ in range(3):                      # repeats: captured once
        out = torch.compile(fn)(*args)
    torch.cuda.synchronize()
    print(name, hashlib.sha256(out.cpu().numpy().tobytes()).hexdigest()[:16])
