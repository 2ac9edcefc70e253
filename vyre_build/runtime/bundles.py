"""`Bundle`: an opened .vyrebundle as a read-only Mapping of kernel id -> Kernel."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, NamedTuple

from vyre_build.core.backends import BACKENDS
from vyre_build.bundle import BundleReader, kernel_id
from vyre_build.core.errors import BundleError, DeviceError, VyreError
from vyre_build.runtime.device import Device
from vyre_build.runtime.kernel import Kernel
from vyre_build.runtime.tuning import Choice, choose

if TYPE_CHECKING:
    from types import TracebackType


class KernelNotFound(BundleError, KeyError):
    """No kernel of that id in the bundle (a KeyError too, as a Mapping's lookups raise)."""

    def __str__(self) -> str:
        return str(self.args[0])


class Warmed(NamedTuple):
    """What `Bundle.warm()` did: the kernels whose pipelines exist now, how many pipelines
    it created (the others existed), and the kernels skipped with the reason."""

    kernels: tuple[str, ...]
    created: int
    skipped: dict[str, str]


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
            raw = self.reader.read_artifact(kid, target.suffix)  # names what it has instead
            code: str | bytes = raw
            if target.text:
                try:
                    code = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise BundleError(
                        f"bundle kernel {kid!r}: {target.suffix} is not UTF-8: {exc}"
                    ) from exc
            found = self._kernels[kid] = Kernel(device, meta, code)
            return found

    def runnable(self) -> list[str]:
        """The ids of the kernels this bundle's device can run (the others, such as a
        cooperative-matrix kernel on a device without them, are refused when called)."""
        return [kid for kid in self.ids if self[kid].refusal is None]

    def warm(self, ids: Iterable[str] | None = None) -> Warmed:
        """Create the pipelines of `ids` (default: every kernel) in one call, so that no
        first call pays for one. A kernel the device cannot run, or without this backend's
        artifact, is skipped (with `ids` given: raises instead).

        Returns:
            Warmed(kernels, created, skipped).
        """
        chosen = list(self.ids if ids is None else ids)
        self.reader.decode_metas([k for k in chosen if k not in self._kernels])
        kernels, skipped = [], {}
        for kid in chosen:
            try:
                kernel = self[kid]
                kernel._refuse()
                kernels.append(kernel)
            except VyreError as exc:
                if ids is not None:
                    raise
                skipped[kid] = str(exc)
        created = self.device.warm([(k.meta, k.code) for k in kernels])
        return Warmed(tuple(k.id for k in kernels), created, skipped)

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
