"""Library calls for `cubinrun capture`'s GPU tests and bench/capture/capture_programs.py:
eager GEMMs in fp16, bf16 and fp32 (cuBLAS/cuBLASLt, whose nvjet kernels take
their parameters through `extra`), a cuDNN convolution and scaled-dot-product
attention, then a graph captured and replayed by hand with new inputs. It prints
a digest of each result."""
import hashlib

import torch
import torch.nn.functional as F

torch.manual_seed(0)
results = {}
for dtype in (torch.float16, torch.bfloat16, torch.float32):
    a = torch.randn(512, 384, device="cuda", dtype=dtype)
    b = torch.randn(384, 256, device="cuda", dtype=dtype)
    results[f"gemm_{dtype}"] = a @ b
image = torch.randn(8, 16, 32, 32, device="cuda")
weight = torch.randn(32, 16, 3, 3, device="cuda")
results["conv"] = F.conv2d(image, weight, padding=1)
q, k, v = (torch.randn(4, 8, 128, 64, device="cuda", dtype=torch.float16) for _ in range(3))
results["sdpa"] = F.scaled_dot_product_attention(q, k, v, is_causal=True)

# a graph replayed by hand: captured on static buffers, replayed after new inputs
static_x = torch.zeros(256, 256, device="cuda")
static_w = torch.randn(256, 256, device="cuda")
stream = torch.cuda.Stream()
stream.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(stream):
    for _ in range(2):                         # warm up outside the graph, as PyTorch asks
        torch.relu(static_x @ static_w).sum(dim=1)
torch.cuda.current_stream().wait_stream(stream)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    static_y = torch.relu(static_x @ static_w + 1.0).sum(dim=1)
for step in range(3):
    static_x.copy_(torch.randn(256, 256, device="cuda"))
    graph.replay()
    results[f"graph_{step}"] = static_y.clone()
torch.cuda.synchronize()
for name, value in results.items():
    print(name, hashlib.sha256(value.float().cpu().numpy().tobytes()).hexdigest()[:16])
