"""Device.warm's chunks (runtime/warm_chunks.py): every entry point not yet created in
exactly one chunk, once however often asked for, in order, a kernel's entry points
together; sizes 2, 4, then 8; only the last says no more may follow; `todo` holds what
was given."""

from __future__ import annotations

from types import SimpleNamespace

from vyre_build.runtime.warm_chunks import warm_chunks


def _meta(name: str, coarse: bool = False):
    return SimpleNamespace(id=name, coarse=SimpleNamespace(entry="coarse") if coarse else None)


def test_chunks_grow_and_only_the_last_may_end():
    kernels = [(_meta(f"k{i}"), b"c%d" % i) for i in range(31)]
    todo: list = []
    got = list(warm_chunks(iter(kernels), {}, False, todo))
    assert [len(c) for c, _ in got] == [2, 4, 8, 8, 8, 1]
    assert [more for _, more in got] == [True] * 5 + [False]
    # a last chunk that is full says so too (it is given once the iterator has ended)
    thirty = list(warm_chunks(kernels[:30], {}, False, []))
    assert [(len(c), more) for c, more in thirty] == [(2, 1), (4, 1), (8, 1), (8, 1), (8, 0)]
    assert [m.id for c, _ in got for m, _, _ in c] == [f"k{i}" for i in range(31)]
    assert todo == [k for c, _ in got for k in c]


def test_made_and_repeated_entry_points_are_left_out_and_entries_stay_together():
    a, b, c = _meta("a", coarse=True), _meta("b"), _meta("c", coarse=True)
    made = {("b", b"B", None, "main")}
    kernels = [(a, b"A"), (b, b"B"), (a, b"A"), (c, b"C")]
    todo: list = []
    got = list(warm_chunks(kernels, made, True, todo))
    assert [[(m.id, e) for m, _, e in chunk] for chunk, _ in got] == [
        [("a", "main"), ("a", "coarse")],
        [("c", "main"), ("c", "coarse")],
    ]
    assert [more for _, more in got] == [True, False]
    # without coarse entries (a backend that has none): main only
    assert [len(ch) for ch, _ in warm_chunks(kernels, made, False, [])] == [2]


def test_a_batch_of_one_kernel_is_one_last_chunk():
    assert [(len(c), more) for c, more in warm_chunks([(_meta("k"), b"")], {}, False, [])] == [
        (1, False)
    ]
    one = [(_meta("k", coarse=True), b"")]  # Kernel.warm() of a kernel with a coarse entry
    assert [(len(c), more) for c, more in warm_chunks(one, {}, True, [])] == [(2, False)]
