"""Tuning data of a bundle: the tunables (candidates and a benchmark case) and the tuning
records (the winner of each tunable on one device), as the manifest's "tuning" object.

    {"tunables": {name: {"library": fn or null, "default": candidate,
                         "candidates": {candidate: {"kernel": id or null, "params": {...}}},
                         "case": {...}}},
     "records": [{"device": {...DEVICE_KEYS}, "clock": "gpu" or "wall",
                  "picks": {name: {"candidate", "seconds": {candidate: s}, "dropped": {c: why}}},
                  "untuned": {name: why}}]}

Guarantees:
- `check_tuning` accepts exactly this shape (JSON data, names safe as kernel ids) and
  raises BundleError naming the JSON path of the first thing wrong; the writer and the
  reader both run it, so a bundle never carries tuning data the runtime cannot use.
- A library tunable's candidates name a kernel only where LIBRARY_KERNELS lets them, and
  only a kernel it lists (matmul_f16: lib_matmul_f16 or lib_mm_f16.f32).
- `merge_records` keeps one record per device (DEVICE_KEYS), the newer entry of each
  tunable winning, and sorts them, so merging is deterministic and idempotent.
- `match` picks a device's record: the exact device, else the same backend, vendor and
  device with another driver (or subgroup size), else none (the tunable's default).

Standard library and `vyre_build.core.errors` only: the runtime reads it without the compiler.
"""

from __future__ import annotations

import re
from typing import Any

import json

from vyre_build.core.scalars import HOST_ORDER
from vyre_build.core.errors import BundleError
from vyre_build.core.files import canonical_json

__all__ = [
    "DEVICE_KEYS",
    "FILLS",
    "LIBRARY_KERNELS",
    "LIBRARY_TUNABLES",
    "check_library_kernel",
    "check_library_params",
    "check_record",
    "check_tuning",
    "device_key",
    "device_text",
    "match",
    "merge_records",
    "read_records",
    "record_file_bytes",
]

# What identifies a device in a record (from runtime.profile.DeviceProfile).
DEVICE_KEYS = ("backend", "vendor_id", "device_id", "adapter", "driver", "driver_version",
               "subgroup_size")  # fmt: skip
# Same device, another driver: these must agree (the others may differ).
NEAR_KEYS = ("backend", "vendor_id", "device_id")
RECORD_FORMAT = "vyretuning"  # a record file: {"format": RECORD_FORMAT, "records": [...]}
FILLS = ("zeros", "ones", "range", "uniform", "normal")
DTYPES = HOST_ORDER  # the scalar types a case array may have
_NAME = re.compile(r"^[A-Za-z0-9_]{1,100}$")
_ID = re.compile(r"^[A-Za-z0-9_]{1,100}(\.[A-Za-z0-9_]{1,100})?$")
_MAX_ELEMENTS = 1 << 28  # a case's array: at most 256 Mi elements


# The host parameters of the tunable library functions: name -> (lowest, highest, default);
# the defaults are the library's constants (library/__init__.py MAX_PARTIALS, MAX_BLOCKS, TILE,
# WG; library/picks.py SHORT_ROWS). What each means: library/tuning.py.
LIBRARY_TUNABLES: dict[str, dict[str, tuple[int, int, int]]] = {
    "reduce": {"partials": (4, 1024, 1024)},
    "scan": {"blocks": (1, 1024, 1024)},
    "softmax": {"short_rows": (0, 1024, 1024)},
    "layer_norm": {"short_rows": (0, 1024, 1024)},
    "matmul": {
        "tile": (4, 1024, 128),
        "tile_m": (0, 1024, 0),
        "tile_n": (0, 1024, 0),
        "wg": (1, 1024, 256),
    },
    "matmul_f16": {},  # its candidates name a kernel only (LIBRARY_KERNELS)
}
# matmul's block rows and columns: 0 (the default) takes `tile`, for square blocks.
_UNSET_OR_SIDE = ("tile_m", "tile_n")
# The library functions whose candidates name the kernel they run: fn -> the kernel ids
# allowed (None: any kernel id). The others' candidates name none.
LIBRARY_KERNELS: dict[str, tuple[str, ...] | None] = {
    "matmul": None,
    "matmul_f16": ("lib_matmul_f16", "lib_mm_f16.f32"),
    # the kernel of rows up to `short_rows` values (library/picks.py SHORT_DESIGNS)
    "softmax": tuple(f"lib_softmax_{d}.f32" for d in ("warp", "flat", "pair")),
    "layer_norm": tuple(f"lib_layer_norm_{d}.f32" for d in ("warp", "flat", "pair")),
}


