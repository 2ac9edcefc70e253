"""The emitters: a validated KernelDescriptor -> target code, one package per target.

Both are laid out alike:
    __init__.py   emit_<target>(desc, info=None): assembles the module
    function.py   the walk over the bodies; value ops dispatched by (op, operand types)
    values.py     one rule per row of descriptor.ops.OPS (the pinned semantics)
    memory.py     slot declarations, loads, stores, atomics (the bounds rules)
    control.py    structured control flow
plus what one target alone needs: wgsl/helpers.py (helper functions), spirv/module.py
(the binary module builder) and spirv/grammar.py (generated opcode tables).
"""
