"""`cubinrun init`: a starter spec written from what a cubin says.

The cubin gives each parameter's size, not its type (nvcc does not mark
pointers), so every guess carries a TODO for a human: 8 bytes is most often a
pointer, 4 an int32, 128 a CUtensorMap.
"""
from __future__ import annotations

import os
from pathlib import Path

from .binary.cubin import CubinInfo, KernelInfo

GUESS_BY_SIZE = {8: '"*fp32"', 4: "i32", 2: "i16", 1: "i8", 128: "nvTmaDesc"}
ALTERNATIVES = {8: "a pointer *T, or i64 / u64 / fp64",
                4: "i32, u32 or fp32", 2: "i16, u16, fp16 or bf16", 1: "i8, u8 or i1",
                128: "a CUtensorMap passed by value"}


def starter_spec(info: CubinInfo, kernel: KernelInfo, cubin: Path, spec_dir: Path) -> str:
    rel = os.path.relpath(cubin.resolve(), spec_dir.resolve())
    block = kernel.required_block or (128, 1, 1)
    lines = [f"# Starter spec for {kernel.demangled or kernel.name} ({info.arch}), written by "
             "`cubinrun init`.",
             "# The cubin states parameter sizes, not types: check every TODO.",
             "kernel:", f"  cubin: {rel}", f"  name: {kernel.name}", "signature:"]
    for p in kernel.params:
        guess = GUESS_BY_SIZE.get(p.size)
        if guess is None:
            lines.append(f"  # p{p.ordinal}: TODO a {p.size}-byte struct at offset {p.offset}: "
                         "not a type cubinrun can pass")
            continue
        lines.append(f"  p{p.ordinal}: {guess:12} # TODO {p.size} bytes at offset {p.offset}: "
                     f"{ALTERNATIVES[p.size]}")
    lines += ["vars:", "  N: 1024                 # TODO problem size", "args:"]
    for p in kernel.params:
        if p.size == 8:
            lines.append(f"  p{p.ordinal}: {{shape: [N], init: random}}   # TODO or a number")
        elif p.size == 128:
            lines.append(f"  p{p.ordinal}: {{buffer: TODO, block: [TODO]}}")
        elif p.size in GUESS_BY_SIZE:
            lines.append(f"  p{p.ordinal}: N")
    lines.append("grid: [1]                 # TODO programs")
    lines.append(f"block: [{', '.join(map(str, block))}]"
                 + ("   # required by the kernel" if kernel.required_block else ""))
    if kernel.cluster:
        lines.append(f"# compiled for clusters of {list(kernel.cluster)}: the grid must be a "
                     "multiple of it")
    lines.append("# check:\n#   p0: {expect: TODO}")
    return "\n".join(lines) + "\n"
