"""Vulkan pipeline creation spread over threads (pipelines._create_in_parallel):
every create-info goes to exactly one driver call, a failing slice's VkResult comes back,
and an exception in a helper thread is raised in the caller's, after the pipelines the
other slices made are destroyed."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

vp = pytest.importorskip("vyre_build.runtime.backends.vulkan.pipelines")


class _Slots:
    """A VkPipeline[] (VK_NULL_HANDLE: None): `slots + k` is the array from slot k on, as
    cffi's pointer arithmetic gives."""

    def __init__(self, data: list, at: int = 0):
        self.data, self.at = data, at

    def __add__(self, k: int) -> _Slots:
        return _Slots(self.data, self.at + k)

    def __getitem__(self, k: int):
        return self.data[self.at + k]

    def __setitem__(self, k: int, value) -> None:
        self.data[self.at + k] = value


class _Lib:
    """vkCreateComputePipelines over slices of integer 'pointers' to create-infos, recorded;
    a slice that succeeds fills its slots with pipelines ("pipe", create-info index)."""

    def __init__(self, fail_at: int | None = None, raise_at: int | None = None):
        self.calls: list[tuple[int, int, int]] = []
        self.threads: set[int] = set()
        self.destroyed: list[tuple[str, int]] = []
        self.lock = threading.Lock()
        self.fail_at, self.raise_at = fail_at, raise_at

    def vkCreateComputePipelines(self, dev, cache, n, infos, alloc, pipes):  # noqa: N802
        assert (dev, cache) == ("dev", "cache")
        with self.lock:
            self.calls.append((infos, n, pipes.at))
            self.threads.add(threading.get_ident())
        if self.raise_at == infos:
            raise RuntimeError("driver blew up")
        if self.fail_at == infos:
            return -3
        for k in range(n):
            pipes[k] = ("pipe", infos + k)
        return vp.SUCCESS

    def vkDestroyPipeline(self, dev, pipe, alloc):  # noqa: N802
        assert dev == "dev" and pipe is not None
        with self.lock:
            self.destroyed.append(pipe)


def _run(monkeypatch, lib: _Lib, count: int, threads: int, pipes: _Slots | None = None) -> int:
    monkeypatch.setattr(vp, "vk", SimpleNamespace(lib=lib, ffi=SimpleNamespace(NULL=None)))
    monkeypatch.setattr(vp, "_THREADS", threads)
    monkeypatch.setattr(vp.os, "cpu_count", lambda: 64)
    pipes = pipes or _Slots([None] * count)
    return vp._create_in_parallel("dev", "cache", 0, pipes, count)


@pytest.mark.parametrize("count, threads", [(1, 4), (8, 4), (9, 4), (77, 4), (96, 8), (200, 3)])
def test_every_create_info_goes_to_one_call(monkeypatch, count, threads):
    lib = _Lib()
    assert _run(monkeypatch, lib, count, threads) == vp.SUCCESS
    covered = sorted(i for start, n, _ in lib.calls for i in range(start, start + n))
    assert covered == list(range(count))
    assert all(at == start and n > 0 for start, n, at in lib.calls)
    assert len(lib.calls) == min(threads, -(-count // vp._PER_THREAD))
    assert threading.get_ident() in lib.threads  # the calling thread takes a slice too


def test_a_failing_slice_result_comes_back(monkeypatch):
    lib = _Lib(fail_at=39)  # the second of two slices of 77
    assert _run(monkeypatch, lib, 77, 2) == -3


@pytest.mark.parametrize("raise_at", [0, 39])  # the calling thread's slice, a helper's
def test_an_exception_in_a_slice_is_raised_in_the_caller_and_nothing_leaks(monkeypatch, raise_at):
    lib = _Lib(raise_at=raise_at)
    pipes = _Slots([None] * 77)
    with pytest.raises(RuntimeError, match="driver blew up"):
        _run(monkeypatch, lib, 77, 2, pipes)
    # the other slice's pipelines (0..38 or 39..76) were made, then destroyed
    made = range(39, 77) if raise_at == 0 else range(39)
    assert sorted(lib.destroyed, key=lambda p: p[1]) == [("pipe", k) for k in made]
    assert pipes.data == [None] * 77
