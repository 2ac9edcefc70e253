"""Vulkan pipeline creation on helper threads while the caller prepares later slices
(stream.Stream): every slice goes to exactly one driver call, at most _THREADS threads
call the driver (the caller included), a slice that may be the last starts no thread, a
helper's exception is kept on its slice for the caller, no thread outlives the stream
(also when it is left early) and the interpreter's switch interval is put back."""

from __future__ import annotations

import sys
import threading
import time
from types import SimpleNamespace

import pytest

vs = pytest.importorskip("vyre_build.runtime.backends.vulkan.stream")
ffi = vs.vk.ffi


class _Lib:
    """vkCreateComputePipelines recording (slice tag, thread) and filling the slots with
    handles 1, 2, ...; a slice tagged `raise_at` raises, one tagged `fail_at` returns -3.
    `gate`, when set, holds every call until it is set (a slow driver)."""

    def __init__(self, raise_at=None, fail_at=None, gate: threading.Event | None = None):
        self.calls: list[tuple[object, int]] = []
        self.lock = threading.Lock()
        self.raise_at, self.fail_at, self.gate = raise_at, fail_at, gate
        self.destroyed: list[int] = []

    def vkCreateComputePipelines(self, dev, cache, n, infos, alloc, pipes):  # noqa: N802
        assert (dev, cache) == ("dev", "cache")
        if self.gate is not None:
            self.gate.wait(10)
        with self.lock:
            self.calls.append((infos, threading.get_ident()))
        if infos == self.raise_at:
            raise RuntimeError("driver blew up")
        if infos == self.fail_at:
            return -3
        for k in range(n):
            pipes[k] = ffi.cast("VkPipeline", k + 1)
        return 0  # VK_SUCCESS

    def vkDestroyPipeline(self, dev, pipe, alloc):  # noqa: N802
        self.destroyed.append(int(ffi.cast("uintptr_t", pipe)))


def _slice(tag: int, n: int = 8):
    return vs.Slice([("k", b"", "main")] * n, tag, [], [], [None] * n)


@pytest.fixture
def lib(monkeypatch):
    made = _Lib()
    monkeypatch.setattr(vs, "vk", SimpleNamespace(lib=made, ffi=ffi))
    monkeypatch.setattr(vs.os, "cpu_count", lambda: 64)
    return made


def _threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "vyre-vk-pipelines"}


@pytest.mark.parametrize("count, most", [(1, 4), (2, 4), (11, 4), (11, 2), (30, 3), (5, 1)])
def test_every_slice_goes_to_one_call_on_at_most_the_allowed_threads(monkeypatch, lib, count, most):
    monkeypatch.setattr(vs, "_THREADS", most)
    before = _threads()
    slices = [_slice(k) for k in range(count)]
    with vs.Stream("dev", "cache") as stream:
        for sl in slices:
            stream.put(sl, more=True)
            time.sleep(0.001)  # a caller preparing the next slice
        stream.finish()
    assert sorted(tag for tag, _ in lib.calls) == list(range(count))
    assert all(sl.result == 0 for sl in slices)
    assert all(int(ffi.cast("uintptr_t", sl.pipes[k])) == k + 1 for sl in slices for k in range(8))
    assert len({thread for _, thread in lib.calls}) <= most
    assert _threads() == before  # every helper joined


def test_a_slice_that_may_be_the_last_starts_no_thread(lib):
    sl = _slice(0, 3)
    with vs.Stream("dev", "cache") as stream:
        stream.put(sl, more=False)
        assert not stream._helpers
        stream.finish()
    assert lib.calls == [(0, threading.get_ident())]  # made by the caller


def test_one_core_makes_every_pipeline_on_the_calling_thread(monkeypatch, lib):
    monkeypatch.setattr(vs.os, "cpu_count", lambda: 1)
    with vs.Stream("dev", "cache") as stream:
        for k in range(4):
            stream.put(_slice(k), more=True)
        assert not stream._helpers
        stream.finish()
    assert {thread for _, thread in lib.calls} == {threading.get_ident()}


def test_a_helpers_exception_and_result_are_kept_for_the_caller(monkeypatch, lib):
    lib.raise_at, lib.fail_at = 1, 2
    slices = [_slice(k) for k in range(4)]
    with vs.Stream("dev", "cache") as stream:
        for sl in slices:
            stream.put(sl, more=True)
        stream.finish()
    assert isinstance(slices[1].result, RuntimeError)
    assert str(slices[1].result) == "driver blew up"
    assert slices[2].result == -3
    assert slices[0].result == slices[3].result == 0


def test_leaving_early_joins_the_helpers_and_runs_nothing_more(monkeypatch, lib):
    gate = threading.Event()
    lib.gate = gate
    monkeypatch.setattr(vs, "_THREADS", 2)  # one helper
    before = _threads()
    slices = [_slice(k) for k in range(5)]
    with pytest.raises(KeyError):
        with vs.Stream("dev", "cache") as stream:
            for sl in slices:
                stream.put(sl, more=True)
            threading.Timer(0.05, gate.set).start()
            raise KeyError("preparing a later slice failed")
    assert _threads() == before
    ran = [sl for sl in slices if sl.result is not None]
    assert len(ran) == len(lib.calls) <= 2  # the call the helper was in (and its next)
    assert [sl.result for sl in slices[len(ran) :]] == [None] * (5 - len(ran))


@pytest.fixture
def interval():
    """The interpreter's switch interval at CPython's default (0.005 s) for the test, put
    back after: a test that starts from an interval left lowered would prove nothing."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield sys.getswitchinterval()
    sys.setswitchinterval(before)


def test_the_switch_interval_is_lowered_while_helpers_run_and_put_back(lib, interval):
    with vs.Stream("dev", "cache") as stream:
        stream.put(_slice(0), more=True)
        assert sys.getswitchinterval() == pytest.approx(vs._SWITCH_S, rel=0.01)
        stream.finish()
    assert sys.getswitchinterval() == interval  # put back, also after every stream before


def test_every_stream_puts_the_interval_back(lib, interval):
    for _ in range(3):  # one after another, and two at once
        with vs.Stream("dev", "cache") as stream:
            stream.put(_slice(0), more=True)
            stream.finish()
        assert sys.getswitchinterval() == interval
    with vs.Stream("dev", "cache") as one, vs.Stream("dev", "cache") as two:
        one.put(_slice(1), more=True)
        two.put(_slice(2), more=True)
        one.finish()
        assert sys.getswitchinterval() < interval  # the other still runs helpers
        two.finish()
    assert sys.getswitchinterval() == interval


def test_a_switch_interval_set_meanwhile_stays(lib, interval):
    with vs.Stream("dev", "cache") as stream:
        stream.put(_slice(0), more=True)
        sys.setswitchinterval(0.001)  # the application's own
        stream.finish()
    assert sys.getswitchinterval() == pytest.approx(0.001)


def test_an_interval_already_below_ours_is_left_alone(lib, interval):
    sys.setswitchinterval(0.0001)
    low = sys.getswitchinterval()
    with vs.Stream("dev", "cache") as stream:
        stream.put(_slice(0), more=True)
        assert sys.getswitchinterval() == low
        stream.finish()
    assert sys.getswitchinterval() == low


def test_destroy_frees_what_a_slice_made(lib):
    sl = _slice(0, 3)
    with vs.Stream("dev", "cache") as stream:
        stream.put(sl, more=False)
        stream.finish()
    sl.destroy("dev")
    assert sorted(lib.destroyed) == [1, 2, 3]
    assert all(sl.pipes[k] == ffi.NULL for k in range(3))
