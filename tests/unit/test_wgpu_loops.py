"""backends/wgpu/loops.py: which WGSL modules provably end (so that the wgpu backend may
leave out naga's loop-bounding counter), read from the text alone, conservatively."""

from __future__ import annotations

import glob
import os

import pytest

from vyre_build.compiler import compile_file
from vyre_build.descriptor.view import decode_view
from vyre_build.descriptor.view_ops import Loop
from vyre_build.runtime.backends.wgpu.loops import ends

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = os.path.join(ROOT, "kernels")


def wrap(body: str, decls: str = "") -> str:
    return (
        "@group(0) @binding(0) var<storage, read_write> y: array<u32>;\n" + decls +
        "@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) g: vec3<u32>) {\n"
        "    let _v0: u32 = g.x;\n    let _v1: u32 = arrayLength(&y);\n" + body + "\n}\n"
    )  # fmt: skip


COUNTED = "    for (var _i0: u32 = _v0; _i0 < _v1; _i0 = _i0 + 1u) {\n        y[_i0] = 1u;\n    }"
ZERO = "    for (var _z: u32 = _v0; _z < 512u; _z = _z + 256u) { y[_z] = 0u; }"


@pytest.mark.parametrize(
    "body",
    [
        "    y[_v0] = 1u;",
        COUNTED,
        ZERO + "\n" + ZERO,  # the name declared twice, each header assigning it once
        COUNTED.replace("u32", "i32")
        .replace("1u", "1i")
        .replace("_v0;", "0i;")
        .replace("_v1;", "_v2;")
        .replace("y[_i0]", "y[u32(_i0)]")
        .replace("    for", "    let _v2: i32 = i32(_v1);\n    for"),
        "    for (var _i0: u32 = 0u; _i0 < 4294967295u; _i0 = _i0 + 1u) { y[0] = _i0; }",
        "    // a comment: loop { } while\n" + COUNTED,
        "    /* loop { } */\n" + COUNTED,
        COUNTED.replace(
            "y[_i0] = 1u;",
            "for (var _i1: u32 = 0u; _i1 < _v1; _i1 = _i1 + 1u) "
            "{ if _i1 == _i0 { continue; } y[_i1] = _i0; }",
        ),
        "    loop {\n        if _v0 == 3u { break; }\n        y[_v0] = 2u;\n        break;\n    }",
        "    loop {\n"
        + COUNTED.replace("y[_i0] = 1u;", "if _i0 == 2u { continue; }")
        + "\n        break;\n    }",
    ],
    ids=[
        "none",
        "counted",
        "zero-fill twice",
        "i32",
        "to the last u32",
        "line comment",
        "block comment",
        "nested, continue",
        "run once",
        "run once, a for's continue",
    ],
)
def test_counted_loops_end(body):
    assert ends(wrap(body))


@pytest.mark.parametrize(
    "body, decls",
    [
        ("    loop { if _v0 == 0u { break; } }", ""),
        ("    var k: u32 = 0u;\n    while k < _v1 { k = k + 1u; }", ""),
        (COUNTED.replace("y[_i0] = 1u;", "_i0 = 0u;"), ""),  # the counter set back
        (COUNTED.replace("y[_i0] = 1u;", "_i0 -= 1u;"), ""),
        (COUNTED.replace("y[_i0] = 1u;", "_i0++;"), ""),
        (COUNTED.replace("y[_i0] = 1u;", "let p = &_i0; *p = 0u;"), ""),  # through a pointer
        (COUNTED.replace("_v1;", "_w;"), "var<private> _w: u32;\n"),  # a mutable bound
        (COUNTED.replace("y[_i0] = 1u;", "var _v1: u32 = 9u; y[_i0] = _v1;"), ""),
        (COUNTED.replace("_i0 + 1u", "_i0 + 2u"), ""),  # a step over a named bound could wrap
        ("    for (var _i0: u32 = 0u; _i0 < 4294967295u; _i0 = _i0 + 2u) { y[0] = _i0; }", ""),
        ("    for (var _i0: i32 = 0i; _i0 < 2147483647i; _i0 = _i0 + 2i) { y[0] = 1u; }", ""),
        (COUNTED.replace("_i0 < _v1", "_i0 <= _v1"), ""),  # <= the last u32 never fails
        (COUNTED.replace("_i0 + 1u", "_i0 - 1u"), ""),
        (COUNTED.replace("_i0 + 1u", "_i0 + 0u"), ""),
        ("    for (;;) { break; }", ""),
        ("    for (var _i0: u32 = 0u; _i0 < _v1; ) { _i0 = _i0 + 1u; }", ""),
        ("    /* /* nested */ loop { } */\n" + COUNTED, ""),  # not read: refused
        (COUNTED.replace("_v1;", "_i0;"), ""),
        ("    loop {\n        if _v0 == 3u { break; }\n    }", ""),
        ("    loop {\n        if _v0 == 3u { break; }\n        y[0] = 1u;\n    }", ""),
        ("    loop {\n        if _v0 == 3u { continue; }\n        break;\n    }", ""),
        ("    loop {\n        y[0] = 1u;\n        continuing { break if true; }\n    }", ""),
        ("    loop {\n        if _v0 == 3u { break; }\n        break;\n", ""),  # unbalanced
        ("    switch _v0 { default: { } }", ""),
    ],
    ids=[
        "loop",
        "while",
        "counter set",
        "counter -=",
        "counter ++",
        "pointer",
        "var bound",
        "bound shadowed by a var",
        "step 2 to a name",
        "u32 wraps",
        "i32 wraps",
        "<=",
        "down",
        "step 0",
        "for(;;)",
        "no increment",
        "nested comment",
        "self bound",
        "loop, break inside",
        "loop, ends in a store",
        "loop, continue",
        "continuing",
        "unbalanced",
        "switch",
    ],
)
def test_anything_else_is_not_proven(body, decls):
    assert not ends(wrap(body, decls))


def test_every_shipped_kernel_is_proven_exactly_when_it_has_no_open_loop():
    """Over the tree's kernels: the text proof holds for a module iff its descriptor has no
    `vyre.loop` (the emitter writes the descriptor's counted loops and its legalized early
    returns in the proven forms; none of the tree's `while` loops ends in a break)."""
    proven = 0
    paths = sorted(glob.glob(os.path.join(KERNELS, "*.py")))
    assert paths
    for path in paths:
        for k in compile_file(path, root=KERNELS):
            if k.wgsl is None:
                continue
            open_loops = any(isinstance(op, Loop) for op in decode_view(k.descriptor).ops)
            assert ends(k.wgsl) is not open_loops, k.stem
            proven += not open_loops
    assert proven >= 30  # lib_matmul.f32's variants among them
