"""Kernel names as written in C++, matched against a binary's symbols.

`kernel.name` may be a mangled symbol (`_Z13matmul_kernelPfS_S_`), a plain
name (`matmul_kernel`), a template instance (`reduce6<float, 256, true>`) or
a full signature (`saxpy(float, float const*, float*, int)`). A binary's
kernels are matched by their demangled names, which the demangler spells its
own way: c++filt writes `reduce6<float, 256u, true>`, cpp-demangle
`reduce6<float, (unsigned int)256, true>`, both `float const*` where a user
writes `const float*`. Both sides are therefore parsed into (qualified name,
template arguments, parameters) and spelled one canonical way before they
are compared: no spaces but between words, literal suffixes and casts off
integers, `const` after the type it qualifies, a parameter's own top-level
`const`, `__restrict__` and name dropped (C++ ignores them in a function's
type).

For NVRTC a template instance or a full signature is a name expression
(`name_expression`): NVRTC instantiates the template, resolves the overload
and says which symbol it became. Plain and mangled names need none: NVRTC
compiles every kernel that is not a template, and they are matched here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from ..errors import SpecError, excerpt, shorten

if TYPE_CHECKING:
    from .cubin import CubinInfo, KernelInfo

_TOKEN = re.compile(r"\s*(?:([A-Za-z_]\w*)|(\d[\w.]*)|(::)|(\S))")
_TYPE_WORDS = {"void", "bool", "char", "short", "int", "long", "float", "double", "unsigned",
               "signed", "const", "volatile", "__half", "half"}
_DROPPED = {"__restrict__", "__restrict", "restrict", "struct", "class", "enum", "typename"}
_SHOWN_CANDIDATES = 12


@dataclass(frozen=True)
class CxxName:
    """A C++ function name in canonical spelling; None where the name leaves it out."""

    base: str                       # qualified name: "ns::reduce6"
    template: str | None            # "float,256,true"
    params: str | None              # "float const*,float*,unsigned int"

    def matches(self, other: "CxxName") -> bool:
        """`other` (a binary's kernel) is what `self` (a user's name) names."""
        if not (other.base == self.base or other.base.endswith("::" + self.base)):
            return False
        if self.template is not None and other.template != self.template:
            return False
        return self.params is None or other.params == self.params


def is_mangled(name: str) -> bool:
    return name.startswith("_Z")


def parse_name(text: str) -> CxxName | None:
    """The canonical parts of a C++ function name (a return type before it is
    dropped); None when `text` is not one."""
    tokens = _tokens(text)
    if tokens is None or not tokens:
        return None
    params = None
    if tokens[-1] == ")":
        start = _opening(tokens, len(tokens) - 1, "(", ")")
        if start is None:
            return None
        params = _canonical_list(tokens[start + 1:-1], is_params=True)
        tokens = tokens[:start]
    template = None
    if tokens and tokens[-1] == ">":
        start = _opening(tokens, len(tokens) - 1, "<", ">")
        if start is None:
            return None
        template = _canonical_list(tokens[start + 1:-1], is_params=False)
        tokens = tokens[:start]
    base: list[str] = []
    while tokens and _is_word(tokens[-1]) and not tokens[-1][0].isdigit():
        base.insert(0, tokens.pop())
        if len(tokens) >= 2 and tokens[-1] == "::":
            base.insert(0, tokens.pop())
        else:
            break
    # What is left is a return type (`void`): words, no brackets.
    if not base or base[0] == "::" or any(t in "<>()[]," for t in tokens):
        return None
    return CxxName("".join(base), template, params)


def name_expression(name: str) -> str | None:
    """What NVRTC is given for `name`: a template instance as it is, a full
    signature as a cast that picks the overload (`(void(*)(float, int))f`);
    None for a plain or mangled name (no expression needed)."""
    if is_mangled(name) or parse_name(name) is None:
        return None
    tokens = _tokens(name)
    if tokens[-1] == ")":
        start = _opening(tokens, len(tokens) - 1, "(", ")")
        return f"(void(*)({_joined(tokens[start + 1:-1])})){_strip_return_type(tokens[:start])}"
    if tokens[-1] == ">":
        return _strip_return_type(tokens)
    return None


def kernel_of(info: "CubinInfo", name: str | None, where: str | None = None) -> "KernelInfo":
    """The kernel of the cubin that `name` names (mangled, demangled, or C++ as
    written); None picks the only one. `where` names the binary in errors."""
    return find_kernel(info.kernels, name, where or info.path or "the cubin")


def find_kernel(kernels: Sequence["KernelInfo"], name: str | None, where: str) -> "KernelInfo":
    """The kernel `name` names among `kernels`; None picks the only one. A name
    that matches none or several is a SpecError listing the candidates,
    demangled, in `where` (the source file, never a cache path)."""
    if name is None:
        if len(kernels) == 1:
            return kernels[0]
        raise SpecError(f"{where} holds {len(kernels)} kernels ({listed_names(kernels)}); say "
                        "which one with `name`" + (_template_hint() if not kernels else ""))
    for kernel in kernels:
        if name in (kernel.name, kernel.demangled):
            return kernel
    wanted = None if is_mangled(name) else parse_name(name)
    found = [k for k in kernels if wanted is not None and wanted.matches(kernel_name(k))]
    if len(found) == 1:
        return found[0]
    if found:
        raise SpecError(f"{excerpt(name)} is ambiguous in {where}: it names {listed_names(found)}; "
                        "give the template arguments or the full signature")
    related = [k for k in kernels if wanted is not None
               and CxxName(wanted.base, None, None).matches(kernel_name(k))]
    hint = ""
    if not kernels or (wanted is not None and not related and wanted.template is not None):
        hint = _template_hint()
    raise SpecError(f"{where} has no kernel {excerpt(name)}; it has "
                    f"{listed_names(related or kernels)}{hint}")


def spelled_name(kernel: "KernelInfo", kernels: Sequence["KernelInfo"]) -> str:
    """The shortest name as written in C++ that picks `kernel` among `kernels`:
    the plain name, else with its template arguments, else the full signature
    (`init` writes it); the symbol for an extern "C" kernel or one that does
    not parse."""
    parsed = kernel_name(kernel)
    if kernel.demangled is None or parsed.base == kernel.name:
        return kernel.name
    template = f"<{parsed.template.replace(',', ', ')}>" if parsed.template is not None else ""
    params = f"({parsed.params.replace(',', ', ')})" if parsed.params is not None else ""
    for candidate in dict.fromkeys((parsed.base, parsed.base + template,
                                    parsed.base + template + params)):
        try:
            if find_kernel(kernels, candidate, "") is kernel:
                return candidate
        except SpecError:
            continue
    return kernel.name


def symbol_pattern(name: str) -> str:
    """A regular expression for the symbols `name` may resolve to, for tools that
    filter launches by symbol (ncu) before any binary is read: the name itself,
    or a C++ function of that name, mangled (`_Z13matmul_kernelPfS_S_`,
    `_ZN2ns6kernelEv`). An instance of a template matches by its name alone."""
    if is_mangled(name):
        return f"^{re.escape(name)}$"
    parsed = parse_name(name)
    last = (parsed.base if parsed else name).split("::")[-1]
    return f"^({re.escape(last)}|_Z(N\\w*?)?{len(last)}{re.escape(last)}\\w*)$"


def symbol_substring(name: str) -> str:
    """What every symbol `name` may resolve to contains (compute-sanitizer filters
    kernels by a substring of the symbol): the function's own name."""
    if is_mangled(name):
        return name
    parsed = parse_name(name)
    return (parsed.base if parsed else name).split("::")[-1]


