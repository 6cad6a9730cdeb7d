"""The `args:` section: one entry per signature parameter, turned into typed
arguments and the device buffers they need.

Pointers become buffers (or null), scalars are range-checked values,
constexprs are recorded but not passed, tuples recurse, and descriptors point
at a buffer (another pointer argument's, or one of their own given inline).
"""
from __future__ import annotations

from typing import Any, Iterator

from .. import signature as sig
from ..dtypes import ELEMENT_TYPES
from ..errors import SpecError, excerpt, shorten
from ..files import mirrored_output, output_problem
from ..limits import MAX_BUFFER_BYTES, MAX_DIMS
from .context import SpecContext
from .yamlload import LocatedDict
from .model import (Arg, BufferArg, BufferRef, ConstArg, DescArg, Init,
                    ScalarArg, StructArg, TupleArg)
from .scalars import check_scalar_value
from .sections import DISTRIBUTIONS, INIT_NAMES, PADDINGS, SWIZZLES, keys, required

_NOT_AGGREGATES = (sig.PointerType, sig.ConstexprType, sig.TmaDescType, sig.TensorDescType)


class ArgsBuilder:
    def __init__(self, builder: SpecContext, signature: sig.Signature):
        self.b = builder
        self.signature = signature
        self.buffers: dict[str, BufferArg] = {}
        self.descs: list[tuple[DescArg, str, Any, Any]] = []   # to resolve once all buffers exist
        self.aliases: list[tuple[BufferRef, str, Any]] = []     # the same, for {into, at}

    def build(self) -> tuple[list[Arg], dict[str, BufferArg]]:
        b, t = self.b, self.b.tree
        allowed = self.signature.names()
        if b.triton is not None and "signature" not in t:       # the entry's own parameters
            from .triton_args import folded_args
            allowed = allowed + folded_args(b, self.signature, t.get("args"))
        node = b.mapping(t.get("args", LocatedDict()), "args", t, "args", allowed=allowed)
        args = []
        for name, ty in self.signature.params:
            if isinstance(ty, sig.ScalarType):
                if name not in node:
                    raise b.error(f"missing value for scalar parameter {excerpt(name)} ({ty})",
                                  f"args.{name}", t, "args")
                args.append(ScalarArg(name, ty.dtype, b.names.get(name)))
                continue
            if name not in node and not isinstance(ty, sig.ConstexprType):
                raise b.error(f"missing entry for parameter {excerpt(name)} ({ty})", f"args.{name}",
                              t, "args")
            args.append(self.arg(name, ty, node.get(name), f"args.{name}", node, name))
        self.resolve_descs()
        self.resolve_aliases()
        return args, self.buffers

    def arg(self, name: str, ty: sig.ParamType, value: Any, field: str, parent: Any, key: Any) -> Arg:
        b = self.b
        if isinstance(ty, sig.ConstexprType):
            constants = b.tree.get("constants", {})
            return ConstArg(name, value if value is not None else constants.get(name))
        if isinstance(ty, sig.ScalarType):
            if name in b.names.scalar_types:      # a tuple's or struct's: resolved with the vars
                return ScalarArg(name, ty.dtype, b.names.get(name))
            if isinstance(value, bool) and ty.dtype.kind == "bool":
                return ScalarArg(name, ty.dtype, int(value))
            number = value if isinstance(value, float) else b.evaluate(value, field, parent, key)
            try:
                return ScalarArg(name, ty.dtype, check_scalar_value(ty.dtype, number))
            except SpecError as exc:
                raise b.error(exc.message, field, parent, key) from None
        if isinstance(ty, sig.PointerType):
            if value is None:
                return BufferRef(name, None)
            if isinstance(value, dict) and "into" in value:
                return self.alias(name, value, field, parent, key)
            self.buffers[name] = self.buffer(name, value, ty.pointee, field, parent, key)
            return BufferRef(name, name)
        if isinstance(ty, sig.TupleType):
            if not isinstance(value, list) or len(value) != len(ty.items):
                raise b.error(f"a tuple of {len(ty.items)} needs a list of {len(ty.items)} "
                              f"entries, got {_count(value)}", field, parent, key)
            return TupleArg(name, tuple(
                self.arg(f"{name}[{i}]", item, value[i], f"{field}[{i}]", value, i)
                for i, item in enumerate(ty.items)))
        if isinstance(ty, (sig.TmaDescType, sig.TensorDescType)):
            return self.desc(name, ty, value, field, parent, key)
        from ..signature.aggregates import StructType, is_aggregate, member_types, shortened
        if is_aggregate(ty):                       # imported only for specs that have one
            members = member_types(ty)
            if not isinstance(value, list) or len(value) != len(members):
                each = "member" if isinstance(ty, StructType) else "element"
                raise b.error(f"{shortened(str(ty))} needs a list of {len(members)} values, "
                              f"one per {each}, got {_count(value)}", field, parent, key)
            return StructArg(name, ty, tuple(
                self.arg(f"{name}[{i}]", item, value[i], f"{field}[{i}]", value, i)
                for i, item in enumerate(members)))
        raise AssertionError(f"unhandled type {ty}")

    def buffer(self, name: str, value: Any, pointee, field: str, parent: Any, key: Any) -> BufferArg:
        b = self.b
        if not isinstance(value, dict):     # the usual slip: a pointer given a scalar's value
            raise b.error(f"a pointer argument needs a buffer, got {excerpt(value)}: "
                          "write {shape: [N], init: zeros} (or null for a null pointer)",
                          field, parent, key)
        node = b.mapping(value, field, parent, key, keys("buffer"), required=required("buffer"))
        dtype = pointee
        if "dtype" in node:
            dtype = ELEMENT_TYPES.get(node["dtype"]) if isinstance(node["dtype"], str) else None
            if dtype is None:
                raise b.error(f"unknown dtype {excerpt(node['dtype'])}; known: {', '.join(ELEMENT_TYPES)}",
                              f"{field}.dtype", node, "dtype")
        if dtype is None:
            raise b.error("needs a dtype", f"{field}.dtype", parent, key)
        shape = self.shape(node, dtype, field)
        init = self.init(node.get("init", "zeros"), f"{field}.init", node, "init", dtype)
        save = None
        if "save" in node:
            save = b.resolve_path(node["save"], f"{field}.save", node, "save", must_exist=False)
            if (save := mirrored_output(save, node["save"])) is None:
                raise b.error(f"{excerpt(node['save'])} climbs out of the folder the run was "
                              "carried to (--ray): name a path below the spec's folder, or an "
                              "absolute one", f"{field}.save", node, "save")
            if problem := output_problem(save):       # a FIFO would block the run's end
                raise b.error(f"{save} {problem}", f"{field}.save", node, "save")
        offset = 0
        if "offset" in node:            # elements: the kernel gets the address past them
            offset = b.integer(node["offset"], f"{field}.offset", node, "offset", minimum=0)
        return BufferArg(name, dtype, shape, init, save, offset)

    def alias(self, name: str, value: Any, field: str, parent: Any, key: Any) -> BufferRef:
        """`{into: NAME, at: K}`: K bytes into another pointer's buffer."""
        b = self.b
        node = b.mapping(value, field, parent, key, keys("alias"), required=required("alias"))
        if not isinstance(node["into"], str):
            raise b.error("must name another pointer's buffer", f"{field}.into", node, "into")
        at = 0
        if "at" in node:
            at = b.integer(node["at"], f"{field}.at", node, "at", 0, MAX_BUFFER_BYTES)
        ref = BufferRef(name, node["into"], at)
        self.aliases.append((ref, field, node))
        return ref

    def check_fill(self, dtype, value: Any, field: str, parent: Any, key: Any) -> None:
        """An integer buffer's fill value fits its dtype (SpecError at its line)."""
        if dtype is None or dtype.kind == "float":
            return
        try:
            check_scalar_value(dtype, value)
        except SpecError as exc:
            raise self.b.error(exc.message, field, parent, key) from None

    def shape(self, node: Any, dtype, field: str) -> tuple[int, ...]:
        """`node["shape"]`: one to MAX_DIMS sizes, the array within MAX_BUFFER_BYTES."""
        b = self.b
        shape_node = node["shape"]
        items = shape_node if isinstance(shape_node, list) else [shape_node]
        holder = shape_node if isinstance(shape_node, list) else node
        if len(items) > MAX_DIMS:
            raise b.error(f"{len(items)} dimensions (at most {MAX_DIMS})", f"{field}.shape",
                          node, "shape")
        shape = tuple(b.integer(v, f"{field}.shape[{i}]", holder,
                                i if holder is shape_node else "shape", 0, MAX_BUFFER_BYTES)
                      for i, v in enumerate(items))
        if not shape:
            raise b.error("needs at least one dimension", f"{field}.shape", node, "shape")
        nbytes = dtype.size
        for d in shape:
            nbytes *= d
        if nbytes > MAX_BUFFER_BYTES:       # refused before any array is made
            raise b.error(f"shape {list(shape)} of {dtype.name} is {nbytes} bytes, more than "
                          f"{MAX_BUFFER_BYTES} (1 TiB)", f"{field}.shape", node, "shape")
        return shape

    def init(self, value: Any, field: str, parent: Any, key: Any, dtype=None) -> Init:
        """`init:` of a buffer of `dtype`; an integer fill is checked against the
        dtype here, where its line is known (a float's rounding is the data's)."""
        b = self.b
        if isinstance(value, str):
            if value not in INIT_NAMES:
                raise b.error(f"unknown init {excerpt(value)} (expected zeros, ones, arange, random, "
                              "{random: ...}, {fill: V} or {file: PATH.npy})", field, parent, key)
            return Init(value)
        node = b.mapping(value, field, parent, key, keys("init"))
        with_random = ("random", "low", "high", "mean", "std", "seed")
        kinds = [k for k in ("random", "fill", "file") if k in node]
        if len(kinds) != 1:
            raise b.error(f"needs exactly one of random, fill or file (found: "
                          f"{', '.join(kinds) or 'none'})", field, parent, key)
        kind = kinds[0]
        extra = [k for k in node if k != kind and (kind != "random" or k not in with_random)]
        if extra:
            raise b.error(f"{excerpt(extra[0])} does not go with {kind}", f"{field}.{extra[0]}", node, extra[0])
        if kind == "fill":
            fill = node["fill"]
            if not isinstance(fill, (bool, int, float)):
                fill = b.evaluate(fill, f"{field}.fill", node, "fill")
            self.check_fill(dtype, fill, f"{field}.fill", node, "fill")
            return Init("fill", value=fill)
        if kind == "file":
            path = b.resolve_path(node["file"], f"{field}.file", node, "file")
            if path.suffix != ".npy":
                raise b.error(f"must be a .npy file, got {path.name}", f"{field}.file", node, "file")
            return Init("file", path=path)
        distribution = node["random"]
        if distribution not in DISTRIBUTIONS:
            raise b.error(f"must be uniform or normal, got {excerpt(distribution)}", f"{field}.random",
                          node, "random")
        wrong = ("mean", "std") if distribution == "uniform" else ("low", "high")
        for k in wrong:
            if k in node:
                raise b.error(f"{excerpt(k)} does not go with random: {distribution}", f"{field}.{k}", node, k)
        got: dict[str, Any] = {}
        for k in ("low", "high", "mean", "std"):
            if k in node:
                got[k] = float(b.evaluate(node[k], f"{field}.{k}", node, k))
        if "low" in got and "high" in got and not got["low"] < got["high"]:
            raise b.error(f"low ({got['low']}) must be below high ({got['high']})",
                          f"{field}.high", node, "high")
        if got.get("std", 1.0) < 0:
            raise b.error("must be >= 0", f"{field}.std", node, "std")
        if "seed" in node:
            got["seed"] = b.integer(node["seed"], f"{field}.seed", node, "seed", minimum=0)
        return Init("random", distribution=distribution, **got)

    def desc(self, name: str, ty, value: Any, field: str, parent: Any, key: Any) -> DescArg:
        b = self.b
        node = b.mapping(value, field, parent, key, keys("descriptor"),
                         required=required("descriptor"))
        kind = "tensordesc" if isinstance(ty, sig.TensorDescType) else "nvTmaDesc"
        source = node["buffer"]
        if isinstance(source, dict):
            pointee = ty.dtype if kind == "tensordesc" else None
            self.buffers[name] = self.buffer(name, source, pointee, f"{field}.buffer", node, "buffer")
            buffer_name = name
        elif isinstance(source, str):
            buffer_name = source
        else:
            raise b.error("must name a pointer argument or give a buffer mapping",
                          f"{field}.buffer", node, "buffer")
        if "block" in node:
            block_node = node["block"]
            if not isinstance(block_node, list) or not block_node:
                raise b.error("must be a list of block dims", f"{field}.block", node, "block")
            block = tuple(b.integer(v, f"{field}.block[{i}]", block_node, i, minimum=1)
                          for i, v in enumerate(block_node))
        elif kind == "tensordesc":
            block = ty.block
        else:
            raise b.error("an nvTmaDesc needs block: [..]", f"{field}.block", parent, key)
        if kind == "tensordesc" and len(block) != ty.ndim:
            raise b.error(f"{len(block)} block dims for a {ty.ndim}-D {ty}", f"{field}.block",
                          node, "block")
        swizzle = None
        if "swizzle" in node:
            swizzle = node["swizzle"]
            if swizzle == "none":
                swizzle = 0
            if swizzle not in SWIZZLES or isinstance(swizzle, bool):
                raise b.error(f"must be one of none, 32, 64, 128 (bytes), got {excerpt(node['swizzle'])}",
                              f"{field}.swizzle", node, "swizzle")
        padding = node.get("padding", "zero")
        if padding not in PADDINGS:
            raise b.error(f"must be zero or nan, got {excerpt(padding)}", f"{field}.padding", node, "padding")
        desc = DescArg(name, kind, buffer_name, block, swizzle, padding)
        self.descs.append((desc, f"{field}.buffer", node, "buffer"))
        return desc

    def resolve_descs(self) -> None:
        """A descriptor's buffer must exist and have as many dims as its block."""
        for desc, field, node, key in self.descs:
            buffer = self.buffers.get(desc.buffer)
            if buffer is None:
                raise self.b.error(f"{excerpt(desc.buffer)} is not a buffer argument (buffers: "
                                   f"{shorten(', '.join(self.buffers) or 'none', 200)})", field, node, key)
            if len(buffer.shape) != len(desc.block):
                raise self.b.error(f"buffer {excerpt(desc.buffer)} has {len(buffer.shape)} dims but the "
                                   f"block has {len(desc.block)}", field, node, key)


    def resolve_aliases(self) -> None:
        """An alias points into a buffer that exists, no further than its end."""
        for ref, field, node in self.aliases:
            buffer = self.buffers.get(ref.buffer)
            if buffer is None:
                raise self.b.error(f"{excerpt(ref.buffer)} is not a buffer (buffers: "
                                   f"{shorten(', '.join(self.buffers) or 'none', 200)})",
                                   f"{field}.into", node, "into")
            if ref.at > buffer.nbytes:
                raise self.b.error(f"{ref.at} bytes is past the end of {ref.buffer} "
                                   f"({buffer.nbytes} bytes)", f"{field}.at", node, "at")


