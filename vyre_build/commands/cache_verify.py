"""`vyre-build cache verify`: rehash every blob and record, and repair what is damaged.

`check` reads only: every record (checksum, key, shape, set of outputs) and every blob
(present, a regular file, its bytes hashing to its name), listing what is corrupt,
missing or unusable and which entries use it. `repair` (`--repair`, and `--rebuild`,
which recompiles every entry anyway) removes each corrupt record and each blob that is
not intact, then rebuilds every entry that used such a blob from its recorded inputs and
stores it again; an entry that cannot be rebuilt here (an input blob lost, another
compiler's entry, a compile error) is removed, so the next build that needs it compiles
it. After a repair that met no error, `cache verify` passes: the project's rule that a
corrupt entry is detected, reported and rebuilt, never served, holds for the cache at
rest as for a build's lookups.
"""

from __future__ import annotations

import shlex

from vyre_build.build.step import rebuild_record, recompile_record
from vyre_build.cache.key import content_hash
from vyre_build.cache.layout import BadEntry, read_entry, remove_entry
from vyre_build.cache.record import output_set_problem, record_blobs
from vyre_build.cache.store import MAX_BLOB_BYTES, Store

__all__ = ["verify"]


def _blob_state(store: Store, digest: str) -> str:
    """ "ok", "missing", "corrupt" or what is there instead ("unusable (...)"), read-only."""
    try:
        data = read_entry(store.blob_path(digest), MAX_BLOB_BYTES)
    except BadEntry as exc:
        return f"unusable ({exc.problem})"
    if data is None:
        return "missing"
    return "ok" if content_hash(data) == digest else "corrupt"


def _output(store: Store, record: dict, name: str) -> bytes | None:
    """An output's bytes if the record has it and its blob is intact, else None; read-only."""
    ref = record["outputs"].get(name)
    if ref is None:
        return None
    try:
        data = read_entry(store.blob_path(ref["hash"]), ref["size"])
    except BadEntry:
        return None
    return data if data is not None and content_hash(data) == ref["hash"] else None


def check(store: Store) -> dict:
    """What is damaged, read-only: {"corrupt_records": [{"key", "problem"}], "bad_blobs":
    [{"blob", "state", "keys"}], "intact": {key: record}, "rebuildable": {key: record}
    (the corrupt records whose checksum holds, so their inputs can be trusted: a wrong
    set of outputs), "blobs": how many blobs were checked}."""
    corrupt_records: list[dict] = []
    blob_users: dict[str, list[str]] = {}
    intact: dict[str, dict] = {}
    rebuildable: dict[str, dict] = {}
    for key in store.iter_keys():
        try:
            record = store.read_record(key)
        except FileNotFoundError:
            continue
        except BadEntry as exc:
            corrupt_records.append({"key": key, "problem": exc.problem})
            continue
        for b in record_blobs(record):
            blob_users.setdefault(b, []).append(key)
        problem = output_set_problem(record, read=lambda name, r=record: _output(store, r, name))
        if problem is not None:  # as corrupt as a bad checksum, but its inputs are known
            corrupt_records.append({"key": key, "problem": problem})
            rebuildable[key] = record
            continue
        intact[key] = record
    blobs = sorted(set(store.iter_blobs()) | set(blob_users))
    bad_blobs = []
    for digest in blobs:
        state = _blob_state(store, digest)
        if state != "ok":
            bad_blobs.append({"blob": digest, "state": state, "keys": blob_users.get(digest, [])})
    return {
        "corrupt_records": corrupt_records,
        "bad_blobs": bad_blobs,
        "intact": intact,
        "rebuildable": rebuildable,
        "blobs": len(blobs),
    }


