"""vyre_build.library without a device: the kernel ids it uses are the ones
kernels/lib_*.py compile to, and bad arguments are refused, with exact messages, before
any kernel is looked up or any device is made (refusals that need the kernels:
tests/gpu/test_library.py)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from vyre_build.core.errors import DispatchError
from vyre_build import library

KERNELS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "kernels")
X = np.ones(8, np.float32)


def test_the_library_uses_every_lib_kernel_and_only_those():
    from vyre_build.compiler import list_kernels

    files = sorted(f for f in os.listdir(KERNELS) if f.startswith("lib_") and f.endswith(".py"))
    built = {s for f in files for s in list_kernels(os.path.join(KERNELS, f), root=KERNELS)}
    assert set(library.kernel_ids()) == built


CASES = {
    "not a mapping": (
        lambda: library.reduce(3, X),
        "library.reduce: kernels must be a Bundle or a mapping of kernel id -> Kernel, got int",
    ),
    "op": (
        lambda: library.reduce({}, X, "prod"),
        "library.reduce: op must be 'sum', 'min' or 'max', got 'prod'",
    ),
    "dtype": (
        lambda: library.reduce({}, np.ones(3)),
        "library.reduce: x must be float32, int32 or uint32, got an array of float64, shape (3,)",
    ),
    "big-endian": (
        lambda: library.scan({}, np.ones(3, ">f4")),
        "library.scan: x must be float32, int32 or uint32, got an array of >f4, shape (3,)",
    ),
    "a list": (
        lambda: library.scan({}, [1, 2, 3]),
        "library.scan: x must be a numpy array or a DeviceBuffer, got list",
    ),
    "empty": (lambda: library.scan({}, np.zeros(0, np.uint32)), "library.scan: x is empty"),
    "exclusive": (
        lambda: library.scan({}, X, exclusive=1),
        "library.scan: exclusive must be True or False, got 1",
    ),
    "missing kernel": (
        lambda: library.scan({}, X),
        "library.scan: no kernel 'lib_scan_sums.f32' in the kernels given (build "
        "kernels/lib_scan.py into them)",
    ),
    "not a kernel": (
        lambda: library.reduce({"lib_reduce.min_i32": "k"}, np.ones(2, np.int32), "min"),
        "library.reduce: kernels['lib_reduce.min_i32'] is a str, not a Kernel",
    ),
    "matmul f32 only": (
        lambda: library.matmul({}, np.ones((2, 2), np.int32), np.ones((2, 2), np.float32)),
        "library.matmul: a must be float32, got an array of int32, shape (2, 2)",
    ),
    "matmul 2-D": (
        lambda: library.matmul({}, X.reshape(2, 4), X),
        "library.matmul: b must be 2-D, got shape (8,)",
    ),
    "matmul inner sizes": (
        lambda: library.matmul({}, np.ones((3, 4), np.float32), np.ones((5, 2), np.float32)),
        "library.matmul: a is (3, 4) and b is (5, 2): a's columns (4) must equal b's rows (5)",
    ),
    "softmax 0-d": (
        lambda: library.softmax({}, np.ones((), np.float32)),
        "library.softmax: x must have at least one axis, got a 0-d array",
    ),
    "layer_norm gamma": (
        lambda: library.layer_norm({}, X.reshape(2, 4), np.ones(3, np.float32), X[:4]),
        "library.layer_norm: gamma must have shape (4,) (x's rows), got (3,)",
    ),
    "layer_norm beta dtype": (
        lambda: library.layer_norm({}, X.reshape(2, 4), X[:4], np.ones(4)),
        "library.layer_norm: beta must be float32, got an array of float64, shape (4,)",
    ),
    "layer_norm eps": (
        lambda: library.layer_norm({}, X, X, X, eps=-1.0),
        "library.layer_norm: eps must be a finite float >= 0, got -1.0",
    ),
    "row_kernel fn": (
        lambda: library.row_kernel("relu", 8),
        "library.row_kernel: fn must be 'softmax' or 'layer_norm', got 'relu'",
    ),
    "row_kernel cols": (
        lambda: library.row_kernel("softmax", 0),
        "library.row_kernel: cols must be an integer >= 1, got 0",
    ),
    "row_kernel cols bool": (
        lambda: library.row_kernel("layer_norm", True),
        "library.row_kernel: cols must be an integer >= 1, got True",
    ),
    "layer_norm eps inf": (
        lambda: library.layer_norm({}, X, X, X, eps=float("inf")),
        "library.layer_norm: eps must be a finite float >= 0, got inf",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_arguments_are_refused_before_the_device(case):
    run, message = CASES[case]
    with pytest.raises(DispatchError) as e:
        run()
    assert str(e.value) == message


@pytest.mark.parametrize(
    "cols, suffix",
    [(1, "_flat"), (1023, "_flat"), (1024, "_flat"), (1025, ""), (2048, ""), (2049, "")],
)
def test_rows_pick_their_kernel_by_length(cols, suffix):
    """Up to 1024 values a row goes to the subgroup-per-row kernel, past that to the
    256-wide one; a call asks for that kernel alone."""
    x = np.ones((2, cols), np.float32)
    for fn, call in (
        ("softmax", lambda: library.softmax({}, x)),
        ("layer_norm", lambda: library.layer_norm({}, x, x[0], x[0])),
    ):
        kid = f"lib_{fn}{suffix}.f32"
        assert library.row_kernel(fn, cols) == kid
        where = "lib_norm_flat.py" if suffix else "lib_norm.py"
        with pytest.raises(DispatchError) as e:
            call()
        assert str(e.value) == (
            f"library.{fn}: no kernel {kid!r} in the kernels given (build kernels/{where} "
            "into them)"
        )


@pytest.mark.skipif(
    __import__("sys").version_info < (3, 11), reason="typing.get_overloads is Python 3.11's"
)
def test_help_shows_each_functions_arguments_not_args_and_kwargs():
    import inspect

    shown = {
        f.__name__: str(inspect.signature(f))
        for f in (library.reduce, library.scan, library.matmul, library.matmul_f16)
    }
    assert shown == {
        "reduce": "(x: 'Array', op: 'str' = 'sum', *, out: 'DeviceBuffer | None' = None) -> 'Any'",
        "scan": "(x: 'Array', *, exclusive: 'bool' = False, out: 'Out' = None) -> 'Any'",
        "matmul": "(a: 'Array', b: 'Array', *, out: 'Out' = None) -> 'Any'",
        "matmul_f16": "(a: 'Array', b: 'Array', *, out: 'Out' = None, out_dtype: 'str' = "
        "'float32') -> 'Any'",
    }
    for f in (library.softmax, library.layer_norm, library.matmul_bf16):
        assert "*args" not in str(inspect.signature(f)), f.__name__
