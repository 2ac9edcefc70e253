"""Fuzz the two binary formats: bundles and `.kdesc` descriptor blobs.

Every truncation, single-byte mutations at every offset, and hypothesis-generated
garbage: the readers either accept (and then stay consistent) or refuse with their
documented error class (BundleError / DescriptorError), quickly and without allocating
from an unchecked length. Any other exception fails the test.
"""

from __future__ import annotations

import json
import struct
import time
import tracemalloc

import blake3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vyre_build.bundle import HEADER_SIZE, MAGIC, VERSION, encode_bundle, read_bundle_bytes
from vyre_build.descriptor import (
    BindingSlot,
    DescriptorError,
    KernelBody,
    KernelDescriptor,
    KernelOp,
    Variant,
    decode,
    encode,
)
from vyre_build.core.errors import BundleError

FUZZ = settings(max_examples=200, deadline=500, suppress_health_check=[HealthCheck.too_slow])
# One decode or open of a few-KB input; generous for a loaded 2-core machine.
CALL_BUDGET_S = 5.0  # a hang guard, not a speed target (speed is benched)


# --- inputs built by hand ----------------------------------------------------------------


def _v(name: str, *args) -> Variant:
    return Variant(name, tuple(args))


def worked_example() -> KernelDescriptor:
    """The 37-byte example of shared/spec/kernel-descriptor.md."""
    return KernelDescriptor(
        "k",
        (BindingSlot(0, _v("U32"), 64, "Global", "ReadWrite", "out"),),
        (64, 1, 1),
        KernelBody(
            ops=(
                KernelOp(_v("Literal"), (0,), 0),
                KernelOp(_v("GlobalInvocationId"), (0,), 1),
                KernelOp(_v("StoreGlobal"), (0, 1, 0), None),
            ),
            literals=(_v("U32", 7),),
        ),
    )


def saxpy_like() -> KernelDescriptor:
    """Bindings of every class, nested bodies, a for loop, atomics, every literal kind."""
    loop_body = KernelBody(
        ops=(
            KernelOp(_v("LoopIndex", "i"), (), 10),
            KernelOp(_v("LoadGlobal"), (0, 10), 11),
            KernelOp(_v("Atomic", _v("Add"), "Relaxed"), (3, 10, 11), 12),
            KernelOp(_v("OpaqueNode", "vyre.break", b""), (), None),
        )
    )
    then_body = KernelBody(
        ops=(
            KernelOp(_v("Literal"), (0,), 5),
            KernelOp(_v("LoadGlobal"), (0, 1), 6),
            KernelOp(_v("LoadConstant"), (2, 5), 7),
            KernelOp(_v("Fma"), (7, 6, 6), 8),
            KernelOp(_v("Cast", _v("I32")), (8,), 9),
            KernelOp(_v("StructuredForLoop", "i"), (5, 1, 0), None),
            KernelOp(_v("StoreGlobal"), (1, 1, 8), None),
            KernelOp(_v("Barrier", "AcqRel"), (), None),
        ),
        children=(loop_body,),
        literals=(_v("U32", 0),),
    )
    return KernelDescriptor(
        "saxpy.f32",
        (
            BindingSlot(0, _v("F32"), None, "Global", "ReadOnly", "x"),
            BindingSlot(1, _v("F32"), None, "Global", "ReadWrite", "y"),
            BindingSlot(2, _v("F32"), 1, "Uniform", "ReadOnly", "a"),
            BindingSlot(3, _v("U32"), None, "Global", "ReadWrite", "count"),
            BindingSlot(1 << 24, _v("F32"), 256, "Shared", "ReadWrite", "tile"),
        ),
        (256, 1, 1),
        KernelBody(
            ops=(
                KernelOp(_v("GlobalInvocationId"), (0,), 0),
                KernelOp(_v("BufferLength"), (1,), 1),
                KernelOp(_v("BinOpKind", _v("Lt")), (0, 1), 2),
                KernelOp(_v("UnOpKind", _v("LogicalNot")), (2,), 3),
                KernelOp(_v("Select"), (2, 0, 1), 4),
                KernelOp(_v("StructuredIfThen"), (2, 0), None),
                KernelOp(_v("Return"), (), None),
            ),
            children=(then_body,),
            literals=(
                _v("U32", 300),
                _v("I32", -70000),
                _v("F32", 1.5),
                _v("Bool", True),
                _v("U32", 0xFFFFFFFF),
            ),
        ),
    )