def kernel_name(kernel: "KernelInfo") -> CxxName:
    """The canonical name of a binary's kernel (an extern "C" one is its symbol)."""
    parsed = parse_name(kernel.demangled) if kernel.demangled else None
    return parsed or CxxName(kernel.name, None, None)


def param_types(kernel: "KernelInfo") -> list[str] | None:
    """A C++ kernel's parameter types from its demangled name, canonically spelled
    (`float const*`); None for an extern "C" kernel or a name that does not parse."""
    params = kernel_name(kernel).params if kernel.demangled else None
    return None if params is None else [_joined(part) for part in _split_top(_tokens(params))]


def declared_params(text: str) -> list[tuple[str, str | None]] | None:
    """A declaration's parameter list (`const float* __restrict__ x, int n`) as
    (canonical type, name or None) pairs; None when it does not parse."""
    tokens = _tokens(text)
    if tokens is None:
        return None
    parts = [[t for t in part if t not in _DROPPED] for part in _split_top(tokens)]
    if parts in ([], [["void"]]):
        return []
    pairs = []
    for part in parts:
        if not part or "=" in part:                 # a default argument: not a kernel's
            return None
        typed = _without_param_name(part)
        name = part[-1] if len(typed) < len(part) else None
        pairs.append((_canonical(typed, is_param=True), name))
    return pairs


