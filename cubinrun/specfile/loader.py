"""Loading a spec: YAML in, a validated `Spec` out.

Sections are read in the order they depend on each other: kernel (which may
bring Triton's metadata and signature), signature, vars and scalar args
(resolved together and lazily, since each may name the other: names.py),
args, launch, grid, block, check and bench (`sweep:` and `constraints:` are
the sweep space's: sweep.py). Every error names the file, the field path and,
where YAML gives it, the line.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from .. import signature as sig
from ..errors import SpecError, excerpt, shorten
from ..limits import MAX_ALIGN, MAX_BUFFER_BYTES, MAX_DEVICE_BYTES, MAX_SHARED_BYTES
from .yamlload import LocatedDict, load_yaml_file
from .context import SpecContext
from .locate import locate
from . import sections
from .args import ArgsBuilder
from .device_values import DEVICE_NAMES, DeviceValues, unavailable
from .model import (COMPILERS, KERNEL_KINDS, Bench, BufferArg, Check, KernelRef, Launch,
                    Scratch, Spec, budget_problem)
from .names import LazyEnv, Names

TOP_LEVEL_KEYS = sections.keys("spec")        # sweep: and constraints: read by sweep.py

ARCH_PATTERN = re.compile(r"sm_\d+[af]?")
_TEMPLATE_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

GRID_LIMITS = (2**31 - 1, 65535, 65535)
BLOCK_LIMITS = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024
MAX_CLUSTER_SIZE = 16


def load_spec(path: str | Path, overrides: Mapping[str, str] | None = None,
              device: DeviceValues | None = None) -> Spec:
    """Read and validate a spec file; `overrides` are `--set NAME=VALUE` pairs;
    `device` gives `sm_count` and the other device values (none by default)."""
    path = Path(path)
    tree = load_yaml_file(path)
    try:
        return _SpecBuilder(path, tree, overrides or {}, device or unavailable()).build()
    except SpecError as exc:
        raise locate(exc, path, tree) from None


def parse_overrides(pairs: Sequence[str]) -> dict[str, str]:
    """`--set NAME=VALUE` strings into a mapping (a usage error when malformed)."""
    out: dict[str, str] = {}
    for pair in pairs:
        name, eq, value = pair.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier() or not value.strip():
            raise SpecError(f"--set expects NAME=VALUE, got {excerpt(pair)}")
        out[name] = value.strip()
    return out


class _SpecBuilder(SpecContext):
    """The spec's sections, read in the order they depend on each other."""

    # -- sections --

    def build(self) -> Spec:
        t = self.tree
        for k in t:
            if k not in TOP_LEVEL_KEYS:
                raise self.error(f"unknown top-level key {excerpt(k)} (expected one of: "
                                 f"{', '.join(TOP_LEVEL_KEYS)})", str(k), t, k)
        if "kernel" not in t:
            raise self.error("missing required section 'kernel'", "kernel", t)
        kernel = self.kernel(t["kernel"])
        signature = self.signature()
        if self.triton is not None and "signature" in t:
            from .triton_args import check_signature_names
            check_signature_names(self, self.triton, signature)
        constants = self.constants(signature)
        self.names = Names(self, signature)
        args_builder = ArgsBuilder(self, signature)
        args, buffers = args_builder.build()
        from .globals_section import read_globals
        module_globals, global_lines = read_globals(self, args_builder, buffers)
        launch = self.launch()
        grid = self.dims(t.get("grid"), "grid", required=True, minimum=0)
        block = self.block(launch)
        self.check_grid(grid, launch)
        self.check_memory(buffers, grid, launch)
        checks = self.checks(buffers, module_globals)
        bench = self.bench()
        return Spec(path=self.path, kernel=kernel, signature=signature, args=tuple(args),
                    buffers=buffers, vars=self.names.vars(), scalars=self.names.scalars(),
                    device_values=dict(self.names.device_values),
                    device_source=self.device.source if self.names.device_values else None,
                    notes=(self.triton.notes if self.triton else ()) + tuple(self.notes),
                    divisibility=self.divisibility(signature),
                    arg_lines=_lines(t.get("args")),
                    grid=grid, block=block, launch=launch, checks=checks, bench=bench,
                    constants=constants, globals=module_globals, global_lines=global_lines,
                    tensordesc_meta=_tuple_or_none(self.triton and self.triton.tensordesc_meta),
                    desc_flags=1 if self.triton is None else self.triton.desc_flags)

    def divisibility(self, signature: sig.Signature) -> tuple[int | None, ...] | None:
        """What a Triton entry was specialized for, per expanded parameter."""
        if self.triton is None:
            return None
        from .triton_args import leaf_divisibility
        e = self.triton
        return leaf_divisibility(e, signature, sig.expand(signature, e.tensordesc_meta,
                                                          e.desc_flags))

    def kernel(self, node: Any) -> KernelRef:
        t = self.tree
        node = self.mapping(node, "kernel", t, "kernel", sections.keys("kernel"))
        kinds = [k for k in KERNEL_KINDS if k in node]
        if len(kinds) != 1:
            found = ", ".join(kinds) or "none"
            raise self.error(f"needs exactly one of {', '.join(KERNEL_KINDS)} (found: {found})",
                             "kernel", t, "kernel")
        kind = kinds[0]
        raw_path = self.fill_template(node[kind], f"kernel.{kind}", node, kind)
        path = self.resolve_path(raw_path, f"kernel.{kind}", node, kind)
        name = node.get("name")
        if name is not None and (not isinstance(name, str) or not name.strip()):
            raise self.error(f"must be a kernel name, got {excerpt(name)}", "kernel.name", node, "name")
        if name is not None:
            name = self.fill_template(name, "kernel.name", node, "name").strip()
        for key in ("options", "include", "compiler"):
            if key in node and kind != "source":
                raise self.error(f"only `source:` kernels take `{key}`", f"kernel.{key}", node, key)
        options = self.strings(node, "options")
        include = self.include_dirs(node)
        compiler = node.get("compiler", "nvrtc")
        if compiler not in COMPILERS:
            raise self.error(f"must be one of {', '.join(COMPILERS)}, got {excerpt(compiler)}",
                             "kernel.compiler", node, "compiler")
        arch = node.get("arch")
        if arch is not None:
            if kind not in ("source", "ptx"):
                raise self.error("only `source:` and `ptx:` kernels are compiled for a target",
                                 "kernel.arch", node, "arch")
            if not isinstance(arch, str) or not ARCH_PATTERN.fullmatch(arch):
                raise self.error(f"must be a target such as sm_90 or sm_90a, got {arch!r}",
                                 "kernel.arch", node, "arch")
        if kind == "triton":
            from .triton_entry import read_triton_entry
            self.triton = read_triton_entry(path, with_signature="signature" not in t)
            name = name or self.triton.name
        reinterpret = tuple(self.strings(node, "reinterpret"))
        return KernelRef(kind, path, name, tuple(options), arch, include, compiler, reinterpret)

    def include_dirs(self, node: Any) -> tuple[Path, ...]:
        folders = []
        for i, text in enumerate(self.strings(node, "include")):
            folder = self.resolve_path(text, f"kernel.include[{i}]", node["include"], i)
            if not folder.is_dir():
                raise self.error(f"{folder} is not a folder", f"kernel.include[{i}]",
                                 node["include"], i)
            folders.append(folder)
        return tuple(folders)

    def strings(self, node: Any, key: str) -> list[str]:
        """kernel.options, include or reinterpret: a list of strings, `{NAME}` filled in."""
        values = node.get(key, [])
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise self.error("must be a list of strings", f"kernel.{key}", node, key)
        return [self.fill_template(v, f"kernel.{key}[{i}]", values, i)
                for i, v in enumerate(values)]

    def fill_template(self, text: Any, field: str, parent: Any, key: Any) -> Any:
        """`{NAME}` in the kernel's path, options or signature is the var's value, so
        a sweep can pick among binaries, compile variants or change a parameter's
        type with them. Only vars (and --set) may appear: the kernel is read
        before the signature that would give scalar args."""
        if not isinstance(text, str) or "{" not in text:
            return text
        names = self.names = Names(self, sig.Signature(()))    # replaced once the signature is known

        def value(match: re.Match) -> str:
            var = match.group(1)
            if var not in names.raw:
                raise self.error(f"{{{var}}} names no var (vars: "
                                 f"{', '.join(names.raw) or 'none'})", field, parent, key)
            number = names.get(var)
            if isinstance(number, str):         # a string axis (a kernel or type name)
                return number
            if isinstance(number, int) or float(number).is_integer():
                return str(int(number))
            return repr(float(number))
        return _TEMPLATE_NAME.sub(value, text)

    def signature(self) -> sig.Signature:
        t = self.tree
        if "signature" in t:
            try:
                return sig.parse_signature(self.signature_filled(t["signature"]))
            except SpecError as exc:
                node = t["signature"]
                key = exc.field.split(".")[1].split("[")[0] if exc.field and "." in exc.field else None
                line = node.line_of(key) if isinstance(node, LocatedDict) and key else t.line_of("signature")
                raise exc.located(line=line) from None
        if self.triton is not None:
            return self.triton.signature
        raise self.error("missing required section 'signature'", "signature", t)

    def signature_filled(self, node: Any) -> Any:
        """The signature with `{VAR}` in its types replaced (`x: "*{T}"`), before it
        is parsed: a sweep's -D option may change a parameter's type."""
        if not isinstance(node, dict) or not any("{" in str(v) for v in node.values()):
            return node

        def fill(value: Any, field: str, parent: Any, key: Any) -> Any:
            if isinstance(value, list):
                return [fill(v, f"{field}[{i}]", parent, key) for i, v in enumerate(value)]
            return self.fill_template(value, field, parent, key)
        return {name: fill(value, f"signature.{name}", node, name) for name, value in node.items()}

    def constants(self, signature: sig.Signature) -> dict[str, Any]:
        node = self.tree.get("constants", {})
        if not isinstance(node, dict):
            raise self.error("must be a mapping", "constants", self.tree, "constants")
        return dict(node)

    def dims(self, node: Any, field: str, required: bool, minimum: int) -> tuple[int, int, int]:
        t = self.tree
        if node is None:
            if required:
                raise self.error(f"missing required section {excerpt(field)}", field, t)
            return None
        items = node if isinstance(node, list) else [node]
        if not 1 <= len(items) <= 3:
            raise self.error(f"needs 1 to 3 dimensions, got {len(items)}", field, t, field)
        holder = node if isinstance(node, list) else t
        values = [self.integer(v, f"{field}[{i}]", holder, i if holder is node else field)
                  for i, v in enumerate(items)]
        for i, v in enumerate(values):
            if v < minimum:
                raise self.error(f"must be >= {minimum}, got {v}", f"{field}[{i}]", holder,
                                 i if holder is node else field)
        return tuple(values + [1] * (3 - len(values)))

    def launch(self) -> Launch:
        t = self.tree
        node = t.get("launch", LocatedDict())
        keys = sections.keys("launch")
        # a Triton entry's own metadata keys (num_stages, maxnreg, ...): repeated, not changed
        entry_keys = tuple(k for k in self.triton.metadata if k not in keys) if self.triton else ()
        node = self.mapping(node, "launch", t, "launch", keys + entry_keys)
        for key in entry_keys:
            if key in node:
                self.check_entry_key(node, key)
        got: dict[str, Any] = {}
        bounds = {"num_warps": (1, MAX_THREADS_PER_BLOCK // 32, " (1024 threads per block)"),
                  "num_ctas": (1, MAX_CLUSTER_SIZE, " (the largest cluster)"),
                  "shared": (0, MAX_SHARED_BYTES, " (a 32-bit launch parameter)"),
                  "scratch_params": (0, 2, " (0, 1 or 2 trailing pointers)")}
        for key, (low, high, why) in bounds.items():
            if key in node:
                got[key] = self.integer(node[key], f"launch.{key}", node, key, low, high, why)
        for key in ("cooperative", "pdl"):
            if key in node:
                got[key] = self.boolean(node[key], f"launch.{key}", node, key)
        for key in ("global_scratch", "profile_scratch"):
            if key in node:
                got[key] = self.scratch(node[key], f"launch.{key}", node, key)
        if "cluster" in node:
            cluster = self.dims(node["cluster"], "launch.cluster", required=True, minimum=1)
            if "num_ctas" in node and got["num_ctas"] != 1:
                raise self.error("give either num_ctas or cluster, not both", "launch.cluster",
                                 node, "cluster")
            got["cluster"] = cluster
        if self.triton is not None:
            got = self.merge_triton_launch(got, node)
        if "scratch_params" not in got:
            got["scratch_params"] = 2 if ("global_scratch" in got or "profile_scratch" in got) else 0
        launch = Launch(**got)
        cluster_size = launch.num_ctas if launch.cluster is None else _prod(launch.cluster)
        if cluster_size > MAX_CLUSTER_SIZE:
            field = "launch.cluster" if launch.cluster else "launch.num_ctas"
            raise self.error(f"a cluster of {cluster_size} CTAs exceeds the hardware maximum "
                             f"of {MAX_CLUSTER_SIZE}", field, node, field.split(".")[1])
        return launch

    def merge_triton_launch(self, got: dict, node: LocatedDict) -> dict:
        """Triton's JSON is the truth about the compiled kernel: the spec may repeat
        a value but not contradict it."""
        e = self.triton
        from_entry = {
            "num_warps": e.num_warps, "num_ctas": e.num_ctas, "shared": e.shared,
            "cooperative": e.cooperative, "pdl": e.pdl,
            "global_scratch": Scratch(e.global_scratch_size, e.global_scratch_align),
            "profile_scratch": Scratch(e.profile_scratch_size, e.profile_scratch_align),
            "scratch_params": e.num_scratch_params,
        }
        for key, value in from_entry.items():
            if key in got and got[key] != value:
                raise self.error(f"{excerpt(got[key])} contradicts the Triton entry ({excerpt(value)})",
                                 f"launch.{key}", node, key)
        return {**got, **from_entry}

    def check_entry_key(self, node: LocatedDict, key: str) -> None:
        """`launch:` may repeat any key of the entry's JSON, as a record of what it was
        compiled with; a different value would not change the binary, so it is refused."""
        want, given = self.triton.metadata[key], node[key]
        if isinstance(want, (int, float)) and not isinstance(want, bool):
            given = self.evaluate(given, f"launch.{key}", node, key)
        if given != want or isinstance(given, bool) != isinstance(want, bool):
            shown = "null" if want is None else repr(want)
            raise self.error(f"{given!r} contradicts the Triton entry ({shown}): the binary "
                             f"was compiled with {key} = {shown}; recompile it to change that",
                             f"launch.{key}", node, key)

    def scratch(self, node: Any, field: str, parent: Any, key: str) -> Scratch:
        node = self.mapping(node, field, parent, key, sections.keys("scratch"),
                            required=sections.required("scratch"))
        size = self.integer(node["size"], f"{field}.size", node, "size", 0, MAX_BUFFER_BYTES)
        align = self.integer(node.get("align", 1), f"{field}.align", node, "align", 1, MAX_ALIGN)
        if align & (align - 1):
            raise self.error(f"must be a power of two, got {align}", f"{field}.align", node, "align")
        return Scratch(size, align)

    def block(self, launch: Launch) -> tuple[int, int, int]:
        t = self.tree
        block = self.dims(t.get("block"), "block", required=False, minimum=1)
        if block is None:
            block = (32 * launch.num_warps, 1, 1)
        elif "num_warps" in t.get("launch", {}) and _prod(block) != 32 * launch.num_warps:
            raise self.error(f"block {list(block)} has {_prod(block)} threads but launch.num_warps "
                             f"= {launch.num_warps} means {32 * launch.num_warps}", "block", t, "block")
        for i, (b, limit) in enumerate(zip(block, BLOCK_LIMITS)):
            if b > limit:
                raise self.error(f"{b} exceeds the block limit {limit} in {'xyz'[i]}",
                                 f"block[{i}]", t, "block")
        if _prod(block) > MAX_THREADS_PER_BLOCK:
            raise self.error(f"{_prod(block)} threads per block exceed {MAX_THREADS_PER_BLOCK}",
                             "block", t, "block")
        return block

    def check_grid(self, grid: tuple[int, int, int], launch: Launch) -> None:
        t = self.tree
        launched = (grid[0] * launch.num_ctas, grid[1], grid[2])
        for i, (g, limit) in enumerate(zip(launched, GRID_LIMITS)):
            if g > limit:
                note = f" ({grid[0]} programs x num_ctas {launch.num_ctas})" if i == 0 and launch.num_ctas > 1 else ""
                raise self.error(f"{g} CTAs{note} exceed the grid limit {limit} in {'xyz'[i]}",
                                 f"grid[{i}]", t, "grid")
        if launch.cluster is not None:
            for i, (g, c) in enumerate(zip(grid, launch.cluster)):
                if g % c:
                    raise self.error(f"{g} is not a multiple of the cluster size {c} in "
                                     f"{'xyz'[i]}", f"grid[{i}]", t, "grid")

    def check_memory(self, buffers: dict[str, BufferArg], grid, launch: Launch) -> None:
        """The whole launch's memory against a sane static bound (limits.py), so
        that no absurd spec reaches an allocation; the machine's real memory is
        checked when the data is made."""
        ctas = grid[0] * launch.num_ctas * grid[1] * grid[2]
        total = sum(b.nbytes for b in buffers.values())
        for key in ("global_scratch", "profile_scratch"):
            scratch = getattr(launch, key).size * ctas
            total += scratch
            if scratch > MAX_DEVICE_BYTES:
                raise self.error(f"{scratch} bytes of scratch ({ctas} CTAs x "
                                 f"{getattr(launch, key).size}) exceed {MAX_DEVICE_BYTES} bytes",
                                 f"launch.{key}.size", self.tree.get("launch"), key)
        if total > MAX_DEVICE_BYTES:
            raise self.error(f"the buffers and scratch take {total} bytes, more than "
                             f"{MAX_DEVICE_BYTES} (1 TiB)", "args", self.tree, "args")

    def checks(self, buffers: dict[str, BufferArg],
               module_globals: dict[str, BufferArg]) -> tuple[Check, ...]:
        from .check_keys import python_reference, region, split_key
        t = self.tree
        node = t.get("check")
        if node is None:
            return ()
        node = self.mapping(node, "check", t, "check", list(node) if isinstance(node, dict) else ())
        outputs = {**buffers, **module_globals}
        out = []
        for check_key, entry in node.items():
            field = f"check.{check_key}"
            try:                        # `p[3]` may be a tuple element's buffer, not a region
                name, subscript = ((check_key, None) if check_key in outputs
                                   else split_key(check_key))
            except SpecError as exc:
                raise self.error(exc.message, field, node, check_key) from None
            if name not in outputs:
                raise self.error(f"not a buffer argument or global (buffers and globals: "
                                 f"{shorten(', '.join(outputs) or 'none', 200)})",
                                 field, node, check_key)
            where = None
            if subscript is not None:
                from .expr import region_shape
                try:
                    where = region(subscript, LazyEnv(self.names))
                    region_shape(where, outputs[name].shape)
                except (SpecError, ValueError) as exc:
                    why = exc.message if isinstance(exc, SpecError) else str(exc)
                    raise self.error(f"{excerpt(check_key)}: {why}", field, node, check_key) from None
            entry = self.mapping(entry, field, node, check_key, sections.keys("check_entry"))
            given = [k for k in sections.EXACTLY_ONE["check_entry"] if k in entry]
            if len(given) != 1:
                raise self.error("needs exactly one of expect, file or reference", field, node,
                                 check_key)
            expect = file = reference = None
            if "expect" in entry:
                expect = self.expr(entry["expect"], f"{field}.expect", entry, "expect", arrays=True)
                known = set(outputs) | set(self.names.known())
                unknown = sorted(n for n in expect.names - known
                                 if n.split("[")[0] not in outputs)   # x[2]: an index of x
                if unknown:
                    raise self.error(f"unknown name {excerpt(unknown[0])} in {excerpt(expect.source)} "
                                     f"(buffers, globals, vars, scalar args and device values "
                                     f"may be used)", f"{field}.expect", entry, "expect")
                for used in sorted(expect.names & set(DEVICE_NAMES) - set(outputs)):
                    self.evaluate(used, f"{field}.expect", entry, "expect")   # recorded now
            elif "reference" in entry:
                try:
                    reference = python_reference(entry["reference"], self.base)
                except SpecError as exc:
                    raise self.error(exc.message, f"{field}.reference", entry,
                                     "reference") from None
            else:
                file = self.resolve_path(entry["file"], f"{field}.file", entry, "file")
            tol = {}
            for key in ("rtol", "atol"):
                if key in entry:        # a number, or an expression (`4 * EPS`)
                    value = self.evaluate(entry[key], f"{field}.{key}", entry, key)
                    if not value >= 0:                  # NaN too
                        raise self.error(f"must be a non-negative number, got {excerpt(value)}",
                                         f"{field}.{key}", entry, key)
                    tol[key] = float(value)
            exact = self.boolean(entry.get("exact", False), f"{field}.exact", entry, "exact")
            if exact and tol:
                raise self.error("exact: true takes no rtol/atol", f"{field}.exact", entry, "exact")
            nan_ok = self.boolean(entry.get("nan_ok", False), f"{field}.nan_ok", entry, "nan_ok")
            line = node.line_of(check_key) if isinstance(node, LocatedDict) else None
            out.append(Check(name, expect, file, tol.get("rtol"), tol.get("atol"), exact, nan_ok,
                             reference, where, check_key if subscript is not None else None, line))
        return tuple(out)

    def bench(self) -> Bench:
        t = self.tree
        node = self.mapping(t.get("bench", LocatedDict()), "bench", t, "bench",
                            sections.keys("bench"))
        got: dict[str, Any] = {}
        for key, attr in (("warmup", "warmup_ms"), ("rep", "rep_ms")):
            if key in node:
                value = self.evaluate(node[key], f"bench.{key}", node, key)
                if problem := budget_problem(value):
                    raise self.error(problem, f"bench.{key}", node, key)
                got[attr] = float(value)
        if "l2" in node:
            modes = sections.choices("bench", "l2")
            if node["l2"] not in modes:
                raise self.error(f"must be {' or '.join(modes)}, got {excerpt(node['l2'])}",
                                 "bench.l2", node, "l2")
            got["l2"] = node["l2"]
        for key in ("bytes", "flops"):
            if key in node:
                value = self.evaluate(node[key], f"bench.{key}", node, key)
                if not 0 <= value < float("inf"):
                    raise self.error(f"must be a finite number >= 0, got {value}",
                                     f"bench.{key}", node, key)
                got[key] = value
        return Bench(**got)


def _prod(values) -> int:
    n = 1
    for v in values:
        n *= v
    return n


def _lines(node: Any) -> dict[str, int]:
    """The YAML line of each top-level arg, for errors found after loading."""
    if not isinstance(node, LocatedDict):
        return {}
    return {str(k): line for k in node if (line := node.line_of(k)) is not None}


def _tuple_or_none(meta):
    return None if meta is None else tuple(meta)

