"""The kernel language's names, in one table: every builtin (with the IR op it maps to) and
every type. The checker, the `from vyre_build.lang import ...` check and `vyre_build.lang`
itself read this table, so a new builtin or type is added here (and typed in lang.pyi,
which a test holds to this table)."""

from __future__ import annotations

from vyre_build.frontend.ir import SCALARS, TYPES

TYPE_NAMES = TYPES  # scalars and vectors
SCALAR_NAMES = SCALARS

F32_UNARY = {
    "sqrt": "Sqrt",
    "exp": "Exp",
    "exp2": "Exp2",
    "log": "Log",
    "log2": "Log2",
    "sin": "Sin",
    "cos": "Cos",
    "tan": "Tan",
    "tanh": "Tanh",
    "rsqrt": "InverseSqrt",
    "floor": "Floor",
    "ceil": "Ceil",
    "round": "Round",
    "trunc": "Trunc",
    "sign": "Sign",
}
F32_PRED = {"isnan": "IsNan", "isinf": "IsInf", "isfinite": "IsFinite"}
INT_UNARY = {"popcount": "Popcount", "clz": "Clz", "ctz": "Ctz", "reverse_bits": "ReverseBits"}
ATOMICS = {
    "atomic_add": "Add",
    "atomic_sub": "Add",
    "atomic_or": "Or",
    "atomic_and": "And",
    "atomic_xor": "Xor",
    "atomic_min": "Min",
    "atomic_max": "Max",
    "atomic_exchange": "Exchange",
    "atomic_compare_exchange": "CompareExchange",
}
# Memory scopes and orders (frontend/memory_order.py): every atomic_* call takes them as
# keywords; atomic_load / atomic_store / fence are the other memory builtins.
MEMORY_BUILTINS = ("atomic_load", "atomic_store", "fence")
MEMORY_SCOPES = ("device", "workgroup")
MEMORY_ORDERS = ("relaxed", "acquire", "release", "acq_rel")
ID_BUILTINS = ("global_id", "local_id", "workgroup_id", "num_workgroups", "workgroup_size")
# Subgroup builtins: name -> the op's name in the descriptor's op table ("Subgroup", op).
SUBGROUP_OPS = {
    "subgroup_add": "add",
    "subgroup_min": "min",
    "subgroup_max": "max",
    "subgroup_and": "and",
    "subgroup_or": "or",
    "subgroup_xor": "xor",
    "subgroup_inclusive_add": "inclusive_add",
    "subgroup_exclusive_add": "exclusive_add",
    "subgroup_all": "all",
    "subgroup_any": "any",
    "subgroup_ballot": "ballot",
    "subgroup_broadcast": "broadcast",
    "subgroup_broadcast_first": "broadcast_first",
    "subgroup_shuffle": "shuffle",
    "subgroup_shuffle_xor": "shuffle_xor",
    "subgroup_shuffle_up": "shuffle_up",
    "subgroup_shuffle_down": "shuffle_down",
    "subgroup_elect": "elect",
}
# u32 values, no arguments: lanes per subgroup, this lane, this subgroup of the workgroup
# and how many the workgroup has (descriptor: OpaqueExpr vyre.subgroup_id / vyre.num_subgroups).
SUBGROUP_IDS = ("subgroup_size", "subgroup_invocation_id", "subgroup_id", "num_subgroups")
# Cooperative matrices (frontend/coop.py): loads by the use they make, then the others.
COOP_LOADS = {"coop_load_a": "a", "coop_load_b": "b", "coop_load_acc": "acc"}
COOP_BUILTINS = (*COOP_LOADS, "coop_fill", "coop_mma", "coop_store")
STATEMENT_BUILTINS = ("barrier", "storage_barrier", "coop_store")
DECL_BUILTINS = ("shared", "local_array")
OTHER_BUILTINS = (
    "abs",
    "min",
    "max",
    "clamp",
    "select",
    "fma",
    "rotl",
    "rotr",
    "len",
    "bitcast",
    "range",
)
ALL_BUILTINS = frozenset(
    set(F32_UNARY)
    | set(F32_PRED)
    | set(INT_UNARY)
    | set(ATOMICS)
    | set(MEMORY_BUILTINS)
    | set(ID_BUILTINS)
    | set(SUBGROUP_OPS)
    | set(SUBGROUP_IDS)
    | set(COOP_BUILTINS)
    | set(STATEMENT_BUILTINS)
    | set(DECL_BUILTINS)
    | set(OTHER_BUILTINS)
)
# Importable for editors and type checkers, never reserved in kernels: the decorator, the
# buffer type, `bool_` (an alias that does not shadow Python's bool) and the access modes
# (so that the forward references "r" / "w" / "rw" in Buffer[T, "rw"] resolve).
ACCESS_MODES = ("r", "w", "rw")
DECLARATIONS = ("kernel", "Buffer", "bool_")
LANG_NAMES = frozenset(ALL_BUILTINS | set(TYPE_NAMES) | set(DECLARATIONS) | set(ACCESS_MODES))
