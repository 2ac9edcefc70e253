"""Tasks for test_runner.py's pool test (a module the spawned workers can import)."""

import os
import time


def setup():
    return {"pid": os.getpid()}


def handle(state, task):
    kind, arg = task
    if kind == "sleep":
        time.sleep(arg)
    if kind == "exit":
        os._exit(arg)
    if kind == "segv":  # a crash as a driver's: the fault handler writes this stack
        import ctypes

        ctypes.string_at(0)
    return (kind, arg, state["pid"])