def _restore(store: Store, record: dict, lost: set[str]) -> tuple[str, str]:
    """Rebuild an entry (a record that names a lost blob, or has the wrong outputs) from
    its recorded inputs and store it again: ("rebuilt", detail), or ("removed", why) after
    removing its record (it cannot be rebuilt here), or ("failed", why)."""
    key = record["key"]
    outputs = {ref["hash"] for ref in record["outputs"].values()}
    lost_inputs = sorted((lost & set(record_blobs(record))) - outputs)
    if lost_inputs:
        why = f"its input blob {lost_inputs[0]} is lost, so it cannot be rebuilt here"
    else:
        result, rebuilt = recompile_record(store, record)
        if rebuilt is not None:
            if store.put_record(key, record["manifest"], rebuilt, record["info"]) is None:
                return "failed", f"cannot store it again: {store.write_problem}"
            recorded = {n: ref["hash"] for n, ref in record["outputs"].items()}
            hashes = {n: content_hash(d) for n, d in rebuilt.items()}
            differ = sorted(n for n in hashes.keys() & recorded.keys() if hashes[n] != recorded[n])
            written = sorted(outputs & lost)
            if written:
                what = f"blob {', '.join(written)} written again"
            elif set(rebuilt) != set(recorded):
                what = "its record replaced, with the outputs of its step"
            else:
                what = "its record replaced"
            tail = (
                f" ({', '.join(differ)} differ from the recorded bytes: stored as rebuilt)"
                if differ
                else ""
            )
            return "rebuilt", what + tail
        why = {
            "missing-input": f"its {result['detail']} is missing, so it cannot be rebuilt here",
            "other-compiler": f"it was {result['detail']}, not this one",
        }.get(result["status"], f"it does not compile here ({result['detail']})")
    problem = remove_entry(store.record_path(key))
    if problem is not None:
        return "failed", f"{why}, and its record cannot be removed ({problem})"
    return "removed", f"{why}; the next build that needs it compiles it"


def repair(store: Store, found: dict) -> dict:
    """Remove what `check` found damaged and rebuild (or remove) the entries that used a
    lost blob. Returns {"removed_records", "removed_blobs": [...], "rebuilt",
    "removed_entries": [{"key", "detail"}], "failed": [{"item", "detail"}]}."""
    done: dict[str, list] = {
        "removed_records": [],
        "removed_blobs": [],
        "rebuilt": [],
        "removed_entries": [],
        "failed": [],
    }
    for r in found["corrupt_records"]:
        if r["key"] in found["rebuildable"]:
            continue  # rebuilt below, its record replaced
        problem = remove_entry(store.record_path(r["key"]))
        if problem is None:
            done["removed_records"].append(r["key"])
        else:
            done["failed"].append(
                {"item": f"record {r['key']}", "detail": f"cannot be removed ({problem})"}
            )
    lost, stuck = set(), set()  # blobs gone now; keys whose bad blob is still there
    for b in found["bad_blobs"]:
        problem = None if b["state"] == "missing" else remove_entry(store.blob_path(b["blob"]))
        if problem is not None:
            done["failed"].append(
                {"item": f"blob {b['blob']}", "detail": f"cannot be removed ({problem})"}
            )
            stuck.update(b["keys"])
            continue
        lost.add(b["blob"])
        if b["state"] != "missing":
            done["removed_blobs"].append(b["blob"])
    damaged = {k for b in found["bad_blobs"] for k in b["keys"]} & set(found["intact"])
    records = found["intact"] | found["rebuildable"]
    for key in sorted((damaged | set(found["rebuildable"])) - stuck):
        outcome, detail = _restore(store, records[key], lost)
        if outcome == "failed":
            done["failed"].append({"item": f"entry {key}", "detail": detail})
        else:
            done["rebuilt" if outcome == "rebuilt" else "removed_entries"].append(
                {"key": key, "detail": detail}
            )
    return done


def _counted(n: int, what: str, plural: str | None = None) -> str:
    return f"{n} {what if n == 1 else plural or what + 's'}"


