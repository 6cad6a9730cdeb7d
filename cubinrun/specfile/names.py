"""A spec's vars and its top-level scalar args, resolved lazily and in
dependency order (each may name the other, `N: 4 * BLOCK`, `n: N`), with
`--set` and a sweep point's values in place of what the spec wrote.

The loader reads every section through `Names`; a sweep's constraints read
the vars alone through `var_values` (no signature, args or device). A chain of
vars resolves without recursion, a cycle is an error naming it, and a float
used where an integer is needed is blamed on the var that holds it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from .. import signature as sig
from ..dtypes import ElementType
from ..errors import SpecError, excerpt, shorten
from ..limits import MAX_NAMES
from .args import scalar_entries
from .context import SpecContext, colon_hint
from .device_values import DEVICE_NAMES, unavailable
from .expr import Expr, parse_expr
from .scalars import check_scalar_value
from .yamlload import LocatedDict


def var_values(path: str | Path, tree: Any, overrides: Mapping[str, str]) -> Mapping[str, Any]:
    """The spec's vars with `overrides` (a sweep point, --set), each resolved on
    first use, for expressions over vars alone (sweep constraints): no
    signature, args or device. SpecError (with the var's line) as load_spec."""
    context = SpecContext(Path(path), tree, overrides, unavailable())
    context.names = Names(context, sig.Signature(()))
    return LazyEnv(context.names)


class Names:
    """vars and top-level scalar args, resolved lazily: each may name the other."""

    def __init__(self, builder: SpecContext, signature: sig.Signature):
        self.b = builder
        t = builder.tree
        node = t.get("vars", LocatedDict())
        if not isinstance(node, dict):
            raise builder.error("must be a mapping of name to number or expression"
                                + colon_hint(node), "vars", t, "vars")
        self.var_node = node
        self.raw: dict[str, tuple[Any, str, Any, Any]] = {}   # name -> (value, field, parent, key)
        for name, value in node.items():
            if not isinstance(name, str) or not name.isidentifier():
                raise builder.error(f"var name {excerpt(name)} is not an identifier", "vars", node, name)
            self.raw[name] = (value, f"vars.{name}", node, name)
        for name, value in builder.overrides.items():
            if name not in self.raw:
                known = shorten(", ".join(self.raw) or "none", 200)
                raise SpecError(f"--set {name}: no such var (vars: {known})")
            origin = f"the swept {name}" if name in getattr(builder.overrides, "swept", ()) \
                else f"--set {name}"
            self.raw[name] = (value, origin, None, None)
        self.var_names = list(self.raw)
        self.scalar_types: dict[str, ElementType] = {}
        args = t.get("args", LocatedDict())
        for name, dtype, given, value, field, parent, key in scalar_entries(signature, args):
            self.scalar_types[name] = dtype
            if name in self.raw:
                self._check_shared_name(name, args)
            elif given:
                self.raw[name] = (value, field, parent, key)
        if len(self.raw) > MAX_NAMES:
            raise builder.error(f"more than {MAX_NAMES} vars and scalar args", "vars", t, "vars")
        self.values: dict[str, int | float] = {}
        self.device_values: dict[str, int] = {}     # the device values the spec used

    def _check_shared_name(self, name: str, args: Any) -> None:
        """A scalar arg named like a var (`vars: {M: 512}`, `args: {M: M}`, as Triton
        kernels with params M, N, K invite) takes the var's value, so `--set M=...`
        and sweep axes reach it; any other value would make `M` mean two things."""
        if isinstance(args, dict) and name in args and args[name] != name:
            raise self.b.error(f"a scalar argument named like the var {excerpt(name)} takes the "
                               f"var's value: write `{name}: {name}` or rename one of them",
                               f"args.{name}", args, name)

    def known(self) -> list[str]:
        return list(self.raw) + [n for n in DEVICE_NAMES if n not in self.raw]

    def get(self, name: str) -> int | float:
        if name in self.values:
            return self.values[name]
        if name not in self.raw:
            if name in DEVICE_NAMES:            # a var of that name would have won
                value = self.device_values[name] = self.b.device.get(name)
                return value
            raise KeyError(name)
        # Resolve what `name` depends on first, in order, without recursion: a
        # chain of 150 vars must not exhaust Python's stack.
        for each in self._order(name):
            self.values[each] = self._resolve(each)
        return self.values[name]

    def _depends_on(self, name: str) -> list[str]:
        value, field, parent, key = self.raw[name]
        if isinstance(value, (bool, float)):
            return []
        names = self.b.expr(value, field, parent, key).names
        return sorted(n for n in names if n in self.raw and n not in self.values)

    def _order(self, name: str) -> list[str]:
        """`name` and the unresolved names it needs, each after its own needs."""
        order: list[str] = []
        done: set[str] = set()
        path = [name]
        stack = [iter(self._depends_on(name))]
        while stack:
            for dep in stack[-1]:
                if dep in done:
                    continue
                if dep in path:
                    cycle = " -> ".join(path[path.index(dep):] + [dep])
                    _, field, parent, key = self.raw[dep]
                    raise self.b.error(f"circular definition: {cycle}", field, parent, key)
                path.append(dep)
                stack.append(iter(self._depends_on(dep)))
                break
            else:
                stack.pop()
                done.add(path[-1])
                order.append(path.pop())
        return order

    def _resolve(self, name: str) -> int | float:
        value, field, parent, key = self.raw[name]
        if name in self.scalar_types:
            return self._scalar(name, value, field, parent, key)
        if isinstance(value, bool) and field.startswith("vars."):
            raise self.b.error("must be a number or an expression, got a boolean",
                               field, parent, key)
        try:
            return self.b.evaluate(value, field, parent, key)
        except SpecError as exc:
            if isinstance(value, str) and value.isidentifier() and value not in self.known() \
                    and exc.message.startswith("unknown name"):
                # a string for a string axis's var (`--set K=naive`) is a quoted literal
                exc.message += f"; a string is quoted: {excerpt(chr(39) + value + chr(39))}"
            raise

    def _scalar(self, name, value, field, parent, key):
        dtype = self.scalar_types[name]
        if isinstance(value, bool) and dtype.kind == "bool":
            return int(value)
        if isinstance(value, float):                # YAML's .inf / .nan / -0.0 stay exact
            result = value
        else:
            result = self.b.evaluate(value, field, parent, key)
        try:
            return check_scalar_value(dtype, result)
        except SpecError as exc:
            if isinstance(result, float) and dtype.kind != "float" and \
                    (blame := self.blame_float(value, field)):
                raise blame from None
            raise self.b.error(exc.message, field, parent, key) from None

    def blame_float(self, value: Any, used_in: str) -> SpecError | None:
        """The error for a float where `used_in` needs an integer, at the var the
        float came from: `vars: {N: 1e3}` (a float in YAML 1.2) used as a shape is
        wrong where it was written, not where it was used. Follows vars that
        name float vars to the first one; None when no var in `value` holds a
        float (the expression itself made it, e.g. `N / 2`)."""
        culprit, name, seen = None, self._float_var_in(value), set()
        while name is not None and name not in seen:
            seen.add(name)
            culprit, name = name, self._float_var_in(self.raw[name][0])
        if culprit is None:
            return None
        raw, field, parent, key = self.raw[culprit]
        number = self.values[culprit]
        literal = isinstance(raw, float) or not self.b.expr(raw, field, parent, key).names
        fix = (f": write {int(number)}" if literal and number.is_integer()
               else ": // divides to an integer" if "/" in str(raw) else "")
        written = "is" if isinstance(raw, float) else f"{excerpt(raw)} is"
        return self.b.error(f"{written} {number!r}, a float, but {used_in} needs an "
                            f"integer{fix}", field, parent, key)

    def _float_var_in(self, value: Any) -> str | None:
        if isinstance(value, (bool, float)):
            return None
        try:
            names = parse_expr(value).names
        except SpecError:
            return None
        return next((n for n in sorted(names)
                     if n in self.raw and isinstance(self.values.get(n), float)), None)

    def value_of(self, expr: Expr) -> int | float:
        env = LazyEnv(self)
        return expr.evaluate(env)

    def vars(self) -> dict[str, int | float]:
        return {name: self.get(name) for name in self.var_names}

    def scalars(self) -> dict[str, int | float]:
        return {name: self.get(name) for name in self.scalar_types if name in self.raw}


class LazyEnv(Mapping):
    """The expression environment: names resolve on first use."""

    def __init__(self, names: Names):
        self.names = names

    def __getitem__(self, key):
        return self.names.get(key)

    def __iter__(self):
        return iter(self.names.known())

    def __len__(self):
        return len(self.names.known())

    def __contains__(self, key):
        return key in self.names.raw or key in DEVICE_NAMES
