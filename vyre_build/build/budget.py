"""The compile work one build may do, across all its kernel files (README: "Limits").

One kernel file is bounded by the frontend's limits (MAX_FILE_OPERATIONS: its kernels'
operations times their variants); a `BuildBudget` bounds their sum over one build, so a
tree of many files at that limit cannot take unbounded time either. A build step charges
a file's count (the compiler's `compile_work`, from its parse) just before it compiles the
file, whether in the build process or in a worker (`build.pool` asks the build process,
which holds the one budget); a cache hit compiles nothing and charges nothing. A charge
that passes the budget refuses that file before any of its variants compiles.

The budget is $VYREMAXBUILDOPERATIONS (SCons), else $VYRE_MAX_BUILD_OPERATIONS, else
DEFAULT_BUILD_OPERATIONS; "unlimited" turns it off.
"""

from __future__ import annotations

import os
import threading

from vyre_build.core.errors import VyreError

DEFAULT_BUILD_OPERATIONS = 10_000_000  # ten files at the per-file limit
BUILD_OPERATIONS_ENV = "VYRE_MAX_BUILD_OPERATIONS"
BUILD_OPERATIONS_VAR = "VYREMAXBUILDOPERATIONS"


def parse_budget(raw, what: str) -> int | None:
    """'20000000', '20_000_000' or an int -> operations; 'unlimited' -> None; else a
    VyreError naming `what` (the setting as the user wrote it)."""
    text = str(raw).strip().replace("_", "").replace(",", "")
    if text.lower() in ("unlimited", "none"):
        return None
    if isinstance(raw, bool) or not text.isdigit():
        raise VyreError(
            f"{what} {str(raw)[:40]!r} is not a number of operations; write e.g. "
            f"{DEFAULT_BUILD_OPERATIONS} or unlimited"
        )
    return int(text)


def budget_setting(value=None, environ=None) -> tuple[int | None, str]:
    """(the build's budget, where it came from) from `value` ($VYREMAXBUILDOPERATIONS, if
    set), else the environment, else the default."""
    environ = os.environ if environ is None else environ
    if value not in (None, ""):
        return parse_budget(value, f"${BUILD_OPERATIONS_VAR}"), f"${BUILD_OPERATIONS_VAR}"
    if environ.get(BUILD_OPERATIONS_ENV, "") != "":
        raw = environ[BUILD_OPERATIONS_ENV]
        return parse_budget(raw, BUILD_OPERATIONS_ENV), BUILD_OPERATIONS_ENV
    return DEFAULT_BUILD_OPERATIONS, "the default"


class _Tally:
    def __init__(self):
        self.used = 0
        self.lock = threading.Lock()


class BuildBudget:
    """The operations one build may still compile; thread-safe (SCons job threads).

    Arguments:
        limit: operations over the whole build (None: unlimited, only counted).
        source: where the limit came from, for the message ("$VYREMAXBUILDOPERATIONS").
    """

    def __init__(self, limit: int | None, source: str = "the default", tally=None):
        self.limit, self.source = limit, source
        self._tally = tally if tally is not None else _Tally()

    @property
    def used(self) -> int:
        return self._tally.used

    def sharing(self, limit: int | None, source: str) -> BuildBudget:
        """A budget of another limit counting against the same build (an SCons
        environment that sets its own $VYREMAXBUILDOPERATIONS)."""
        return BuildBudget(limit, source, self._tally)

    def charge(self, path: str, work: int) -> None:
        """Count `work` operations of compiling kernel file `path`, or raise a VyreError
        (nothing counted) if they would bring the build past its limit."""
        with self._tally.lock:
            if self.limit is not None and self._tally.used + work > self.limit:
                raise VyreError(self.message(path, work))
            self._tally.used += work

    def refund(self, work: int) -> None:
        """Give back a charge whose compile did not happen (its worker was lost and the
        step runs again)."""
        with self._tally.lock:
            self._tally.used = max(0, self._tally.used - work)

    def message(self, path: str, work: int) -> str:
        shown = os.path.relpath(path)
        shown = path if shown.startswith("..") else shown
        return (
            f"{shown}: error: compiling it would bring this build to about "
            f"{self.used + work} operations (about {work} for this file, each variant "
            f"counted), more than {self.limit} (the build's limit, from {self.source})\n"
            f"  fix: build the tree in parts, or raise the build's limit: "
            f"${BUILD_OPERATIONS_VAR}, or {BUILD_OPERATIONS_ENV} in the environment "
            "(a number, or unlimited)"
        )
