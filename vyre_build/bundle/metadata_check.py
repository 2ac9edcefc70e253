"""The metadata checker: one kernel's metadata record (JSON data), checked field by field
into a `KernelMeta` (metadata.py).

The bundle reader checks each kernel's record when it is first read (`check_metadata`), so
every tool that shows a kernel and the runtime that dispatches it see either a sound
`KernelMeta` or one `BundleError` naming the kernel, the field and the bad value (bounded:
a hostile record prints no megabytes). Unknown keys are ignored, so that a newer
compiler's additions do not break an older reader. Fast on the common record: warm()
checks some 60 at once, so a binding seen before is one dict lookup and the cross-checks
name a culprit only where one fails.

Standard library only (the runtime imports it without the compiler).
"""

from __future__ import annotations

import keyword
from typing import Any, Union

from vyre_build.bundle.metadata import (
    BUFFER_DTYPES,
    MAX_SHARED_BYTES,
    PORTABLE_SHARED_BYTES,
    SCALAR_DTYPES,
    Binding,
    Coarse,
    DebugSite,
    DebugTable,
    GridEntry,
    KernelMeta,
    Uniform,
)
from vyre_build.core.errors import BundleError

__all__ = ["check_metadata"]

# The bounds of a record's fields (the buffer and scalar types are metadata.py's).
ACCESS = ("r", "w", "rw")
MAX_BINDING = 2**31 - 1  # Vulkan binding numbers and WGSL @binding are u32; keep them i32-safe
MAX_WORKGROUP_SIDE = 2**31 - 1
MAX_GRID_INVOCATIONS = 2**32 - 1  # a global id is a u32
MAX_UNIFORM_BYTES = 65536  # what wgpu allows a uniform binding; Vulkan guarantees 16384
MAX_BINDINGS = 1024
MAX_FEATURES, MAX_FEATURE_NAME = 256, 128


def _show(value: object) -> str:
    # repr, bounded: a hostile record must not print megabytes (or huge ints in full).
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# Bindings checked in full (_Checker._binding), by ("buffer", name, binding, dtype,
# access, any_length) or ("scalar", name, binding, dtype, offset), each value of the type
# the check demands (str names, int binding and offset, a bool any_length: True == 1 and
# 1.0 == 1 cannot alias), so a repeat skips the check and the construction.
_BINDINGS: dict[tuple[Any, ...], Binding] = {}
_MAX_KEPT_BINDINGS = 4096


