"""KernelDescriptor: the backend-neutral lowered kernel, and its `.kdesc` blob codec.

The wire layout is `shared/spec/kernel-descriptor.md` (bincode 2, standard config),
followed to the byte. Every enum of the schema is described once in `schema.ENUMS`
(variant names in declaration order with their payload types); encode and decode are one
table-driven walk over those tables, so adding nothing by hand can drift.

Guarantees: `decode(encode(d)) == d`; `decode` of any byte string either returns a
descriptor or raises `DescriptorError` with the byte offset and reason. It never
allocates from an unchecked length (every length is checked against the bytes left).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from vyre_build.core.errors import DescriptorFormatError
from vyre_build.descriptor.schema import ENUMS, UNIT_ENUMS

__all__ = [
    "Variant",
    "BindingSlot",
    "KernelOp",
    "KernelBody",
    "KernelDescriptor",
    "DescriptorError",
    "encode",
    "emit_target",
    "decode",
    "SHARED_SLOT_BASE",
]

# Shared (workgroup) and scratch (function-local) slots are numbered from here upward.
SHARED_SLOT_BASE = 1 << 24


@dataclass(frozen=True, order=True)
class Variant:
    """One value of a schema enum: its variant name and payload fields in order."""

    name: str
    args: tuple = ()

    def __repr__(self) -> str:
        return self.name if not self.args else f"{self.name}{self.args!r}"


@dataclass(frozen=True)
class BindingSlot:
    slot: int
    element_type: Variant  # DataType
    element_count: int | None
    memory_class: str  # Global | Shared | Constant | Uniform | Scratch
    visibility: str  # ReadOnly | WriteOnly | ReadWrite
    name: str


@dataclass(frozen=True)
class KernelOp:
    kind: Variant  # KernelOpKind
    operands: tuple[int, ...] = ()
    result: int | None = None


@dataclass(frozen=True)
class KernelBody:
    ops: tuple[KernelOp, ...] = ()
    children: tuple["KernelBody", ...] = ()
    literals: tuple[Variant, ...] = ()  # LiteralValue


@dataclass(frozen=True)
class KernelDescriptor:
    id: str
    slots: tuple[BindingSlot, ...]
    workgroup_size: tuple[int, int, int]
    body: KernelBody = field(default_factory=KernelBody)

    def slot(self, number: int) -> BindingSlot:
        for s in self.slots:
            if s.slot == number:
                return s
        raise KeyError(number)


class DescriptorError(DescriptorFormatError, ValueError):
    """A blob that does not decode under the schema (offset and reason in the text)."""


# --- the schema's tables (descriptor.schema), indexed for encoding ---------------------

_INDEX = {
    enum: {name: (i, payload) for i, (name, payload) in enumerate(vs)} for enum, vs in ENUMS.items()
}
_UNIT_INDEX = {enum: {name: i for i, name in enumerate(vs)} for enum, vs in UNIT_ENUMS.items()}

_U32_MAX = 0xFFFFFFFF
_LIMITS = {"u8": 0xFF, "u16": 0xFFFF, "u32": _U32_MAX, "u64": (1 << 64) - 1, "usize": (1 << 64) - 1}


# --- encoding ----------------------------------------------------------------------


def _varint(out: bytearray, v: int) -> None:
    if v <= 250:
        out.append(v)
    elif v <= 0xFFFF:
        out.append(251)
        out += v.to_bytes(2, "little")
    elif v <= _U32_MAX:
        out.append(252)
        out += v.to_bytes(4, "little")
    else:
        out.append(253)
        out += v.to_bytes(8, "little")


def _zigzag(v: int) -> int:
    return (v << 1) if v >= 0 else ((-v << 1) - 1)


def _enc(out: bytearray, ty: str, v) -> None:
    if ty in _LIMITS and ty != "u8":
        if not isinstance(v, int) or not 0 <= v <= _LIMITS[ty]:
            raise DescriptorError(f"value {v!r} does not fit {ty}")
        _varint(out, v)
    elif ty == "u8":
        if not isinstance(v, int) or not 0 <= v <= 0xFF:
            raise DescriptorError(f"value {v!r} does not fit u8")
        out.append(v)
    elif ty == "i32":
        if not isinstance(v, int) or not -(1 << 31) <= v < (1 << 31):
            raise DescriptorError(f"value {v!r} does not fit i32")
        _varint(out, _zigzag(v))
    elif ty == "f32":
        out += struct.pack("<I", v.bits) if isinstance(v, F32Bits) else struct.pack("<f", v)
    elif ty == "bool":
        out.append(1 if v else 0)
    elif ty == "str":
        b = v.encode("utf-8")
        _varint(out, len(b))
        out += b
    elif ty == "bytes":
        _varint(out, len(v))
        out += bytes(v)
    elif ty.startswith("["):
        inner = ty[1:-1]
        _varint(out, len(v))
        for item in v:
            _enc(out, inner, item)
    elif ty in _UNIT_INDEX:
        try:
            _varint(out, _UNIT_INDEX[ty][v])
        except KeyError:
            raise DescriptorError(f"{v!r} is not a {ty}") from None
    elif ty in _INDEX:
        if not isinstance(v, Variant) or v.name not in _INDEX[ty]:
            raise DescriptorError(f"{v!r} is not a {ty}")
        idx, payload = _INDEX[ty][v.name]
        if len(v.args) != len(payload):
            raise DescriptorError(f"{ty}::{v.name} takes {len(payload)} fields, got {v.args!r}")
        _varint(out, idx)
        for pty, arg in zip(payload, v.args):
            _enc(out, pty, arg)
    else:  # pragma: no cover - schema table error
        raise RuntimeError(f"unknown schema type {ty}")


def _enc_body(out: bytearray, body: KernelBody) -> None:
    _varint(out, len(body.ops))
    for op in body.ops:
        _enc(out, "KernelOpKind", op.kind)
        _enc(out, "[u32]", op.operands)
        if op.result is None:
            out.append(0)
        else:
            out.append(1)
            _enc(out, "u32", op.result)
    _varint(out, len(body.children))
    for child in body.children:
        _enc_body(out, child)
    _enc(out, "[LiteralValue]", body.literals)


def encode(d: KernelDescriptor) -> bytes:
    """Serialize a descriptor to its `.kdesc` bytes."""
    out = bytearray()
    _enc(out, "str", d.id)
    _varint(out, len(d.slots))
    for s in d.slots:
        _enc(out, "u32", s.slot)
        _enc(out, "DataType", s.element_type)
        if s.element_count is None:
            out.append(0)
        else:
            out.append(1)
            _enc(out, "u32", s.element_count)
        _enc(out, "MemoryClass", s.memory_class)
        _enc(out, "BindingVisibility", s.visibility)
        _enc(out, "str", s.name)
    if len(d.workgroup_size) != 3:
        raise DescriptorError("workgroup_size must have 3 entries")
    for w in d.workgroup_size:
        _enc(out, "u32", w)
    _enc_body(out, d.body)
    return bytes(out)


# --- decoding ----------------------------------------------------------------------


class F32Bits(float):
    """An f32 whose exact bit pattern (NaN payloads included) must survive a round trip."""

    bits: int

    def __new__(cls, bits: int):
        self = super().__new__(cls, struct.unpack("<f", bits.to_bytes(4, "little"))[0])
        self.bits = bits
        return self

    def __eq__(self, other):
        if isinstance(other, F32Bits):
            return self.bits == other.bits
        return isinstance(other, float) and struct.pack("<f", self) == struct.pack("<f", other)

    __hash__ = float.__hash__


class _Reader:
    __slots__ = ("buf", "pos", "depth")

    def __init__(self, buf: bytes):
        self.buf = memoryview(buf)
        self.pos = 0
        self.depth = 0

    def fail(self, msg: str):
        raise DescriptorError(f"malformed descriptor at byte {self.pos}: {msg}")

    def take(self, n: int) -> memoryview:
        if n > len(self.buf) - self.pos:
            self.fail(f"needs {n} more bytes, {len(self.buf) - self.pos} left (truncated)")
        b = self.buf[self.pos : self.pos + n]
        self.pos += n
        return b

    def varint(self, limit: int) -> int:
        tag = self.take(1)[0]
        if tag <= 250:
            return tag
        width = {251: 2, 252: 4, 253: 8}.get(tag)
        if width is None:
            self.fail(f"invalid varint marker {tag}")
        v = int.from_bytes(self.take(width), "little")
        if v > limit:
            self.fail(f"varint {v} out of range")
        if width == 8 and limit <= _U32_MAX:
            self.fail("u32 field uses a u64 varint marker")
        return v

    def length(self, min_elem_bytes: int = 1) -> int:
        n = self.varint(_LIMITS["u64"])
        if n * min_elem_bytes > len(self.buf) - self.pos:
            self.fail(f"length {n} exceeds the {len(self.buf) - self.pos} bytes left")
        return n


def _dec(r: _Reader, ty: str):
    if ty == "u8":
        return r.take(1)[0]
    if ty in _LIMITS:
        return r.varint(_LIMITS[ty])
    if ty == "i32":
        z = r.varint(_U32_MAX)
        return (z >> 1) if not z & 1 else -((z + 1) >> 1)
    if ty == "f32":
        bits = int.from_bytes(r.take(4), "little")
        v = struct.unpack("<f", bits.to_bytes(4, "little"))[0]
        return F32Bits(bits) if v != v else v
    if ty == "bool":
        b = r.take(1)[0]
        if b > 1:
            r.fail(f"bool byte {b}")
        return bool(b)
    if ty == "str":
        n = r.length()
        try:
            return bytes(r.take(n)).decode("utf-8")
        except UnicodeDecodeError:
            r.fail("string is not valid UTF-8")
    if ty == "bytes":
        return bytes(r.take(r.length()))
    if ty.startswith("["):
        inner = ty[1:-1]
        return tuple(_dec(r, inner) for _ in range(r.length()))
    if ty in UNIT_ENUMS:
        i = r.varint(_U32_MAX)
        if i >= len(UNIT_ENUMS[ty]):
            r.fail(f"{ty} variant {i} does not exist")
        return UNIT_ENUMS[ty][i]
    if ty in ENUMS:
        i = r.varint(_U32_MAX)
        table = ENUMS[ty]
        if i >= len(table):
            r.fail(f"{ty} variant {i} does not exist")
        name, payload = table[i]
        r.depth += 1
        if r.depth > 64:
            r.fail("nesting deeper than 64")
        args = tuple(_dec(r, p) for p in payload)
        r.depth -= 1
        return Variant(name, args)
    raise RuntimeError(f"unknown schema type {ty}")  # pragma: no cover


def _option(r: _Reader, ty: str):
    tag = r.take(1)[0]
    if tag == 0:
        return None
    if tag != 1:
        r.fail(f"Option tag {tag}")
    return _dec(r, ty)


def _dec_body(r: _Reader) -> KernelBody:
    r.depth += 1
    if r.depth > 64:
        r.fail("bodies nested deeper than 64")
    ops = []
    for _ in range(r.length(3)):
        kind = _dec(r, "KernelOpKind")
        operands = _dec(r, "[u32]")
        ops.append(KernelOp(kind, operands, _option(r, "u32")))
    children = tuple(_dec_body(r) for _ in range(r.length(3)))
    literals = _dec(r, "[LiteralValue]")
    r.depth -= 1
    return KernelBody(tuple(ops), children, literals)


def decode(blob: bytes) -> KernelDescriptor:
    """Parse `.kdesc` bytes; raise DescriptorError naming the offset on any defect."""
    r = _Reader(bytes(blob))
    ident = _dec(r, "str")
    slots = []
    for _ in range(r.length(6)):
        slots.append(
            BindingSlot(
                slot=_dec(r, "u32"),
                element_type=_dec(r, "DataType"),
                element_count=_option(r, "u32"),
                memory_class=_dec(r, "MemoryClass"),
                visibility=_dec(r, "BindingVisibility"),
                name=_dec(r, "str"),
            )
        )
    wg = tuple(_dec(r, "u32") for _ in range(3))
    body = _dec_body(r)
    if r.pos != len(r.buf):
        r.fail(f"{len(r.buf) - r.pos} trailing bytes after the descriptor")
    return KernelDescriptor(ident, tuple(slots), wg, body)


def encode_datatype(t: Variant) -> bytes:
    """The schema encoding of one DataType (used as an OpaqueExpr payload)."""
    out = bytearray()
    _enc(out, "DataType", t)
    return bytes(out)


def decode_datatype(payload: bytes) -> Variant:
    r = _Reader(payload)
    t = _dec(r, "DataType")
    if r.pos != len(payload):
        r.fail("trailing bytes after the DataType")
    return t


def emit_target(desc: KernelDescriptor, info, options, entries) -> bytes:
    """The .kdesc target's emitter (vyre_build.core.targets): the descriptor's encoding."""
    return encode(desc)
