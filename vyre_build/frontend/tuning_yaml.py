"""`tuning.yaml` of a kernel tree: the tunables (candidate configurations and a small
benchmark case each) that `vyre-build tune` measures, as the bundle's tuning data.

    reduce:                      # the tunable's name
      library: reduce            # a library function's host parameters (or no `library`:
      default: p1024             #   each candidate names a kernel); default: the first
      case:
        inputs:
          x: {shape: [1048576], dtype: f32, fill: uniform}
          op: sum
        tolerance: 1e-4          # optional (default 1e-4; integers compare exactly)
      candidates:
        p1024: {partials: 1024}
        p256: {partials: 256}

Guarantees: read with the bounded safe loader of variants.yaml (no anchors, aliases or
tags, nesting bounded, duplicate keys refused); every problem is a KernelError at
file:line:col with the line, a caret and a fix; the result passes
`bundle.tuning.check_tunable`, so the bundle writer never refuses what this accepts.
"""

from __future__ import annotations

import difflib
import math

import yaml

from vyre_build.bundle.tuning import (
    FILLS,
    LIBRARY_TUNABLES,
    check_library_kernel,
    check_library_params,
    check_tunable,
)
from vyre_build.core.errors import BundleError
from vyre_build.core.limits import shown
from vyre_build.frontend.source import Source
from vyre_build.frontend.variants import _Loader, _pos, _Refused, _at
from vyre_build.frontend.variants import _mapping as _yaml_mapping

__all__ = ["DEFAULT_TOLERANCE", "TUNING_FILE", "load_tuning"]

TUNING_FILE = "tuning.yaml"
DEFAULT_TOLERANCE = 1e-4
_SHAPE = "tuning.yaml maps tunable -> {library?, default?, case: {inputs, tolerance?, grid?, check?}, candidates}"
_TUNABLE_KEYS = ("library", "default", "case", "candidates")
_CASE_KEYS = ("inputs", "tolerance", "grid", "check")


def load_tuning(path: str, text: str) -> dict:
    """The tunables of the tuning file `path` (shown in errors) holding `text`: name ->
    the tunable's JSON data (bundle/tuning.py). Raises KernelError."""
    src = Source(path, text, text.splitlines())
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
    except _Refused as r:
        raise src.error(_at(src, r.mark.line + 1, r.mark.column), r.message, _SHAPE) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line, col = (mark.line + 1, mark.column) if mark else (1, 0)
        line = min(line, max(len(src.lines), 1))
        raise src.error(
            _at(src, line, col),
            f"invalid YAML: {getattr(exc, 'problem', exc)}",
            "fix the YAML syntax",
        ) from None
    finally:
        loader.dispose()
    if root is None:
        return {}
    out: dict = {}
    for key, node in _mapping(src, root):
        t = out[key.value] = _tunable(src, key, node)
        other = [n for n, o in out.items() if n != key.value and t["library"] is not None
                 and o["library"] == t["library"]]  # fmt: skip
        if other:
            raise src.error(
                _pos(src, key),
                f"tunables '{shown(other[0])}' and '{shown(key.value)}' both tune library.{t['library']}",
                "declare one tunable per library function",
            )
    return out


def _mapping(src: Source, node, keys: tuple[str, ...] | None = None):
    return _yaml_mapping(src, node, _SHAPE, keys)


def _scalar(src: Source, node):
    """A YAML scalar as a number (int or finite float) or a string."""
    if not isinstance(node, yaml.ScalarNode):
        raise src.error(
            _pos(src, node),
            "expected a number or a name here",
            "write one value, e.g. 1024 or f32, not a list or a mapping",
        )
    text = node.value
    if node.style is None:  # plain: a number when it reads as one
        try:
            return int(text, 0)
        except ValueError:
            pass
        try:
            value = float(text)
        except ValueError:
            return text
        if not math.isfinite(value):
            raise src.error(
                _pos(src, node),
                f"'{shown(text)}' is not a finite number",
                "write a finite number, e.g. 1e-4 or 1024",
            )
        return value
    return text