def exotic_types() -> KernelDescriptor:
    """Nested DataTypes, a u64 payload, opaque bytes and a 300-byte name (3-byte varints)."""
    nested = _v(
        "Quantized",
        _v("Vec", _v("TensorShaped", _v("F16"), (2, 300, 70000)), 4),
        _v("PerGroup", 128),
        _v("PerChannel", 1),
    )
    return KernelDescriptor(
        "exotic",
        (
            BindingSlot(7, nested, 70000, "Scratch", "WriteOnly", "n" * 300),
            BindingSlot(9, _v("DeviceMesh", (1, 2, 3)), None, "Constant", "ReadOnly", "m"),
        ),
        (1, 65536, 1 << 20),
        KernelBody(
            ops=(
                KernelOp(_v("IndirectDispatch", 1 << 40), (), None),
                KernelOp(_v("OpaqueExpr", 0, "vyre.bitcast", b"\x0f"), (3,), 4),
                KernelOp(
                    _v("MatrixMma", "M16N8K16", "RowMajor", "ColMajor", "F16", "BF16", "F32"),
                    (1, 2, 3),
                    5,
                ),
                KernelOp(_v("Call", "helper"), (1, 2), 6),
            ),
            literals=(_v("F32", float("-inf")),),
        ),
    )


DESCRIPTORS = [worked_example(), saxpy_like(), exotic_types()]
BLOBS = [encode(d) for d in DESCRIPTORS]


def small_bundle() -> bytes:
    def meta(name, variant):
        return {
            "name": name,
            "variant": variant,
            "id": name + ("." + variant if variant else ""),
            "workgroup_size": [64, 1, 1],
            "grid": [64],
            "bindings": [],
            "uniform": None,
            "variant_values": {},
        }

    return encode_bundle(
        [
            {"meta": meta("k", None), "artifacts": {".kdesc": BLOBS[0], ".wgsl": b"fn main() {}"}},
            {"meta": meta("s", "f32"), "artifacts": {".spv": b"\x03\x02\x23\x07" * 3}},
        ]
    )


BUNDLE = small_bundle()


# --- drivers: the only outcomes allowed ---------------------------------------------------


def try_decode(blob: bytes):
    """decode(blob) or the DescriptorError; also bounds its time."""
    t = time.perf_counter()
    try:
        result = decode(blob)
    except DescriptorError as exc:
        result = exc
    assert time.perf_counter() - t < CALL_BUDGET_S, f"decode took too long on {blob[:64]!r}"
    return result


def check_decoded(blob: bytes) -> None:
    """Accepted blobs stay consistent: re-encoding and decoding gives the same descriptor."""
    result = try_decode(blob)
    if isinstance(result, DescriptorError):
        assert str(result).startswith("malformed descriptor at byte ")
        return
    assert decode(encode(result)) == result


def try_bundle(data: bytes):
    """Open, verify and read everything; return the problems found or the BundleError."""
    t = time.perf_counter()
    try:
        with read_bundle_bytes(data, "fuzz.vyrebundle") as r:
            problems = r.verify()
            for ident in r.ids:
                entry = r.entry(ident)
                for suffix in entry.artifacts:
                    try:
                        r.read_artifact(ident, suffix)
                    except BundleError as exc:
                        problems.append(str(exc))
    except BundleError as exc:
        problems = exc
    assert time.perf_counter() - t < CALL_BUDGET_S, f"bundle took too long on {data[:96]!r}"
    return problems


# --- descriptor blobs ---------------------------------------------------------------------


def test_hand_built_blobs_round_trip():
    assert BLOBS[0] == bytes.fromhex(
        "01 6b 01 00 02 01 40 00 02 03 6f 75 74 40 01 01 03 00 01 00 01 00 03 01 00"
        "01 01 0f 03 00 01 00 00 00 01 00 07"
    )
    for d, blob in zip(DESCRIPTORS, BLOBS):
        assert decode(blob) == d


