"""Cooperative matrices in the descriptor: the ops, their shapes and the fragment rule.

A cooperative matrix is a value type (`types.MATRICES`: "matrix_a.f16.16x16" ...) held
by a whole subgroup together (VK_KHR_cooperative_matrix, subgroup scope). The ops, as
docs/descriptor-conventions.md ("Cooperative matrices") pins them:

    OpaqueExpr vyre.coop.load   [slot, offset, stride] payload: the matrix DataType
    OpaqueExpr vyre.coop.fill   [value]                payload: the matrix DataType
    MatrixMma{M16N8K16, ...}    [a, b, c]  (the schema's kind where the shape fits)
    OpaqueExpr vyre.coop.mma    [a, b, c]  (every other shape)
    OpaqueNode vyre.coop.store  [slot, offset, stride, value]

`slot` is a slot number (Global or Shared) holding the matrix's element type or vectors of
it (vec4h for f16; bf16 has no vectors); offset and stride are u32 counts of scalar elements (a vec4h slot of n
elements holds 4n); rows are row-major. Every invocation of a subgroup must
execute these ops together, with the same operands.

The fragment rule (the bounds semantics of a load or store): a fragment is "in place"
when offset and stride are multiples of `alignment(elem, cols)` (Vulkan requires the
lesser of 16 bytes and a row's size), stride >= cols, and the last element
offset + (rows - 1) * stride + cols - 1 is inside the slot. A load that is not in place
gives a zero matrix; a store that is not in place does nothing. Every backend computes
this exactly (no overflow: see `in_place`).
"""

from __future__ import annotations

from vyre_build.descriptor.codec import Variant
from vyre_build.descriptor.types import MATRICES, TYPES
from vyre_build.core.features import MATRIX_ACCUMULATORS, cooperative_matrix

__all__ = [
    "LOAD",
    "FILL",
    "MMA",
    "STORE",
    "COOP_EXPRS",
    "FEATURE",
    "alignment",
    "mma_kind",
    "mma_shape",
    "mma_feature",
    "in_place",
    "uses_matrices",
]

LOAD, FILL, MMA, STORE = "vyre.coop.load", "vyre.coop.fill", "vyre.coop.mma", "vyre.coop.store"
COOP_EXPRS = (LOAD, FILL, MMA)
FEATURE = "cooperative_matrix"  # any cooperative-matrix op: the extension itself
_MMA_ELEMENT = {"f16": "F16", "bf16": "BF16", "f32": "F32"}


def alignment(elem: str, cols: int) -> int:
    """Offset and stride of a fragment of `elem` rows of `cols` are multiples of this many
    elements: the lesser of 16 bytes and one row (Vulkan's rule for cooperative loads)."""
    size = TYPES[elem].size
    return min(16, cols * size) // size


def mma_shape(a: str, b: str, c: str) -> tuple[int, int, int] | None:
    """(M, N, K) of C = A x B + C on these matrix types, or None if they do not compose."""
    ma, mb, mc = MATRICES.get(a), MATRICES.get(b), MATRICES.get(c)
    if ma is None or mb is None or mc is None:
        return None
    if (ma[0], mb[0], mc[0]) != ("a", "b", "acc") or TYPES[a].element != TYPES[b].element:
        return None
    if TYPES[c].element not in MATRIX_ACCUMULATORS[TYPES[a].element]:  # bf16: f32 sums
        return None
    m, k = ma[1], ma[2]
    if mb[1] != k or mc[1] != m or mc[2] != mb[2]:
        return None
    return m, mc[2], k


def mma_feature(a: str, c: str, shape: tuple[int, int, int]) -> str:
    return cooperative_matrix(TYPES[a].element, TYPES[c].element, *shape)


def mma_kind(a: str, b: str, c: str) -> Variant:
    """The op kind of C = A x B + C: the schema's MatrixMma for 16x8x16, else vyre.coop.mma."""
    if mma_shape(a, b, c) == (16, 8, 16):
        elem = _MMA_ELEMENT[TYPES[a].element]
        acc = _MMA_ELEMENT[TYPES[c].element]
        return Variant("MatrixMma", ("M16N8K16", "RowMajor", "RowMajor", elem, elem, acc))
    return Variant("OpaqueExpr", (0, MMA, b""))


def in_place(length: int, offset: int, stride: int, ty: str) -> bool:
    """The fragment rule on plain integers (what the emitters compute in u32)."""
    _, rows, cols = MATRICES[ty]
    align = alignment(TYPES[ty].element, cols)
    if offset % align or stride % align or stride < cols or offset > length:
        return False
    room = length - offset
    return cols <= room and stride <= (room - cols) // (rows - 1)


def uses_matrices(types) -> bool:
    """Whether any of these value types is a cooperative matrix."""
    return any(t in MATRICES for t in types)
