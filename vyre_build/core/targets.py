"""The compile targets: one registered `Target` per artifact kind, in one table.

A target is a name ("wgsl"), the suffix of its artifact (".wgsl"), an emitter
(descriptor -> bytes), the language features it offers and the compiler options it reads.
The compiler, the build step, the CLI, the bundle tools and refusals read targets from
`TARGETS`; adding a target is one `TARGETS.register(Target(...))` line (its emitter, a
package of vyre_build.emit, aside).

Language features are what a kernel's source needs of a target's language, decided from
the syntax alone (frontend.kernel_needs): a kernel that needs one a target lacks gets no
artifact of that target, and its metadata says why (`meta["skipped"][target]`, from
`Target.refusal`). They are not device features (vyre_build.core.features): those the runtime
checks against a device.

Runtime backends are registered the same way (vyre_build.core.backends), each naming the
target whose artifact it runs.

Standard library only, emitters imported on first use: the runtime imports this module
(through vyre_build.core.backends and vyre_build.core.artifacts).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Generic, TypeVar

__all__ = [
    "BFLOAT16",
    "COOPERATIVE_MATRIX",
    "KDESC",
    "MEMORY_ORDER",
    "NEEDS",
    "Registry",
    "SPIRV",
    "Target",
    "TARGETS",
    "WGSL",
]

# Language features a kernel's source may need: name -> what refusals say it needs.
COOPERATIVE_MATRIX = "cooperative_matrix"  # a cooperative-matrix builtin
MEMORY_ORDER = "memory_order"  # fence(), or an atomic with an order other than "relaxed"
BFLOAT16 = "bfloat16"  # the bf16 type (a buffer, a shared array, a conversion)
NEEDS = {
    COOPERATIVE_MATRIX: "needs cooperative matrices",
    MEMORY_ORDER: "needs memory ordering (an acquire/release atomic or a fence)",
    BFLOAT16: "needs bf16 values",
}

# An emitter: (descriptor, DescriptorInfo, compiler options, coarse entry points) -> bytes.
Emitter = Callable[[Any, Any, Mapping[str, Any], tuple[Any, ...]], bytes]
T = TypeVar("T")


class Registry(Mapping[str, T], Generic[T]):
    """Named objects (each with a `name`) in registration order: a read-only Mapping
    name -> object, plus `register` and, for tests, `added` (registered for a `with`)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._items: dict[str, T] = {}

    def register(self, item: T) -> T:
        name = item.name  # type: ignore[attr-defined]
        if name in self._items:
            raise ValueError(f"{self.what} {name!r} is registered already")
        self._items[name] = item
        return item

    @contextmanager
    def added(self, item: T) -> Iterator[T]:
        """Register `item` for the `with` block, then remove it."""
        self.register(item)
        try:
            yield item
        finally:
            del self._items[item.name]  # type: ignore[attr-defined]

    def __getitem__(self, name: str) -> T:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"<{self.what} registry: {', '.join(self._items)}>"

    @property
    def default(self) -> T:
        """The first registered (of BACKENDS: the backend used when none is named)."""
        return next(iter(self._items.values()))