@pytest.mark.parametrize("which", range(len(BLOBS)))
def test_descriptor_every_truncation_is_refused(which):
    blob = BLOBS[which]
    for n in range(len(blob)):
        result = try_decode(blob[:n])
        assert isinstance(result, DescriptorError), f"prefix of {n} bytes decoded"
        offset = int(str(result).split("at byte ")[1].split(":")[0])
        assert offset <= n, str(result)


@pytest.mark.parametrize("which", range(len(BLOBS)))
def test_descriptor_every_byte_mutation(which):
    blob = BLOBS[which]
    for i in range(len(blob)):
        for new in {blob[i] ^ 0x01, blob[i] ^ 0x80, 0x00, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF}:
            check_decoded(blob[:i] + bytes([new]) + blob[i + 1 :])


@pytest.mark.parametrize(
    "blob, reason",
    [
        (b"\xfd" + (1 << 63).to_bytes(8, "little"), "length"),  # id length 2^63
        (b"\x01k\xfd" + (1 << 62).to_bytes(8, "little"), "length"),  # 2^62 slots
        (b"\x01k\x00" + b"\x01\x01\x01" + b"\xfd" + (1 << 60).to_bytes(8, "little"), "length"),
        (b"\x00\x00\xfc" + (1 << 31).to_bytes(4, "little"), "needs"),  # wg varint, truncated
        (b"\xff", "invalid varint marker 255"),
        (b"\xfe" + b"\0" * 16, "invalid varint marker 254"),
    ],
)
def test_descriptor_huge_lengths_are_checked_before_allocating(blob, reason):
    tracemalloc.start()
    try:
        result = try_decode(blob)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert isinstance(result, DescriptorError) and reason in str(result)
    assert peak < 1 << 20, f"decode allocated {peak} bytes for a {len(blob)}-byte blob"


def test_descriptor_deep_nesting_is_refused():
    # DataType::Vec{Vec{...}} 200 deep: refused by the depth cap, not a RecursionError.
    deep = b"\x01k\x01\x00" + b"\x13" * 200 + b"\x02" + b"\x04" * 200
    result = try_decode(deep)
    assert isinstance(result, DescriptorError) and "deeper than 64" in str(result)


@FUZZ
@given(st.binary(max_size=512))
def test_descriptor_garbage(blob):
    check_decoded(blob)


@FUZZ
@given(st.sampled_from(BLOBS), st.data())
def test_descriptor_spliced(blob, data):
    cut = data.draw(st.integers(0, len(blob)))
    tail = data.draw(st.binary(max_size=64))
    keep = data.draw(st.integers(0, len(blob) - cut))
    check_decoded(blob[:cut] + tail + blob[cut + keep :])


# --- bundles ------------------------------------------------------------------------------


def test_bundle_every_truncation_is_refused():
    for n in range(len(BUNDLE)):
        result = try_bundle(BUNDLE[:n])
        assert isinstance(result, BundleError), f"prefix of {n} bytes opened"
        assert f"truncated at byte {n}" in str(result), str(result)


def test_bundle_every_byte_mutation_is_detected():
    assert try_bundle(BUNDLE) == []
    for i in range(len(BUNDLE)):
        for mask in (0x01, 0x80, 0xFF):
            data = BUNDLE[:i] + bytes([BUNDLE[i] ^ mask]) + BUNDLE[i + 1 :]
            result = try_bundle(data)
            assert isinstance(result, BundleError) or result, f"byte {i} ^ {mask:#x} went unnoticed"


def _rehashed(manifest: bytes) -> bytes:
    """BUNDLE with its manifest replaced and the header fixed to match (size, hash)."""
    fields = list(struct.unpack("<8sIIQQQII32s", BUNDLE[:HEADER_SIZE]))
    m_off = fields[4]
    fields[3], fields[5] = m_off + len(manifest), len(manifest)
    fields[8] = blake3.blake3(manifest).digest()
    return struct.pack("<8sIIQQQII32s", *fields) + BUNDLE[HEADER_SIZE:m_off] + manifest


def test_bundle_huge_declared_sizes_allocate_nothing():
    fields = list(struct.unpack("<8sIIQQQII32s", BUNDLE[:HEADER_SIZE]))
    for index, value in ((3, 1 << 63), (4, 1 << 63), (5, (1 << 64) - 1)):
        forged = list(fields)
        forged[index] = value
        data = struct.pack("<8sIIQQQII32s", *forged) + BUNDLE[HEADER_SIZE:]
        tracemalloc.start()
        try:
            result = try_bundle(data)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert isinstance(result, BundleError)
        assert peak < 1 << 20, f"open allocated {peak} bytes for header field {index}={value}"


