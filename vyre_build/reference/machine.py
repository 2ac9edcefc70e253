"""The reference machine: a validated descriptor executed on the CPU, vectorised over lanes.

Every invocation of a chunk of workgroups is a lane of one numpy array per SSA value
(shape (lanes,), or (lanes, n) for an n-vector). Ops run in lockstep over all lanes, with
a boolean mask for the lanes that execute them (divergent ifs, loops, early returns), so
an op is one numpy call, never a Python loop per invocation. Lockstep is one of the
schedules a GPU may choose: barriers in uniform control flow hold by construction, and a
load by every lane happens before the store that follows it.

The machine's parts, one module each: `Machine` (this module) holds a chunk's lanes, ids
and values and runs a compiled body under a mask (`body`, `live`); steps.py compiles each
body once into a list of steps (a closure per op holding its operand ids and its rule;
`steps._Steps` is the `descriptor.view.Walker` that makes them, one method per op class);
values that cannot change during a dispatch (literals, ids, uniforms, lengths) are
computed once per chunk, so a loop iteration costs one call per op. memory.py lays out
memory and runs loads and stores, atomics.py atomics, loops.py loops (`Machine.run_loop`),
subgroups.py subgroup ops, matrices.py cooperative matrices, debug.py a debug build's
reports and strict.py strict mode's checks.

Memory (memory.py): storage buffers are the caller's arrays (stores and atomics write them
in place, out of bounds dropped; loads out of bounds give 0); shared arrays are
(workgroups, N) per chunk, zeroed for each workgroup; scratch is (lanes, N). Atomics
(atomics.py) apply lane by lane in lane order (a rank loop: each pass updates every cell
at most once; a cell that many lanes hit in one op is folded with numpy's accumulate, a
compare-exchange by a search per success).

Memory scopes and orders (descriptor.memory_order): every memory op of every lane is applied
to the one copy of memory when its step runs, so the machine's execution is sequentially
consistent: one total order of all memory operations that keeps each invocation's program
order, every load reading the latest store before it in that order. Such an execution is
allowed by the Vulkan memory model whatever the scopes and orders (each acquire reads a
value that its release wrote before it; a fence only forbids reorderings that never
happen here), so vyre.atomic runs as Atomic, vyre.atomic.load / .store as loads and stores
of the slot, and vyre.fence does nothing. A kernel that waits for another workgroup
(a spin on a flag) ends here only if the workgroup it waits for is in the same chunk and
has written before the wait, or in an earlier chunk (chunks run in workgroup order): the
forward progress the single-pass library kernels assume (docs/runtime.md, "Forward
progress").

Contended loops (`Machine.run_loop`, loops.py): lockstep lets one lane per cell win each
iteration of a retry loop (a compare-exchange loop, a spin lock), so N contending lanes
would take N iterations over all N lanes. A loop with no barrier, subgroup or matrix op
inside, whose lanes are then independent threads, is split into halves of its running
lanes when contention stalls it, each half on a compacted machine (`Machine.subset`)
taking turns with the other: contention then costs time, and steps, linear in the lanes.
A program whose atomics never collide on an old value it reads is never split: it runs in
exactly the lockstep order above.

Strict mode (`strict=True`, reference/strict.py): each step of an op with a defined domain
is wrapped, when the body is compiled, in a check of the operands of the lanes of its mask
(DispatchError on the first lane outside it); a machine that is not strict runs the same
steps as ever.

Step budget: every loop iteration run by one lane is a step; `Budget` counts them over a
dispatch and raises DispatchError once they pass `max_steps` (None: no budget).
"""

from __future__ import annotations

import numpy as np

from vyre_build.descriptor import DescriptorInfo, KernelDescriptor
from vyre_build.descriptor.view import view_of
from vyre_build.core.backends import REFERENCE
from vyre_build.core.errors import DispatchError
from vyre_build.reference import atomics, loops, memory
from vyre_build.reference.loops import MAX_LOOP_ITERATIONS
from vyre_build.reference.steps import _compile, _read_atomics
from vyre_build.reference.strict import clz_results
from vyre_build.reference.subgroups import Subgroups

__all__ = ["Budget", "Machine", "MAX_LOOP_ITERATIONS"]


