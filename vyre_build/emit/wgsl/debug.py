"""A debug build's `vyre.debug.*` ops in WGSL (a mixin of `function.FunctionWriter`).

The debug buffer is `_vy_debug: array<atomic<u32>>` at `DescriptorInfo.debug_binding`
(layout: vyre_build/runtime/debug.py). A reporting invocation claims its record's words
with `_vy_debug_claim(n)` (one atomicAdd on word 0), which returns where to write them,
or counts a dropped record in word 1 and returns 0xffffffff when they do not fit: no
write ever leaves the buffer. A record is [site id, gid.x, gid.y, gid.z, value bits...].
"""

from __future__ import annotations

__all__ = ["DEBUG_BUFFER", "DebugRules", "debug_declarations"]

DEBUG_BUFFER = "_vy_debug"
_CLAIM = """fn _vy_debug_claim(n: u32) -> u32 {
    let len = arrayLength(&_vy_debug);
    let off = atomicAdd(&_vy_debug[0], n);
    if (len < 2u || n > len - 2u || off > len - 2u - n) {
        atomicAdd(&_vy_debug[1], 1u);
        return 0xffffffffu;
    }
    return off + 2u;
}
"""


def debug_declarations(binding: int) -> list[str]:
    """The debug buffer and its claim function, at module scope."""
    return [
        f"@group(0) @binding({binding}) var<storage, read_write> {DEBUG_BUFFER}: "
        "array<atomic<u32>>;",
        "",
        _CLAIM,
    ]


def _bits(value: str, ty: str) -> str:
    if ty == "u32":
        return value
    if ty == "bool":
        return f"select(0u, 1u, {value})"
    return f"bitcast<u32>({value})"


class DebugRules:
    """vyre.debug.print / .assert / .bounds (the walker's `debug`)."""

    def visit_debug(self, op, body, depth) -> None:
        kind, site = op.name, op.site
        o = op.operands
        if kind == "vyre.debug.print":
            self.record(depth, site, [_bits(f"_v{v}", self.info.types[v]) for v in o])
            return
        if kind == "vyre.debug.assert":
            self.emit(depth, f"if !_v{o[0]} {{")
            self.record(depth + 1, site, [_bits(f"_v{v}", self.info.types[v]) for v in o[1:]])
            self.emit(depth, "}")
            return
        s = self.slots[o[0]]  # vyre.debug.bounds [slot, index]
        length = (
            f"arrayLength(&{self.names[s.slot]})"
            if s.memory_class == "Global"
            else f"{s.element_count}u"
        )
        self.emit(depth, f"if _v{o[1]} >= {length} {{")
        self.record(depth + 1, site, [f"_v{o[1]}", length])
        self.emit(depth, "}")

    def record(self, depth: int, site: int, words: list[str]) -> None:
        """Claim and write one record: the site, the global id and `words`."""
        words = [f"{site}u", "gid.x", "gid.y", "gid.z", *words]
        self.emit(depth, "{")
        self.emit(depth + 1, f"let _vy_d = _vy_debug_claim({len(words)}u);")
        self.emit(depth + 1, "if _vy_d != 0xffffffffu {")
        for k, w in enumerate(words):
            at = "_vy_d" if k == 0 else f"_vy_d + {k}u"
            self.emit(depth + 2, f"atomicStore(&{DEBUG_BUFFER}[{at}], {w});")
        self.emit(depth + 1, "}")
        self.emit(depth, "}")
