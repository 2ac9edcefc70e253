"""Structured control flow of the SPIR-V emitter (a mixin of `codegen.FunctionWriter`).

Every `if` gets OpSelectionMerge and a fresh merge block; every loop (StructuredForLoop,
`vyre.loop`) a header with OpLoopMerge, its own continue block (the back edge) and merge
block. break/continue branch to the innermost loop's merge/continue block, return is
OpReturn, and a merge block nothing reaches holds only OpUnreachable, so a terminator in
the middle of nested constructs still gives valid structured control flow. break,
continue and return are refused inside a continuing block, where SPIR-V allows no exit.
"""

from __future__ import annotations

from vyre_build.descriptor import KernelBody, KernelOp
from vyre_build.spirv import grammar as g

CONTROL_NONE = 0  # SelectionControl / LoopControl / FunctionControl "None"


class Loop:
    """One enclosing loop: where break and continue branch to."""

    __slots__ = ("broke", "cont", "in_continuing", "merge")

    def __init__(self, merge: int, cont: int):
        self.merge, self.cont = merge, cont
        self.in_continuing = False
        self.broke = False


class ControlFlow:
    """Handlers for the control ops; they use the writer's block helpers."""

    def h_if(self, kop: KernelOp, body: KernelBody):
        has_else = kop.kind.name == "StructuredIfThenElse"
        ops = self.operands(kop, 3 if has_else else 2)
        ci, ct = self.value(ops[0], kop)
        if ct != "Bool":
            self.fail(kop, f"condition has type {ct}, not Bool")
        then_body = self.child(body, ops[1], kop)
        else_body = self.child(body, ops[2], kop) if has_else else None
        m = self.m
        then_l, merge = m.new_id(), m.new_id()
        else_l = m.new_id() if has_else else merge
        self.selection(ci, then_l, else_l, merge)
        self.start_block(then_l)
        self.body(then_body)
        reached = self.branch(merge) or not has_else
        if has_else:
            self.start_block(else_l)
            self.body(else_body)
            reached = self.branch(merge) or reached
        self.start_block(merge)
        if not reached:
            self.inst("OpUnreachable")
            self.open = False

    def h_for(self, kop: KernelOp, body: KernelBody):
        lo, hi, index = self.operands(kop, 3)
        (loi, lot), (hii, hit) = self.value(lo, kop), self.value(hi, kop)
        if lot != hit or lot not in ("U32", "I32"):
            self.fail(kop, "for-loop bounds must both be U32 or both I32")
        child = self.child(body, index, kop)
        m = self.m
        counter = self.function_var(self.tid(lot))
        self.inst("OpStore", counter, loi)
        header, body_l, cont, merge = m.new_id(), m.new_id(), m.new_id(), m.new_id()
        self.branch(header)
        self.start_block(header)
        iv = self.op("OpLoad", lot, counter)
        cond = self.op("OpULessThan" if lot == "U32" else "OpSLessThan", "Bool", iv, hii)
        self.inst("OpLoopMerge", merge, cont, CONTROL_NONE)
        self.inst("OpBranchConditional", cond, body_l, merge)
        self.open = False
        loop_var = kop.kind.args[0]
        self.loop_vars[loop_var] = (iv, lot)
        self.loops.append(Loop(merge, cont))
        self.start_block(body_l)
        self.body(child)
        self.branch(cont)
        self.start_block(cont)
        # Reload: the continue block may be unreachable, so it uses nothing from the body.
        cur = self.op("OpLoad", lot, counter)
        self.inst("OpStore", counter, self.op("OpIAdd", lot, cur, self.const(lot, 1)))
        self.branch(header)
        self.loops.pop()
        del self.loop_vars[loop_var]
        self.start_block(merge)

    def h_loop_index(self, kop: KernelOp, body: KernelBody):
        self.operands(kop, 0)
        got = self.loop_vars.get(kop.kind.args[0])
        if got is None:
            self.fail(kop, f"no enclosing StructuredForLoop binds {kop.kind.args[0]!r}")
        return got

    def h_loop(self, kop: KernelOp, body: KernelBody):
        if len(kop.operands) not in (1, 2):
            self.fail(kop, "vyre.loop takes [body] or [body, continuing]")
        children = [self.child(body, i, kop) for i in kop.operands]
        m = self.m
        header, body_l, cont, merge = m.new_id(), m.new_id(), m.new_id(), m.new_id()
        self.branch(header)
        self.start_block(header)
        self.inst("OpLoopMerge", merge, cont, CONTROL_NONE)
        self.inst("OpBranch", body_l)
        self.open = False
        loop = Loop(merge, cont)
        self.loops.append(loop)
        self.start_block(body_l)
        self.body(children[0])
        self.branch(cont)
        self.start_block(cont)
        loop.in_continuing = True
        if len(children) == 2:
            self.body(children[1])
        self.branch(header)
        self.loops.pop()
        self.start_block(merge)
        if not loop.broke:  # only a return leaves this loop
            self.inst("OpUnreachable")
            self.open = False

    def h_opaque_node(self, kop: KernelOp, body: KernelBody):
        kind = kop.kind.args[0]
        if kind == "vyre.loop":
            return self.h_loop(kop, body)
        if kind in ("vyre.break", "vyre.continue"):
            self.operands(kop, 0)
            if not self.loops:
                self.fail(kop, f"{kind} outside a loop")
            loop = self.loops[-1]
            if loop.in_continuing:
                self.fail(kop, f"{kind} inside a loop's continuing block")
            if kind == "vyre.break":
                loop.broke = True
                self.branch(loop.merge)
            else:
                self.branch(loop.cont)
            return None
        self.fail(kop, f"OpaqueNode extension_kind {kind!r} is unknown")

    def h_return(self, kop: KernelOp, body: KernelBody):
        self.operands(kop, 0)
        if any(loop.in_continuing for loop in self.loops):
            self.fail(kop, "Return inside a loop's continuing block")
        self.inst("OpReturn")
        self.open = False

    def h_barrier(self, kop: KernelOp, body: KernelBody):
        self.operands(kop, 0)
        ordering = kop.kind.args[0]
        sem = g.MEMORYSEMANTICS["AcquireRelease"] | g.MEMORYSEMANTICS["WorkgroupMemory"]
        if ordering == "SeqCst":  # storageBarrier(): also order storage-buffer memory
            sem |= g.MEMORYSEMANTICS["UniformMemory"]
        elif ordering != "AcqRel":
            self.fail(kop, f"barrier ordering {ordering} is not AcqRel or SeqCst")
        wg = self.const("U32", g.SCOPE["Workgroup"])
        self.inst("OpControlBarrier", wg, wg, self.const("U32", sem))
