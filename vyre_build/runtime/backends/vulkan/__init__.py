"""The Vulkan backend: the device (device.py), its pipelines (pipelines.py), profile,
result codes and the persisted pipeline cache."""
