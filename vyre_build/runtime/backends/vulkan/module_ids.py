"""Shader module identifiers (VK_EXT_shader_module_identifier), persisted beside the pipeline
cache, so that a later process makes its cached pipelines without handing the driver their
SPIR-V: NVIDIA's driver spends about 9 us per KB of SPIR-V on a pipeline even when its
pipeline cache holds it (bench/RESULTS.md, 2026-12-06), and an identifier takes that away.

    <pipeline cache file>.ids
    = b"VYREMID1" + blake3(body) (32 bytes) + body
    body = shaderModuleIdentifierAlgorithmUUID (16 bytes) + count (u32 LE)
           + count x (blake3 of the module's SPIR-V (32 bytes), size (u8), identifier)

A pipeline made from an identifier carries VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_
REQUIRED_BIT: where the driver's cache lacks it, the driver answers
VK_PIPELINE_COMPILE_REQUIRED and the pipeline is made from its SPIR-V instead
(pipelines.py), so a stale or foreign identifier costs a retry, never a wrong pipeline. The
identifier stands for the SPIR-V whose blake3 keys it, as the driver reported it for that
code (vkGetShaderModuleCreateInfoIdentifierEXT), on a device of the same algorithm UUID.
A file that is corrupt, of another algorithm, over the bound or not a regular file is
ignored with one warning and replaced at the next save, as the pipeline cache file is.
"""

from __future__ import annotations

import os
import struct
import warnings
from typing import Any

import blake3
import vulkan as vk

from vyre_build.core.errors import PipelineCacheWarning
from vyre_build.core.files import NotRegular, atomic_write, open_regular
from vyre_build.runtime.backends.vulkan.pipeline_cache import _locked

MAGIC = b"VYREMID1"
MAX_BYTES = 4 << 20  # about 60,000 identifiers
_COUNT = struct.Struct("<I")
_HEAD = len(MAGIC) + 32
# VK_PIPELINE_CREATE_FAIL_ON_PIPELINE_COMPILE_REQUIRED_BIT (Vulkan 1.3): the `vulkan`
# package's names for it are None
FAIL_ON_COMPILE = 0x100
_STAGE_INFO = vk.VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_MODULE_IDENTIFIER_CREATE_INFO_EXT
_QUERY = b"vkGetShaderModuleCreateInfoIdentifierEXT"


def code_key(code: bytes) -> bytes:
    """The key of a module's SPIR-V `code`: its blake3."""
    return blake3.blake3(code).digest()