class Machine:
    """Runs one chunk of workgroups (`first` .. `first + count` in linear order)."""

    debug: list | None = None  # where vyre.debug.* ops append their records (reference/debug.py)

    def __init__(
        self,
        desc: KernelDescriptor,
        info: DescriptorInfo,
        buffers: dict[int, np.ndarray],
        uniforms: dict[int, np.ndarray],
        grid: tuple[int, int, int],
        first: int,
        count: int,
        subgroup_size: int = 32,
        budget: Budget | None = None,
        strict: bool = False,
    ):
        self.desc, self.info = desc, info
        self.strict = strict  # check each op's operands against its domain (strict.py)
        self.budget = budget if budget is not None else Budget(desc.id, None)
        self.root, self.root_lanes, self.can_split, self.contended = self, None, True, False
        view = view_of(desc, info)
        self.read_atomics = _read_atomics(view.body)
        self.buffers, self.uniforms = buffers, uniforms
        self.slots = {s.slot: s for s in desc.slots}
        wx, wy, wz = desc.workgroup_size
        per = wx * wy * wz
        self.lanes = lanes = per * count
        lane = np.arange(lanes, dtype=np.int64)
        local, group = lane % per, lane // per + first
        self.group_in_chunk = (group - first).astype(np.intp)
        self.lane = lane.astype(np.intp)
        lid = (local % wx, local // wx % wy, local // (wx * wy))
        wid = (group % grid[0], group // grid[0] % grid[1], group // (grid[0] * grid[1]))
        self.builtins = {
            "LocalInvocationId": [a.astype(np.uint32) for a in lid],
            "WorkgroupId": [a.astype(np.uint32) for a in wid],
            "GlobalInvocationId": [
                ((w * s + x) & 0xFFFFFFFF).astype(np.uint32)
                for w, s, x in zip(wid, desc.workgroup_size, lid)
            ],
            "vyre.num_workgroups": [self.full(np.uint32(g)) for g in grid],
        }
        self.memory: dict[int, tuple] = memory.slot_memory(self, buffers, count)
        self.vals: dict[int, np.ndarray] = {}
        self.loops: list = []  # a loops._Loop per running loop, innermost last
        self.loop_index: dict[str, np.ndarray] = {}
        self.returned = np.zeros(lanes, bool)
        self.subgroups = Subgroups(lanes, per, subgroup_size)
        if strict:  # a Clz / Ctz of 0: lanes whose use of its result is an error (strict.py)
            self.clz_results, self.poison = clz_results(view, info.types), {}
        self.program = _compile(self, view.body)

    def full(self, value) -> np.ndarray:
        value = np.asarray(value)
        return np.broadcast_to(value, (self.lanes,) + value.shape)

    def run(self) -> None:
        with np.errstate(all="ignore"):
            self.body(self.program, np.ones(self.lanes, bool))

    # --- control ---------------------------------------------------------------------
    def live(self, mask: np.ndarray) -> np.ndarray:
        """`mask` without the lanes that returned or left the innermost loop's iteration."""
        mask = mask & ~self.returned
        if self.loops:
            top = self.loops[-1]
            mask &= ~(top.broken | top.continued)
        return mask

    def body(self, steps, mask: np.ndarray) -> None:
        if not mask.any():
            return
        vals = self.vals
        for fn, result in steps:
            if result is not None:
                vals[result] = fn(self, mask)
            else:
                if fn(self, mask):  # a control step: lanes may have left
                    mask = self.live(mask)
                    if not mask.any():
                        return

    @classmethod
    def subset(cls, parent: Machine, lanes: np.ndarray) -> Machine:
        """A machine of `parent`'s `lanes` (indices), sharing its memory (shared and scratch
        cells by each lane's base), for the halves of a split loop: it has no subgroup
        layout (the loop has no collective op) and runs the loops inside that loop's body
        in plain lockstep; the split loop reads the values it gathers
        (`steps._LoopSpec.outer`), and its returns are flushed into the root machine."""
        m = cls.__new__(cls)
        m.desc, m.info, m.slots = parent.desc, parent.info, parent.slots
        m.buffers, m.uniforms, m.budget = parent.buffers, parent.uniforms, parent.budget
        m.read_atomics, m.root = parent.read_atomics, parent.root
        m.can_split, m.contended, m.strict = False, False, parent.strict
        if m.strict:
            m.clz_results = parent.clz_results
            m.poison = {k: (bad[lanes], op) for k, (bad, op) in parent.poison.items()}
        m.root_lanes = lanes if parent.root_lanes is None else parent.root_lanes[lanes]
        m.lanes = int(lanes.size)
        m.builtins = {k: [np.asarray(a)[lanes] for a in v] for k, v in parent.builtins.items()}
        m.memory = {
            slot: (arr, None if base is None else base[lanes], n)
            for slot, (arr, base, n) in parent.memory.items()
        }
        m.vals, m.loops = {}, []
        m.loop_index = {k: v[lanes] for k, v in parent.loop_index.items()}
        m.returned = parent.returned[lanes]
        m.subgroups = _LaneIds(parent.subgroups.lane_id[lanes], parent.subgroups.size)
        return m

    def flush(self) -> None:
        """Hand a subset machine's returns to the root machine (its lanes are done here)."""
        if self.root_lanes is not None:
            self.root.returned[self.root_lanes] |= self.returned

    run_loop = loops.run_loop  # a compiled loop run to its end for a mask (loops.py)

    def endless(self):
        raise DispatchError(
            f"Kernel {self.desc.id!r}: a loop ran {MAX_LOOP_ITERATIONS} iterations without "
            "ending (the reference refuses kernels that do not terminate)"
        )

    # --- memory (memory.py, atomics.py) ------------------------------------------------
    cells = memory.cells
    atomic = atomics.atomic


class Budget:
    """The step budget of one dispatch: loop iterations summed over lanes, at most `limit`
    (None: no budget); spend() raises DispatchError past it."""

    __slots__ = ("kernel", "limit", "spent")

    def __init__(self, kernel: str, limit: int | None):
        self.kernel, self.limit, self.spent = kernel, limit, 0

    def spend(self, steps: int) -> None:
        self.spent += steps
        if self.limit is not None and self.spent > self.limit:
            raise DispatchError(
                f"Kernel {self.kernel!r}: the dispatch ran past its budget of {self.limit} "
                "steps (a step is one loop iteration of one invocation): it may never end; "
                f'raise the budget with get_device("{REFERENCE.name}", max_steps=N) or '
                "VYRE_CPU_MAX_STEPS=N"
            )


class _LaneIds:
    """What a subset machine keeps of the subgroup layout: each lane's id and the size."""

    __slots__ = ("lane_id", "size")

    def __init__(self, lane_id: np.ndarray, size: int):
        self.lane_id, self.size = lane_id, size
