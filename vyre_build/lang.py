"""Names of the kernel language, for editors and type checkers.

Kernel files are parsed, never executed, so nothing here runs at build time. Importing
these names (`from vyre_build.lang import kernel, Buffer, f32, global_id`) keeps linters
and IDEs quiet; calling a builtin from ordinary Python raises a clear error.
"""

from __future__ import annotations

__all__ = [
    "kernel",
    "Buffer",
    "bool_",
    "i32",
    "u32",
    "f32",
    "global_id",
    "local_id",
    "workgroup_id",
    "num_workgroups",
    "workgroup_size",
    "shared",
    "local_array",
    "barrier",
    "storage_barrier",
    "sqrt",
    "exp",
    "exp2",
    "log",
    "log2",
    "sin",
    "cos",
    "tan",
    "tanh",
    "rsqrt",
    "floor",
    "ceil",
    "trunc",
    "sign",
    "fma",
    "isnan",
    "isinf",
    "isfinite",
    "clamp",
    "select",
    "popcount",
    "clz",
    "ctz",
    "reverse_bits",
    "rotl",
    "rotr",
    "bitcast",
    "atomic_add",
    "atomic_sub",
    "atomic_or",
    "atomic_and",
    "atomic_xor",
    "atomic_min",
    "atomic_max",
    "atomic_exchange",
    "atomic_compare_exchange",
]


class _KernelOnly:
    def __init__(self, name: str):
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"{self.__name__}() exists only inside kernels, which vyre_build compiles "
            "ahead of time; load the built bundle with vyre_build.runtime.open_bundle"
        )

    def __repr__(self) -> str:
        return f"<vyre kernel builtin {self.__name__}>"


class _Type(_KernelOnly):
    pass


class _Buffer:
    def __class_getitem__(cls, item):
        return cls


Buffer = _Buffer
i32, u32, f32, bool_ = _Type("i32"), _Type("u32"), _Type("f32"), _Type("bool")


def kernel(fn=None, *, workgroup_size=64, grid=None, variants=None):
    """Marks a kernel; at build time the compiler reads these options from the source."""

    def mark(f):
        f.__vyre_kernel__ = {"workgroup_size": workgroup_size, "grid": grid, "variants": variants}
        return f

    return mark(fn) if fn is not None else mark


global_id = _KernelOnly("global_id")
local_id = _KernelOnly("local_id")
workgroup_id = _KernelOnly("workgroup_id")
num_workgroups = _KernelOnly("num_workgroups")
workgroup_size = _KernelOnly("workgroup_size")
shared = _KernelOnly("shared")
local_array = _KernelOnly("local_array")
barrier = _KernelOnly("barrier")
storage_barrier = _KernelOnly("storage_barrier")
sqrt = _KernelOnly("sqrt")
exp = _KernelOnly("exp")
exp2 = _KernelOnly("exp2")
log = _KernelOnly("log")
log2 = _KernelOnly("log2")
sin = _KernelOnly("sin")
cos = _KernelOnly("cos")
tan = _KernelOnly("tan")
tanh = _KernelOnly("tanh")
rsqrt = _KernelOnly("rsqrt")
floor = _KernelOnly("floor")
ceil = _KernelOnly("ceil")
trunc = _KernelOnly("trunc")
sign = _KernelOnly("sign")
fma = _KernelOnly("fma")
isnan = _KernelOnly("isnan")
isinf = _KernelOnly("isinf")
isfinite = _KernelOnly("isfinite")
clamp = _KernelOnly("clamp")
select = _KernelOnly("select")
popcount = _KernelOnly("popcount")
clz = _KernelOnly("clz")
ctz = _KernelOnly("ctz")
reverse_bits = _KernelOnly("reverse_bits")
rotl = _KernelOnly("rotl")
rotr = _KernelOnly("rotr")
bitcast = _KernelOnly("bitcast")
atomic_add = _KernelOnly("atomic_add")
atomic_sub = _KernelOnly("atomic_sub")
atomic_or = _KernelOnly("atomic_or")
atomic_and = _KernelOnly("atomic_and")
atomic_xor = _KernelOnly("atomic_xor")
atomic_min = _KernelOnly("atomic_min")
atomic_max = _KernelOnly("atomic_max")
atomic_exchange = _KernelOnly("atomic_exchange")
atomic_compare_exchange = _KernelOnly("atomic_compare_exchange")
