"""The runtime's pick among a tunable's candidates: the tuning record of this device, else
the tunable's default. Nothing is measured here: `vyre-build tune` measures, at build time.

Guarantees:
- `choose` is a pure function of the bundle's tuning data and the device profile: the
  record of the exact device (backend, vendor, device, adapter, driver, driver version,
  subgroup size) wins, then one of the same backend, vendor and device with another driver
  (the newest driver version among those), then the tunable's declared default; the
  Choice says which (`how`: "exact", "driver", "default") and what it chose.
- A record's pick that names a candidate the tunable no longer has falls back to the
  default, with `how` "default (record names unknown candidate X)": never an error at
  run time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from vyre_build.bundle.tuning import DEVICE_KEYS, device_text, match
from vyre_build.runtime.kernel import Kernel
from vyre_build.runtime.profile import DeviceProfile

__all__ = ["Choice", "Forced", "choose", "device_identity"]


class Choice(NamedTuple):
    """What a tunable runs on one device: `candidate` (its name), `kernel` (the kernel id
    it runs, or None for a library candidate that keeps the function's own), `params`
    (host parameters), `how` it was picked, and `device` (the record's device line, or
    None for the default)."""

    tunable: str
    candidate: str
    kernel: str | None
    params: dict[str, Any]
    how: str
    device: str | None


def device_identity(profile: DeviceProfile) -> dict[str, Any]:
    """The DEVICE_KEYS of a device profile, as a tuning record names its device."""
    return {k: getattr(profile, k) for k in DEVICE_KEYS}


def choose(tuning: dict[str, Any], name: str, profile: DeviceProfile) -> Choice | None:
    """The Choice of tunable `name` on the device of `profile`, or None when the bundle
    declares no tunable of that name."""
    tunable = tuning["tunables"].get(name)
    if tunable is None:
        return None
    picked, how, where = tunable["default"], "default", None
    records = [r for r in tuning["records"] if name in r["picks"]]
    record, matched = match(records, device_identity(profile))
    if record is not None:
        candidate = record["picks"][name]["candidate"]
        if candidate in tunable["candidates"]:
            picked, how, where = candidate, matched, device_text(record["device"])
        else:
            how = f"default (record names unknown candidate {candidate!r})"
    cand = tunable["candidates"][picked]
    return Choice(name, picked, cand["kernel"], dict(cand["params"]), how, where)


class Forced(Mapping[str, Kernel]):
    """A bundle's kernels with one tunable's candidate forced (what `tune` runs): lookups
    go to `kernels`; `tuned(name)` gives `choice` for its tunable, the default otherwise."""

    def __init__(self, kernels: Any, choice: Choice):
        self.kernels, self.choice = kernels, choice

    def __getitem__(self, kid: str) -> Kernel:
        found: Kernel = self.kernels[kid]
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self.kernels)

    def __len__(self) -> int:
        return len(self.kernels)

    def tuned(self, name: str) -> Choice | None:
        """The forced Choice for its tunable; the bundle's own pick for the others."""
        if name == self.choice.tunable:
            return self.choice
        found: Choice | None = self.kernels.tuned(name)
        return found

    def tunable_for(self, library: str) -> str | None:
        """The name of the tunable of library function `library`, or None."""
        found: str | None = self.kernels.tunable_for(library)
        return found