def declared_templates(source: bytes) -> list[str]:
    """Names of template kernels a CUDA source declares (a hint for errors: a
    template is compiled only when an instance is named)."""
    found = re.findall(rb"template\s*<[^{;]*?>\s*(?:static\s+)?__global__\s+(?:__launch_bounds__"
                       rb"\s*\([^)]*\)\s*)?void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)",
                       source)
    return list(dict.fromkeys(name.decode() for name in found))


def _template_hint() -> str:
    return ("; a template kernel is compiled only when an instance is named: give "
            "`name: \"kernel<ARGS>\"`")


def listed_names(kernels: Sequence["KernelInfo"]) -> str:
    """The kernels' names as people read them, the first dozen."""
    if not kernels:
        return "none"
    shown = [k.cxx_name for k in kernels[:_SHOWN_CANDIDATES]]
    more = len(kernels) - len(shown)
    return shorten(", ".join(shown) + (f" and {more} more" if more > 0 else ""), 600)


# --- tokens and canonical spelling -------------------------------------------


def _tokens(text: str) -> list[str] | None:
    tokens, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            return None
        tokens.append(m.group(m.lastindex))
        pos = m.end()
    return tokens


def _is_word(token: str) -> bool:
    return token[0].isalnum() or token[0] == "_"


def _opening(tokens: list[str], close_at: int, opener: str, closer: str) -> int | None:
    """Index of the `opener` matching the `closer` at `close_at`."""
    depth = 0
    for index in range(close_at, -1, -1):
        if tokens[index] == closer:
            depth += 1
        elif tokens[index] == opener:
            depth -= 1
            if depth == 0:
                return index
    return None


def _strip_return_type(tokens: list[str]) -> str:
    """`void ns::f<int>` -> `ns::f<int>`: the qualified name and its arguments."""
    start = len(tokens)
    if tokens and tokens[-1] == ">":
        start = _opening(tokens, start - 1, "<", ">") or 0
    start -= 1                                  # the name itself
    while start >= 2 and tokens[start - 1] == "::" and _is_word(tokens[start - 2]):
        start -= 2
    if start >= 1 and tokens[start - 1] == "::":
        start -= 1
    return _joined(tokens[max(start, 0):])


def _split_top(tokens: list[str]) -> list[list[str]]:
    parts, current, depth = [], [], 0
    for token in tokens:
        if token in "<([":
            depth += 1
        elif token in ">)]":
            depth -= 1
        if token == "," and depth == 0:
            parts.append(current)
            current = []
        else:
            current.append(token)
    if current or parts:
        parts.append(current)
    return parts


