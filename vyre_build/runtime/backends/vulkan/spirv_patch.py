"""SPIR-V patching for the Vulkan layouts: a kernel's uniform block moved to another
binding (`patch_uniform`), reading only the module's preamble. It returns a new module or
None (the caller then keeps the kernel's own layout); it never changes anything else, and
reads the module in place (host byte order: a module in the other one is left alone)."""

from __future__ import annotations

_MAGIC, _OP_DECORATE, _BINDING = 0x07230203, 71, 33  # SPIR-V: OpDecorate, Decoration Binding
_DECORATE4 = (4 << 16) | _OP_DECORATE  # its first word with 4 words: OpDecorate %id Binding N
# The opcodes that may come before the first type: mode setting (capabilities to execution
# modes), debug (strings, names, lines, processed) and annotations (decorations).
_PREAMBLE = frozenset(
    (
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        10,
        11,
        14,
        15,
        16,
        17,
        317,
        330,
        331,
        71,
        72,
        73,
        74,
        75,
        332,
        5632,
        5633,
    )
)


def patch_uniform(code: bytes, binding: int, to: int) -> bytes | None:
    """`code` with every OpDecorate Binding `binding` (the uniform block: one variable
    per entry point of a module) made `to`, or None when there is none, binding `to` is
    taken, or the module is not one this parser reads (then the kernel keeps a layout of
    its own). Every variable is in set 0 (docs/descriptor-conventions.md), and the
    metadata gives binding `binding` to the uniform block, so no storage buffer has it.
    Only the instructions before the first type are walked (decorations come before
    types in SPIR-V's logical layout): some 50 a module, not the whole of it."""
    if binding == to:
        return code
    if len(code) % 4 or len(code) < 20:
        return None
    words = memoryview(code).cast("I")  # read in place: no copy of the whole module
    if words[0] != _MAGIC:  # the other byte order: not worth a second parser
        return None
    at, found, end, preamble = 5, [], len(words), _PREAMBLE
    while at < end:
        word = words[at]
        if word & 0xFFFF not in preamble:
            break
        count = word >> 16
        if count == 0 or at + count > end:
            return None
        if word == _DECORATE4 and words[at + 2] == _BINDING:
            if words[at + 3] == binding:
                found.append(at + 3)
            elif words[at + 3] == to:
                return None  # the slot is taken (not our emitters' output)
        at += count
    if not found:
        return None
    out = bytearray(code)
    patched = memoryview(out).cast("I")
    for k in found:
        patched[k] = to
    patched.release()
    return bytes(out)