class _Checker:
    def __init__(self, where: str):
        self.where = where

    def fail(self, name: str, problem: str) -> BundleError:
        return BundleError(f"{self.where}: metadata field {name!r} {problem}")

    def int_in(self, name: str, value: object, lo: int, hi: int) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise self.fail(name, f"must be an integer in {lo}..{hi}, got {_show(value)}")
        return value

    def one_of(self, name: str, value: object, choices: tuple[str, ...]) -> str:
        if not isinstance(value, str) or value not in choices:
            raise self.fail(name, f"must be one of {', '.join(choices)}, got {_show(value)}")
        return value

    def list_of(self, name: str, value: object, most: int) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(name, f"must be a list, got {_show(value)}")
        if len(value) > most:
            raise self.fail(name, f"has {len(value)} entries, more than {most}")
        return value

    def binding(self, n: int, entry: object) -> Binding:
        # The common record passes in one test per field, naming nothing; any other goes
        # through _binding, which names the field that fails. Checked entries give the
        # same (frozen) Binding, kept in _BINDINGS: kernels repeat their parameters.
        if type(entry) is dict:
            name, kind, number = entry.get("name"), entry.get("kind"), entry.get("binding")
            dtype = entry.get("dtype")
            if type(name) is str and type(number) is int and type(dtype) is str:
                if kind == "buffer":
                    access, free = entry.get("access"), entry.get("any_length", False)
                    if type(access) is str and type(free) is bool:
                        found = _BINDINGS.get((kind, name, number, dtype, access, free))
                        if found is not None:
                            return found
                elif kind == "scalar":
                    offset = entry.get("offset")
                    if type(offset) is int:
                        found = _BINDINGS.get((kind, name, number, dtype, offset))
                        if found is not None:
                            return found
        return self._binding(n, entry)

    def _binding(self, n: int, entry: object) -> Binding:
        at = f"bindings[{n}]"
        if not isinstance(entry, dict):
            raise self.fail(at, f"must be an object, got {_show(entry)}")
        name = entry.get("name")
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            raise self.fail(f"{at}.name", f"must be a parameter name, got {_show(name)}")
        if len(name) > 200:
            raise self.fail(f"{at}.name", "is longer than 200 characters")
        kind = self.one_of(f"{at}.kind", entry.get("kind"), ("buffer", "scalar"))
        number = self.int_in(f"{at}.binding", entry.get("binding"), 0, MAX_BINDING)
        if kind == "buffer":
            dtype = self.one_of(f"{at}.dtype", entry.get("dtype"), BUFFER_DTYPES)
            access = self.one_of(f"{at}.access", entry.get("access"), ACCESS)
            free = entry.get("any_length", False)
            if not isinstance(free, bool):
                raise self.fail(f"{at}.any_length", f"must be true or false, got {_show(free)}")
            if free and access != "r":
                raise self.fail(
                    f"{at}.any_length",
                    f"is true but buffer {name!r} has access {access!r}; only read-only "
                    "buffers are held to the grid's length",
                )
            made = Binding(name, kind, number, dtype, access=access, any_length=free)
            if type(name) is str and type(number) is int and len(_BINDINGS) < _MAX_KEPT_BINDINGS:
                _BINDINGS[kind, name, number, dtype, access, free] = made
            return made
        dtype = self.one_of(f"{at}.dtype", entry.get("dtype"), tuple(SCALAR_DTYPES))
        offset = entry.get("offset")
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0 or offset % 4:
            raise self.fail(
                f"{at}.offset", f"must be a non-negative multiple of 4, got {_show(offset)}"
            )
        made = Binding(name, kind, number, dtype, offset=offset)
        if type(name) is str and type(number) is int and len(_BINDINGS) < _MAX_KEPT_BINDINGS:
            _BINDINGS[kind, name, number, dtype, offset] = made
        return made

    def uniform(self, value: object, scalars: list[Binding]) -> Uniform | None:
        if value is None:
            if scalars:
                raise self.fail(
                    "uniform", f"is null but scalar {scalars[0].name!r} needs a uniform block"
                )
            return None
        if not isinstance(value, dict):
            raise self.fail(
                "uniform", f"must be an object {{binding, size}} or null, got {_show(value)}"
            )
        if not scalars:
            raise self.fail("uniform", "is given but the kernel has no scalar parameters")
        binding = self.int_in("uniform.binding", value.get("binding"), 0, MAX_BINDING)
        size = self.int_in("uniform.size", value.get("size"), 16, MAX_UNIFORM_BYTES)
        if size % 16:
            raise self.fail("uniform.size", f"must be a multiple of 16, got {size}")
        taken: dict[int, str] = {}
        for s in scalars:
            assert s.offset is not None  # noqa: S101 - set for every scalar by binding()
            end = s.offset + SCALAR_DTYPES[s.dtype]
            if end > size:
                raise self.fail(
                    "uniform.size",
                    f"is {size} bytes but scalar {s.name!r} ends at byte {end} (offset {s.offset})",
                )
            if s.offset in taken:
                raise self.fail(
                    "bindings",
                    f"place scalars {taken[s.offset]!r} and {s.name!r} at the same offset {s.offset}",
                )
            taken[s.offset] = s.name
        return Uniform(binding, size)

    def grid(self, value: object, bindings: tuple[Binding, ...]) -> tuple[GridEntry, ...]:
        if value is None:
            return ()
        entries = self.list_of("grid", value, 3)
        out: list[GridEntry] = []
        for n, entry in enumerate(entries):
            if isinstance(entry, str):
                b = next((b for b in bindings if b.name == entry), None)
                if b is None:
                    raise self.fail(f"grid[{n}]", f"names no parameter: {_show(entry)}")
                if b.kind == "scalar" and b.dtype not in ("i32", "u32"):
                    raise self.fail(
                        f"grid[{n}]",
                        f"names scalar {entry!r} of type {b.dtype}; a grid needs i32 or u32",
                    )
                out.append(entry)
            else:
                out.append(self.int_in(f"grid[{n}]", entry, 0, MAX_GRID_INVOCATIONS))
        return tuple(out)

    def coarse(self, value: object) -> Coarse | None:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(
                "coarse", f"must be an object {{entry, factor}} or null, got {_show(value)}"
            )
        entry = value.get("entry")
        if not isinstance(entry, str) or not entry.isidentifier() or len(entry) > 64:
            raise self.fail("coarse.entry", f"must be an entry point name, got {_show(entry)}")
        return Coarse(entry, self.int_in("coarse.factor", value.get("factor"), 2, 64))

    def text(self, name: str, value: object, most: int = 1024) -> str:
        if not isinstance(value, str) or len(value) > most:
            raise self.fail(
                name, f"must be a string of at most {most} characters, got {_show(value)}"
            )
        return value

    def debug(self, value: object, taken: set[int]) -> DebugTable | None:
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.fail(
                "debug", f"must be an object {{binding, sites}} or null, got {_show(value)}"
            )
        binding = value.get("binding")
        if binding is not None:
            binding = self.int_in("debug.binding", binding, 0, MAX_BINDING)
            if binding in taken:
                raise self.fail("debug.binding", f"{binding} is also a parameter's binding")
        sites = []
        for n, row in enumerate(self.list_of("debug.sites", value.get("sites"), 1 << 16)):
            at = f"debug.sites[{n}]"
            if not isinstance(row, dict):
                raise self.fail(at, f"must be an object, got {_show(row)}")
            kind = self.one_of(f"{at}.kind", row.get("kind"), ("print", "assert", "bounds"))
            types = tuple(
                self.one_of(f"{at}.types[{k}]", t, ("i32", "u32", "f32", "bool"))
                for k, t in enumerate(self.list_of(f"{at}.types", row.get("types"), 16))
            )
            fmt: list[Union[str, int]] = []
            for k, part in enumerate(self.list_of(f"{at}.format", row.get("format", []), 64)):
                fmt.append(
                    self.text(f"{at}.format[{k}]", part)
                    if isinstance(part, str)
                    else self.int_in(f"{at}.format[{k}]", part, 0, len(types) - 1)
                )
            message = row.get("message")
            labels = self.list_of(f"{at}.labels", row.get("labels", []), 16)
            sites.append(
                DebugSite(
                    kind=kind,
                    file=self.text(f"{at}.file", row.get("file")),
                    line=self.int_in(f"{at}.line", row.get("line"), 1, 2**31 - 1),
                    col=self.int_in(f"{at}.col", row.get("col"), 1, 2**31 - 1),
                    types=types,
                    format=tuple(fmt),
                    condition=self.text(f"{at}.condition", row.get("condition", "")),
                    message=None if message is None else self.text(f"{at}.message", message),
                    labels=tuple(self.text(f"{at}.labels", x) for x in labels),
                    access=self.text(f"{at}.access", row.get("access", "")),
                    array=self.text(f"{at}.array", row.get("array", "")),
                )
            )
        return DebugTable(binding, tuple(sites))

    def features(self, value: object) -> tuple[str, ...]:
        if value is None:
            return ()
        names = self.list_of("features", value, MAX_FEATURES)
        for n, name in enumerate(names):
            if not isinstance(name, str) or not 0 < len(name) <= MAX_FEATURE_NAME:
                raise self.fail(
                    f"features[{n}]",
                    f"must be a feature name (a string of 1..{MAX_FEATURE_NAME} characters), "
                    f"got {_show(name)}",
                )
        if len(set(names)) != len(names):
            dup = next(x for i, x in enumerate(names) if x in names[:i])
            raise self.fail("features", f"lists {dup!r} twice")
        return tuple(sorted(names))