def check_library_params(fn: str, params: dict[str, Any]) -> str | None:
    """Why `params` cannot be a candidate of library function `fn`, or None when they can."""
    known = LIBRARY_TUNABLES.get(fn)
    if known is None:
        return (
            f"'{fn}' is not a tunable library function (those are "
            f"{', '.join(sorted(LIBRARY_TUNABLES))})"
        )
    for name, value in params.items():
        if name not in known:
            has = ", ".join(sorted(known)) or "none"
            return f"library.{fn} has no parameter '{name}' (it has {has})"
        low, high, _ = known[name]
        if name in _UNSET_OR_SIDE:  # 0 (take `tile`) or a side like tile's
            low = known["tile"][0]
            if type(value) is not int or (value != 0 and not low <= value <= high):
                return (
                    f"library.{fn} parameter '{name}' must be 0 (the tile) or an integer in "
                    f"{low}..{high}, got {value!r}"
                )
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return f"library.{fn} parameter '{name}' must be an integer in {low}..{high}, got {value!r}"
    return None


def check_library_kernel(fn: str, kernel: str | None) -> str | None:
    """Why a candidate of library function `fn` cannot name `kernel`, or None when it can."""
    if fn not in LIBRARY_KERNELS:
        if kernel is None:
            return None
        names = [f"{f}'s" for f in sorted(LIBRARY_KERNELS)]
        named = ", ".join(names[:-1]) + " and " + names[-1]
        return f"library.{fn} takes no kernel (only {named} candidates name one)"
    allowed = LIBRARY_KERNELS[fn]
    if kernel is None or allowed is None or kernel in allowed:
        return None
    return f"library.{fn} cannot run kernel '{kernel}' (its candidates name {', '.join(allowed)})"


def _fail(where: str, what: str) -> BundleError:
    return BundleError(f"tuning data: {where}: {what}")


def _obj(value: Any, where: str, keys: set[str], optional: set[str] = frozenset()) -> dict:
    if type(value) is not dict:
        raise _fail(where, f"must be an object, got {type(value).__name__}")
    missing = sorted(keys - set(value))
    extra = sorted(set(value) - keys - optional)
    if missing:
        raise _fail(where, f"lacks {', '.join(missing)}")
    if extra:
        raise _fail(where, f"has unknown keys {', '.join(extra)}")
    return value


def _name(value: Any, where: str) -> str:
    if type(value) is not str or not _NAME.match(value):
        raise _fail(where, f"name {value!r} must be 1 to 100 letters, digits or '_'")
    return value


def _scalar(value: Any, where: str) -> None:
    if type(value) not in (int, float, str, bool):
        raise _fail(where, f"must be a number, a string or a boolean, got {value!r}")


def check_array(spec: Any, where: str) -> dict:
    """An input array of a case: {"shape": [ints], "dtype": ..., "fill": ...}."""
    _obj(spec, where, {"shape", "dtype", "fill"})
    shape = spec["shape"]
    if type(shape) is not list or not 1 <= len(shape) <= 4:
        raise _fail(f"{where}.shape", f"must be a list of 1 to 4 sizes, got {shape!r}")
    count = 1
    for s in shape:
        if type(s) is not int or s < 1:
            raise _fail(f"{where}.shape", f"sizes must be integers >= 1, got {s!r}")
        count *= s
    if count > _MAX_ELEMENTS:
        raise _fail(f"{where}.shape", f"{count} elements is more than {_MAX_ELEMENTS}")
    if spec["dtype"] not in DTYPES:
        raise _fail(f"{where}.dtype", f"must be one of {', '.join(DTYPES)}, got {spec['dtype']!r}")
    if spec["fill"] not in FILLS:
        raise _fail(f"{where}.fill", f"must be one of {', '.join(FILLS)}, got {spec['fill']!r}")
    return spec


