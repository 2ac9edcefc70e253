"""Bundle reader: lazy, bounds-checked, hash-verified.

Opening costs what is used: the header, the signature block, the manifest's hash (the
file mapped, the manifest hashed and decoded where it lies) and, of a manifest in the
writer's canonical layout, split into its records at C speed (bundle/manifest.py), the
kernel ids. The first use of any kernel's artifact index checks every artifact range;
each kernel's index is parsed, and its metadata decoded with every check of a full decode
(duplicate keys, NaN, depth, the record's shape), on its first use (`kernel_meta`,
`entry`, `read_artifact`, `verify`). Any other manifest is decoded and checked whole at
open, as before (docs/bundle-format.md, "What the reader checks").

This module holds the reader's file, its opening and its queries; the records' decoding
on first use is records.py's (a mixin), the byte-level checks integrity.py's.
"""

from __future__ import annotations

import copy
import difflib
import io
import os
import threading

from vyre_build.bundle import signing
from vyre_build.bundle.format import VERSION, _hash, kernel_id
from vyre_build.bundle.integrity import check_header, check_padding, manifest_text, pread
from vyre_build.bundle.metadata import KernelMeta
from vyre_build.bundle.metadata_check import check_metadata
from vyre_build.bundle.records import ManifestRecords
from vyre_build.core.errors import BundleError
from vyre_build.core.files import open_regular

SHOWN_IDS = 12  # a lookup's error lists every id of a bundle this small, else counts them


class BundleEntry:
    """One kernel (and variant) of a bundle: `id`, `name`, `variant`, its metadata record
    `meta` and artifact index `artifacts` (suffix -> {"offset", "size", "blake3"})."""

    __slots__ = ("id", "name", "variant", "meta", "artifacts")

    def __init__(self, id: str, name: str, variant: str | None, meta: dict, artifacts: dict):  # noqa: A002
        self.id, self.name, self.variant = id, name, variant
        self.meta, self.artifacts = meta, artifacts

    def __eq__(self, other) -> bool:
        return type(other) is BundleEntry and all(
            getattr(self, f) == getattr(other, f) for f in self.__slots__
        )

    __hash__ = None  # mutable dicts inside

    def __repr__(self) -> str:
        return f"BundleEntry(id={self.id!r}, artifacts={sorted(self.artifacts)})"


