"""The wgpu backend: the device (device.py), its adapters and profile (profile.py), the
native recorder of submissions (native.py) and shader modules without naga's bounds checks
(module.py). Imported only when a wgpu device is asked for."""