def _check_case(case: Any, where: str, library: str | None) -> None:
    _obj(case, where, {"inputs", "tolerance"}, {"grid", "check"})
    inputs = case["inputs"]
    if type(inputs) is not dict or not inputs:
        raise _fail(f"{where}.inputs", "must be a non-empty object of argument -> value")
    for arg, value in inputs.items():
        _name(arg, f"{where}.inputs")
        if type(value) is dict:
            check_array(value, f"{where}.inputs.{arg}")
        else:
            _scalar(value, f"{where}.inputs.{arg}")
    tol = case["tolerance"]
    if type(tol) not in (int, float) or not 0 <= tol < 1:
        raise _fail(f"{where}.tolerance", f"must be a number in [0, 1), got {tol!r}")
    if library is not None and ({"grid", "check"} & set(case)):
        raise _fail(where, "a library case takes no grid or check (the function decides)")
    grid = case.get("grid")
    if grid is not None and (
        type(grid) is not list
        or not 1 <= len(grid) <= 3
        or any(type(g) is not int or g < 1 for g in grid)
    ):
        raise _fail(f"{where}.grid", f"must be a list of 1 to 3 integers >= 1, got {grid!r}")
    check = case.get("check")
    if check is not None and (type(check) is not list or not check):
        raise _fail(f"{where}.check", f"must be a non-empty list of argument names, got {check!r}")
    for name in check or ():
        if name not in inputs or type(inputs[name]) is not dict:
            raise _fail(f"{where}.check", f"{name!r} is not an array input of the case")


def check_tunable(name: str, t: Any, where: str) -> None:
    """One tunable's declaration (see the module docstring)."""
    _obj(t, where, {"library", "default", "candidates", "case"})
    library = t["library"]
    if library is not None:
        _name(library, f"{where}.library")
    cands = t["candidates"]
    if type(cands) is not dict or not cands:
        raise _fail(f"{where}.candidates", "must be a non-empty object")
    for cname, cand in cands.items():
        cw = f"{where}.candidates.{_name(cname, f'{where}.candidates')}"
        _obj(cand, cw, {"kernel", "params"})
        kernel = cand["kernel"]
        if kernel is None and library is None:
            raise _fail(cw, "names no kernel (a kernel tunable runs one kernel per candidate)")
        if kernel is not None and (type(kernel) is not str or not _ID.match(kernel)):
            raise _fail(f"{cw}.kernel", f"{kernel!r} is not a kernel id (name or name.variant)")
        why = check_library_kernel(library, kernel) if library in LIBRARY_TUNABLES else None
        if why is not None:
            raise _fail(f"{cw}.kernel", why)
        params = cand["params"]
        if type(params) is not dict:
            raise _fail(f"{cw}.params", "must be an object")
        for p, v in params.items():
            _name(p, f"{cw}.params")
            _scalar(v, f"{cw}.params.{p}")
    if t["default"] not in cands:
        raise _fail(f"{where}.default", f"{t['default']!r} is not one of its candidates")
    _check_case(t["case"], f"{where}.case", library)


def check_record(rec: Any, where: str = "record") -> dict:
    """One tuning record: the device it was measured on and the pick of each tunable."""
    _obj(rec, where, {"device", "clock", "picks", "untuned"})
    if rec["clock"] not in ("gpu", "wall"):
        raise _fail(f"{where}.clock", f"must be 'gpu' or 'wall', got {rec['clock']!r}")
    dev = _obj(rec["device"], f"{where}.device", set(DEVICE_KEYS))
    for k in DEVICE_KEYS:
        v = dev[k]
        ok = (
            type(v) is str
            if k in ("backend", "adapter", "driver")
            else (v is None or type(v) is int)
            if k == "subgroup_size"
            else type(v) is int
        )
        if not ok:
            raise _fail(f"{where}.device.{k}", f"has the wrong type: {v!r}")
    picks = rec["picks"]
    if type(picks) is not dict:
        raise _fail(f"{where}.picks", "must be an object")
    for tname, pick in picks.items():
        pw = f"{where}.picks.{_name(tname, f'{where}.picks')}"
        _obj(pick, pw, {"candidate", "seconds", "dropped"})
        _name(pick["candidate"], f"{pw}.candidate")
        seconds = pick["seconds"]
        if type(seconds) is not dict or pick["candidate"] not in seconds:
            raise _fail(f"{pw}.seconds", "must give the time of every candidate kept")
        for c, s in seconds.items():
            if type(s) not in (int, float) or not 0 <= s < 1e9:
                raise _fail(f"{pw}.seconds.{_name(c, f'{pw}.seconds')}", f"bad time {s!r}")
        dropped = pick["dropped"]
        if type(dropped) is not dict or any(type(r) is not str for r in dropped.values()):
            raise _fail(f"{pw}.dropped", "must map candidates to reasons (strings)")
    untuned = rec["untuned"]
    if type(untuned) is not dict or any(type(r) is not str for r in untuned.values()):
        raise _fail(f"{where}.untuned", "must map tunables to reasons (strings)")
    return rec


