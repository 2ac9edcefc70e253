"""What an application writes against the runtime, type-checked by `mypy --strict` in CI
(tests/unit/test_typing.py) and run for real by tests/gpu/test_runtime_device.py:
open a bundle, run kernels (arrays, device buffers, a batch), read typed results.

    python tests/typing/user_script.py BUNDLE [wgpu|vulkan]
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Optional

import numpy as np
import numpy.typing as npt

from vyre_build.runtime import (
    Bundle,
    CallResult,
    Device,
    DeviceBuffer,
    DeviceProfile,
    Kernel,
    Warmed,
    open_bundle,
)

F32 = npt.NDArray[np.float32]


def saxpy(bundle: Bundle, x: F32, y: F32, a: float) -> F32:
    kernel: Kernel = bundle["saxpy"]
    result: CallResult = kernel(x=x, y=y, a=a)
    return result.array("y", np.float32)


def chained(device: Device, kernel: Kernel, x: F32, times: int) -> F32:
    bx: DeviceBuffer = device.buffer(x, read_only=True)
    by = device.buffer(len(x), "f32")
    with device.batch():
        for _ in range(times):
            kernel(x=bx, y=by, a=1.0)
    return by.read(np.float32)


def main(argv: list[str]) -> int:
    path, backend = argv[1], argv[2] if len(argv) > 2 else None
    x = np.arange(1000, dtype=np.float32)
    with open_bundle(path, backend=backend) as bundle:
        ids: list[str] = list(bundle)
        found: Optional[Kernel] = bundle.get("iota")
        warmed: Warmed = bundle.warm()
        y = saxpy(bundle, x, np.ones(1000, np.float32), 2.0)
        profile: DeviceProfile = bundle.device.profile
        tripled = chained(bundle.device, bundle["saxpy"], x, 3)
        counts = bundle["iota"](out=10, start=5, step=2).array("out", np.uint32)
        if TYPE_CHECKING:
            from typing_extensions import assert_type

            assert_type(bundle, Bundle)
            assert_type(bundle["saxpy"], Kernel)
            assert_type(bundle.get("saxpy"), Optional[Kernel])
            assert_type(counts, npt.NDArray[np.uint32])
            assert_type(tripled, F32)
            assert_type(bundle.device, Device)
            assert_type(warmed.created, int)
            assert_type(warmed.unpicked, dict[str, str])
            assert_type(bundle.warm(all=True).kernels, tuple[str, ...])
            assert_type(profile.features, frozenset[str])
            assert_type(profile.max_workgroup_count, tuple[int, int, int])
    ok = (
        ids == sorted(ids)
        and found is not None
        and bool(np.array_equal(y, 2 * x + 1))
        and bool(np.array_equal(tripled, 3 * x))
        and counts.tolist() == [5 + 2 * i for i in range(10)]
    )
    print(
        f"{len(ids)} kernels, {warmed.created} pipelines, {profile.adapter}: {'ok' if ok else 'WRONG'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
