"""Artifact names: the targets, their file suffixes, and the variants file name.

One kernel (or variant) with id `<stem>` produces `<stem><suffix>` for each target asked
for (`.wgsl`, `.spv`, `.kdesc`: vyre_build.core.targets registers them) and always
`<stem>.meta.json`. The compiler, the build step, the CLI, the bundle and the runtime all
read these names from here; they follow the target registry as it is when read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from vyre_build.core.targets import TARGETS as _REGISTERED

# The SPIR-V artifact's bool specialization constant `vyre_checked` (default true): the
# module keeps the bounds rule of its storage-buffer loads itself; the Vulkan
# runtime sets it false on a device whose robustBufferAccess2 keeps that rule
# (docs/descriptor-conventions.md, "Checks the device keeps"). SpecId 0-2 are the
# split-dispatch base.
CHECKED_SPEC_ID = 3

__all__ = [
    "CHECKED_SPEC_ID",
    "TARGETS",
    "DEFAULT_TARGETS",
    "TARGET_SUFFIXES",
    "META_SUFFIX",
    "VARIANTS_FILES",
    "TargetError",
    "normalize_targets",
    "output_suffixes",
    "output_names",
    "split_output_name",
]


class _Suffixes(Mapping[str, str]):
    """Target name -> artifact suffix, of the targets registered now."""

    def __getitem__(self, name: str) -> str:
        return _REGISTERED[name].suffix

    def __iter__(self) -> Iterator[str]:
        return iter(_REGISTERED)

    def __len__(self) -> int:
        return len(_REGISTERED)

    def __repr__(self) -> str:
        return repr(dict(self))


TARGET_SUFFIXES: Mapping[str, str] = _Suffixes()
# The target names (a live view of the registry: iterate it, or test `in`), in order.
TARGETS = _REGISTERED
DEFAULT_TARGETS = TARGETS
META_SUFFIX = ".meta.json"
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
