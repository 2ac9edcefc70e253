"""Where the artifact cache lives and how it behaves: config files, then the environment.

Each setting is taken from the first of these that sets it:
  1. the environment: VYRE_CACHE_DIR, VYRE_CACHE_MAX_SIZE, VYRE_CACHE_MAX_AGE (days),
     VYRE_REMOTE_CACHE, VYRE_REMOTE_CACHE_MODE, VYRE_REMOTE_CACHE_TIMEOUT (seconds),
     VYRE_REMOTE_CACHE_MAX_BLOB_SIZE;
  2. the project's config: `vyre.toml` at the project root, else the `[tool.vyre]` table of
     its `pyproject.toml`;
  3. the per-user config: $VYRE_CONFIG, else $XDG_CONFIG_HOME/vyre/config.toml
     (default ~/.config/vyre/config.toml);
  4. defaults: `<project root>/cache`, 5 GiB, no age limit, no remote (64 MiB per blob).
In SCons, construction variables set in the SConstruct ($VYRECACHEDIR, ...) win over all
of these (their defaults come from here).

Both files have the same tables (in pyproject.toml under `tool.vyre`):

    [cache]
    dir = "cache"          # relative to the file's directory
    max-size = "5G"        # binary units; "unlimited" for none
    max-age = 30           # days since last use; absent for none
    [remote]
    url = "https://cache.example.com/vyre"
    mode = "read-only"     # or "read-write"; default: read-write only with credentials
    timeout = 5            # seconds for each whole request (connect, headers, body)
    max-blob-size = "64M"  # a larger remote output is not downloaded; "unlimited" for none

The project root is the nearest directory, from the current one upwards, that holds an
SConstruct, a vyre.toml or a pyproject.toml with a [tool.vyre] table, so the CLI finds
the cache SCons uses from anywhere inside the project. This module imports no CLI and no
SCons: both read it, and word its errors with the name of the setting and its source.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from vyre_build.cache.url import parse_remote_url, redact_url
from vyre_build.core.errors import CacheError, VyreError

__all__ = [
    "CACHE_DIR_ENV",
    "DEFAULT_MAX_SIZE",
    "CacheConfig",
    "ConfigError",
    "find_project_root",
    "find_sconstruct_dir",
    "format_size",
    "load_config",
    "parse_size",
    "read_build_settings",
    "redact_url",
    "set_file_max_size",
    "write_build_settings",
]

CACHE_DIR_ENV = "VYRE_CACHE_DIR"
DEFAULT_MAX_SIZE = 5 << 30
DEFAULT_TIMEOUT_S = 5.0
# A kernel at the frontend's 100,000-operation limit makes ~12 MiB of WGSL: 5x that.
DEFAULT_REMOTE_MAX_BLOB = 64 << 20
SCONSTRUCT_NAMES = (
    "SConstruct",
    "Sconstruct",
    "sconstruct",
    "SConstruct.py",
    "Sconstruct.py",
    "sconstruct.py",
)
MAX_CONFIG_BYTES = 1 << 20
REMOTE_MODES = ("read-only", "read-write")
# setting -> (environment variable, table, key in the table)
SETTINGS = {
    "cache_dir": (CACHE_DIR_ENV, "cache", "dir"),
    "max_size": ("VYRE_CACHE_MAX_SIZE", "cache", "max-size"),
    "max_age": ("VYRE_CACHE_MAX_AGE", "cache", "max-age"),
    "remote_url": ("VYRE_REMOTE_CACHE", "remote", "url"),
    "remote_mode": ("VYRE_REMOTE_CACHE_MODE", "remote", "mode"),
    "remote_timeout": ("VYRE_REMOTE_CACHE_TIMEOUT", "remote", "timeout"),
    "remote_max_blob": ("VYRE_REMOTE_CACHE_MAX_BLOB_SIZE", "remote", "max-blob-size"),
}
_TABLE_KEYS = {
    "cache": ("dir", "max-size", "max-age"),
    "remote": ("url", "mode", "timeout", "max-blob-size"),
}
_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class ConfigError(VyreError):
    """A config file or setting that cannot be used; names the file or variable and value."""


def parse_size(text, what: str = "size") -> int | None:
    """'500M', '2g', '1.5GiB', '1048576' -> bytes (binary units); 'unlimited' -> None.

    Arguments:
        text: the size as written (an int is taken as bytes).
        what: how the caller names the setting in the error ("--max-size", "VYRE_CACHE_MAX_SIZE").
    """
    if isinstance(text, bool):
        raise ConfigError(f"{what} {text!r} is not a size; write e.g. 500M, 2G or 1048576")
    if isinstance(text, int):
        if text < 0:
            raise ConfigError(f"{what} must be >= 0 bytes, got {text}")
        return text
    s = str(text).strip().lower()
    if s in ("unlimited", "none"):
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", s)
    if not m:
        raise ConfigError(
            f"{what} {text!r} is not a size; write e.g. 500M, 2G, 1048576 or unlimited"
        )
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2)])


def format_size(n: int | None) -> str:
    """Bytes as ccache shows them: '1.2 MiB', '5.0 GiB'; None as 'unlimited'."""
    if n is None:
        return "unlimited"
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


@dataclass(frozen=True)
class CacheConfig:
    """The resolved settings, and where each came from (`sources[name]`)."""

    project_root: str | None
    cache_dir: str
    max_size: int | None = DEFAULT_MAX_SIZE
    max_age_s: float | None = None
    remote_url: str | None = None
    remote_mode: str | None = None  # None: read-write only when credentials are found
    remote_timeout_s: float = DEFAULT_TIMEOUT_S
    remote_max_blob: int | None = DEFAULT_REMOTE_MAX_BLOB  # None: unlimited
    sources: dict = field(default_factory=dict)


def _has_tool_vyre(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(MAX_CONFIG_BYTES)
    except OSError:
        return False
    return re.search(rb"^\s*\[\s*tool\.vyre[\].]", head, re.M) is not None


def _nearest(start, marks) -> str | None:
    """The nearest directory from `start` (default: the current one) upwards for which
    `marks(directory)` is true; None if there is none."""
    here = os.path.abspath(os.fspath(start) if start is not None else os.getcwd())
    while True:
        if marks(here):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def _has_sconstruct(directory: str, also=()) -> bool:
    return any(os.path.isfile(os.path.join(directory, n)) for n in (*SCONSTRUCT_NAMES, *also))


def find_project_root(start: str | os.PathLike | None = None) -> str | None:
    """The nearest directory from `start` (default: the current one) upwards that holds an
    SConstruct, a vyre.toml or a pyproject.toml with [tool.vyre]; None if there is none."""
    return _nearest(
        start,
        lambda d: (
            _has_sconstruct(d, ("vyre.toml",)) or _has_tool_vyre(os.path.join(d, "pyproject.toml"))
        ),
    )


def find_sconstruct_dir(start: str | os.PathLike | None = None) -> str | None:
    """The nearest directory from `start` (default: the current one) upwards that holds an
    SConstruct (any name SCons reads one under); None if there is none."""
    return _nearest(start, _has_sconstruct)


def _load_toml(path: str) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is over {MAX_CONFIG_BYTES >> 20} MiB")
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None


def _file_settings(path: str, doc: dict, where: str) -> dict[str, tuple]:
    """{setting: (raw value, source)} from a parsed config file (tables at `doc`)."""
    out: dict[str, tuple] = {}
    for table, value in doc.items():
        if table not in _TABLE_KEYS or not isinstance(value, dict):
            known = ", ".join(f"[{where}{t}]" for t in _TABLE_KEYS)
            raise ConfigError(f"{path}: unknown table [{where}{table}]; tables: {known}")
        for key, raw in value.items():
            if key not in _TABLE_KEYS[table]:
                raise ConfigError(
                    f"{path}: unknown key {key!r} in [{where}{table}]; "
                    f"keys: {', '.join(_TABLE_KEYS[table])}"
                )
            name = next(n for n, (_, t, k) in SETTINGS.items() if (t, k) == (table, key))
            out[name] = (raw, f"{key} in [{where}{table}] of {path}", os.path.dirname(path))
    return out


def _project_file(root: str) -> tuple[str, dict, str] | None:
    path = os.path.join(root, "vyre.toml")
    if os.path.isfile(path):
        return path, _load_toml(path), ""
    path = os.path.join(root, "pyproject.toml")
    if os.path.isfile(path) and _has_tool_vyre(path):
        tool = _load_toml(path).get("tool", {})
        vyre = tool.get("vyre", {}) if isinstance(tool, dict) else {}
        if not isinstance(vyre, dict):
            raise ConfigError(f"{path}: [tool.vyre] must be a table")
        return path, vyre, "tool.vyre."
    return None


def user_config_path(environ=None) -> str:
    environ = os.environ if environ is None else environ
    if environ.get("VYRE_CONFIG"):
        return os.path.abspath(os.path.expanduser(environ["VYRE_CONFIG"]))
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "vyre", "config.toml")


def load_config(
    project_root: str | os.PathLike | None = None,
    *,
    start: str | os.PathLike | None = None,
    environ=None,
) -> CacheConfig:
    """Resolve every setting (environment > project file > user file > default).

    Arguments:
        project_root: the project's root (SCons: the SConstruct's directory); if None it is
            found upwards from `start` (default: the current directory).
        environ: the environment to read (default os.environ).
    Returns:
        CacheConfig; raises ConfigError naming the file or variable of a bad value.
    """
    environ = os.environ if environ is None else environ
    if project_root is None:
        project_root = find_project_root(start)
    root = os.path.abspath(os.fspath(project_root)) if project_root is not None else None
    raw: dict[str, tuple] = {}
    user = user_config_path(environ)
    if os.path.isfile(user):
        raw.update(_file_settings(user, _load_toml(user), ""))
    project = _project_file(root) if root is not None else None
    if project is not None:
        raw.update(_file_settings(*project))
    for name, (var, _, _) in SETTINGS.items():
        if environ.get(var, "") != "":
            raw[name] = (environ[var], var, None)
    return _resolve(root, raw, start)


def _resolve(root: str | None, raw: dict[str, tuple], start) -> CacheConfig:
    values: dict = {}
    sources = {name: "default" for name in SETTINGS}
    for name, (value, source, _) in raw.items():
        sources[name] = source
        values[name] = _convert(name, value, source)
    base = root or os.path.abspath(os.fspath(start) if start is not None else os.getcwd())
    # A relative dir is relative to the file that set it, else to the project root.
    file_dir = raw.get("cache_dir", (None, None, None))[2]
    cache_dir = os.path.join(file_dir or base, values.get("cache_dir", "cache"))
    return CacheConfig(
        project_root=root,
        cache_dir=os.path.abspath(cache_dir),
        max_size=values.get("max_size", DEFAULT_MAX_SIZE),
        max_age_s=values.get("max_age"),
        remote_url=values.get("remote_url"),
        remote_mode=values.get("remote_mode"),
        remote_timeout_s=values.get("remote_timeout", DEFAULT_TIMEOUT_S),
        remote_max_blob=values.get("remote_max_blob", DEFAULT_REMOTE_MAX_BLOB),
        sources=sources,
    )


def _convert(name: str, value, source: str):
    def bad(expect: str):
        shown = redact_url(value) if name == "remote_url" and isinstance(value, str) else value
        return ConfigError(f"{source}: {shown!r} is not {expect}")

    if name == "cache_dir":
        if not isinstance(value, str) or not value.strip():
            raise bad("a directory path")
        return os.path.expanduser(value)
    if name in ("max_size", "remote_max_blob"):
        return parse_size(value, source)
    if name in ("max_age", "remote_timeout"):
        try:
            number = float(value) if not isinstance(value, bool) else None
        except ValueError:
            number = None
        if number is None or not number == number or number < 0 or number == float("inf"):
            raise bad("a number of days >= 0" if name == "max_age" else "a number of seconds")
        if name == "remote_timeout" and number <= 0:
            raise bad("a number of seconds > 0")
        return number * 86400.0 if name == "max_age" else number
    if name == "remote_url":
        if not isinstance(value, str) or not re.match(r"^https?://[^/\s]+", value.strip()):
            raise bad("an http:// or https:// URL")
        try:
            parse_remote_url(value)
        except CacheError as exc:
            raise ConfigError(f"{source}: {exc}") from None
        return value.strip().rstrip("/")
    if name == "remote_mode":
        if value not in REMOTE_MODES:
            raise bad(" or ".join(REMOTE_MODES))
        return value
    raise RuntimeError(f"no conversion for setting {name}")


# --- what a build's SConstruct set (for `vyre-build cache config`) ----------------------
# construction variable -> the setting it overrides
CONSTRUCTION_VARIABLES = {
    "VYRECACHEDIR": "cache_dir",
    "VYRECACHEMAXSIZE": "max_size",
    "VYRECACHEMAXAGE": "max_age",
    "VYREREMOTECACHE": "remote_url",
    "VYREREMOTECACHEMODE": "remote_mode",
    "VYREREMOTECACHETIMEOUT": "remote_timeout",
    "VYRELINKOUTPUTS": "link_outputs",
    "VYREWORKERS": "workers",
}


def build_settings_path(cache_root: str, project_root: str) -> str:
    """Where a cache keeps the construction variables the last build of a project set."""
    from vyre_build.cache.key import content_hash

    return os.path.join(cache_root, "settings", content_hash(project_root.encode())[:32] + ".json")


def write_build_settings(cache_root: str, project_root: str, settings: dict) -> None:
    """Record {construction variable: value} that a build's SConstruct set (only when it
    changed: a null build writes nothing)."""
    import json

    from vyre_build.core.files import atomic_write

    path = build_settings_path(cache_root, project_root)
    data = json.dumps({"project": project_root, "set": settings}, indent=1, sort_keys=True)
    if read_build_settings(cache_root, project_root) == settings:
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    atomic_write(path, data.encode())


def read_build_settings(cache_root: str, project_root: str | None) -> dict | None:
    """The construction variables the last build of `project_root` set, or None."""
    import json

    if project_root is None:
        return None
    try:
        with open(build_settings_path(cache_root, project_root), "rb") as f:
            doc = json.loads(f.read(MAX_CONFIG_BYTES))
    except (OSError, ValueError):
        return None
    ok = isinstance(doc, dict) and doc.get("project") == project_root
    return doc["set"] if ok and isinstance(doc.get("set"), dict) else None


def _set_line(lines: list[str], header: str, key: str, line: str) -> list[str]:
    """`lines` with `key = ...` of table `header` replaced by `line` (or added to it, or
    the table appended)."""
    head = re.compile(r"^\s*\[\s*" + re.escape(header).replace(r"\.", r"\s*\.\s*") + r"\s*\]")
    start = next((i for i, text in enumerate(lines) if head.match(text)), None)
    if start is None:
        tail = [""] if lines and lines[-1].strip() else []
        return [*lines, *tail, f"[{header}]", line]
    end = next(
        (i for i in range(start + 1, len(lines)) if re.match(r"^\s*\[", lines[i])), len(lines)
    )
    for i in range(start + 1, end):
        if re.match(r"^\s*" + re.escape(key) + r"\s*=", lines[i]):
            # The line's own comment stays: `max-size = "1G"  # CI runners are small`.
            value = r"""\s*=\s*("[^"]*"|'[^']*'|[^#\s]+)\s*(#.*)?$"""
            kept = re.match(r"^\s*" + re.escape(key) + value, lines[i])
            comment = f"  {kept.group(2)}" if kept and kept.group(2) else ""
            return [*lines[:i], line + comment, *lines[i + 1 :]]
    last = max([i for i in range(start, end) if lines[i].strip()] or [start])
    return [*lines[: last + 1], line, *lines[last + 1 :]]