@dataclass(frozen=True)
class Target:
    """One compile target.

    name: as targets are asked for ("wgsl"); suffix: its artifact's (".wgsl").
    emitter: the Emitter, or "module:function" naming it (imported on first use).
    offers: the language features (NEEDS) it can express; None: all of them.
    options: compiler options it reads, name -> type (the compiler accepts these).
    title: how refusal messages name it ("SPIR-V"); None: they never name it.
    notes: feature -> why it lacks it, appended to the refusal ("which ... cannot express").
    always: made for every kernel whatever the targets asked (the encoded descriptor).
    text: the artifact is UTF-8 text (the runtime hands it over as str).
    magic, align, form: what a binary artifact starts with, the size its length is a
        multiple of, and what it is, as messages name it ("a SPIR-V module ...").
    tools: options -> {tool: identity} (or "module:function" naming it) for the external
        tools the options bring into its artifacts (cache keys), or None.
    """

    name: str
    suffix: str
    emitter: Emitter | str
    offers: frozenset[str] | None = frozenset()
    options: Mapping[str, type] = field(default_factory=dict)
    title: str | None = None
    notes: Mapping[str, str] = field(default_factory=dict)
    always: bool = False
    text: bool = False
    magic: bytes = b""
    align: int = 1
    form: str = ""
    tools: Callable[[Mapping[str, Any]], dict[str, str]] | str | None = None

    def emit(
        self, desc: Any, info: Any, options: Mapping[str, Any], entries: tuple[Any, ...]
    ) -> bytes:
        """The artifact of one kernel: bytes."""
        made: bytes = _resolve(self.emitter)(desc, info, options, entries)
        return made

    def lacks(self, needs: Iterable[str]) -> list[str]:
        """The features of `needs` (in its order) this target does not offer."""
        return [f for f in needs if self.offers is not None and f not in self.offers]

    def refusal(self, needs: Iterable[str]) -> str | None:
        """Why a kernel needing `needs` (language features, in the order its source uses
        them) gets no artifact of this target, or None: the first one it lacks."""
        missing = self.lacks(needs)
        if not missing:
            return None
        need = missing[0]
        text = NEEDS.get(need, f"needs {need}")
        if need in self.notes:
            text += f", {self.notes[need]}"
        where = [t.title for t in TARGETS.values() if t.title and not t.lacks((need,))]
        return f"{text}: {' or '.join(where)} only" if where else f"{text}: no target has it"

    def tool_identity(self, options: Mapping[str, Any]) -> dict[str, str]:
        found: dict[str, str] = _resolve(self.tools)(options) if self.tools else {}
        return found

    def code_problem(self, code: object) -> str | None:
        """What is wrong with `code` as this target's artifact given to the runtime
        (`<name>=` of load_kernel), or None: a str for text, else bytes (with the magic)."""
        given = f"{self.name}="
        if self.text:
            return None if isinstance(code, str) else f"{given} must be str, got {_kind(code)}"
        if not isinstance(code, (bytes, bytearray, memoryview)):
            if self.magic:
                return f"the given {given} does not look like {self.form}"
            return f"{given} must be the bytes of a {self.suffix}, got {_kind(code)}"
        if self.magic and (len(code) % self.align or bytes(code[: len(self.magic)]) != self.magic):
            return f"the given {given} does not look like {self.form}"
        return None


def _kind(value: object) -> str:
    return type(value).__name__


def _resolve(ref: Callable[..., Any] | str) -> Callable[..., Any]:
    return _imported(ref) if isinstance(ref, str) else ref


@lru_cache(maxsize=None)
def _imported(ref: str) -> Callable[..., Any]:
    module, _, attr = ref.partition(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), attr)
    return found


# -- the emitters of the registered targets: named, so that they load on first use and this
# module, at the bottom of the layers, imports none of them (docs/architecture.md) --


def spirv_tools(options: Mapping[str, Any]) -> dict[str, str]:
    """{"spirv-opt": "<version> blake3:<binary hash>"} when spirv_opt is on ("missing"
    if it is not on PATH)."""
    return {"spirv-opt": _spirv_opt_identity()} if options.get("spirv_opt") else {}


@lru_cache(maxsize=1)
def _spirv_opt_identity() -> str:
    import os
    import shutil
    import subprocess

    import blake3

    tool = shutil.which("spirv-opt")
    if tool is None:
        return "missing"
    with open(os.path.realpath(tool), "rb") as f:
        digest = blake3.blake3(f.read()).hexdigest()
    proc = subprocess.run([tool, "--version"], capture_output=True, text=True, check=False)
    version = proc.stdout.splitlines()[0] if proc.stdout.strip() else "unknown version"
    return f"{version} blake3:{digest}"


TARGETS: Registry[Target] = Registry("target")
# In this order: listings, CLI choices and refusal messages follow it. The built-in targets
# are named here once (WGSL, SPIRV, KDESC): code outside their packages that means one of
# them reads its name and suffix from these objects (tests/unit/test_import_graph.py).
WGSL = TARGETS.register(
    Target(
        "wgsl",
        ".wgsl",
        "vyre_build.emit.wgsl:emit_target",
        offers=frozenset(),
        title="WGSL",
        notes={
            MEMORY_ORDER: "which WGSL's relaxed atomics cannot express",
            BFLOAT16: "a type WGSL does not have",
        },
        text=True,
    )
)
SPIRV = TARGETS.register(
    Target(
        "spirv",
        ".spv",
        "vyre_build.emit.spirv:emit_target",
        offers=None,
        options={"spirv_opt": bool},
        title="SPIR-V",
        magic=b"\x03\x02\x23\x07",
        align=4,
        form="a SPIR-V module (little-endian, magic 0x07230203)",
        tools=spirv_tools,
    )
)
KDESC = TARGETS.register(
    Target("kdesc", ".kdesc", "vyre_build.descriptor.codec:emit_target", offers=None, always=True)
)
