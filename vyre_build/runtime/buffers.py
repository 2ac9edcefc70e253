"""The buffer side of the runtime's API under the import path applications and the
library use: DeviceBuffer and Batch, which name the Device that owns them and so are
defined beside it in device.py, and the host dtype tables (DTYPES: the little-endian numpy
dtype of each buffer scalar; NP_NAMES: its numpy name)."""

from __future__ import annotations

from vyre_build.runtime.device import DTYPES, NP_NAMES, Batch, DeviceBuffer

__all__ = ["DTYPES", "NP_NAMES", "Batch", "DeviceBuffer"]
