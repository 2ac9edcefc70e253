"""Structured control flow of the SPIR-V emitter (a mixin of `function.FunctionWriter`).

Every `if` gets OpSelectionMerge and a fresh merge block; every loop (StructuredForLoop,
`vyre.loop`) a header with OpLoopMerge, its own continue block (the back edge) and merge
block. break/continue branch to the innermost loop's merge/continue block, return is
OpReturn, and a merge block nothing reaches holds only OpUnreachable, so a terminator in
the middle of nested constructs still gives valid structured control flow. (Validation
keeps break, continue and return out of continuing blocks, where SPIR-V allows no exit.)
"""

from __future__ import annotations

from vyre_build.descriptor import KernelBody, KernelOp
from vyre_build.emit.spirv import grammar as g

CONTROL_NONE = 0  # SelectionControl / LoopControl / FunctionControl "None"


class Loop:
    """One enclosing loop: where break and continue branch to."""

    __slots__ = ("broke", "cont", "merge")

    def __init__(self, merge: int, cont: int):
        self.merge, self.cont = merge, cont
        self.broke = False


class ControlFlow:
    """Handlers for the control ops; they use the writer's block helpers."""

    def h_if(self, kop: KernelOp, body: KernelBody):
        ops = kop.operands
        has_else = len(ops) == 3
        then_body = body.children[ops[1]]
        else_body = body.children[ops[2]] if has_else else None
        m = self.m
        then_l, merge = m.new_id(), m.new_id()
        else_l = m.new_id() if has_else else merge
        self.selection(self.vals[ops[0]], then_l, else_l, merge)
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
        lo, hi, index = kop.operands
        lot = self.info.types[lo]
        loi, hii = self.vals[lo], self.vals[hi]
        child = body.children[index]
        m = self.m
        counter = self.function_var(self.tid(lot))
        self.inst("OpStore", counter, loi)
        header, body_l, cont, merge = m.new_id(), m.new_id(), m.new_id(), m.new_id()
        self.branch(header)
        self.start_block(header)
        iv = self.op("OpLoad", lot, counter)
        cond = self.op("OpULessThan" if lot == "u32" else "OpSLessThan", "bool", iv, hii)
        self.inst("OpLoopMerge", merge, cont, CONTROL_NONE)
        self.inst("OpBranchConditional", cond, body_l, merge)
        self.open = False
        loop_var = kop.var
        self.loop_vars[loop_var] = iv
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
        return self.loop_vars[kop.var]

    def h_loop(self, kop: KernelOp, body: KernelBody):
        children = [body.children[i] for i in kop.operands]
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
        if len(children) == 2:
            self.body(children[1])
        self.branch(header)
        self.loops.pop()
        self.start_block(merge)
        if not loop.broke:  # only a return leaves this loop
            self.inst("OpUnreachable")
            self.open = False

    def h_break(self, kop: KernelOp, body: KernelBody):
        loop = self.loops[-1]
        loop.broke = True
        self.branch(loop.merge)

    def h_continue(self, kop: KernelOp, body: KernelBody):
        self.branch(self.loops[-1].cont)

    def h_return(self, kop: KernelOp, body: KernelBody):
        self.inst("OpReturn")
        self.open = False

    def h_barrier(self, kop: KernelOp, body: KernelBody):
        sem = g.MEMORYSEMANTICS["AcquireRelease"] | g.MEMORYSEMANTICS["WorkgroupMemory"]
        if kop.ordering == "SeqCst":  # storageBarrier(): also order storage-buffer memory
            sem |= g.MEMORYSEMANTICS["UniformMemory"]
        wg = self.const("u32", g.SCOPE["Workgroup"])
        self.inst("OpControlBarrier", wg, wg, self.const("u32", self.barrier_semantics(sem)))
