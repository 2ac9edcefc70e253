"""Uploads to the remote tier: entries queued by the build, put on the server by a
background thread.

`RemoteUpload` is a mixin of `RemoteCache` (remote.py), which holds the connection, the
queue, the counters and the warnings it uses, and drains the queue at the end of the
build (`RemoteCache.finish`). Guarantees: an entry's blobs are put before its record, so
a record is never visible on the server before its blobs; a blob this process sent is not
sent again, and a large input (over HEAD_FIRST_BYTES) is asked for with HEAD first (an
unchanged input is often there already). A refused upload (bad credentials, no PUT) is
one warning and stops uploads only; a server that fails stops the remote.
"""

from __future__ import annotations

import threading

from vyre_build.cache.key import content_hash
from vyre_build.cache.transport import TooBig, Unreachable
from vyre_build.core.files import canonical_json

__all__ = ["RemoteUpload"]

HEAD_FIRST_BYTES = 64 << 10  # a smaller blob is PUT at once: one request either way


class RemoteUpload:
    """`RemoteCache`'s uploads: `upload` queues an entry, a background thread puts it."""

    def upload(self, record: dict, outputs: dict[str, bytes], inputs: dict[str, bytes]) -> None:
        """Queue an entry for upload: input blobs (a large one HEAD first: an unchanged
        input is often there already), output blobs, then the record. Returns at once."""
        if not self.writable:
            return
        blobs = [(content_hash(d), d, len(d) > HEAD_FIRST_BYTES) for d in inputs.values()]
        blobs += [(ref["hash"], outputs[n], False) for n, ref in record["outputs"].items()]
        body = canonical_json(record) + b"\n"
        with self._lock:
            if self._uploader is None:
                self._uploader = threading.Thread(
                    target=self._upload_loop, name="vyre-remote-upload", daemon=True
                )
                self._uploader.start()
        self._queue.put((record["key"], body, blobs))

    def _upload_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                break
            if self.writable:
                self._upload_one(*item)

    def _put(self, name: str, body: bytes | None, method: str = "PUT") -> bool | None:
        """True when stored (or, for HEAD, present), False when absent, None on failure."""
        try:
            status, reason, _ = self._request(method, name, body=body)
        except TooBig:  # a 2xx answer with a body (which says nothing we read): done
            return True
        except Unreachable as exc:
            self._unreachable(exc)
            return None
        if 200 <= status < 300:
            return True
        if method == "HEAD" and status == 404:
            return False
        self._refused("PUT", status, reason)  # a HEAD here is a step of an upload
        return None

    def _upload_one(self, key: str, body: bytes, blobs) -> None:
        for digest, data, head_first in blobs:
            with self._lock:
                if digest in self._sent:
                    continue
            found = self._put(f"cas/{digest}", None, "HEAD") if head_first else False
            if found is None or (not found and not self._put(f"cas/{digest}", data)):
                return
            with self._lock:
                self._sent.add(digest)
        if self._put(f"ac/{key}", body):
            self._count("uploads")