@FUZZ
@given(st.binary(max_size=512))
def test_bundle_garbage(data):
    assert isinstance(try_bundle(data), BundleError)


@FUZZ
@given(st.binary(max_size=256))
def test_bundle_garbage_after_magic(tail):
    assert isinstance(try_bundle(MAGIC + tail), BundleError)


@FUZZ
@given(
    st.tuples(
        st.integers(0, 3),
        st.integers(0, 3),
        st.integers(0, (1 << 64) - 1),
        st.integers(0, (1 << 64) - 1),
        st.integers(0, (1 << 64) - 1),
        st.integers(0, (1 << 32) - 1),
        st.integers(0, (1 << 32) - 1),
        st.binary(min_size=32, max_size=32),
    ),
    st.binary(max_size=256),
)
def test_bundle_forged_headers(fields, body):
    version, flags, *rest = fields
    data = struct.pack("<8sIIQQQII32s", MAGIC, version, flags, *rest) + body
    assert isinstance(try_bundle(data), BundleError)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(1 << 70), 1 << 70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@FUZZ
@given(JSON)
def test_bundle_manifest_arbitrary_json(value):
    # The hash matches, so the manifest's content checks are what must refuse it.
    manifest = json.dumps(value).encode()
    assert isinstance(try_bundle(_rehashed(manifest)), BundleError)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k in sorted(value):
            yield from _paths(value[k], (*prefix, k))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*prefix, i))


MANIFEST = json.loads(BUNDLE[struct.unpack_from("<Q", BUNDLE, 24)[0] :])
MANIFEST_PATHS = [p for p in _paths(MANIFEST) if p]


@FUZZ
@given(st.sampled_from(MANIFEST_PATHS), JSON)
def test_bundle_manifest_one_field_replaced(path, value):
    doc = json.loads(json.dumps(MANIFEST))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    data = _rehashed(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode())
    result = try_bundle(data)
    # Some replacements are harmless (meta.grid = 5); the rest must be refused by reason.
    if not isinstance(result, BundleError):
        with read_bundle_bytes(data) as r:
            assert r.ids == sorted(r.ids) == [k["id"] for k in doc["kernels"]]


def test_bundle_version_constant_is_checked():
    fields = list(struct.unpack("<8sIIQQQII32s", BUNDLE[:HEADER_SIZE]))
    fields[1] = VERSION + 1
    result = try_bundle(struct.pack("<8sIIQQQII32s", *fields) + BUNDLE[HEADER_SIZE:])
    assert isinstance(result, BundleError)
    assert f"unsupported bundle version {VERSION + 1}" in str(result)


# Text that looks like the manifest's own structure, to mix into generated values.
STRUCTURAL = st.sampled_from(
    ['},{"artifacts":{', '}],"version":2}', '"', "\\", "{", "}", "[", "]", "|", "é", "artifacts"]
)
# no lone surrogates: they have no UTF-8 form, so no writer can put them in a manifest
PIECES = st.lists(STRUCTURAL | st.characters(blacklist_categories=("Cs",)), max_size=6).map("".join)
SPELLING = st.recursive(
    st.none() | st.integers() | PIECES,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(PIECES | STRUCTURAL, c, max_size=4),
    max_leaves=12,
)


@FUZZ
@given(SPELLING, st.integers(0, 1))
def test_bundle_metadata_is_read_as_written_whatever_it_spells(value, kernel):
    """The canonical split (each record's metadata decoded on first use) reads what the
    writer wrote, whatever a metadata value spells, as decoding the manifest whole does."""
    doc = json.loads(json.dumps(MANIFEST))
    doc["kernels"][kernel]["meta"]["provenance"] = value
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    with read_bundle_bytes(_rehashed(text.encode())) as r:
        assert r.ids == [k["id"] for k in doc["kernels"]]
        assert [r.entry(i).meta for i in r.ids] == [k["meta"] for k in doc["kernels"]]
        assert [r.entry(i).artifacts for i in r.ids] == [k["artifacts"] for k in doc["kernels"]]
        assert r.verify() == []
