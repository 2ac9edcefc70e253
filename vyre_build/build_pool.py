"""Persistent compile workers, so that cache misses compile in parallel with `scons -jN`.

SCons runs its jobs in threads of one process, where compiling Python holds the GIL; a
`WorkerPool` hands each miss (`build_step.compile_job`) to one of N worker processes,
started once per build (`python -c`, the compiler imported and warmed up once), which
compile, store the entry in the local cache and write the outputs, and reply with the
output hashes. The SCons thread waits on a pipe meanwhile, with the GIL released.

Protocol: pickles over the worker's stdin and a private copy of its stdout (its own
stdout goes to stderr, so nothing it prints can corrupt a reply). A worker exits at EOF,
so it never outlives the build; it ignores SIGINT (Ctrl-C stops SCons, which closes it).
A worker that dies is reported once and its job compiled in the build process instead.
"""

from __future__ import annotations

import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
import traceback

from vyre_build.errors import VyreError

__all__ = ["WorkerPool", "serve"]

_BOOT = (
    "import pickle, sys; sys.path[:0] = pickle.load(sys.stdin.buffer); "
    "from vyre_build.build_pool import serve; serve()"
)
_WARM_UP = """\
from vyre_build.lang import Buffer, f32, global_id, kernel


@kernel(workgroup_size=64)
def warm_up(x: Buffer[f32], y: Buffer[f32, "rw"], a: f32):
    i = global_id().x
    if i < len(y):
        y[i] = a * x[i] + y[i]
"""


class WorkerLost(Exception):
    """A worker process that stopped answering (exited, killed)."""


class _Worker:
    def __init__(self, compiler: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        path = [os.path.abspath(p) if p else os.getcwd() for p in sys.path]
        self.send(pickle.dumps(path, protocol=5))
        self.send(pickle.dumps({"compiler": compiler}, protocol=5))

    def send(self, payload: bytes) -> None:
        try:
            self.proc.stdin.write(payload)
            self.proc.stdin.flush()
        except OSError as exc:
            raise WorkerLost(self._why(exc)) from None

    def call(self, payload: bytes) -> dict:
        self.send(payload)
        try:
            return pickle.load(self.proc.stdout)
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            raise WorkerLost(self._why(exc)) from None

    def _why(self, exc) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return f"it stopped answering ({exc or type(exc).__name__})"
        return f"killed by signal {-code}" if code < 0 else f"it exited with status {code}"

    def close(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class WorkerPool:
    """N compile worker processes, started on first use.

    Arguments:
        size: number of workers (SCons: the -j count).
        compiler: the compiler module the workers import and warm up.
    """

    def __init__(self, size: int, compiler: str):
        self.size, self.compiler = max(1, int(size)), compiler
        self._idle: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._workers: list[_Worker] = []
        self._started = False
        self._lost_warned = False

    def _start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
            for _ in range(self.size):
                self._spawn()

    def _spawn(self) -> None:
        try:
            worker = _Worker(self.compiler)
        except (OSError, WorkerLost):
            return
        self._workers.append(worker)
        self._idle.put(worker)

    def run(self, job: dict, store) -> dict:
        """Run `build_step.compile_job(job)` in a worker; merge its store counters and
        warnings into `store`; raise the worker's VyreError (a kernel error) as such."""
        from vyre_build.build_step import compile_job

        self._start()
        job = dict(job, store_root=store.root if store is not None else None)
        job["store_writable"] = store is not None and store.writable
        try:
            payload = pickle.dumps(job, protocol=5)
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
            job["module"] = None  # the worker parses instead
            payload = pickle.dumps(job, protocol=5)
        worker = self._idle.get() if self._workers else None
        if worker is None:
            return compile_job(job, store)
        try:
            reply = worker.call(payload)
        except WorkerLost as exc:
            with self._lock:
                self._workers.remove(worker)
                self._spawn()
                first, self._lost_warned = not self._lost_warned, True
            if first:
                print(
                    f"vyre: warning: a compile worker stopped ({exc}); compiling "
                    f"{os.path.basename(job['source'])} in the build process",
                    file=sys.stderr,
                    flush=True,
                )
            return compile_job(job, store)
        self._idle.put(worker)
        if store is not None:
            for name, n in reply["counts"].items():
                if n:
                    store.count(name, n)
            for message in reply["warnings"]:
                if message == reply["write_failure"]:
                    store.writable = False
                    store.warn_once("write", message)
                else:
                    store.warn(message)
        if "crash" in reply:
            raise RuntimeError(f"compile worker failed on {job['source']}:\n{reply['crash']}")
        if "error" in reply:
            raise VyreError(reply["error"])
        return reply["result"]

    def close(self) -> None:
        """Stop every worker (they exit at the end of their input)."""
        with self._lock:
            workers, self._workers = self._workers, []
        for worker in workers:
            worker.close()


def _warm_up(compiler: str) -> None:
    from vyre_build.build_parse import PARSE_ONCE_COMPILER
    from vyre_build.build_step import load_compiler

    module = load_compiler(compiler)
    if compiler == PARSE_ONCE_COMPILER:  # imports the frontend, lowering and emitters now
        path = os.path.join(os.sep, "vyre-warm-up", "warm_up.py")
        module.compile_file(path, text=_WARM_UP)


def serve() -> None:
    """A worker's main loop: read jobs from stdin, reply on the private stdout copy."""
    from vyre_build.build_step import compile_job
    from vyre_build.cache.store import Store

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    init = pickle.load(inp)
    try:
        _warm_up(init["compiler"])
    except Exception:  # noqa: BLE001 - a job then reports the compiler's own error
        pass
    while True:
        try:
            job = pickle.load(inp)
        except EOFError:
            return
        warnings: list[str] = []
        store = None
        if job["store_root"] is not None:
            store = Store(job["store_root"], warn=warnings.append)
            store.writable = job["store_writable"]
        reply: dict = {"warnings": warnings}
        try:
            reply["result"] = compile_job(job, store)
        except VyreError as exc:
            reply["error"] = str(exc)
        except Exception:  # noqa: BLE001 - a compiler bug: its traceback goes to the build
            reply["crash"] = traceback.format_exc()
        reply["counts"] = store.take_counts() if store is not None else {}
        reply["write_failure"] = store.write_failure if store is not None else None
        pickle.dump(reply, out, protocol=5)
        out.flush()