def scalar_entries(signature: sig.Signature, args: Any) -> Iterator[tuple]:
    """Every scalar parameter, those inside tuples and structs included (named
    `t[0]`, `p[1][2]`), as (name, dtype, given, value, field, parent, key):
    `given` says whether `args` has an entry for it."""
    def walk(name: str, ty: Any, holder: Any, key: Any, field: str) -> Iterator[tuple]:
        given = (key in holder if isinstance(holder, dict)
                 else isinstance(holder, list) and key < len(holder))
        value = holder[key] if given else None
        if isinstance(ty, sig.ScalarType):
            yield name, ty.dtype, given, value, field, holder, key
        elif isinstance(value, list) and isinstance(ty, sig.TupleType):
            for i, item in enumerate(ty.items):
                yield from walk(f"{name}[{i}]", item, value, i, f"{field}[{i}]")
        elif isinstance(value, list) and not isinstance(ty, _NOT_AGGREGATES):
            from ..signature.aggregates import member_types
            for i, item in enumerate(member_types(ty)):
                yield from walk(f"{name}[{i}]", item, value, i, f"{field}[{i}]")

    for name, ty in signature.params:
        yield from walk(name, ty, args if isinstance(args, dict) else {}, name, f"args.{name}")


def _count(value: Any) -> str:
    return f"{len(value)}" if isinstance(value, list) else "no list"
