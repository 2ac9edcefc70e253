"""Variants declared in `variants.yaml` beside a kernel file, and the checks every
variant (YAML or decorator) passes. Errors point into the YAML with a caret."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import yaml

from vyre_build.artifacts import VARIANTS_FILES
from vyre_build.frontend.source import Source
from vyre_build.ir import TYPES, Const

_VARIANT_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def check_variant(src, node, name: str, params: dict) -> dict:
    """A variant's name and parameters are usable (names become file names)."""
    if not _VARIANT_NAME.match(name):
        raise src.error(
            node,
            f"variant name '{name}' may only use letters, digits and '_'",
            "it becomes part of the artifact file name",
        )
    if not params:
        raise src.error(node, f"variant '{name}' sets no parameters")
    for p in params:
        if not p.isidentifier():
            raise src.error(node, f"variant parameter '{p}' is not a valid name")
    return params


def yaml_variants(mod) -> None:
    """Add the variants that the variants file beside `mod`'s file declares for its kernels
    (`variants.yaml`, else `variants.yml`: the first of artifacts.VARIANTS_FILES there)."""
    here = os.path.dirname(mod.path)
    found = [n for n in VARIANTS_FILES if os.path.isfile(os.path.join(here, n))]
    if not found:
        return
    yaml_path = os.path.join(here, found[0])
    mod.dependencies.append(yaml_path)
    with open(yaml_path, encoding="utf-8") as f:
        text = f.read()
    shown = os.path.join(os.path.dirname(mod.source.path), found[0])
    ysrc = Source(shown, text, text.splitlines())
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line, col = (mark.line + 1, mark.column) if mark else (1, 0)
        if line > len(ysrc.lines) and ysrc.lines:  # at end of file: show the last line
            line, col = len(ysrc.lines), len(ysrc.lines[-1])
        node = _Pos(line, col)
        raise ysrc.error(
            node, f"invalid YAML: {getattr(exc, 'problem', exc)}", "fix the YAML syntax"
        ) from None
    fname = os.path.basename(mod.path)
    for fkey, fval in _mapping(ysrc, root):
        if fkey.value != fname:
            continue
        for kkey, kval in _mapping(ysrc, fval):
            kdef = mod.kernels.get(kkey.value)
            if kdef is None:
                raise ysrc.error(
                    _pos(kkey),
                    f"no kernel named '{kkey.value}' in {fname}",
                    f"kernels in {fname}: {', '.join(sorted(mod.kernels)) or 'none'}",
                )
            if kdef.variants:
                raise ysrc.error(
                    _pos(kkey),
                    f"kernel '{kkey.value}' already declares variants in its decorator",
                    "declare them in one place only",
                )
            for vkey, vval in _mapping(ysrc, kval):
                params = {}
                for pkey, pval in _mapping(ysrc, vval):
                    if not isinstance(pval, yaml.ScalarNode):
                        raise ysrc.error(_pos(pval), "variant values are type names or numbers")
                    params[pkey.value] = _yaml_value(ysrc, pval)
                kdef.variants[vkey.value] = check_variant(ysrc, _pos(vkey), vkey.value, params)
            kdef.variants_node = _pos(kkey)
            kdef.variants_source = ysrc


@dataclass
class _Pos:
    lineno: int
    col_offset: int


def _pos(node) -> _Pos:
    return _Pos(node.start_mark.line + 1, node.start_mark.column)


def _mapping(src: Source, node):
    if not isinstance(node, yaml.MappingNode):
        raise src.error(
            _pos(node),
            "expected a mapping here",
            "variants.yaml maps file -> kernel -> variant -> {param: value}",
        )
    for k, v in node.value:
        if not isinstance(k, yaml.ScalarNode):
            raise src.error(_pos(k), "mapping keys must be plain names")
        yield k, v


def _yaml_value(src: Source, node):
    text = node.value
    if text in TYPES:
        return text
    try:
        return Const("int", int(text, 0))
    except ValueError:
        pass
    try:
        return Const("f32", float(text))
    except ValueError:
        raise src.error(
            _pos(node),
            f"variant value '{text}' is neither a type nor a number",
            "use bool, i32, u32, f32, a vector type (vec4f, vec2u, ...) or a number",
        ) from None