class ModuleIds:
    """The identifiers of one device (`device`, a VkDevice created with the feature; `uuid`,
    its shaderModuleIdentifierAlgorithmUUID) persisted at `path` (None: this process only),
    saved holding the lock file `lock` (the pipeline cache's).
    `hits`: pipelines made from an identifier; `misses`: those the driver refused
    (compile required) and that were made from their SPIR-V."""

    def __init__(self, device: Any, uuid: bytes, path: str | None, lock: str | None = None):
        self.device, self.uuid, self.path, self.lock = device, uuid, path, lock
        self.known: dict[bytes, bytes] = {}
        self.dropped: set[bytes] = set()  # forgotten: not revived from another's save
        self.changed = False  # identifiers learned or forgotten since the load or save
        self.hits = self.misses = 0
        self._warned = False
        self._query: Any = None  # the driver's query, looked up on first use
        if path is not None:
            self.known = self._load(path)

    # -- in this process --

    def get(self, key: bytes) -> bytes | None:
        """The identifier known for the SPIR-V of `key`, or None."""
        return self.known.get(key)

    def learn(self, key: bytes, code: bytes) -> None:
        """Ask the driver for the identifier of SPIR-V `code` (of key `key`) and keep it."""
        if key in self.known:
            return
        ffi = vk.ffi
        if self._query is None:
            proc = vk.lib.vkGetDeviceProcAddr(self.device, _QUERY)
            if proc == ffi.NULL:
                return
            self._query = ffi.cast("PFN_vkGetShaderModuleCreateInfoIdentifierEXT", proc)
        words = ffi.from_buffer(code)
        info = ffi.new(
            "VkShaderModuleCreateInfo*",
            {
                "sType": vk.VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                "codeSize": len(code),
                "pCode": ffi.cast("uint32_t*", words),
            },
        )
        out = ffi.new("VkShaderModuleIdentifierEXT*")
        out.sType = vk.VK_STRUCTURE_TYPE_SHADER_MODULE_IDENTIFIER_EXT
        self._query(self.device, info, out)
        size = int(out.identifierSize)
        if 0 < size <= vk.VK_MAX_SHADER_MODULE_IDENTIFIER_SIZE_EXT:
            self.known[key] = bytes(ffi.buffer(out.identifier, size))
            self.changed = True

    def forget(self, key: bytes) -> None:
        """Drop the identifier of `key` (the driver refused it: its pipeline is not cached)."""
        if self.known.pop(key, None) is not None:
            self.changed = True
            self.dropped.add(key)

    def chain(self, infos: Any, k: int, ident: bytes, keep: list[Any]) -> None:
        """Make create-info `infos[k]`'s stage name its module by `ident` (no module, no
        SPIR-V: the driver takes the pipeline from its cache or answers compile required).
        Every buffer it points into is appended to `keep`."""
        ffi = vk.ffi
        data = ffi.new("uint8_t[]", ident)
        info = ffi.new(
            "VkPipelineShaderStageModuleIdentifierCreateInfoEXT*",
            {"sType": _STAGE_INFO, "identifierSize": len(ident), "pIdentifier": data},
        )
        keep += [data, info]
        stage = infos[k].stage
        stage.pNext, stage.module = info, ffi.NULL
        infos[k].flags |= FAIL_ON_COMPILE

    # -- the file --

    def _ignore(self, why: str) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"vyre_build: ignoring the shader module identifiers {self.path}: {why}; "
                "they will be replaced",
                PipelineCacheWarning,
                stacklevel=5,
            )

    def _read(self, path: str) -> bytes | None:
        # The file's bytes (FileNotFoundError if there is none), or None with one warning:
        # never blocks, never reads more than MAX_BYTES + 1 bytes.
        try:
            fd, st = open_regular(path)
        except NotRegular as exc:
            self._ignore(str(exc))
            return None
        try:
            if st.st_size > MAX_BYTES:
                self._ignore(f"{st.st_size} bytes is over the {MAX_BYTES}-byte bound")
                return None
            data = os.read(fd, MAX_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) > MAX_BYTES:
            self._ignore(f"it grew over the {MAX_BYTES}-byte bound while it was read")
            return None
        return data

    def _parse(self, data: bytes) -> dict[bytes, bytes] | None:
        # The identifiers in `data`, or None (and one warning) when it is not a sound file.
        if len(data) < _HEAD + 16 + _COUNT.size or not data.startswith(MAGIC):
            self._ignore("not a vyre_build shader module identifier file")
            return None
        body = data[_HEAD:]
        if blake3.blake3(body).digest() != data[len(MAGIC) : _HEAD]:
            self._ignore("blake3 mismatch (corrupt)")
            return None
        if body[:16] != self.uuid:
            self._ignore("it was written for another identifier algorithm")
            return None
        (count,) = _COUNT.unpack_from(body, 16)
        at, out = 16 + _COUNT.size, {}
        for _ in range(count):
            if at + 33 > len(body):
                break
            key, size = body[at : at + 32], body[at + 32]
            ident = body[at + 33 : at + 33 + size]
            if not size or len(ident) != size:
                break
            out[key] = ident
            at += 33 + size
        if at != len(body) or len(out) != count:
            self._ignore("its entries do not add up (corrupt)")
            return None
        return out

    def _load(self, path: str) -> dict[bytes, bytes]:
        try:
            data = self._read(path)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            self._ignore(f"cannot read it ({exc.strerror or exc})")
            return {}
        found = None if data is None else self._parse(data)
        return found or {}

    def save(self) -> bool:
        """Write the identifiers (with those another process saved meanwhile that this one
        did not forget) atomically, holding the lock file; True if written."""
        if self.path is None or not self.changed:
            return False
        try:
            with _locked(self.lock or self.path + ".lock"):
                theirs = self._load(self.path)
                merged = {k: v for k, v in theirs.items() if k not in self.dropped}
                merged.update(self.known)
                body = bytearray(self.uuid + _COUNT.pack(len(merged)))
                for key in sorted(merged):
                    ident = merged[key]
                    body += key + bytes([len(ident)]) + ident
                if len(body) + _HEAD > MAX_BYTES:
                    return False
                atomic_write(self.path, MAGIC + blake3.blake3(bytes(body)).digest() + bytes(body))
        except OSError as exc:
            warnings.warn(
                f"vyre_build: cannot save the shader module identifiers {self.path}: "
                f"{exc.strerror or exc}",
                PipelineCacheWarning,
                stacklevel=4,
            )
            return False
        self.known, self.changed = merged, False
        self.dropped.clear()
        return True