class BundleReader(ManifestRecords):
    """An open bundle. Construct with `read_bundle(path)` or `read_bundle_bytes(data)`.

    Opening checks the header, the signature when keys are pinned (before anything else
    is read), the manifest's hash and its ids, and with keys pinned every artifact range
    and that the padding between artifacts, which no hash covers, is zero. The first use
    of any kernel's artifact index checks every artifact range (bounds, alignment,
    overlaps, count); each kernel's index and metadata record are parsed and checked on
    its first use; `read_artifact` reads and verifies artifact bytes on first use, then
    serves them from memory. `signature` is the Signature block (None when
    unsigned), `signer` the trusted PublicKey that signed it (None when no keys were
    pinned). Safe to share between threads. Use as a context manager or `close()`.
    """

    def __init__(
        self, source: io.FileIO | bytes, name: str, size: int, trusted: list | None = None
    ):
        """`source`: the bundle's bytes, or its file (unbuffered), which the reader owns
        and closes (at once when the open fails)."""
        self._file = source if isinstance(source, io.FileIO) else None
        self._mem = None if self._file is not None else bytes(source)
        self._closed = False
        self.path = name
        self._size = size
        self._trusted = trusted
        self.version, self.signature, self.signer = VERSION, None, None
        self.tuning: dict = {"tunables": {}, "records": []}  # the manifest's tuning data
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], bytes] = {}
        self._checked: dict[str, KernelMeta] = {}
        self._init_records()
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _fail(self, reason: str) -> BundleError:
        return BundleError(f"{self.path}: {reason}")

    # -- reading --

    def _read_at(self, offset: int, size: int) -> bytes:
        """Read exactly `size` bytes at `offset` (already checked against the file size)."""
        with self._lock:
            if self._closed:
                raise self._fail("bundle is closed")
            if self._mem is not None:
                data = self._mem[offset : offset + size]
            else:
                try:
                    data = pread(self._file.fileno(), size, offset)
                except OSError as exc:
                    raise self._fail(
                        f"cannot read bytes {offset}..{offset + size}: {exc.strerror}"
                    ) from None
        if len(data) != size:
            raise self._fail(
                f"truncated at byte {offset + len(data)}: needed bytes "
                f"{offset}..{offset + size} (the file shrank after opening?)"
            )
        return data

    # -- opening --

    def _open(self) -> None:
        head = check_header(self)  # checks 1-4, and with keys pinned the signature
        m_off, n_kernels, n_artifacts = head.m_off, head.n_kernels, head.n_artifacts
        self._manifest_offset, self._counts = m_off, (n_kernels, n_artifacts)
        self._text = manifest_text(self, head)
        self._load_manifest()
        if self._trusted is not None:
            self._check_ranges()
            self._check_padding(m_off)

    def _check_padding(self, m_off: int) -> None:  # bench/padding_check_bench.py times it
        check_padding(self, m_off)

    # -- queries --

    @property
    def ids(self) -> list[str]:
        """Sorted kernel ids, e.g. ["add.f32", "add.i32", "saxpy"]."""
        return list(self._ids)

    def _record(self, ident: str) -> dict:
        """{"id", "artifacts"} of kernel `ident` (its index parsed now if it was not)."""
        if not isinstance(ident, str):
            raise self._fail(f"kernel id must be a string, got {ident!r}")
        if ident not in self._order:
            variants = sorted(i[len(ident) + 1 :] for i in self._ids if i.startswith(ident + "."))
            hint = (
                f"; it has variants {', '.join(variants)}: ask for one"
                if variants
                else self._near_misses(ident)
            )
            raise self._fail(f"no kernel {ident!r} in the bundle{hint}")
        return {"id": ident, "artifacts": self._artifacts(ident)}

    def _near_misses(self, ident: str) -> str:
        """What a lookup of an unknown `ident` says after "no kernel ...": the closest ids
        and names (difflib) first, then every id of a small bundle or the count of a big
        one (a misspelt name should not scroll 63 ids past)."""
        names = {i.partition(".")[0] for i in self._ids} - set(self._ids)
        close = difflib.get_close_matches(ident, self._ids, n=3)
        close = close or difflib.get_close_matches(ident, sorted(names), n=3)  # "add" of add.f32
        guess = f"; did you mean {' or '.join(repr(c) for c in close)}? It" if close else "; it"
        if len(self._ids) <= SHOWN_IDS:
            return f"{guess} holds {', '.join(self._ids) or 'no kernels'}"
        return (
            f"{guess} holds {len(self._ids)} kernels "
            f"(`vyre-build bundle ls {self.path}` lists them)"
        )

    def entry(self, name: str, variant: str | None = None) -> BundleEntry:
        """The kernel `name` (variant `variant`, or an id "name.variant" as `name`)."""
        if not isinstance(name, str) or not (variant is None or isinstance(variant, str)):
            raise self._fail(f"kernel name and variant must be strings, got {name!r}, {variant!r}")
        rec = self._record(kernel_id(name, variant))
        self.kernel_meta(rec["id"])
        meta = copy.deepcopy(self._meta(rec["id"]))
        return BundleEntry(
            rec["id"], meta["name"], meta["variant"], meta, copy.deepcopy(rec["artifacts"])
        )

    def kernel_meta(self, ident: str) -> KernelMeta:
        """The checked metadata of kernel `ident` (checked on its first read; BundleError
        naming the field when malformed). Its `record` is the manifest's: do not modify it."""
        checked = self._checked.get(ident)
        if checked is None:
            meta = self._meta(self._record(ident)["id"])
            checked = self._checked[ident] = check_metadata(meta, f"{self.path}: kernel {ident!r}")
        return checked

    def entries(self) -> list[BundleEntry]:
        """Every entry, in id order."""
        return [self.entry(i) for i in self._ids]

    def read_artifact(self, ident: str, suffix: str) -> bytes:
        """The bytes of artifact `suffix` of kernel `ident`, verified by blake3 on first read."""
        key = (ident, suffix)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        arts = self._record(ident)["artifacts"]
        info = arts.get(suffix)
        if info is None:
            have = ", ".join(sorted(arts)) or "none"
            raise self._fail(f"kernel {ident!r} has no {suffix!r} artifact (it has {have})")
        data = self._read_at(info["offset"], info["size"])
        if _hash(data) != info["blake3"]:
            raise self._fail(
                f"kernel {ident!r} artifact {suffix!r}: blake3 mismatch at bytes "
                f"{info['offset']}..{info['offset'] + info['size']} (corrupt "
                f"bundle; rebuild it)"
            )
        self._cache[key] = data
        return data

    def verify(self) -> list[str]:
        """Re-read and check every byte; return the problems found (empty when sound).

        Checks each artifact's blake3 (re-read from disk, not from the cache), that the
        padding between ranges is zero and no bytes lie outside a range, each kernel's
        artifact index and metadata (decoded if no use did yet), that the manifest is in
        canonical form and, in a signed bundle, that the signature is valid for the
        public key in its block (whether that key is trusted is `signer`'s job). Artifact
        indexes that the manifest's checks refuse raise that BundleError.
        """
        from vyre_build.bundle.integrity import verify

        return verify(self)

    # -- lifetime --

    def close(self) -> None:
        """Close the file; cached artifact bytes stay readable, uncached ones raise."""
        with self._lock:
            self._closed = True
            if self._file is not None:
                self._file.close()

    def __enter__(self) -> BundleReader:  # noqa: PYI034 - typing.Self needs Python 3.11
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<BundleReader {self.path!r}: {len(self._ids)} kernels>"


def read_bundle(path: str | os.PathLike, *, trusted_keys=None) -> BundleReader:
    """Open the bundle at `path` lazily (header and manifest only); see `BundleReader`.

    Arguments:
        path: the .vyrebundle file.
        trusted_keys: public key files or PublicKeys of which one must have signed the
            bundle (refused before the manifest is read otherwise); None: those of
            $VYRE_TRUSTED_KEYS, or no check when it is unset; False: no check at all.
    """
    trusted = signing.resolve_trusted_keys(trusted_keys)
    name = os.fspath(path)
    try:
        fd, info = open_regular(name)  # a FIFO or a device is refused, never waited on
    except OSError as exc:
        raise BundleError(f"{name}: cannot open bundle: {exc.strerror or exc}") from None
    f = open(fd, "rb", buffering=0)  # noqa: SIM115 - the reader owns the file until close()
    return BundleReader(f, name, info.st_size, trusted)


def read_bundle_bytes(
    data: bytes, name: str = "<bundle bytes>", *, trusted_keys=None
) -> BundleReader:
    """Open a bundle held in memory (same checks and `trusted_keys` as `read_bundle`)."""
    trusted = signing.resolve_trusted_keys(trusted_keys)
    return BundleReader(bytes(data), name, len(data), trusted)
