"""Vulkan pipeline creation spread over threads (pipelines._create_in_parallel):
every create-info goes to exactly one driver call, a failing slice's VkResult comes back,
and an exception in a helper thread is raised in the caller's."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

vp = pytest.importorskip("vyre_build.runtime.backends.vulkan.pipelines")


class _Lib:
    """vkCreateComputePipelines as slices of integer 'pointers', recorded."""

    def __init__(self, fail_at: int | None = None, raise_at: int | None = None):
        self.calls: list[tuple[int, int, int]] = []
        self.threads: set[int] = set()
        self.lock = threading.Lock()
        self.fail_at, self.raise_at = fail_at, raise_at

    def vkCreateComputePipelines(self, dev, cache, n, infos, alloc, pipes):  # noqa: N802
        assert (dev, cache) == ("dev", "cache")
        with self.lock:
            self.calls.append((infos, n, pipes))
            self.threads.add(threading.get_ident())
        if self.raise_at == infos:
            raise RuntimeError("driver blew up")
        return -3 if self.fail_at == infos else vp.SUCCESS


def _run(monkeypatch, lib: _Lib, count: int, threads: int) -> int:
    monkeypatch.setattr(vp, "vk", SimpleNamespace(lib=lib, ffi=SimpleNamespace(NULL=None)))
    monkeypatch.setattr(vp, "_THREADS", threads)
    monkeypatch.setattr(vp.os, "cpu_count", lambda: 64)
    return vp._create_in_parallel("dev", "cache", 0, 1000, count)


@pytest.mark.parametrize("count, threads", [(1, 4), (8, 4), (9, 4), (77, 4), (96, 8), (200, 3)])
def test_every_create_info_goes_to_one_call(monkeypatch, count, threads):
    lib = _Lib()
    assert _run(monkeypatch, lib, count, threads) == vp.SUCCESS
    covered = sorted(i for start, n, _ in lib.calls for i in range(start, start + n))
    assert covered == list(range(count))
    assert all(pipes == 1000 + start and n > 0 for start, n, pipes in lib.calls)
    assert len(lib.calls) == min(threads, -(-count // vp._PER_THREAD))
    assert threading.get_ident() in lib.threads  # the calling thread takes a slice too


def test_a_failing_slice_result_comes_back(monkeypatch):
    lib = _Lib(fail_at=39)  # the second of two slices of 77
    assert _run(monkeypatch, lib, 77, 2) == -3


def test_an_exception_in_a_helper_thread_is_raised_in_the_caller(monkeypatch):
    lib = _Lib(raise_at=39)
    with pytest.raises(RuntimeError, match="driver blew up"):
        _run(monkeypatch, lib, 77, 2)
