"""Variants declared in `variants.yaml` beside a kernel file, and the checks every
variant (YAML or decorator) passes. Errors point into the YAML with a caret."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass

import yaml

from vyre_build.core.artifacts import VARIANTS_FILES
from vyre_build.frontend.folding import int_const
from vyre_build.core.limits import MAX_NAME_BYTES, MAX_YAML_NESTING, shown
from vyre_build.frontend.source import Source
from vyre_build.frontend.types import check_f32
from vyre_build.frontend.ir import TYPES, Const

_VARIANT_NAME = re.compile(r"^[A-Za-z0-9_]+$")
_SHAPE = "variants.yaml maps file -> kernel -> variant -> {param: value}"


def check_variant(src, node, name: str, params: dict) -> dict:
    """A variant's name and parameters are usable (names become file names)."""
    if not _VARIANT_NAME.match(name) or len(name) > MAX_NAME_BYTES:
        raise src.error(
            node,
            f"variant name '{shown(name)}' may only use letters, digits and '_' "
            f"(at most {MAX_NAME_BYTES})",
            "it becomes part of the artifact file name",
        )
    if not params:
        example = (
            f"{name}: {{T: f32}}"
            if os.path.basename(src.path) in VARIANTS_FILES
            else f'"{name}": {{"T": f32}}'
        )
        raise src.error(
            node,
            f"variant '{name}' sets no parameters",
            f"give it at least one, e.g. {example}, or remove it",
        )
    for p in params:
        if not p.isidentifier() or len(p.encode("utf-8")) > MAX_NAME_BYTES:
            raise src.error(
                node,
                f"variant parameter '{shown(p)}' is not a valid name",
                f"use letters, digits and '_', not a digit first, at most {MAX_NAME_BYTES} "
                "bytes: e.g. BLOCK",
            )
    return params