def _found_text(found: dict) -> str:
    """ "1 corrupt record, 2 corrupt blobs and 1 missing blob" """
    kinds: dict[str, int] = {}
    if found["corrupt_records"]:
        kinds["corrupt record"] = len(found["corrupt_records"])
    for b in found["bad_blobs"]:
        name = f"{b['state'].split(' ')[0]} blob"
        kinds[name] = kinds.get(name, 0) + 1
    parts = [_counted(n, what) for what, n in kinds.items()]
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def _done_text(done: dict) -> str:
    """ "removed 1 blob; rebuilt 1 entry" """
    n = {name: len(items) for name, items in done.items()}
    removed = [
        _counted(n[name], what)
        for name, what in (("removed_records", "record"), ("removed_blobs", "blob"))
        if n[name]
    ]
    parts = [f"removed {' and '.join(removed)}"] if removed else []
    if n["rebuilt"]:
        parts.append(f"rebuilt {_counted(n['rebuilt'], 'entry', 'entries')}")
    if n["removed_entries"]:
        parts.append(
            f"removed {_counted(n['removed_entries'], 'entry', 'entries')} that cannot be "
            "rebuilt here (the next build compiles them)"
        )
    if n["failed"]:
        parts.append(f"could not repair {n['failed']} (see above)")
    return "; ".join(parts)


def _repair_lines(done: dict) -> list[str]:
    lines = [f"  removed record {k}" for k in done["removed_records"]]
    lines += [f"  removed blob {b}" for b in done["removed_blobs"]]
    lines += [f"  rebuilt entry {e['key']}: {e['detail']}" for e in done["rebuilt"]]
    lines += [f"  removed entry {e['key']}: {e['detail']}" for e in done["removed_entries"]]
    lines += [f"  CANNOT REPAIR {f['item']}: {f['detail']}" for f in done["failed"]]
    return lines


def verify(store: Store, *, repair_it: bool, rebuild: bool, cache_dir: str | None):
    """(ok, JSON document, text lines) of `cache verify`."""
    found = check(store)
    problems = bool(found["corrupt_records"] or found["bad_blobs"])
    done = repair(store, found) if repair_it and problems else None
    rebuilds = []
    if rebuild:
        damaged = {k for b in found["bad_blobs"] for k in b["keys"]}
        rebuilds = [
            rebuild_record(store, record)
            for key, record in found["intact"].items()
            if key not in damaged
        ]
    differing = [r for r in rebuilds if r["status"] != "same"]
    entries = len(found["intact"]) + len(found["corrupt_records"])
    lines = [f"verified {found['blobs']} blobs and {entries} entries in {store.root}"]
    lines += [f"  CORRUPT record {r['key']}: {r['problem']}" for r in found["corrupt_records"]]
    lines += [
        f"  {b['state'].upper() if ' ' not in b['state'] else b['state'].capitalize()} blob "
        f"{b['blob']} (used by {', '.join(b['keys']) or 'no entry'})"
        for b in found["bad_blobs"]
    ]
    if done is not None:
        lines += _repair_lines(done)
        lines.append(f"found {_found_text(found)}: {_done_text(done)}")
    elif problems:
        command = "vyre-build cache verify --repair"
        if cache_dir:
            command += f" --cache-dir {shlex.quote(cache_dir)}"
        lines.append(
            f"found {_found_text(found)}; nothing was changed: `{command}` repairs the cache "
            "(removes what is corrupt, rebuilds each entry that uses a lost blob)"
        )
    if rebuild:
        lines.append(f"rebuilt {len(rebuilds)} entries: {len(rebuilds) - len(differing)} identical")
        for r in differing:
            lines.append(f"  {r['status'].upper()} {r['key']} {r['detail']}".rstrip())
            lines += [
                f"    {d['output']}: first differing byte at {d['first_offset']} "
                f"(stored {d['stored_size']} bytes, rebuilt {d['rebuilt_size']})"
                for d in r["differences"]
            ]
    repaired = problems and done is not None and not done["failed"]
    ok = (not problems or repaired) and not differing
    lines.append("OK" if ok else "FAILED")
    data = {
        "ok": ok,
        "blobs": found["blobs"],
        "entries": entries,
        "corrupt_records": found["corrupt_records"],
        "bad_blobs": found["bad_blobs"],
        "repair": done,
        "rebuilds": rebuilds if rebuild else None,
    }
    return ok, data, lines
