"""Uniformity: barrier() and storage_barrier() only where every invocation reaches them.

Each refused case checks the exact message: the barrier's file:line:col with its caret,
the branch that made control non-uniform (its location and source text, and what it
depends on), and the fix. The uniform cases are the patterns the kernel tree relies on.
"""

from __future__ import annotations

import textwrap

import pytest

from vyre_build.compiler import compile_file
from vyre_build.core.errors import KernelError

HEADER = "from vyre_build.lang import *\n\n"
FIX = (
    "guard the work, not the barrier: move the barrier out of the branch so every "
    "invocation reaches it (conditions on scalars, constants, len(buf), workgroup_id() "
    "and num_workgroups() are uniform)"
)


def compile_src(tmp_path, body: str, name: str = "k.py", extra: str = ""):
    path = tmp_path / name
    path.write_text(HEADER + extra + textwrap.dedent(body))
    return compile_file(str(path), targets=("kdesc",))


def refused(tmp_path, body: str, extra: str = "") -> KernelError:
    with pytest.raises(KernelError) as info:
        compile_src(tmp_path, body, extra=extra)
    assert info.value.fix == FIX
    return info.value


def where(tmp_path, line: int, col: int, text: str) -> str:
    return f"{tmp_path / 'k.py'}:{line}:{col} (`{text}`)"


def test_barrier_under_an_invocation_dependent_if(tmp_path):
    e = refused(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(x: Buffer[u32], out: Buffer[u32, "rw"]):
            i = global_id().x
            if i < len(x):
                barrier()
            out[i] = 1
        """,
    )
    assert (e.line, e.col, e.source_line.strip()) == (8, 9, "barrier()")
    assert e.message == (
        "barrier() is in non-uniform control flow: the condition at "
        f"{where(tmp_path, 7, 5, 'if i < len(x):')} depends on global_id(), so some "
        "invocations of the workgroup may not reach it"
    )
    assert str(e).splitlines()[0].startswith(f"{tmp_path / 'k.py'}:8:9: error: barrier() is in")


def test_barrier_after_an_early_return(tmp_path):
    e = refused(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(out: Buffer[u32, "rw"]):
            if local_id().x >= 32:
                return
            barrier()
            out[global_id().x] = 1
        """,
    )
    assert (e.line, e.col) == (8, 5)
    assert e.message == (
        "barrier() is in non-uniform control flow: a return follows the condition at "
        f"{where(tmp_path, 6, 5, 'if local_id().x >= 32:')}, which depends on local_id(), "
        "so some invocations of the workgroup may not reach it"
    )


def test_loop_bound_loaded_from_a_writable_buffer(tmp_path):
    e = refused(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(n: Buffer[u32, "rw"], out: Buffer[u32, "rw"]):
            for j in range(n[0]):
                barrier()
            out[global_id().x] = 1
        """,
    )
    assert (e.line, e.col) == (7, 9)
    assert e.message == (
        "barrier() is in non-uniform control flow: the loop bounds at "
        f"{where(tmp_path, 6, 5, 'for j in range(n[0]):')} depend on a load from writable "
        "buffer 'n', so some invocations of the workgroup may not reach it"
    )


def test_while_condition_on_a_local_id(tmp_path):
    e = refused(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(out: Buffer[u32, "rw"]):
            j: u32 = 0
            while j < local_id().x:
                storage_barrier()
                j += 1
            out[global_id().x] = j
        """,
    )
    assert (e.line, e.col) == (8, 9)
    assert e.message.startswith(
        "storage_barrier() is in non-uniform control flow: the condition at "
        f"{where(tmp_path, 7, 5, 'while j < local_id().x:')} depends on local_id()"
    )


def test_barrier_in_a_helper_called_under_a_divergent_if(tmp_path):
    (tmp_path / "sync.py").write_text(
        "from vyre_build.lang import *\n\ndef sync():\n    barrier()\n"
    )
    e = refused(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(out: Buffer[u32, "rw"]):
            if local_id().x == 0:
                sync()
            out[global_id().x] = 1
        """,
        extra="from .sync import sync\n",
    )
    # the error points into the helper's own file, and names the caller's branch
    assert e.path == str(tmp_path / "sync.py") and (e.line, e.col) == (4, 5)
    assert e.message == (
        "barrier() is in non-uniform control flow: the condition at "
        f"{tmp_path / 'k.py'}:7:5 (`if local_id().x == 0:`) depends on local_id(), so some "
        "invocations of the workgroup may not reach it"
    )


def test_barrier_after_a_divergent_early_return_inside_a_helper(tmp_path):
    e = refused(
        tmp_path,
        """
        def work(i: u32) -> u32:
            if i > 5:
                return 1
            barrier()
            return 2

        @kernel(workgroup_size=64)
        def k(out: Buffer[u32, "rw"]):
            out[global_id().x] = work(local_id().x)
        """,
    )
    assert (e.line, e.col) == (7, 5)
    assert e.message.startswith(
        "barrier() is in non-uniform control flow: a break follows the condition at "
        f"{where(tmp_path, 5, 5, 'if i > 5:')}, which depends on local_id()"
    )


def test_barrier_after_a_divergent_break(tmp_path):
    e = refused(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(out: Buffer[u32, "rw"]):
            for t in range(4):
                if local_id().x == u32(t):
                    break
                barrier()
            out[global_id().x] = 1
        """,
    )
    assert (e.line, e.col) == (9, 9)
    assert "a break follows the condition at" in e.message


