"""The test suite's hand-built descriptors, through the package's one builder.

`Kernel` (`vyre_build.descriptor.builder.KernelBuilder`) holds the slots, the workgroup
size and the root `Body` (`BodyBuilder`), which appends ops the way lowering does: one
SSA id counter per kernel (value ops take the next id, in creation order), a literal pool
per body (every `lit` a new entry: no interning here), child bodies for control flow.
Element types are DataType variant names ("U32", "F32", ...) or a `Variant`
(`vt("F32", 4)`). `Case` is a built descriptor with the data to dispatch it and the
numpy expectation. The hand-built corpus (tests/corpus/) and every emitter test build
with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from vyre_build.descriptor import SHARED_SLOT_BASE, BindingSlot, KernelDescriptor, Variant
from vyre_build.descriptor.builder import BodyBuilder as Body
from vyre_build.descriptor.builder import KernelBuilder as Kernel
from vyre_build.descriptor.builder import dt, vt

__all__ = ["SH", "V", "Body", "Kernel", "Case", "assert_case", "buf", "dt", "kernel", "vbuf", "vt"]

V = Variant
SH = SHARED_SLOT_BASE


def buf(slot: int, ty, name: str, vis: str = "ReadWrite") -> BindingSlot:
    """A storage-buffer (Global) slot."""
    return BindingSlot(slot, dt(ty), None, "Global", vis, name)


def vbuf(slot: int, elem: str, n: int, name: str, vis: str = "ReadWrite") -> BindingSlot:
    """A storage buffer of `n`-component vectors of `elem`."""
    return buf(slot, vt(elem, n), name, vis)


def kernel(slots, wg=(64, 1, 1), name: str = "k"):
    """(descriptor factory, root body) of a kernel over `slots`: build after filling the body."""
    k = Kernel(name, wg, slots)
    return k.build, k.body


@dataclass
class Case:
    """A descriptor plus the data to dispatch it and the numpy-computed expectation."""

    desc: KernelDescriptor
    inputs: dict[str, np.ndarray]  # every Global buffer by name (outputs too: initial contents)
    expected: dict[str, np.ndarray]  # final contents of the written buffers
    scalars: dict[str, object] = field(default_factory=dict)
    groups: tuple[int, int, int] = (1, 1, 1)
    rtol: float = 0.0
    atol: float = 0.0
    per_output_tol: dict[str, tuple[float, float]] = field(
        default_factory=dict
    )  # name -> (rtol, atol)
    check: Callable[[dict[str, np.ndarray]], None] | None = None  # extra asserts on all buffers


def assert_case(case: Case, got: dict, where: str) -> None:
    """Every expected buffer of `case` in `got` (by name): to its tolerance, else bit for bit."""
    for name, want in case.expected.items():
        have = got[name]
        assert have.dtype == want.dtype and have.shape == want.shape, f"{where}: {name} shape/dtype"
        rtol, atol = case.per_output_tol.get(name, (case.rtol, case.atol))
        if rtol or atol:
            np.testing.assert_allclose(have, want, rtol=rtol, atol=atol, err_msg=f"{where}: {name}")
        else:  # exact, bit for bit (NaN-safe through the integer view)
            bad = np.flatnonzero(have.view(np.uint32) != want.view(np.uint32))
            assert bad.size == 0, (
                f"{where}: {name} differs at {bad[:8].tolist()}: "
                f"got {have[bad[:8]].tolist()} want {want[bad[:8]].tolist()}"
            )
    if case.check is not None:
        case.check(got)
