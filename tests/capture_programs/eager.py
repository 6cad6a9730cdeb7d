"""A small eager PyTorch program for `cubinrun capture`'s GPU tests and
bench/capture/capture_programs.py: libtorch's own kernels (TensorIterator pointwise
and reductions, an in-place update, a softmax, an index_select) launched by
the CUDA runtime. It prints a digest of each result."""
import hashlib

import torch

torch.manual_seed(0)
x = torch.randn(1000, 300, device="cuda")
y = torch.randn(1000, 300, device="cuda")
index = torch.randint(0, 1000, (64,), device="cuda")
results = {
    "add": x + y,
    "mul_scalar": x * 3.5,
    "relu": torch.relu(x),
    "sum": x.sum(dim=1),
    "max": x.amax(dim=0),
    "softmax": torch.softmax(x, dim=1),
    "index_select": x.index_select(0, index),
    "half": x.half() * 2,
}
z = x.clone()
z.add_(y, alpha=0.5)                        # in place
results["inplace"] = z
torch.cuda.synchronize()
for name, value in results.items():
    print(name, hashlib.sha256(value.cpu().numpy().tobytes()).hexdigest()[:16])
