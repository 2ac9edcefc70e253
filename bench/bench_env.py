"""What the bench scripts share about the processes they start."""

from __future__ import annotations

import os

__all__ = ["cuda_torch", "tree_pythonpath"]


def tree_pythonpath(tree: str) -> str:
    """PYTHONPATH for a child process that must import the vyre_build of `tree`: `tree`
    first, then whatever the caller's PYTHONPATH holds (the device tier's dependencies live
    in /tmp/site)."""
    return os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH", "")) if p)


def cuda_torch():
    """The torch module where it is installed and sees a CUDA device, else None (the
    benches then check their results against numpy and print no torch figures)."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None
