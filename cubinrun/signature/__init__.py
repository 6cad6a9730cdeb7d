"""Kernel signatures in Triton's vocabulary: parsing, and expansion into the
flat list of parameters the kernel really receives.

A spec's signature maps names to types (strings, or YAML lists for tuples).
The modules build on each other in this order:
  types       the parameter types, and scalars and pointers parsed
  aggregates  structs, arrays and vectors passed by value, and their C layout
  parse       a whole type or signature, from YAML or the compact form
  expand      the flat parameter list (tuples, tensor descriptors)
aggregates is imported only where a struct, array or vector is met (it costs
a few ms of start-up that a plain spec need not pay), so it is not re-exported.
"""
from .expand import DESC_FLAGS, Leaf, expand, leaf_size, tensordesc_leaves
from .parse import check_type_bounds, parse_compact, parse_signature, parse_type
from .types import (ConstexprType, ParamType, PointerType, ScalarType, Signature, TensorDescType,
                    TmaDescType, TupleType)

__all__ = [
    "ConstexprType", "DESC_FLAGS", "Leaf", "ParamType", "PointerType", "ScalarType", "Signature",
    "TensorDescType", "TmaDescType", "TupleType", "check_type_bounds", "expand", "leaf_size",
    "parse_compact", "parse_signature", "parse_type", "tensordesc_leaves",
]
