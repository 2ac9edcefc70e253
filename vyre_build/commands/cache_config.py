"""`vyre-build cache config` and `cache -M SIZE`: every cache setting with its value and
where it came from (as `ccache --show-config`), and the size limit set in the project's
config file (as `ccache -M`).

Origins: "default", an environment variable, a key of a config file (vyre.toml,
`[tool.vyre]` of pyproject.toml, the per-user file), "--cache-dir", or a construction
variable of the SConstruct, as the last build of the project in this cache recorded it
(a build writes `settings/<h>.json` into the cache; the CLI cannot run the SConstruct).
"""

from __future__ import annotations

import os

from vyre_build.cache.config import (
    CONSTRUCTION_VARIABLES,
    SETTINGS,
    CacheConfig,
    ConfigError,
    format_size,
    load_config,
    parse_size,
    read_build_settings,
    redact_url,
    set_file_max_size,
    user_config_path,
)
from vyre_build.cache.config import _has_tool_vyre  # the test load_config itself makes

__all__ = ["describe", "set_max_size"]

# setting -> the name `cache config` shows (the config files' table.key)
SHOWN = {name: f"{table}.{key}" for name, (_, table, key) in SETTINGS.items()}
SHOWN.update(link_outputs="build.link-outputs", workers="build.workers")


def _origin(source: str) -> str:
    if source in (v for v, _, _ in SETTINGS.values()):
        return f"environment variable {source}"
    return source


def _value(name: str, value) -> str:
    if name == "max_size":
        return format_size(value)
    if name == "max_age":
        return "none" if value is None else f"{value / 86400.0:g} days"
    if name == "remote_url":
        return "none" if value is None else redact_url(value)
    if name == "remote_mode":
        return value or "read-write with credentials, else read-only"
    if name == "remote_timeout":
        return f"{value:g} s"
    if name == "link_outputs":
        return "on" if value else "off"
    if name == "workers":
        return "the -j count" if value in (None, "") else str(value)
    return str(value)


def _from_construction(name: str, value):
    """A construction variable's value as the setting's own (sizes and days parsed)."""
    if name == "max_size":
        try:
            return parse_size(value, "")
        except ConfigError:
            return value
    if name == "max_age":
        try:
            return None if value in ("", None) else float(value) * 86400.0
        except (TypeError, ValueError):
            return value
    return value


def describe(cfg: CacheConfig, cache_dir: str, cache_dir_source: str) -> list[dict]:
    """[{"name", "value" (as shown), "raw", "origin"}] for every setting, in table order."""
    values = {
        "cache_dir": cache_dir,
        "max_size": cfg.max_size,
        "max_age": cfg.max_age_s,
        "remote_url": cfg.remote_url,
        "remote_mode": cfg.remote_mode,
        "remote_timeout": cfg.remote_timeout_s,
        "link_outputs": False,
        "workers": None,
    }
    origins = {name: _origin(cfg.sources.get(name, "default")) for name in values}
    origins["cache_dir"] = _origin(cache_dir_source)
    built = read_build_settings(cache_dir, cfg.project_root) or {}
    for var, name in CONSTRUCTION_VARIABLES.items():
        if var in built and name != "cache_dir":
            values[name] = _from_construction(name, built[var])
            origins[name] = f"construction variable ${var} (the last build's SConstruct)"
    return [
        {"name": SHOWN[n], "value": _value(n, v), "raw": v, "origin": origins[n]}
        for n, v in values.items()
    ]


def config_lines(rows: list[dict]) -> list[str]:
    """`name = value  (origin)`, aligned, as `ccache --show-config` prints them."""
    width = max(len(r["name"]) for r in rows)
    vwidth = max(len(r["value"]) for r in rows)
    return [f"{r['name']:<{width}} = {r['value']:<{vwidth}}  ({r['origin']})" for r in rows]


def config_file_for(cfg: CacheConfig) -> tuple[str, str]:
    """(path, table prefix) of the file `-M` writes: the project's vyre.toml, or its
    pyproject.toml when that holds the project's [tool.vyre] and no vyre.toml exists (the
    file load_config reads), else, outside any project, the per-user file."""
    if cfg.project_root is None:
        return user_config_path(), ""
    toml = os.path.join(cfg.project_root, "vyre.toml")
    pyproject = os.path.join(cfg.project_root, "pyproject.toml")
    if not os.path.exists(toml) and _has_tool_vyre(pyproject):
        return pyproject, "tool.vyre."
    return toml, ""


def set_max_size(text: str) -> tuple[list[str], dict]:
    """`cache -M SIZE`: the size limit written into the project's config file; (lines,
    JSON data). "0" means unlimited, as in ccache."""
    size = parse_size(text, "-M")
    shown = "unlimited" if size in (None, 0) else str(text).strip()
    cfg = load_config()
    path, where = config_file_for(cfg)
    set_file_max_size(path, where, shown)
    lines = [
        f"Set cache size limit to {format_size(None if size == 0 else size)} "
        f"(max-size in [{where}cache] of {path})"
    ]
    after = load_config()
    if after.sources["max_size"] != f"max-size in [{where}cache] of {path}":
        lines.append(
            f"note: {_origin(after.sources['max_size'])} sets it to "
            f"{format_size(after.max_size)}, which wins over the file"
        )
    built = read_build_settings(after.cache_dir, after.project_root) or {}
    if "VYRECACHEMAXSIZE" in built:
        lines.append(
            "note: the SConstruct sets $VYRECACHEMAXSIZE "
            f"({built['VYRECACHEMAXSIZE']!r}), which wins in scons builds"
        )
    return lines, {"file": path, "max_size": None if size == 0 else size, "notes": lines[1:]}