def check_tuning(doc: Any) -> dict:
    """The manifest's "tuning" object, checked whole (BundleError naming the path)."""
    _obj(doc, "tuning", {"tunables", "records"})
    tunables = doc["tunables"]
    if type(tunables) is not dict:
        raise _fail("tuning.tunables", "must be an object")
    for name, t in tunables.items():
        check_tunable(name, t, f"tuning.tunables.{_name(name, 'tuning.tunables')}")
    records = doc["records"]
    if type(records) is not list:
        raise _fail("tuning.records", "must be a list")
    seen = set()
    for n, rec in enumerate(records):
        check_record(rec, f"tuning.records[{n}]")
        key = device_key(rec["device"])
        if key in seen:
            raise _fail(f"tuning.records[{n}]", "a second record for the same device")
        seen.add(key)
    return doc


def device_key(device: dict) -> tuple:
    """The identity of a record's device, for merging and exact matches."""
    return tuple(device[k] for k in DEVICE_KEYS)


def device_text(device: dict) -> str:
    """One line naming a record's device."""
    sub = device["subgroup_size"]
    return (
        f"{device['backend']}: {device['adapter']} (vendor 0x{device['vendor_id']:04x}, "
        f"device 0x{device['device_id']:04x}, driver {device['driver']} version "
        f"{device['driver_version']:#x}, subgroup size {sub if sub is not None else '-'})"
    )


def _sort_key(rec: dict) -> tuple:
    return tuple("" if v is None else str(v) for v in device_key(rec["device"]))


def merge_records(old: list[dict], new: list[dict]) -> list[dict]:
    """`old` with each record of `new` merged in: a new device's record is added; for a
    device already there, each tunable the new record tuned (or failed to) replaces the
    old record's entry for it, and the others' entries are kept."""
    out = {device_key(r["device"]): r for r in old}
    for r in new:
        was = out.get(device_key(r["device"]))
        if was is not None:
            names = set(r["picks"]) | set(r["untuned"])
            picks = {n: p for n, p in was["picks"].items() if n not in names}
            untuned = {n: w for n, w in was["untuned"].items() if n not in names}
            r = {**r, "picks": {**picks, **r["picks"]}, "untuned": {**untuned, **r["untuned"]}}
        out[device_key(r["device"])] = r
    return sorted(out.values(), key=_sort_key)


def match(records: list[dict], device: dict) -> tuple[dict | None, str]:
    """(the record for `device`, how it matched): "exact", "driver" (same backend, vendor
    and device; another driver or subgroup size: the newest driver version of those), or
    (None, "default") when no record is for this device."""
    key = device_key(device)
    for r in records:
        if device_key(r["device"]) == key:
            return r, "exact"
    near = [r for r in records if all(r["device"][k] == device[k] for k in NEAR_KEYS)]
    if near:
        return max(near, key=lambda r: (r["device"]["driver_version"], _sort_key(r))), "driver"
    return None, "default"


def read_records(path: str) -> list[dict]:
    """The records of a record file (BundleError naming the file and what is wrong)."""
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read().decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise BundleError(f"{path}: cannot read the tuning record file: {exc}") from None
    if (
        not isinstance(doc, dict)
        or doc.get("format") != RECORD_FORMAT
        or set(doc) != {"format", "records"}
    ):
        raise BundleError(
            f'{path}: not a tuning record file (expected {{"format": "{RECORD_FORMAT}", "records": [...]}}, '
            "as `vyre-build tune --record` writes)"
        )
    if not isinstance(doc["records"], list):
        raise BundleError(f"{path}: 'records' must be a list")
    for n, rec in enumerate(doc["records"]):
        try:
            check_record(rec, f"records[{n}]")
        except BundleError as exc:
            raise BundleError(f"{path}: {exc}") from None
    return merge_records([], doc["records"])


def record_file_bytes(records: list[dict]) -> bytes:
    return canonical_json({"format": RECORD_FORMAT, "records": records}) + b"\n"
