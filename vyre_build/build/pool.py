"""Persistent build workers, so that `scons -jN` hashes, compiles and writes in parallel.

SCons runs its jobs in threads of one process, where Python code holds the GIL; a
`WorkerPool` hands each build step (`build.step.run_step`: key, local and remote lookup,
compile, store, write the outputs, queue the upload) and the cold scan of kernel files
(`build.parse`) to N worker processes started once per build (`python -c`; the compiler
imported and warmed up once). The SCons thread waits on a pipe meanwhile, with the GIL
released, and merges the worker's counters and warnings into the build's store and
remote (each once-per-build warning is said once, whichever process met it first).

Protocol: pickles over the worker's stdin and a private copy of its stdout (its own
stdout goes to stderr, so nothing it prints can corrupt a reply). A worker says it is
ready after its warm-up; until then steps run in the build process, so a small build
never waits for workers. A step about to compile asks the build process, which holds the
build's one compile budget (`build.budget`), and waits for its answer: {"charge": n} on
the private stdout, {} or {"error"} back on stdin. A worker exits at EOF, so it never
outlives the build; it ignores SIGINT (Ctrl-C stops SCons, which closes it). A worker
that dies is reported once and its step run in the build process instead (a charge it
made is given back first).
"""

from __future__ import annotations

import os
import pickle
import queue
import select
import signal
import subprocess
import sys
import threading
import traceback

from vyre_build.core.errors import VyreError

__all__ = ["WorkerPool", "serve"]

