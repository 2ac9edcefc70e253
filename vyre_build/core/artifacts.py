"""Artifact names: the targets, their file suffixes, and the variants file name.

One kernel (or variant) with id `<stem>` produces `<stem>.wgsl`, `<stem>.spv`,
`<stem>.kdesc` (the targets asked for) and always `<stem>.meta.json`. The compiler, the
build step, the CLI, the bundle and the runtime all read these names from here.
"""

from __future__ import annotations

__all__ = [
    "TARGETS",
    "DEFAULT_TARGETS",
    "TARGET_SUFFIXES",
    "META_SUFFIX",
    "BACKEND_SUFFIX",
    "VARIANTS_FILES",
    "TargetError",
    "normalize_targets",
    "output_suffixes",
    "output_names",
    "split_output_name",
]

TARGET_SUFFIXES = {"wgsl": ".wgsl", "spirv": ".spv", "kdesc": ".kdesc"}
TARGETS = tuple(TARGET_SUFFIXES)
DEFAULT_TARGETS = TARGETS
META_SUFFIX = ".meta.json"
# The artifact each runtime backend dispatches.
BACKEND_SUFFIX = {"wgpu": ".wgsl", "vulkan": ".spv", "cpu": ".kdesc"}
# Looked up beside a kernel file, in this order (the first that exists is read).
VARIANTS_FILES = ("variants.yaml", "variants.yml")


class TargetError(ValueError):
    """An unknown target name (each caller words it in its own error type)."""


def normalize_targets(targets) -> tuple[str, ...]:
    """Targets (an iterable, or one string of names split on commas/spaces) as a sorted,
    de-duplicated tuple; TargetError naming an unknown one."""
    if isinstance(targets, str):
        targets = targets.replace(",", " ").split()
    out = tuple(sorted(set(targets)))
    for t in out:
        if t not in TARGET_SUFFIXES:
            raise TargetError(f"unknown target {t!r}; choose from {', '.join(TARGETS)}")
    return out


def output_suffixes(targets) -> list[str]:
    """File suffixes one kernel produces for `targets` (metadata always), in fixed order."""
    chosen = set(normalize_targets(targets))
    return [TARGET_SUFFIXES[t] for t in TARGETS if t in chosen] + [META_SUFFIX]


def output_names(stems, targets, skipped=None) -> list[str]:
    """`<stem><suffix>` for every stem and suffix (what one kernel file produces), less
    the targets `skipped` ({stem: {target: why}}) says a stem gets no artifact of."""
    suffixes = output_suffixes(targets)
    skipped = skipped or {}
    out = []
    for stem in stems:
        dropped = {TARGET_SUFFIXES[t] for t in skipped.get(stem, ())}
        out.extend(stem + s for s in suffixes if s not in dropped)
    return out


def split_output_name(name: str) -> tuple[str, str] | None:
    """(stem, suffix) of an output file name, or None if it is not one."""
    for suffix in (META_SUFFIX, *TARGET_SUFFIXES.values()):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)], suffix
    return None
