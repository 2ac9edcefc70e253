"""The reader's manifest records, decoded on first use (a mixin of `BundleReader`).

At open (`_load_manifest`), a manifest in the writer's canonical layout is only split into
its records (bundle/manifest.py's `split_canonical`): the kernel ids, the tuning data and
each record's undecoded index and metadata text; any other manifest is decoded and checked
whole (`_whole`, `_take`). Then each kernel's artifact index is parsed on its first use
(`_artifacts`; the first use of any checks every range: `_check_ranges`) and its metadata
record decoded and checked on its first use (`_meta`, once the split up to it is proven:
`_prove_split`), or many in one pass (`decode_metas`). A record or index not in the
writer's form has the whole manifest decoded then (`_fall_back`), and its refusal kept for
every later first use.

The mixin reads the reader's `_text`, `_counts`, `_manifest_offset` and `version`, sets
its `tuning` and raises through its `_fail` (which names the file).
"""

from __future__ import annotations

from vyre_build.bundle.manifest import (
    Checked,
    balanced,
    check_ids,
    check_manifest,
    check_record_meta,
    decode_strict,
    index_ranges,
    meta_spans,
    parse_index,
    split_canonical,
)
from vyre_build.core.errors import BundleError


class ManifestRecords:
    """Mixin: the manifest's records for BundleReader, decoded and checked on first use."""

    def _init_records(self) -> None:
        """The records' state, before `_load_manifest`: nothing decoded yet."""
        self._metas: dict[str, dict] = {}  # decoded metadata records by id (_meta)
        self._arts: dict[str, dict] = {}  # parsed artifact indexes by id (_artifacts)
        self._ranges: list[tuple[int, int]] | None = None  # every artifact's, sorted
        self._indexes: list[str] | None = None  # canonical: undecoded index texts
        self._rests: list[str] = []  # canonical: metadata texts, each then "},"
        self._last_meta = ""
        self._proven = 0  # metadata spans proven whole (_prove_split)
        self._refusal: BundleError | None = None  # the whole manifest's, found at a use

    def _load_manifest(self) -> None:
        """Split the manifest `_text` into its records (the writer's layout), or decode and
        check it whole; then the kernel ids and their order are known."""
        text, n_kernels = self._text, self._counts[0]
        split = split_canonical(text, n_kernels)
        if split is not None and not check_ids(split.ids, self._fail):
            split = None  # an id spelled with an escape: the whole decode reads it
        if split is not None:
            if split.version != self.version:
                raise self._fail(
                    f"manifest version {split.version!r} does not match the header's {self.version}"
                )
            elif split.tuning is not None:
                try:
                    tuning = decode_strict(split.tuning, "the manifest", self._fail)
                except BundleError:  # not the writer's split: the full decoder names it
                    split = None
                else:
                    self._set_tuning(tuning)
        if split is None:  # not the writer's layout: decode and check it whole
            self._take(self._whole())
        else:
            self._ids = split.ids
            self._indexes, self._rests = split.indexes, split.rests
            self._last_meta = split.last_meta
        self._order = dict(zip(self._ids, range(len(self._ids))))

    def _check_ranges(self) -> None:
        """Checks 7 and 8 of the artifact indexes of a canonical split, as a whole (before
        any artifact is served, or the padding is read): counts, bounds, alignment,
        overlaps (`index_ranges`); where they fail, the whole decode names the problem."""
        if self._ranges is None:
            found = index_ranges(self._indexes, self._counts[1], self._manifest_offset)
            if found is None:
                self._fall_back()
            else:
                self._ranges = found

    def _fall_back(self) -> None:
        """A canonical split found a record or an index not in the writer's form at a use:
        decode and check the manifest whole, as an open of another layout does, and serve
        its records from now on, or keep its refusal for this and every later first use."""
        self._refused()
        try:
            checked = self._whole()
            if list(checked.artifacts) != self._ids:
                raise self._fail(
                    "the manifest's records are not the ones its canonical split found "
                    f"({len(checked.artifacts)} against {len(self._ids)})"
                )
            self._take(checked)
        except BundleError as exc:
            self._refusal = exc
            raise

    def _refused(self) -> None:
        """Raise the refusal `_fall_back` kept, if any (a new error, the same message)."""
        if self._refusal is not None:
            raise BundleError(str(self._refusal))

    def _whole(self) -> Checked:
        """The manifest decoded and checked whole (any layout), or its refusal."""
        doc = decode_strict(self._text, "the manifest", self._fail)
        return check_manifest(
            doc, self.version, self._manifest_offset, self._fail, self._set_tuning
        )

    def _take(self, checked: Checked) -> None:
        """Serve the records of the whole decode `checked` from now on (after check 8:
        the header's counts)."""
        n_kernels, n_artifacts = self._counts
        if len(checked.artifacts) != n_kernels:
            raise self._fail(
                f"header kernel count {n_kernels} does not match the manifest's "
                f"{len(checked.artifacts)}"
            )
        if len(checked.ranges) != n_artifacts:
            raise self._fail(
                f"header artifact count {n_artifacts} does not match the manifest's "
                f"{len(checked.ranges)}"
            )
        self._ids = list(checked.artifacts)
        self._arts = checked.artifacts
        for ident, meta in checked.metas.items():
            self._metas.setdefault(ident, meta)
        self._ranges = [(s, e) for s, e, _, _ in checked.ranges]
        self._indexes = None

    def _set_tuning(self, doc: object) -> None:
        """Check the manifest's tuning data (bundle/tuning.py) and keep it as `tuning`."""
        from vyre_build.bundle.tuning import check_tuning

        try:
            self.tuning = check_tuning(doc)
        except BundleError as exc:
            raise self._fail(f"in the manifest: {exc}") from None

    # -- records, on first use --

    def _artifacts(self, ident: str) -> dict:
        """Kernel `ident`'s artifact index (suffix -> {"blake3", "offset", "size"}), parsed
        on first use; the first use of any checks every range first (`_check_ranges`). An
        index not in the writer's form has the whole manifest decoded then (`_fall_back`)."""
        arts = self._arts.get(ident)
        if arts is None:
            self._refused()
            self._check_ranges()
            arts = self._arts.get(ident)  # every index, when the whole decode took over
            if arts is None:
                arts = parse_index(self._indexes[self._order[ident]])
                if arts is None:
                    self._fall_back()
                    return self._arts[ident]
                arts = self._arts.setdefault(ident, arts)
        return arts

    def _meta(self, ident: str) -> dict:
        """The manifest record of kernel `ident`'s metadata, decoded and checked (JSON,
        shape, `meta.id`) on first use. Do not modify it."""
        meta = self._metas.get(ident)
        if meta is None:
            at = self._order[ident]
            self._prove_split(at)
            meta = self._metas.get(ident)  # every record, when the whole decode took over
            if meta is None:
                meta = decode_strict(self._span(at), f"kernel {ident!r} metadata", self._fail)
                check_record_meta(ident, meta, self._fail)
                meta = self._metas.setdefault(ident, meta)
        return meta

    def _span(self, at: int) -> str:
        return self._rests[at][:-2] if at < len(self._rests) - 1 else self._last_meta

    def decode_metas(self, idents: list[str]) -> None:
        """Decode the metadata records of `idents` not decoded yet in one pass (what
        `Bundle.warm()` asks for): their spans, proven whole as `_meta` proves them, are
        decoded as one strict JSON array, so each record gets the checks of `_meta` (no
        duplicate key, NaN or infinity; the record's shape and id) for one decoder call
        instead of one per kernel. Where the batch does not decode, nothing is kept: each
        record's first use decodes it alone and names its problem. Unknown ids are left
        to that use too."""
        todo = sorted(
            {i for i in idents if i in self._order and i not in self._metas},
            key=self._order.__getitem__,
        )
        if len(todo) < 2:
            return
        try:
            self._prove_split(self._order[todo[-1]])
        except BundleError:  # the records before the bad one are still served alone
            return
        spans = map(self._span, map(self._order.__getitem__, todo))
        try:
            metas = decode_strict("[" + ",".join(spans) + "]", "metadata", self._fail)
        except BundleError:
            return
        # a span holding more than one value (or none) changes the count: each its own then
        if type(metas) is not list or len(metas) != len(todo):
            return
        for ident, meta in zip(todo, metas):
            try:
                check_record_meta(ident, meta, self._fail)
            except BundleError:  # refused, with this reason, where it is used
                continue
            self._metas.setdefault(ident, meta)

    def _prove_split(self, at: int) -> None:
        """That the cuts up to record `at` are the document's (`split_canonical`): each
        record ends right after its metadata, and the metadata spans up to and including
        its own pair their brackets; proven once, in order, so each span is scanned at most
        once whatever is used. A record not in the writer's layout has the whole manifest
        decoded (`_fall_back`)."""
        done = self._proven
        if at < done or self._indexes is None:
            return
        spans = meta_spans(self._rests, self._last_meta, done, at + 1)
        if spans is None:
            self._fall_back()
            return
        if not balanced(spans):
            decode_strict(self._text, "the manifest", self._fail)  # raises its reason
            raise self._fail("bad JSON in the manifest: a metadata record is cut short")
        self._proven = max(self._proven, at + 1)
