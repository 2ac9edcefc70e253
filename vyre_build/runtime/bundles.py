"""`Bundle`: an opened .vyrebundle as a read-only Mapping of kernel id -> Kernel."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, NamedTuple

from vyre_build.core.backends import BACKENDS
from vyre_build.bundle import BundleReader, kernel_id
from vyre_build.bundle.metadata import KernelMeta
from vyre_build.core.errors import BundleError, DeviceError, VyreError
from vyre_build.runtime.device import Device
from vyre_build.runtime.kernel import Kernel
from vyre_build.runtime.tuning import Choice, choose

if TYPE_CHECKING:
    from types import TracebackType


# warm() decodes the metadata records of this many kernels at a time (one JSON pass each).
_DECODED = 16


class KernelNotFound(BundleError, KeyError):
    """No kernel of that id in the bundle (a KeyError too, as a Mapping's lookups raise)."""

    def __str__(self) -> str:
        return str(self.args[0])


class Warmed(NamedTuple):
    """What `Bundle.warm()` did: the kernels whose pipelines exist now, how many pipelines
    it created (the others existed), the kernels skipped as the device cannot run them
    (with the reason), and those left out as no pick for this device runs them (with the
    pick that passes them over; `warm(all=True)` warms them too)."""

    kernels: tuple[str, ...]
    created: int
    skipped: dict[str, str]
    unpicked: dict[str, str]


class Pick(NamedTuple):
    """One choice among a bundle's kernels on its device: of the kernel ids `among`, the
    calls of `by` (e.g. "tunable 'scale'", "library.reduce (sum, f32)") run only `runs`
    there. Ids the bundle lacks are ignored."""

    by: str
    among: tuple[str, ...]
    runs: tuple[str, ...]


# What the code above the runtime that chooses among a bundle's kernels per device (the
# library: library/picks.py, registered when vyre_build.library is imported) picks on a
# bundle's device: name -> (bundle -> its Picks). The runtime names none of it.
Picker = Callable[["Bundle"], Iterable[Pick]]
_PICKERS: dict[str, Picker] = {}


def register_picks(name: str, picker: Picker) -> None:
    """Register (or replace) `picker`, a function of a Bundle giving the Picks that code
    above the runtime makes on its device, so that `Bundle.warm()` leaves out what none of
    them runs. The library registers its own (library/picks.py)."""
    _PICKERS[name] = picker


class Bundle(Mapping[str, Kernel]):
    """An opened .vyrebundle (a context manager): kernel id ("saxpy", "add.f32") -> Kernel.
    A kernel's metadata and shader are read and verified on first use, its pipeline made
    on its first call (or by `warm()`); all are kept for the bundle's lifetime.

    The name of a kernel tunable (docs/tuning.md) that is not itself a kernel id looks up
    the candidate picked for this device (`bundle["scale"].variant`: which one;
    `bundle.tuned("scale")`: how it was picked)."""

    def __init__(self, reader: BundleReader, device: Device | Callable[[], Device]):
        self.reader = reader
        self._device = device
        self._kernels: dict[str, Kernel] = {}
        self._lock = threading.Lock()
        self.ids: list[str] = reader.ids  # sorted kernel ids
        self._known = frozenset(self.ids)
        self._choices: dict[str, Choice | None] = {}
        self._tunable_of: dict[str, str | None] = {}  # library function -> tunable (cached)

    @property
    def device(self) -> Device:
        """The device kernels run on, created on first use (so opening stays cheap)."""
        if not isinstance(self._device, Device):
            self._device = self._device()
        return self._device

    def __repr__(self) -> str:
        where = (
            f"{self._device.backend}: {self._device.name}"
            if isinstance(self._device, Device)
            else "a device made on first use"
        )
        return f"<Bundle {self.reader.path!r}: {len(self.ids)} kernels, on {where}>"

    def __len__(self) -> int:
        return len(self.ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __contains__(self, kid: object) -> bool:
        return isinstance(kid, str) and kid in self._known

    def __getitem__(self, kid: str) -> Kernel:
        found = self._kernels.get(kid) if isinstance(kid, str) else None
        if found is not None:
            return found
        if kid not in self:
            tunable = self.reader.tuning["tunables"].get(kid) if isinstance(kid, str) else None
            if tunable is not None and tunable["library"] is None:
                choice = self.tuned(kid)
                if choice is not None and choice.kernel in self._known:
                    return self._load(choice.kernel)
            try:
                self.reader.entry(kid)  # its message names the variants or the kernels
            except BundleError as exc:
                raise KernelNotFound(str(exc)) from None
        return self._load(kid)

    def tuned(self, name: str) -> Choice | None:
        """The pick of tunable `name` for this bundle's device (docs/tuning.md: the exact
        device's record, else the same device with another driver, else the default), or
        None when the bundle declares no such tunable. Nothing is measured here."""
        if name not in self._choices:
            self._choices[name] = choose(self.reader.tuning, name, self.device.profile)
        return self._choices[name]

    def tunable_for(self, library: str) -> str | None:
        """The name of the tunable of library function `library` (e.g. "reduce"), or None;
        looked up once per function (every library call asks)."""
        if library not in self._tunable_of:
            names = sorted(
                n for n, t in self.reader.tuning["tunables"].items() if t["library"] == library
            )
            self._tunable_of[library] = names[0] if names else None
        return self._tunable_of[library]

    def kernel(self, name: str, variant: str | None = None) -> Kernel:
        """The kernel `name` (and `variant`), loaded on first use."""
        if not isinstance(name, str) or not (variant is None or isinstance(variant, str)):
            raise BundleError(
                f"{self.reader.path}: kernel name and variant must be strings, got "
                f"{name!r}, {variant!r}"
            )
        return self[kernel_id(name, variant or None)]

    def _load(self, kid: str) -> Kernel:
        with self._lock:
            found = self._kernels.get(kid)
            if found is not None:
                return found
            device = self.device
            meta = self.reader.kernel_meta(kid)
            try:
                device.check_kernel(meta)  # before reading or creating anything
            except DeviceError as exc:  # refused when called or warmed, not when listed
                found = self._kernels[kid] = Kernel(device, meta, b"", refusal=str(exc))
                return found
            target = BACKENDS[device.backend].artifact
            why = (meta.skipped or {}).get(target.name)
            if why is not None:  # the build made no artifact for this backend, and said why
                refusal = f"kernel {kid!r} has no {target.suffix} artifact: {why}"
                found = self._kernels[kid] = Kernel(device, meta, b"", refusal=refusal)
                return found
            raw = self.reader.read_artifact(kid, target.suffix)  # names what it has instead
            code: str | bytes = raw
            if target.text:
                try:
                    code = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise BundleError(
                        f"bundle kernel {kid!r}: {target.suffix} is not UTF-8: {exc}"
                    ) from exc
            found = self._kernels[kid] = Kernel(device, meta, code, _checked=True)
            return found

    def runnable(self) -> list[str]:
        """The ids of the kernels this bundle's device can run (the others, such as a
        cooperative-matrix kernel on a device without them, are refused when called)."""
        return [kid for kid in self.ids if self[kid].refusal is None]

    def picks(self) -> list[Pick]:
        """Every choice among this bundle's kernels on its device: each kernel tunable's
        (docs/tuning.md: its candidates, of which the pick runs), then those of the
        registered pickers (the library's once vyre_build.library is imported: which of
        its kernels its functions run here)."""
        out = []
        for name, tunable in sorted(self.reader.tuning["tunables"].items()):
            choice = self.tuned(name) if tunable["library"] is None else None
            if choice is not None and choice.kernel is not None:
                among = tuple(c["kernel"] for c in tunable["candidates"].values())
                out.append(Pick(f"tunable {name!r} ({choice.how})", among, (choice.kernel,)))
        for _, picker in sorted(_PICKERS.items()):
            out += picker(self)
        return out

    def unpicked(self) -> dict[str, str]:
        """The kernels of this bundle that no pick on its device runs (`picks()`: another
        candidate of a tunable, a library kernel this device is never given), each with
        the pick that passes it over; sorted by id. `warm()` leaves them out. A pick that
        runs none of the bundle's kernels (a bundle holding only a library kernel, to be
        called directly) passes none over."""
        picks = [p for p in self.picks() if any(kid in self._known for kid in p.runs)]
        runs = {kid for p in picks for kid in p.runs}
        out: dict[str, str] = {}
        for p in picks:
            why = f"{p.by} runs {', '.join(p.runs)} on this device"
            for kid in p.among:
                if kid in self._known and kid not in runs:
                    out.setdefault(kid, why)
        return dict(sorted(out.items()))

    def warm(self, ids: Iterable[str] | None = None, *, all: bool = False) -> Warmed:
        """Create in one call the pipelines of the kernels this device may be asked to run,
        so that no first call pays for one: every kernel but those `unpicked()` names (the
        candidates no pick here runs). `all=True`: every kernel; `ids`: those kernels.
        A kernel the device cannot run, or without this backend's artifact, is skipped
        (with `ids` given: raises instead, and no pipeline of the call is kept). Kernels
        are loaded as the device takes them, so that Vulkan creates the pipelines of the
        first while the later ones are loaded (docs/runtime.md, "Warming").

        Returns:
            Warmed(kernels, created, skipped, unpicked): `unpicked` is empty with `all` or
            `ids`.
        """
        if ids is not None and all:
            raise BundleError(f"{self.reader.path}: warm() takes ids or all=True, not both")
        unpicked = {} if ids is not None or all else self.unpicked()
        chosen = list((k for k in self.ids if k not in unpicked) if ids is None else ids)
        kernels: list[Kernel] = []
        skipped: dict[str, str] = {}

        def loaded() -> Iterator[tuple[KernelMeta, str | bytes]]:
            # Each kernel loaded as the device asks for it, so that it creates the
            # pipelines of those before while the later ones are loaded (Vulkan); the
            # metadata records of 4, 8, then _DECODED kernels in one JSON pass each
            # (decode_metas).
            at, size = 0, 4  # the first records few, so that the device starts soon
            while at < len(chosen):
                part = chosen[at : at + size]
                at, size = at + size, min(2 * size, _DECODED)
                self.reader.decode_metas([k for k in part if k not in self._kernels])
                for kid in part:
                    try:
                        kernel = self[kid]
                        kernel._refuse()
                    except VyreError as exc:
                        if ids is not None:
                            raise
                        skipped[kid] = str(exc)
                        continue
                    kernels.append(kernel)
                    yield kernel.meta, kernel.code

        created = self.device.warm(loaded())
        return Warmed(tuple(k.id for k in kernels), created, skipped, unpicked)

    def close(self) -> None:
        """Close the bundle file (the device stays open: it may be shared)."""
        self.reader.close()

    def __enter__(self) -> Bundle:  # noqa: PYI034 - typing.Self needs Python 3.11
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
