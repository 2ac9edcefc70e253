"""Worker processes with a per-task timeout: a program that hangs a backend (an infinite
loop on lavapipe) costs one worker, which is killed by its pid and replaced, not the run.
Workers are also replaced every `recycle` tasks: the runtime keeps every pipeline it made.
"""

from __future__ import annotations

import faulthandler
import multiprocessing as mp
import os
import shutil
import signal
import tempfile
import time
from multiprocessing.connection import wait


def _serve(conn, setup, handler, fault_path) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C
    # A crash in a driver (SIGSEGV, an LLVM abort) leaves its Python stack here, for the
    # parent's report: where the worker died tells a driver's compile from a dispatch.
    fault = open(fault_path, "w")  # noqa: SIM115 - open for the life of the process
    faulthandler.enable(file=fault)
    state = setup()
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        conn.send(handler(state, task))


class Pool:
    """`run(tasks)` yields (task, result) as results arrive; result None on a timeout."""

    def __init__(self, jobs: int, setup, handler, timeout, recycle: int = 150):
        self.jobs, self.setup, self.handler = jobs, setup, handler
        self.timeout, self.recycle = timeout, recycle  # timeout(task) -> seconds
        self.ctx = mp.get_context("spawn")
        self.workers: list = []
        self.faults = ""  # a folder of one fault file per worker, while run() runs
        self.started = 0

    def fault(self, w) -> str:
        """What the worker's fault handler wrote (its stack when it crashed), or ""."""
        try:
            with open(w["fault"], encoding="utf-8", errors="replace") as f:
                return f.read(20000)
        except OSError:
            return ""

    def _start(self):
        parent, child = self.ctx.Pipe()
        self.started += 1
        fault = os.path.join(self.faults, f"worker-{self.started}.txt")
        proc = self.ctx.Process(
            target=_serve, args=(child, self.setup, self.handler, fault), daemon=True
        )
        # Ctrl-C waits until the worker has its start data: a KeyboardInterrupt inside
        # start() would leave the spawned child reading a pipe no one writes to, and its
        # EOFError traceback would reach the user (seen under load, when a worker was
        # recycled as the run was interrupted). A started worker ignores Ctrl-C and ends
        # quietly when its pipe closes.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            proc.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        child.close()
        return {"proc": proc, "conn": parent, "task": None, "since": 0.0, "done": 0, "fault": fault}

    def _stop(self, w, kill: bool) -> None:
        if kill:
            if w["proc"].is_alive():
                os.kill(w["proc"].pid, signal.SIGKILL)
        else:
            try:
                w["conn"].send(None)
            except (BrokenPipeError, OSError):
                pass
        w["proc"].join(5)
        w["conn"].close()

    def submit(self, task) -> None:
        """Queue one more task (from the consumer of run(), e.g. a follow-up), run next, so
        an interrupted run still has the reports of what it found."""
        self.todo.append(task)

    def run(self, tasks):
        self.todo = todo = list(tasks)
        todo.reverse()
        self.faults = tempfile.mkdtemp(prefix="vyre-conform-")
        self.workers = [self._start() for _ in range(max(1, min(self.jobs, len(todo))))]
        try:
            while todo or any(w["task"] is not None for w in self.workers):
                for w in self.workers:
                    if w["task"] is None and todo:
                        w["task"], w["since"] = todo.pop(), time.monotonic()
                        w["conn"].send(w["task"])
                busy = [w for w in self.workers if w["task"] is not None]
                ready = wait([w["conn"] for w in busy], timeout=1.0)
                now = time.monotonic()
                for i, w in enumerate(self.workers):
                    if w["task"] is None:
                        continue
                    if w["conn"] in ready:
                        task, w["task"] = w["task"], None
                        try:
                            result = w["conn"].recv()
                        except EOFError:  # the worker died (a crash in a driver)
                            w["proc"].join(5)
                            result = ("died", w["proc"].exitcode, self.fault(w))
                            self._stop(w, kill=True)
                            self.workers[i] = w = self._start()
                        w["done"] += 1
                        yield task, result
                        if w["done"] >= self.recycle and todo:
                            self._stop(w, kill=False)
                            self.workers[i] = self._start()
                    elif now - w["since"] > self.timeout(w["task"]):
                        task = w["task"]
                        self._stop(w, kill=True)
                        self.workers[i] = self._start()
                        yield task, None
        finally:
            for w in self.workers:
                self._stop(w, kill=w["task"] is not None)
            shutil.rmtree(self.faults, ignore_errors=True)
