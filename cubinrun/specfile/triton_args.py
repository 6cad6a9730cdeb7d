"""A Triton entry's arguments as Triton's JIT compiled them.

Triton's JIT specializes a kernel on its arguments: an integer argument equal
to 1 (and a None) is folded into the code and vanishes from the parameters,
and integers that are multiples of 16 and pointers aligned to 16 bytes get
`tt.divisibility = 16` in the TTIR, which the compiler exploits (vector
loads, no remainder handling). Triton's launcher would recompile for other
values; cubinrun runs the one binary, so this module says what the entry was
compiled for:

- `folded_args`: `args` entries that name no parameter of the entry. With
  the value Triton folds (1, or null) they are dropped with a note; any other
  value is refused with the reason, since the binary computes the folded one.
- `leaf_divisibility`: tt.divisibility of each expanded parameter, which
  `cubinrun.plan.specialization` checks against the values and the addresses.
- `check_signature_names`: a spec's own signature that declares a folded
  parameter gets the same explanation instead of a bare count mismatch.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import signature as sig
from .context import SpecContext

if TYPE_CHECKING:
    from .triton_entry import TritonEntry

FOLDED_VALUES = (1, None)       # what Triton's JIT folds: an int equal to 1, None


def _why(name: str) -> str:
    return (f"the Triton entry has no parameter {name}: Triton's JIT folded it into the "
            "code when it compiled the kernel (it folds an integer argument equal to 1, "
            "a None and every tl.constexpr)")


def folded_args(b: SpecContext, signature: sig.Signature, node: Any) -> list[str]:
    """The `args` keys that are no parameter of the entry, checked; returns them
    (so the args mapping accepts them) and adds a note for each to `b.notes`."""
    if not isinstance(node, dict):
        return []
    names = set(signature.names())
    extra = [key for key in node if key not in names]
    for key in extra:
        field = f"args.{key}"
        value = node[key]
        if value is not None and not isinstance(value, (bool, dict, list)):
            value = b.evaluate(value, field, node, key)
        if value is None or (isinstance(value, int) and not isinstance(value, bool)
                             and value == 1):
            shown = "null" if value is None else "1"
            b.notes.append(f"args.{key} = {shown} dropped: Triton folded it into the entry "
                           "(an argument equal to 1 or None is compiled in, not passed)")
            continue
        shown = ("a buffer" if isinstance(value, dict) else "a list" if isinstance(value, list)
                 else "a boolean" if isinstance(value, bool) else repr(value))
        raise b.error(f"{shown}: {_why(key)}, so this binary only computes {key} == 1 (or "
                      f"None). Recompile the kernel for this value (do_not_specialize="
                      f"['{key}'] keeps it a parameter), or pass 1; a tl.constexpr's "
                      f"value goes under `constants:` (parameters: "
                      f"{', '.join(signature.names()) or 'none'})", field, node, key)
    return extra


def leaf_divisibility(entry: "TritonEntry", signature: sig.Signature,
                      leaves: list[sig.Leaf]) -> tuple[int | None, ...] | None:
    """tt.divisibility of each of `leaves` (the spec's expanded parameters), or
    None when the TTIR is missing or its parameters are not the spec's."""
    if entry.ttir is None:
        return None
    divisibility = entry.ttir.leaf_divisibility(entry.tensordesc_meta, entry.desc_flags)
    theirs = sig.expand(entry.ttir.signature, entry.tensordesc_meta, entry.desc_flags)
    if [sig.leaf_size(leaf.type) for leaf in theirs] != [sig.leaf_size(leaf.type)
                                                         for leaf in leaves]:
        return None                     # the cubin check says what does not match
    return divisibility


def check_signature_names(b: SpecContext, entry: "TritonEntry",
                          signature: sig.Signature) -> None:
    """A spec signature that declares a parameter the entry folded away: say so
    (Triton 3.5+ names its parameters; 3.4's %arg0 names say nothing)."""
    if entry.ttir is None or not entry.ttir.names:
        return
    if leaf_divisibility(entry, signature, sig.expand(signature, entry.tensordesc_meta,
                                                      entry.desc_flags)) is not None:
        return                          # the same parameters, perhaps named otherwise
    known = set(entry.ttir.names)
    if not known <= set(signature.names()):
        return                          # another kernel's signature: the cubin check says so
    node = b.tree["signature"]
    for name, ty in signature.params:
        if name not in known and not isinstance(ty, sig.ConstexprType):
            raise b.error(f"{_why(name)}; declare it `constexpr` (and pass the value it "
                          f"was compiled for) or recompile the kernel with "
                          f"do_not_specialize=['{name}'] (the entry's parameters: "
                          f"{', '.join(entry.ttir.names)})", f"signature.{name}", node, name)
