"""The schema's enums: every enum of `shared/spec/kernel-descriptor.md`, described once.

`ENUMS` gives each enum with a payload its variant names in declaration order, each with
its payload types; `UNIT_ENUMS` each unit-only enum's names in declaration order (they
travel as plain strings). A variant's position is its wire index, so these lists follow
the spec's declarations to the entry: `codec`'s encode and decode are one table-driven
walk over them, and nothing else spells a variant's index.
"""

from __future__ import annotations

__all__ = ["ENUMS", "UNIT_ENUMS"]

# Payload type names: u8 u32 u64 usize i32 f32 bool str bytes, "[u32]" (Vec<u32>),
# an enum name, or "[Enum]" for a Vec of that enum.

_DATATYPE = [
    ("U8", ()),
    ("U16", ()),
    ("U32", ()),
    ("I8", ()),
    ("I16", ()),
    ("I32", ()),
    ("I64", ()),
    ("U64", ()),
    ("Vec2U32", ()),
    ("Vec4U32", ()),
    ("Bool", ()),
    ("Bytes", ()),
    ("Array", ("usize",)),
    ("F16", ()),
    ("BF16", ()),
    ("F32", ()),
    ("F64", ()),
    ("Tensor", ()),
    ("Handle", ("u32",)),
    ("Vec", ("DataType", "u8")),
    ("TensorShaped", ("DataType", "[u32]")),
    ("SparseCsr", ("DataType",)),
    ("SparseCoo", ("DataType",)),
    ("SparseBsr", ("DataType", "u32", "u32")),
    ("F8E4M3", ()),
    ("F8E5M2", ()),
    ("I4", ()),
    ("FP4", ()),
    ("NF4", ()),
    ("DeviceMesh", ("[u32]",)),
    ("Quantized", ("DataType", "QuantizationScale", "QuantizationZeroPoint")),
    ("Opaque", ("u32",)),
]

_BINOP = [
    (n, ())
    for n in (
        "Add Sub Mul Div Mod WrappingAdd WrappingSub BitAnd BitOr BitXor Shl Shr Eq Ne Lt Gt "
        "Le Ge And Or AbsDiff Min Max SaturatingAdd SaturatingSub SaturatingMul Shuffle Ballot "
        "WaveReduce WaveBroadcast RotateLeft RotateRight MulHigh"
    ).split()
] + [("Opaque", ("u32",))]

_UNOP = [
    (n, ())
    for n in (
        "Negate BitNot LogicalNot Popcount Clz Ctz ReverseBits Cos Sin Abs Sqrt Floor Ceil "
        "Round Trunc Sign IsNan IsInf IsFinite Exp Log Log2 Exp2 Tan Acos Asin Atan Tanh Sinh "
        "Cosh InverseSqrt Unpack4Low Unpack4High Unpack8Low Unpack8High Reciprocal"
    ).split()
] + [("Opaque", ("u32",))]

_ATOMICOP = [
    (n, ())
    for n in (
        "Add Or And Xor Min Max Exchange CompareExchange CompareExchangeWeak FetchNand LruUpdate"
    ).split()
] + [("Opaque", ("u32",))]

_OPKIND = [
    ("Literal", ()),
    ("Copy", ()),
    ("LocalInvocationId", ()),
    ("GlobalInvocationId", ()),
    ("WorkgroupId", ()),
    ("SubgroupLocalId", ()),
    ("SubgroupSize", ()),
    ("LoopIndex", ("str",)),
    ("LoopCarrierInit", ("str",)),
    ("LoopCarrier", ("str",)),
    ("LoopCarrierEnd", ("str",)),
    ("LoadGlobal", ()),
    ("LoadShared", ()),
    ("LoadConstant", ()),
    ("BufferLength", ()),
    ("StoreGlobal", ()),
    ("StoreShared", ()),
    ("BinOpKind", ("BinOp",)),
    ("UnOpKind", ("UnOp",)),
    ("Fma", ()),
    (
        "MatrixMma",
        (
            "MatrixMmaShape",
            "MatrixMmaLayout",
            "MatrixMmaLayout",
            "MatrixMmaElement",
            "MatrixMmaElement",
            "MatrixMmaElement",
        ),
    ),
    ("Select", ()),
    ("Cast", ("DataType",)),
    ("Atomic", ("AtomicOp", "MemoryOrdering")),
    ("SubgroupBallot", ()),
    ("SubgroupShuffle", ()),
    ("SubgroupAdd", ()),
    ("StructuredIfThen", ()),
    ("StructuredIfThenElse", ()),
    ("StructuredForLoop", ("str",)),
    ("StructuredBlock", ()),
    ("Return", ()),
    ("Barrier", ("MemoryOrdering",)),
    ("Region", ("str",)),
    ("AsyncLoad", ("str",)),
    ("AsyncStore", ("str",)),
    ("AsyncWait", ("str",)),
    ("Trap", ("str",)),
    ("Resume", ("str",)),
    ("IndirectDispatch", ("u64",)),
    ("Call", ("str",)),
    ("OpaqueExpr", ("u32", "str", "bytes")),  # OpaqueExprData
    ("OpaqueNode", ("str", "bytes")),  # OpaqueNodeData
]

ENUMS: dict[str, list[tuple[str, tuple]]] = {
    "DataType": _DATATYPE,
    "QuantizationScale": [("PerTensor", ()), ("PerChannel", ("u32",)), ("PerGroup", ("u32",))],
    "QuantizationZeroPoint": [
        ("Absent", ()),
        ("PerTensor", ()),
        ("PerChannel", ("u32",)),
        ("PerGroup", ("u32",)),
    ],
    "LiteralValue": [("U32", ("u32",)), ("I32", ("i32",)), ("F32", ("f32",)), ("Bool", ("bool",))],
    "BinOp": _BINOP,
    "UnOp": _UNOP,
    "AtomicOp": _ATOMICOP,
    "KernelOpKind": _OPKIND,
}
# Unit-only enums travel as plain strings.
UNIT_ENUMS: dict[str, list[str]] = {
    "MemoryClass": ["Global", "Shared", "Constant", "Uniform", "Scratch"],
    "BindingVisibility": ["ReadOnly", "WriteOnly", "ReadWrite"],
    "MemoryOrdering": ["Relaxed", "Acquire", "Release", "AcqRel", "SeqCst", "GridSync"],
    "MatrixMmaShape": ["M16N8K16"],
    "MatrixMmaLayout": ["RowMajor", "ColMajor"],
    "MatrixMmaElement": ["F16", "BF16", "TF32", "F32"],
}
