"""What changed between the Triton releases whose cache entries cubinrun reads.

Every fact here was read from an entry compiled by that release for sm_90
(tests/fixtures/triton/<version>/) and from its NVIDIA launcher:

| release | trailing scratch pointers | decomposed descriptor flags | TTIR names |
| 3.4     | 1 (global)                | none                        | %arg0, %arg1 |
| 3.5     | 2 (global, profile)       | padding                     | Python names, tuples share one |
| 3.6     | 2                         | padding                     | as 3.5 (JSON drops cluster_dims) |
| 3.7     | 2                         | padding, round_f32_to_tf32  | as 3.5 |
| 3.8     | 2                         | padding, round_f32_to_tf32  | `t.0`, `desc.shape.0`; tensordesc<64x64xf16> |
| 3.9     | 2                         | padding, round_f32_to_tf32  | as 3.8 (JSON adds clc, sched4reg, ...) |

An entry from a later release is read as the newest known one, with a note
in the plan; when it does not read, the error names its release.
"""
from __future__ import annotations

import re

KNOWN = ((3, 4), (3, 5), (3, 6), (3, 7), (3, 8), (3, 9))
KNOWN_TEXT = "3.4-3.9"

# JSON keys each release added (for the note on an entry from a newer one:
# what it has that the newest known release does not write).
KEYS_BY_RELEASE = {
    (3, 4): frozenset({
        "hash", "target", "num_warps", "num_ctas", "num_stages", "maxnreg", "cluster_dims",
        "ptx_version", "ptx_options", "ir_override", "enable_fp_fusion",
        "launch_cooperative_grid", "launch_pdl", "supported_fp8_dtypes",
        "deprecated_fp8_dot_operand_dtypes", "default_dot_input_precision",
        "allowed_dot_input_precisions", "max_num_imprecise_acc_default", "extern_libs",
        "debug", "backend_name", "sanitize_overflow", "arch", "triton_version",
        "tensordesc_meta", "shared", "tmem_size", "global_scratch_size",
        "global_scratch_align", "name"}),
    (3, 5): frozenset({"instrumentation_mode", "profile_scratch_size", "profile_scratch_align",
                       "warp_size"}),
    (3, 6): frozenset({"enable_reflect_ftz"}),
    (3, 9): frozenset({"clc", "fpsan_homomorphic_casts", "min_shared_mem", "sched4reg"}),
}
KNOWN_KEYS = frozenset().union(*KEYS_BY_RELEASE.values())

_VERSION = re.compile(r"(\d+)\.(\d+)")


def parse_version(text: object) -> tuple[int, int] | None:
    """(major, minor) of a `triton_version` such as "3.6.0" or "3.10.0+git1234"."""
    m = _VERSION.match(text) if isinstance(text, str) else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def effective(version: tuple[int, int] | None) -> tuple[int, int]:
    """The known release whose format an entry is read in: an entry that does
    not say, or is newer than all known, is read as the newest."""
    if version is None or version > KNOWN[-1]:
        return KNOWN[-1]
    return max(KNOWN[0], version)


def desc_flags(version: tuple[int, int] | None) -> int:
    """i1 flags after a decomposed (non-TMA) tensor descriptor's strides: 3.5
    added `padding == "nan"`, 3.7 `round_f32_to_tf32`."""
    v = effective(version)
    return 0 if v < (3, 5) else 1 if v < (3, 7) else 2


def is_newer(version: tuple[int, int] | None) -> bool:
    return version is not None and version > KNOWN[-1]


def newer_note(text: str, meta_keys) -> str:
    """What the plan says about an entry from a release cubinrun does not know."""
    unknown = sorted(k for k in meta_keys if k not in KNOWN_KEYS and not k.isupper())
    keys = (f"; its JSON has keys {KNOWN_TEXT.split('-')[-1]} does not write: "
            f"{', '.join(unknown[:12])}" if unknown else "")
    return (f"Triton {text} is newer than the releases cubinrun knows ({KNOWN_TEXT}): read "
            f"as {KNOWN_TEXT.split('-')[-1]}{keys}; the parameters were checked against "
            "the cubin")


def newer_error(text: str) -> str:
    """Appended to an error reading an entry from an unknown newer release."""
    return (f" (this entry is from Triton {text}, newer than the releases cubinrun knows, "
            f"{KNOWN_TEXT}: its format may have changed)")