def set_file_max_size(path: str, where: str, text: str) -> None:
    """Set `max-size` of the [cache] table (under `where`: "" or "tool.vyre.") of the TOML
    file `path` (created if absent) to `text`, leaving every other line as it was; checked
    by reading the file back, else ConfigError (nothing written)."""
    from vyre_build.core.files import atomic_write

    old_doc = _load_toml(path) if os.path.exists(path) else {}
    try:
        with open(path, encoding="utf-8") as f:
            old = f.read()
    except FileNotFoundError:
        old = ""
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    lines = _set_line(old.splitlines(), f"{where}cache", "max-size", f'max-size = "{text}"')
    new = "\n".join(lines) + "\n"
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    expect = dict(old_doc)
    node = expect
    for part in [*where.rstrip(".").split("."), "cache"] if where else ["cache"]:
        node[part] = dict(node.get(part, {}))
        node = node[part]
    node["max-size"] = text
    try:
        ok = tomllib.loads(new) == expect
    except tomllib.TOMLDecodeError:
        ok = False
    if not ok:
        raise ConfigError(
            f"cannot set max-size in {path} without changing its other settings; "
            f'edit it by hand: max-size = "{text}" in [{where}cache]'
        )
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        atomic_write(path, new.encode())
    except OSError as exc:
        raise ConfigError(f"cannot write config file {path}: {exc.strerror or exc}") from None
