"""The descriptor: the contract between lowering, the emitters and the reference backend.

- `codec`: the data types and the `.kdesc` codec (shared/spec/kernel-descriptor.md, to the byte);
- `schema`: the spec's enums, one table each (variants in declaration order, payload types);
- `types`: the value-type vocabulary (one row per type, every spelling of it);
- `ops`: the op table, (op, operand types) -> result type;
- `builder`: the one way to build a descriptor op by op (lowering, coarsening, the tests);
- `validate` -> `facts.DescriptorInfo`: structure checked once, facts computed once.
How vyre_build uses the schema: docs/descriptor-conventions.md.
"""

from vyre_build.descriptor.codec import (
    SHARED_SLOT_BASE,
    BindingSlot,
    DescriptorError,
    F32Bits,
    KernelBody,
    KernelDescriptor,
    KernelOp,
    Variant,
    decode,
    decode_datatype,
    encode,
    encode_datatype,
)
from vyre_build.descriptor.facts import DescriptorInfo, UniformBlock, UniformMember
from vyre_build.descriptor.schema import ENUMS
from vyre_build.descriptor.validate import validate

__all__ = [
    "ENUMS",
    "SHARED_SLOT_BASE",
    "BindingSlot",
    "DescriptorError",
    "DescriptorInfo",
    "F32Bits",
    "KernelBody",
    "KernelDescriptor",
    "KernelOp",
    "UniformBlock",
    "UniformMember",
    "Variant",
    "decode",
    "decode_datatype",
    "encode",
    "encode_datatype",
    "validate",
]