_BOOT = (
    "import pickle, sys; sys.path[:0] = pickle.load(sys.stdin.buffer); "
    "from vyre_build.build.pool import serve; serve()"
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
        self.ready = False
        path = [os.path.abspath(p) if p else os.getcwd() for p in sys.path]
        self.send(pickle.dumps(path, protocol=5))
        self.send(pickle.dumps({"compiler": compiler}, protocol=5))

    def poll_ready(self, wait: bool) -> bool:
        """Consume the worker's "ready" once it came (waiting for it if `wait`)."""
        if not self.ready:
            fd = self.proc.stdout.fileno()
            if wait or select.select([fd], [], [], 0)[0]:
                self.recv()
                self.ready = True
        return self.ready

    def send(self, payload: bytes) -> None:
        try:
            self.proc.stdin.write(payload)
            self.proc.stdin.flush()
        except OSError as exc:
            raise WorkerLost(self._why(exc)) from None

    def recv(self):
        try:
            return pickle.load(self.proc.stdout)
        except (EOFError, OSError, pickle.UnpicklingError) as exc:
            raise WorkerLost(self._why(exc)) from None

    def call(self, message: dict) -> dict:
        self.send(pickle.dumps(message, protocol=5))
        return self.recv()

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
    """N worker processes, started on first use.

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
            if not self._started:
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

    def _lost(self, worker: _Worker, exc: WorkerLost, what: str) -> None:
        with self._lock:
            if worker in self._workers:
                self._workers.remove(worker)
            first, self._lost_warned = not self._lost_warned, True
        if first:
            print(
                f"vyre: warning: a build worker stopped ({exc}); {what} in the build process",
                file=sys.stderr,
                flush=True,
            )

    def _acquire(self, wait: bool) -> _Worker | None:
        """An idle worker; None (run here instead) if none is ready and not `wait`."""
        try:
            worker = self._idle.get(block=wait or not self._started)
        except queue.Empty:
            return None
        try:
            if worker.poll_ready(wait):
                return worker
        except WorkerLost as exc:
            self._lost(worker, exc, "the step runs")
            return None
        self._idle.put(worker)
        return None

    def run(self, job: dict, store, remote, budget=None) -> dict:
        """Run `build.step.run_step(job)` in a ready worker (else here), answering its
        charges to `budget` (the build's `BuildBudget`); merge the worker's counters,
        warnings and what it learned of the remote; raise its VyreError."""
        from vyre_build.build.step import run_step

        self._start()
        worker = self._acquire(wait=False) if self._workers else None
        if worker is None:
            return run_step(job, store, remote, budget)
        message = dict(job, op="step", module=None)
        if job.get("module") is not None and job.get("module_bytes") is None:
            try:  # parsed in this process: the worker gets it pickled
                message["module_bytes"] = pickle.dumps(job["module"], protocol=5)
            except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
                message["parsed_hashes"] = None  # the worker parses instead
        message["store"] = None if store is None else (store.root, store.writable)
        if remote is not None:
            message["remote"] = (remote.config(), remote.state())
        message["budget"] = budget is not None
        charged = 0
        try:
            reply = worker.call(message)
            while "charge" in reply:  # the step is about to compile: the build's budget
                try:
                    budget.charge(job["source"], reply["charge"])
                    charged, answer = reply["charge"], {}
                except VyreError as exc:
                    answer = {"error": str(exc)}
                reply = worker.call(answer)
        except WorkerLost as exc:
            if charged:
                budget.refund(charged)  # charged again when the step runs here
            self._lost(worker, exc, f"{os.path.basename(job['source'])} is built")
            return run_step(job, store, remote, budget)
        self._idle.put(worker)
        _merge(reply, store, remote)
        if "crash" in reply:
            raise RuntimeError(f"build worker failed on {job['source']}:\n{reply['crash']}")
        if "error" in reply:
            raise VyreError(reply["error"])
        return reply["result"]

    def scan(self, paths: list[str], root: str | None = None, chunk: int = 16) -> list[dict]:
        """Parse kernel files of the kernel tree `root` in the workers, in parallel: for
        each path, its stems, deps and pickled parse (`Parses.scan_reply`), or its kernel
        error. Files a lost worker did not answer are left out (the caller scans those
        itself)."""
        self._start()
        todo: queue.Queue = queue.Queue()
        for i in range(0, len(paths), chunk):
            todo.put(paths[i : i + chunk])
        results: list[dict] = []

        def feed() -> None:
            worker = self._acquire(wait=True)
            if worker is None:
                return
            try:
                while True:
                    try:
                        batch = todo.get_nowait()
                    except queue.Empty:
                        break
                    results.extend(
                        worker.call({"op": "scan", "paths": batch, "root": root})["scans"]
                    )
            except WorkerLost as exc:
                self._lost(worker, exc, "its files are scanned")
                return
            self._idle.put(worker)

        threads = [threading.Thread(target=feed) for _ in range(len(self._workers))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    def close(self, remote=None) -> None:
        """Drain the workers' uploads (their counters go to `remote`), then stop them."""
        with self._lock:
            workers, self._workers = self._workers, []
        for worker in workers:
            if remote is not None and worker.ready:
                try:
                    reply = worker.call({"op": "finish", "state": remote.state()})
                    _merge(reply, None, remote)
                except WorkerLost:
                    pass
            worker.close()


def _merge(reply: dict, store, remote) -> None:
    """A worker's counters and warnings into the build process's store and remote."""
    if store is not None:
        for name, n in reply.get("counts", {}).items():
            if n:
                store.count(name, n)
        for message in reply.get("warnings", []):
            if message == reply.get("write_failure"):
                store.writable = False
                store.warn_once("write", message)
            else:
                store.warn(message)
    if remote is not None and "remote_state" in reply:
        remote.merge_state(reply["remote_state"])
        remote.add_counts(reply["remote_counts"])
        for kind, message in reply["remote_notes"]:
            remote.say(kind, message)


def _warm_up(compiler: str) -> None:
    from vyre_build.build.parse import PARSE_ONCE_COMPILER
    from vyre_build.build.step import load_compiler

    module = load_compiler(compiler)
    if compiler == PARSE_ONCE_COMPILER:  # imports the frontend, lowering and emitters now
        path = os.path.join(os.sep, "vyre-warm-up", "warm_up.py")
        module.compile_file(path, text=_WARM_UP)


class _BuildBudgetLine:
    """A worker's side of the build's budget: each charge is asked of the build process."""

    def __init__(self, ask):
        self.ask = ask

    def charge(self, path: str, work: int) -> None:
        answer = self.ask({"charge": work})
        if "error" in answer:
            raise VyreError(answer["error"])


class _Serving:
    """A worker's state across jobs: its scans' parses and its remote connection.
    `ask(message)` sends a message to the build process and returns its answer."""

    def __init__(self, compiler: str, ask=None):
        self.compiler = compiler
        self.ask = ask
        self.parses = None  # one loader, so a shared helper is parsed once in this worker
        self.remote = None
        self.notes: list[tuple[str, str]] = []

    def scan(self, job: dict) -> dict:
        if self.parses is None:
            from vyre_build.build.parse import Parses
            from vyre_build.build.step import load_compiler

            self.parses = Parses(load_compiler(self.compiler))
        return {"scans": [self.parses.scan_reply(p, job.get("root")) for p in job["paths"]]}

    def _remote(self, config, state):
        from vyre_build.cache.remote import RemoteCache

        if self.remote is None or self.remote.config() != config:
            self.remote = RemoteCache.from_config(
                config, notify=lambda k, m: self.notes.append((k, m))
            )
        self.remote.merge_state(state)
        return self.remote

    def _remote_reply(self, reply: dict) -> dict:
        if self.remote is not None:
            reply["remote_state"] = self.remote.state()
            reply["remote_counts"] = self.remote.take_counts()
            reply["remote_notes"], self.notes = self.notes, []
        return reply

    def step(self, job: dict) -> dict:
        from vyre_build.build.step import run_step
        from vyre_build.cache.store import Store

        warnings: list[str] = []
        store = None
        if job["store"] is not None:
            store = Store(job["store"][0], warn=warnings.append)
            store.writable = job["store"][1]
        reply: dict = {"warnings": warnings}
        try:
            remote = self._remote(*job["remote"]) if job.get("remote") else None
            budget = _BuildBudgetLine(self.ask) if job.get("budget") else None
            reply["result"] = run_step(job, store, remote, budget)
        except VyreError as exc:
            reply["error"] = str(exc)
        except Exception:  # noqa: BLE001 - a bug: its traceback goes to the build
            reply["crash"] = traceback.format_exc()
        reply["counts"] = store.take_counts() if store is not None else {}
        reply["write_failure"] = store.write_failure if store is not None else None
        return self._remote_reply(reply)

    def finish(self, job: dict) -> dict:
        if self.remote is None:
            return {}
        self.remote.merge_state(job["state"])
        self.remote.add_counts(self.remote.finish())  # finish hands the counters over
        return self._remote_reply({})


def serve() -> None:
    """A worker's main loop: read jobs from stdin, reply on the private stdout copy."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    init = pickle.load(inp)
    try:
        _warm_up(init["compiler"])
    except Exception:  # noqa: BLE001 - a step then reports the compiler's own error
        pass

    def ask(message: dict):
        pickle.dump(message, out, protocol=5)
        out.flush()
        return pickle.load(inp)

    serving = _Serving(init["compiler"], ask)
    pickle.dump("ready", out, protocol=5)
    out.flush()
    while True:
        try:
            job = pickle.load(inp)
        except EOFError:
            return
        reply = getattr(serving, job.get("op", "step"))(job)
        pickle.dump(reply, out, protocol=5)
        out.flush()