def yaml_variants(mod, read) -> None:
    """Add the variants that the variants file beside `mod`'s file declares for its kernels
    (`variants.yaml`, else `variants.yml`: the first of artifacts.VARIANTS_FILES there).
    `read(path, shown, what)` -> (real path, text) reads it (confined, bounded)."""
    here = os.path.dirname(mod.path)
    found = [n for n in VARIANTS_FILES if os.path.lexists(os.path.join(here, n))]
    if not found:
        return
    yaml_path = os.path.join(here, found[0])
    mod.dependencies.append(yaml_path)
    shown_path = os.path.join(os.path.dirname(mod.source.path), found[0])
    text = read(yaml_path, shown_path, "variants file")[1]
    ysrc = Source(shown_path, text, text.splitlines())
    try:
        root = _compose(ysrc, text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line, col = (mark.line + 1, mark.column) if mark else (1, 0)
        if line > len(ysrc.lines) and ysrc.lines:  # at end of file: show the last line
            line, col = len(ysrc.lines), len(ysrc.lines[-1])
        raise ysrc.error(
            _at(ysrc, line, col),
            f"invalid YAML: {getattr(exc, 'problem', exc)}",
            "fix the YAML syntax",
        ) from None
    if root is None:
        return
    fname = os.path.basename(mod.path)
    for fkey, fval in _mapping(ysrc, root):
        if fkey.value != fname:
            _check_file_key(ysrc, fkey, os.path.dirname(mod.path))
            continue
        for kkey, kval in _mapping(ysrc, fval):
            kdef = mod.kernels.get(kkey.value)
            if kdef is None:
                raise ysrc.error(
                    _pos(ysrc, kkey),
                    f"no kernel named '{shown(kkey.value)}' in {fname}",
                    f"kernels in {fname}: {', '.join(sorted(mod.kernels)) or 'none'}",
                )
            if kdef.variants:
                raise ysrc.error(
                    _pos(ysrc, kkey),
                    f"kernel '{shown(kkey.value)}' already declares variants in its decorator",
                    "declare them in one place only",
                )
            for vkey, vval in _mapping(ysrc, kval):
                params = {}
                for pkey, pval in _mapping(ysrc, vval):
                    if not isinstance(pval, yaml.ScalarNode):
                        raise ysrc.error(
                            _pos(ysrc, pval),
                            "variant values are type names or numbers",
                            "write one value, e.g. T: f32 or BLOCK: 64",
                        )
                    params[pkey.value] = _yaml_value(ysrc, pval)
                    kdef.variant_param_pos[vkey.value, pkey.value] = _pos(ysrc, pkey)
                kdef.variants[vkey.value] = check_variant(
                    ysrc, _pos(ysrc, vkey), vkey.value, params
                )
            kdef.variants_node = _pos(ysrc, kkey)
            kdef.variants_source = ysrc


def _check_file_key(ysrc: Source, fkey, folder: str) -> None:
    """A top-level key of variants.yaml names a kernel file of its folder (a misspelt one
    would leave that file's kernels without their variants, silently)."""
    name = fkey.value
    if (
        isinstance(name, str)
        and name.endswith(".py")
        and os.path.isfile(os.path.join(folder, name))
    ):
        return
    try:
        files = sorted(f for f in os.listdir(folder) if f.endswith(".py"))
    except OSError:
        files = []
    close = difflib.get_close_matches(str(name), files, n=1)
    raise ysrc.error(
        _pos(ysrc, fkey),
        f"variants.yaml names '{shown(str(name))}', which is not a kernel file of this folder",
        f"did you mean '{close[0]}'?" if close else "name a .py kernel file beside variants.yaml",
    )


@dataclass
class _Pos:
    lineno: int
    col_offset: int  # in UTF-8 bytes, as ast's


def _at(src: Source, line: int, col: int) -> _Pos:
    """A position from YAML's line and character column."""
    text = src.lines[line - 1] if 0 < line <= len(src.lines) else ""
    return _Pos(line, len(text[:col].encode("utf-8")))


def _pos(src: Source, node) -> _Pos:
    return _at(src, node.start_mark.line + 1, node.start_mark.column)


class _Refused(Exception):
    def __init__(self, message: str, mark):
        super().__init__(message)
        self.message, self.mark = message, mark


class _Loader(yaml.SafeLoader):
    """The safe loader's composer, refusing as it goes (so YAML is parsed once): nesting
    deeper than MAX_YAML_NESTING (before the composer recurses further), anchors and
    aliases (no node is reused, so the work stays linear) and tags."""

    depth = 0

    def compose_node(self, parent, index):
        ev = self.peek_event()
        if isinstance(ev, yaml.AliasEvent) or getattr(ev, "anchor", None) is not None:
            raise _Refused(
                "YAML anchors and aliases (&name, *name) are not allowed here", ev.start_mark
            )
        if getattr(ev, "tag", None) is not None:
            raise _Refused(f"YAML tags ({shown(ev.tag)}) are not allowed here", ev.start_mark)
        if isinstance(ev, yaml.CollectionStartEvent) and self.depth >= MAX_YAML_NESTING:
            raise _Refused(
                f"nesting deeper than {MAX_YAML_NESTING} levels (the limit)", ev.start_mark
            )
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def bounded_yaml(raw: bytes | str):
    """`yaml.safe_load` of a variants file, bounded like the compiler's own read (nesting,
    no anchors, aliases or tags): ValueError (or a YAMLError) for anything it refuses."""
    loader = _Loader(raw)
    try:
        return loader.get_single_data()
    except _Refused as r:
        raise ValueError(r.message) from None
    finally:
        loader.dispose()


_COMPOSED: dict[str, object] = {}  # text -> node tree: every kernel file of a tree reads one YAML


def _compose(src: Source, text: str):
    node = _COMPOSED.get(text)
    if node is not None:
        return node
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if len(_COMPOSED) >= 16:
            _COMPOSED.clear()
        _COMPOSED[text] = node
        return node
    except _Refused as r:
        raise src.error(
            _at(src, r.mark.line + 1, r.mark.column),
            r.message,
            "variants.yaml maps file -> kernel -> variant -> {param: value}, in plain YAML",
        ) from None
    finally:
        loader.dispose()


def _mapping(src: Source, node, shape: str = _SHAPE, keys: tuple[str, ...] | None = None):
    """(key, value) of YAML mapping `node`: plain keys, each once (and one of `keys`, where
    given); `shape` is the fix of a node that is not a mapping (variants.yaml's shape, or
    tuning.yaml's)."""
    if not isinstance(node, yaml.MappingNode):
        raise src.error(_pos(src, node), "expected a mapping here", shape)
    seen = set()
    for k, v in node.value:
        if not isinstance(k, yaml.ScalarNode):
            raise src.error(
                _pos(src, k),
                "mapping keys must be plain names",
                "write a name before the colon, not a list or a mapping",
            )
        if k.value in seen:
            raise src.error(
                _pos(src, k),
                f"'{shown(k.value)}' appears twice in this mapping",
                "keep one of them",
            )
        if keys is not None and k.value not in keys:
            raise src.error(
                _pos(src, k),
                f"unknown key '{shown(k.value)}'",
                f"the keys here are {', '.join(keys)}",
            )
        seen.add(k.value)
        yield k, v


def _yaml_value(src: Source, node):
    text = node.value
    if text in TYPES:
        return text
    if len(text) <= MAX_NAME_BYTES:
        try:
            return int_const(src, _pos(src, node), int(text, 0))
        except ValueError:
            pass
        try:
            return Const("f32", check_f32(src, _pos(src, node), float(text)))
        except ValueError:
            pass
    raise src.error(
        _pos(src, node),
        f"variant value '{shown(text)}' is neither a type nor a number",
        "use bool, i32, u32, f32, a vector type (vec4f, vec2u, ...) or a number",
    ) from None