def test_barrier_before_a_divergent_continue_sees_the_next_iteration(tmp_path):
    e = refused(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(out: Buffer[u32, "rw"]):
            for t in range(4):
                barrier()
                if local_id().x == u32(t):
                    continue
                out[global_id().x] = u32(t)
        """,
    )
    assert (e.line, e.col) == (7, 9)
    assert e.message.startswith(
        "barrier() is in non-uniform control flow: a continue follows the condition at "
        f"{where(tmp_path, 8, 9, 'if local_id().x == u32(t):')}, which depends on local_id()"
    )


def test_a_return_that_turns_non_uniform_in_a_later_trip_reaches_the_barrier_above_it(tmp_path):
    # The return is uniform on the first trip (v is 0 everywhere) and divergent from the
    # second (v holds an id): the invocations that return skip the next trip's barrier.
    e = refused(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(o: Buffer[u32, "w"], n: u32):
            v = u32(0)
            for j in range(n):
                barrier()
                if v > 0:
                    return
                v = global_id().x
            o[global_id().x] = v
        """,
    )
    assert (e.line, e.col) == (8, 9)
    assert e.message.startswith(
        "barrier() is in non-uniform control flow: a return follows the condition at "
        f"{where(tmp_path, 9, 9, 'if v > 0:')}, which depends on global_id()"
    )


def test_a_local_holding_an_id_is_non_uniform(tmp_path):
    e = refused(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(out: Buffer[u32, "rw"]):
            n = local_id().x * 2
            if n > 3:
                barrier()
            out[global_id().x] = n
        """,
    )
    assert "the condition at" in e.message and "depends on local_id()" in e.message


def test_a_local_assigned_under_divergent_control_is_non_uniform(tmp_path):
    e = refused(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(out: Buffer[u32, "rw"]):
            c: u32 = 0
            if local_id().x > 3:
                c = 1
            if c == 1:
                barrier()
            out[global_id().x] = c
        """,
    )
    assert (e.line, e.col) == (10, 9)
    assert f"the condition at {where(tmp_path, 9, 5, 'if c == 1:')}" in e.message


def test_shared_loads_and_atomic_results_are_non_uniform(tmp_path):
    e = refused(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(out: Buffer[u32, "rw"]):
            t = shared(u32, 64)
            t[local_id().x] = 1
            barrier()
            if t[0] > 0:
                barrier()
            out[global_id().x] = 1
        """,
    )
    assert "depends on a load from shared array 't'" in e.message
    e = refused(
        tmp_path,
        """
        @kernel(workgroup_size=64)
        def k(out: Buffer[u32, "rw"]):
            old = atomic_add(out, 0, 1)
            if old == 0:
                barrier()
        """,
    )
    assert "depends on the result of add on 'out'" in e.message


def test_uniform_conditions_keep_compiling(tmp_path):
    (k,) = compile_src(
        tmp_path,
        """
        @kernel(workgroup_size=256, grid="x")
        def k(x: Buffer[u32], out: Buffer[u32, "rw"], n: u32):
            p = shared(u32, 256)
            lid = local_id().x
            if n == 0:
                return
            if workgroup_id().x == 0:
                barrier()
            if len(x) > 16 and num_workgroups().x > 1:
                barrier()
            if x[0] > 0:
                barrier()
            for t in range((n + 15) // 16):
                p[lid] = t
                barrier()
            s: u32 = 128
            while s > 0:
                if lid < s:
                    p[lid] += 1
                barrier()
                s >>= 1
            for t in range(4):
                if lid == u32(t):
                    break
            barrier()
            if lid == 0:
                out[0] = p[0]
        """,
    )
    assert k.stem == "k"


NEST = """
@kernel(workgroup_size=64)
def k(x: Buffer[u32], out: Buffer[u32, "rw"], n: u32):
    t = u32(0)
    a = u32(0)
    row = subgroup_id()
    while row < n:
        q = local_id().x
        while q < n:
            for j in range(n):
                for m in range(j):
{body}
                    t = t + global_id().x
                a = a + t
            q += 64
        row += num_subgroups()
    out[0] = t + a
"""


def test_nested_loops_walk_each_statement_a_bounded_number_of_times(tmp_path, monkeypatch):
    """A count, not a clock. The loop fixpoint walks a loop's body until nothing changes;
    an enclosing loop's next pass must not multiply that. With loops 4 deep (the outer two
    left together within a subgroup, then per invocation, as the library's row and strided
    loops are), each statement added to the innermost body costs a few visits: before, it
    cost a full fixpoint of each inner loop per pass of each outer one (16 x 16 passes)."""
    from vyre_build.frontend import uniformity

    visits = 0
    stmt = uniformity._Analysis.stmt

    def counted(self, *args):
        nonlocal visits
        visits += 1
        return stmt(self, *args)

    monkeypatch.setattr(uniformity._Analysis, "stmt", counted)

    def walk(size: int) -> int:
        nonlocal visits
        visits = 0
        body = "".join(f"{' ' * 20}t = t + x[t % 8] * {i}\n" for i in range(size))
        compile_src(tmp_path, NEST.replace("{body}\n", body))
        return visits

    small, large = walk(8), walk(24)
    depth = 4
    assert large - small <= 2 * depth * 16  # at most 2 visits per added statement per level
    assert large <= 2 * depth * (24 + 12)  # the whole kernel: about 12 statements besides
