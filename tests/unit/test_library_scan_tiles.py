"""The look-back scan's constants in library/picks.py agree with the kernels they describe
(kernels/lib_scan.py and its variants.yaml rows): each look-back kernel's tile
(look_back_items: vec4s per invocation) and the wide tiles' shared memory, which the
library compares with a device's limit before it picks them."""

from __future__ import annotations

import os

from vyre_build import library
from vyre_build.compiler import compile_file
from vyre_build.frontend import load_module

KERNELS = os.path.join(os.path.dirname(__file__), "..", "..", "kernels")


def test_the_picks_constants_are_the_kernels_own():
    path = os.path.join(KERNELS, "lib_scan.py")
    compiled = {k.stem: k.meta for k in compile_file(path, root=KERNELS)}
    once_items = load_module(path, root=KERNELS).constants["ITEMS"].value  # lib_scan_once's
    for template in library.LOOK_BACK_ITEMS:
        for t in ("f32", "i32", "u32"):
            meta = compiled[template.format(t=t)]
            values = meta.get("variant_values") or {}
            held = int(values.get("HELD", once_items if "once" in template else 0))
            assert library.look_back_items(template.format(t=t)) == held, template
    for t in ("f32", "i32", "u32"):
        wide = compiled[library.LOOK_BACK_WIDE.format(t=t)]
        assert wide["shared_bytes"] == library.LOOK_WIDE_SHARED
        narrow = compiled[library.LOOK_BACK_KERNEL.format(t=t)]
        assert narrow.get("shared_bytes", 16384) <= 16384  # the portable limit: any device