def check_metadata(meta: object, where: str) -> KernelMeta:
    """Check every field dispatch and the tools read; return the record as a KernelMeta.

    Arguments:
        meta: one metadata record (a dict of JSON data).
        where: how errors name the kernel, e.g. "dist/k.vyrebundle: kernel 'saxpy'".
    Returns:
        The checked KernelMeta (its `record` is `meta` itself, not a copy).
    Raises:
        BundleError: "<where>: metadata field '<field>' <problem>, got <value>".
    """
    c = _Checker(where)
    if not isinstance(meta, dict):
        raise BundleError(f"{where}: metadata must be an object, got {_show(meta)}")
    name, variant = meta.get("name"), meta.get("variant")
    if not isinstance(name, str) or not name:
        raise c.fail("name", f"must be a non-empty string, got {_show(name)}")
    if variant is not None and (not isinstance(variant, str) or not variant):
        raise c.fail("variant", f"must be a non-empty string or null, got {_show(variant)}")
    ident = meta.get("id", name if variant is None else f"{name}.{variant}")
    if ident != (name if variant is None else f"{name}.{variant}"):
        raise c.fail("id", f"must be name[.variant] ({name!r}, {variant!r}), got {_show(ident)}")
    wg = c.list_of("workgroup_size", meta.get("workgroup_size"), 3)
    if not wg:
        raise c.fail("workgroup_size", "must list 1-3 sizes, got []")
    sizes = [c.int_in(f"workgroup_size[{i}]", v, 1, MAX_WORKGROUP_SIDE) for i, v in enumerate(wg)]
    entries = c.list_of("bindings", meta.get("bindings"), MAX_BINDINGS)
    bindings = tuple([c.binding(n, b) for n, b in enumerate(entries)])
    # The cross-checks of the bindings as a few set and dict passes; the loops that name
    # the culprit run only where one fails (warm() checks some 60 records at once).
    if len({b.name for b in bindings}) != len(bindings):
        _repeated_name(c, bindings)
    scalars = [b for b in bindings if b.kind == "scalar"]
    uniform = c.uniform(meta.get("uniform"), scalars)
    # Buffers and the uniform block each own one binding number; scalars name the block's.
    buffers = {b.binding for b in bindings if b.kind == "buffer"}
    if (
        len(buffers) + len(scalars) != len(bindings)
        or (uniform is not None and uniform.binding in buffers)
        or any(s.binding in buffers for s in scalars)
    ):
        _shared_binding(c, bindings, uniform)
    owner = buffers if uniform is None else buffers | {uniform.binding}
    values = meta.get("variant_values")
    if values is not None and (
        not isinstance(values, dict)
        or not all(isinstance(v, (str, int, float, bool)) for v in values.values())
    ):
        raise c.fail("variant_values", f"must be an object of names to values, got {_show(values)}")
    return KernelMeta(
        id=ident,
        name=name,
        variant=variant,
        workgroup_size=(sizes[0], (sizes + [1])[1], (sizes + [1, 1])[2]),
        grid=c.grid(meta.get("grid"), bindings),
        bindings=bindings,
        uniform=uniform,
        features=c.features(meta.get("features")),
        coarse=c.coarse(meta.get("coarse")),
        record=meta,
        debug=c.debug(meta.get("debug"), owner),
        shared_bytes=c.int_in(
            "shared_bytes",
            meta.get("shared_bytes", PORTABLE_SHARED_BYTES),
            PORTABLE_SHARED_BYTES,
            MAX_SHARED_BYTES,
        ),
        declares_shared_bytes="shared_bytes" in meta,
        variant_values=values,
        provenance=_object_or_none(meta.get("provenance")),
        skipped=_object_or_none(meta.get("skipped")),
    )


