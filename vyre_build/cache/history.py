"""Which keys each output was built from, per project, for `cache why`.

One file per project (`history/<blake3 of the project root>.json`), holding for every
output (named by its directory relative to the project root and its stem: `build/saxpy`)
its last keys, oldest first, each at most once: a build from a key already listed moves
it to the end. So the last two keys are always the last two builds of that output that
differed in key, whichever tree shares the cache. Builds note their keys in memory and
write the file once, at the end (`flush`), under the store's "history" lock.
"""

from __future__ import annotations

import os
import threading

from vyre_build.cache.key import content_hash
from vyre_build.cache.layout import is_hex_hash, listdir, mtime
from vyre_build.core.files import canonical_json

__all__ = ["HISTORY_DEPTH", "History", "output_name"]

HISTORY_SCHEMA = "vyre-history/2"
HISTORY_DEPTH = 8


def output_name(out_dir: str, stem: str, project: str | None) -> str:
    """`<out_dir relative to the project>/<stem>` (POSIX), or the absolute path outside one."""
    path = os.path.join(os.path.abspath(out_dir), stem)
    if project is not None:
        rel = os.path.relpath(path, project)
        if not rel.startswith(".."):
            path = rel
    return path.replace(os.sep, "/")


class History:
    """The key history of one project in one store."""

    def __init__(self, store, project: str | None):
        self.store = store
        self.project = None if project is None else os.path.abspath(project)
        name = content_hash((self.project or "").encode())[:32]
        self.path = os.path.join(store.root, "history", name + ".json")
        self._pending: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def _read(self, path: str | None = None) -> dict[str, list[str]]:
        data = self.store.read_json(path or self.path, 64 << 20)
        if not isinstance(data, dict) or data.get("schema") != HISTORY_SCHEMA:
            return {}
        out = {}
        for name, keys in (data.get("outputs") or {}).items():
            if isinstance(name, str) and isinstance(keys, list):
                out[name] = [k for k in keys if isinstance(k, str) and is_hex_hash(k)]
        return out

    @staticmethod
    def _merge(keys: list[str], new: list[str]) -> list[str]:
        for key in new:
            keys = [k for k in keys if k != key] + [key]
        return keys[-HISTORY_DEPTH:]

    def note(self, names, key: str) -> None:
        """Remember (in memory, until `flush`) that each of `names` was built from `key`."""
        with self._lock:
            for name in names:
                self._pending[name] = self._merge(self._pending.get(name, []), [key])

    def latest(self) -> dict[str, str]:
        """{output name: the key it was last built from} as of the last build written, in
        one read (for judging many outputs at once)."""
        return {name: keys[-1] for name, keys in self._read().items() if keys}

    def keys(self, name: str) -> list[str]:
        """Keys `name` was built from, oldest first, this build's included."""
        keys = self._read().get(name, [])
        with self._lock:
            return self._merge(keys, self._pending.get(name, []))

    def names(self) -> list[str]:
        with self._lock:
            pending = set(self._pending)
        return sorted(set(self._read()) | pending)

    def flush(self) -> None:
        """Write this build's keys into the project's history file (one write)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return
        with self.store.lock("history"):
            outputs = self._read()
            changed = False
            for name, keys in pending.items():
                merged = self._merge(outputs.get(name, []), keys)
                if merged != outputs.get(name):
                    outputs[name], changed = merged, True
            if changed:
                body = {"schema": HISTORY_SCHEMA, "project": self.project, "outputs": outputs}
                self.store.write_file(self.path, canonical_json(body) + b"\n")

    def other_projects(self) -> list["History"]:
        """The histories of every other project in the store, most recently written first."""
        base = os.path.join(self.store.root, "history")
        found = []
        for name in listdir(base):
            path = os.path.join(base, name)
            if name.endswith(".json") and path != self.path:
                data = self.store.read_json(path, 64 << 20)
                if isinstance(data, dict) and data.get("schema") == HISTORY_SCHEMA:
                    found.append((mtime(path, 0.0), data.get("project")))
        return [History(self.store, p) for _, p in sorted(found, reverse=True)]
