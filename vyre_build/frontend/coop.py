"""Cooperative matrices in the kernel language (a mixin of `KernelChecker`).

    a = coop_load_a(A, offset, stride, 16, 16)   # A fragment, rows x cols, from Buffer[f16]
                                                 # (or Buffer[bf16]: then f32 accumulators)
    b = coop_load_b(B, offset, stride, 16, 16)
    c = coop_fill(f32, 16, 16, 0.0)              # an accumulator (or coop_load_acc)
    c = coop_mma(a, b, c)                        # c = a x b + c
    coop_store(c, C, offset, stride)

Fragments are row-major: element (r, k) is at offset + r * stride + k, counted in scalars
also in a buffer or shared array of vectors (vec4h: four f16 each). The whole subgroup
holds a matrix together, so these calls are subgroup operations: only in control flow
uniform within the subgroup, with an offset, stride and fill value uniform within it
(frontend/uniformity.py checks both: a tile chosen by subgroup_id() is fine). The fragment rule
(`descriptor.matrices`) gives a load that does not fit a zero matrix and drops such a store.
"""

from __future__ import annotations

from vyre_build.frontend import ir
from vyre_build.descriptor.matrices import mma_shape
from vyre_build.core.features import MATRIX_ACCUMULATORS
from vyre_build.descriptor.types import MATRIX_DIMS, MATRIX_ELEMENTS, matrix_name
from vyre_build.frontend.builtins import BUILTINS

_USE_TEXT = {"a": "an A matrix", "b": "a B matrix", "acc": "an accumulator"}
_SUGGEST = {"a": "f16", "b": "f16", "acc": "f32"}  # what an error's fix proposes
_DIMS_TEXT = ", ".join(map(str, MATRIX_DIMS[:-1])) + f" or {MATRIX_DIMS[-1]}"


class CoopChecker:
    """Mixin: the coop_* builtins for KernelChecker."""

    def builtin_coop_load(self, node, name):
        return self.coop_load(node, name, BUILTINS[name].op)

    def coop_dims(self, node, name) -> tuple[int, int]:
        dims = []
        for arg in node.args[-2:] if name != "coop_fill" else node.args[1:3]:
            d = self.expr(arg)
            if not (isinstance(d, ir.Const) and d.ty in ("int", "u32", "i32")):
                raise self.err(
                    arg,
                    f"{name}() needs constant rows and cols ({_DIMS_TEXT})",
                    "use literals or module constants, e.g. 16",
                )
            if d.value not in MATRIX_DIMS:
                raise self.err(
                    arg,
                    f"cooperative matrices have {_DIMS_TEXT} rows and cols, got {d.value}",
                    "split the tile into fragments of a supported size",
                )
            dims.append(d.value)
        return dims[0], dims[1]

    def coop_element(self, node, name, use: str, elem: str, what: str) -> None:
        allowed = MATRIX_ELEMENTS[use]
        if elem not in allowed:
            need = " or ".join(allowed)
            raise self.err(
                node,
                f"{name}() makes {_USE_TEXT[use]}, whose elements are {need}; {what} is {elem}",
                f"use a Buffer[{_SUGGEST[use]}]" if "buffer" in what else f"use {_SUGGEST[use]}",
            )

    def coop_array(self, node, name, how: str) -> str:
        arr = self.array_name(node)
        decl = self.arrays.get(arr)
        if decl is not None and decl.space == "local":
            raise self.err(
                node,
                f"{name}() works on buffers and shared arrays, not local arrays",
                "stage the tile in a shared(...) array",
            )
        self.check_access(node, arr, how)  # atomics never share it: they need integers
        return arr

    def coop_load(self, node, name, use):
        self.nargs(node, name, 5)
        arr = self.coop_array(node.args[0], name, "read")
        elem = ir.element(self.element_type(arr))  # a vec4h buffer holds f16 fragments too
        self.coop_element(node.args[0], name, use, elem, f"buffer '{node.args[0].id}'")
        offset, stride = self.index(node.args[1]), self.index(node.args[2])
        rows, cols = self.coop_dims(node, name)
        return ir.CoopLoad(arr, offset, stride, matrix_name(use, elem, rows, cols))

    def coop_fill(self, node, name):
        self.nargs(node, name, 4)
        elem = self.resolve_type(node.args[0])
        self.coop_element(node.args[0], name, "acc", elem, "the element type")
        rows, cols = self.coop_dims(node, name)
        value = self.typed(node.args[3], elem)
        return ir.CoopFill(value, matrix_name("acc", elem, rows, cols))

    def coop_matrix(self, node, name):
        e = self.expr(node)
        if e.ty not in ir.MATRICES:
            raise self.err(
                node,
                f"{name}() takes cooperative matrices, got {e.ty}",
                "make them with coop_load_a / coop_load_b / coop_load_acc / coop_fill",
            )
        return e

    def coop_mma(self, node, name):
        self.nargs(node, name, 3)
        a, b, c = (self.coop_matrix(arg, name) for arg in node.args)
        if mma_shape(a.ty, b.ty, c.ty) is None:
            uses = tuple(ir.MATRICES[x.ty][0] for x in (a, b, c))
            ea, eb, ec = (ir.element(x.ty) for x in (a, b, c))
            fix = (
                "pass an A matrix, a B matrix and an accumulator, in that order"
                if uses != ("a", "b", "acc")
                else f"A and B must hold one element type: convert one side's buffer to {eb}"
                if ea != eb
                else f"{ea} products accumulate in "
                f"{' or '.join(MATRIX_ACCUMULATORS[ea])}: coop_fill(f32, ...) for the sum"
                if ec not in MATRIX_ACCUMULATORS[ea]
                else "A is MxK, B is KxN, C is MxN: load B with as many rows as A has columns"
            )
            raise self.err(node, f"coop_mma(a, b, c) cannot multiply {a.ty} x {b.ty} + {c.ty}", fix)
        return ir.CoopMma(a, b, c, c.ty)

    def coop_store(self, node, name):
        self.nargs(node, name, 4)
        value = self.coop_matrix(node.args[0], name)
        elem = ir.element(self.element_type(self.array_name(node.args[1])))
        if elem != ir.element(value.ty):
            raise self.err(
                node.args[1],
                f"coop_store() of a {value.ty} needs a buffer of {ir.element(value.ty)}, "
                f"'{node.args[1].id}' holds {elem}",
                f"store into a Buffer[{ir.element(value.ty)}]",
            )
        arr = self.coop_array(node.args[1], name, "write")
        offset, stride = self.index(node.args[2]), self.index(node.args[3])
        return ir.CoopStore(arr, offset, stride, value)