def _object_or_none(value: object) -> dict[str, Any] | None:
    # Carried, not checked here (format.py checks provenance; skipped is shown as text).
    return value if isinstance(value, dict) else None


def _repeated_name(c: _Checker, bindings: tuple[Binding, ...]) -> None:
    # Raise naming the first parameter name that repeats.
    seen: dict[str, int] = {}
    for n, b in enumerate(bindings):
        if b.name in seen:
            raise c.fail(
                f"bindings[{n}].name", f"repeats {b.name!r} (also bindings[{seen[b.name]}])"
            )
        seen[b.name] = n


def _shared_binding(c: _Checker, bindings: tuple[Binding, ...], uniform: Uniform | None) -> None:
    # Raise naming the first binding number that two owners share (a buffer's taken by
    # another buffer or the uniform block, or a scalar naming a buffer's).
    owner: dict[int, str] = {} if uniform is None else {uniform.binding: "the uniform block"}
    for n, b in enumerate(bindings):
        if b.kind == "buffer":
            if b.binding in owner:
                raise c.fail(
                    f"bindings[{n}].binding",
                    f"{b.binding} of buffer {b.name!r} is also that of {owner[b.binding]}",
                )
            owner[b.binding] = f"buffer {b.name!r}"
    for n, b in enumerate(bindings):
        if b.kind == "scalar" and owner.get(b.binding, "the uniform block") != "the uniform block":
            raise c.fail(
                f"bindings[{n}].binding",
                f"{b.binding} of scalar {b.name!r} is that of {owner[b.binding]}",
            )
