"""The kernel spec file (docs/spec.md): YAML with line numbers (`yamlload`),
expressions (`expr`), and the typed, validated objects it is read into.

`load_spec` reads a YAML file into a `Spec`; everything downstream (the
launcher, the buffers, the launch, the check, the report) reads only these
objects, never the YAML.
"""
from .loader import load_spec, parse_overrides
from .scalars import check_scalar_value
from .model import (Arg, Bench, BufferArg, BufferRef, Check, ConstArg, DescArg, Init,
                    KernelRef, Launch, ScalarArg, Scratch, Spec, StructArg, TupleArg)

__all__ = ["Arg", "Bench", "BufferArg", "BufferRef", "Check", "ConstArg", "DescArg", "Init",
           "KernelRef", "Launch", "ScalarArg", "Scratch", "Spec", "StructArg", "TupleArg",
           "check_scalar_value", "load_spec", "parse_overrides"]