def _canonical_list(tokens: list[str], is_params: bool) -> str:
    parts = [_canonical(part, is_params) for part in _split_top(tokens)]
    if is_params and parts == ["void"]:
        return ""
    return ",".join(parts)


def _canonical(tokens: list[str], is_param: bool) -> str:
    tokens = [t for t in tokens if t not in _DROPPED]
    cast = _cast_value(tokens)
    if cast is not None:
        return cast
    if len(tokens) == 1 and tokens[0][0].isdigit():
        return _integer(tokens[0])
    if len(tokens) == 2 and tokens[0] == "-" and tokens[1][0].isdigit():
        return "-" + _integer(tokens[1])
    if is_param:
        tokens = _without_param_name(tokens)
    tokens = _const_after_type(tokens)
    if is_param:
        tokens = _without_top_level_const(tokens)
    return _joined(_spelled_integers(tokens))


def _cast_value(tokens: list[str]) -> str | None:
    """`(unsigned int)256` -> "256", `(bool)1` -> "true"; None if not a cast."""
    if len(tokens) < 4 or tokens[0] != "(":
        return None
    close = tokens.index(")") if ")" in tokens else -1
    rest = tokens[close + 1:]
    if close < 2 or not rest or not rest[-1][0].isdigit() or rest[:-1] not in ([], ["-"]):
        return None
    value = ("-" if rest[:-1] else "") + _integer(rest[-1])
    if tokens[1:close] == ["bool"] and value in ("0", "1"):
        return "true" if value == "1" else "false"
    return value


def _integer(token: str) -> str:
    digits = token.rstrip("uUlL")
    return digits if digits else token


def _without_param_name(tokens: list[str]) -> list[str]:
    """`const float* x` -> `const float*`: a parameter's name is not its type."""
    if len(tokens) >= 2 and _is_word(tokens[-1]) and tokens[-1] not in _TYPE_WORDS \
            and not tokens[-1][0].isdigit() and tokens[-2] != "::" \
            and (tokens[-2] in "*&>" or _is_word(tokens[-2])):
        return tokens[:-1]
    return tokens


def _const_after_type(tokens: list[str]) -> list[str]:
    """`const float*` -> `float const*`, as demanglers write it."""
    qualifiers = []
    while tokens and tokens[0] in ("const", "volatile"):
        qualifiers.append(tokens[0])
        tokens = tokens[1:]
    if not qualifiers:
        return tokens
    depth, end = 0, len(tokens)
    for index, token in enumerate(tokens):
        if token in "<(":
            depth += 1
        elif token in ">)":
            depth -= 1
        elif depth == 0 and token in ("*", "&"):
            end = index
            break
    base = tokens[:end]
    base_words = [t for t in base if t not in ("const", "volatile")]
    return base_words + sorted(set(qualifiers + [t for t in base if t in ("const", "volatile")])) \
        + tokens[end:]


def _without_top_level_const(tokens: list[str]) -> list[str]:
    """A parameter's own const (`const int n`, `float* const p`) is not part of the
    function's type."""
    last_pointer = max((i for i, t in enumerate(tokens) if t in ("*", "&")), default=-1)
    return [t for i, t in enumerate(tokens)
            if not (t in ("const", "volatile") and i > last_pointer)]


def _spelled_integers(tokens: list[str]) -> list[str]:
    """`unsigned` -> `unsigned int`, `long int` -> `long`, `short int` -> `short`."""
    out: list[str] = []
    for index, token in enumerate(tokens):
        if token == "int" and out and out[-1] in ("long", "short"):
            continue
        out.append(token)
        following = tokens[index + 1] if index + 1 < len(tokens) else ""
        if token in ("unsigned", "signed") and following not in ("char", "short", "int", "long"):
            out.append("int")
    if out[:2] == ["signed", "int"]:
        out = out[1:]
    return out


def _joined(tokens: list[str]) -> str:
    text = ""
    for token in tokens:
        if text and _is_word(text[-1]) and _is_word(token):
            text += " "
        text += token
    return text