def _ints(src: Source, node, what: str) -> list:
    if not isinstance(node, yaml.SequenceNode):
        raise src.error(
            _pos(src, node),
            f"{what} must be a list, e.g. [1024, 1024]",
            f"write {what}: [1024] or {what}: [1024, 1024]",
        )
    values = []
    for item in node.value:
        v = _scalar(src, item)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise src.error(
                _pos(src, item),
                f"{what} entries must be integers >= 1, got '{shown(str(v))}'",
                f"write whole numbers from 1 up, e.g. {what}: [1024]",
            )
        values.append(v)
    return values


def _array(src: Source, node) -> dict:
    spec = {}
    for k, v in _mapping(src, node, ("shape", "dtype", "fill")):
        spec[k.value] = _ints(src, v, "shape") if k.value == "shape" else _scalar(src, v)
    if "shape" not in spec:
        raise src.error(
            _pos(src, node), "an input array needs a shape", "write {shape: [4096], dtype: f32}"
        )
    spec.setdefault("dtype", "f32")
    spec.setdefault("fill", "uniform")
    if spec["fill"] not in FILLS:
        raise src.error(
            _pos(src, node),
            f"unknown fill '{shown(str(spec['fill']))}'",
            f"fills are {', '.join(FILLS)}",
        )
    return spec


def _case(src: Source, node) -> dict:
    case: dict = {"tolerance": DEFAULT_TOLERANCE}
    for k, v in _mapping(src, node, _CASE_KEYS):
        if k.value == "inputs":
            inputs = {}
            for ik, iv in _mapping(src, v):
                inputs[ik.value] = (
                    _array(src, iv) if isinstance(iv, yaml.MappingNode) else _scalar(src, iv)
                )
            case["inputs"] = inputs
        elif k.value == "tolerance":
            case["tolerance"] = _scalar(src, v)
        elif k.value == "grid":
            case["grid"] = _ints(src, v, "grid")
        else:
            if not isinstance(v, yaml.SequenceNode):
                raise src.error(
                    _pos(src, v),
                    "check must be a list of argument names, e.g. [y]",
                    f"write check: [{shown(v.value)}]"
                    if isinstance(v, yaml.ScalarNode)
                    else "write check: [y]",
                )
            case["check"] = [_scalar(src, item) for item in v.value]
    if "inputs" not in case:
        raise src.error(
            _pos(src, node), "the case has no inputs", "give its arguments under inputs:"
        )
    return case


def _tunable(src: Source, key, node) -> dict:
    name = key.value
    t: dict = {"library": None}
    nodes = {}
    for k, v in _mapping(src, node, _TUNABLE_KEYS):
        nodes[k.value] = v
        if k.value in ("library", "default"):
            t[k.value] = _scalar(src, v)
        elif k.value == "case":
            t["case"] = _case(src, v)
        else:
            t["candidates"] = {}
            for ck, cv in _mapping(src, v):
                params = {pk.value: _scalar(src, pv) for pk, pv in _mapping(src, cv)}
                kernel = params.pop("kernel", None)
                why = None
                if t["library"] is not None:
                    why = check_library_params(str(t["library"]), params)
                    if why is None:
                        why = check_library_kernel(str(t["library"]), kernel)
                elif params:
                    why = (
                        f"candidate '{shown(ck.value)}' sets {', '.join(sorted(params))}: a kernel "
                        "tunable's candidates name a kernel only"
                    )
                if why is not None:
                    raise src.error(
                        _pos(src, cv), why, "see docs/tuning.md for what a candidate sets"
                    )
                t["candidates"][ck.value] = {"kernel": kernel, "params": params}
    for needed in ("case", "candidates"):
        if needed not in t:
            raise src.error(_pos(src, key), f"tunable '{shown(name)}' has no {needed}", _SHAPE)
    if t["library"] is not None and t["library"] not in LIBRARY_TUNABLES:
        close = difflib.get_close_matches(str(t["library"]), LIBRARY_TUNABLES, n=1)
        raise src.error(
            _pos(src, nodes["library"]),
            check_library_params(str(t["library"]), {}),
            f"did you mean '{close[0]}'?"
            if close
            else "name one of them, or leave library out for candidates that name kernels",
        )
    t.setdefault("default", next(iter(t["candidates"]), None))
    try:
        check_tunable(name, t, f"tunable '{shown(name)}'")
    except BundleError as exc:
        raise src.error(
            _pos(src, key), str(exc).removeprefix("tuning data: "), "see docs/tuning.md"
        ) from None
    return t
