"""Remote cache URLs: parsed once, by urllib's rules, and shown without their credentials.

`parse_remote_url` splits `http(s)://[user[:password]@]host[:port]/prefix` as
`urllib.parse.urlsplit` does, which is also how the connection is made: the authority ends
at the first `/`, `?` or `#` after `//`, and the user part is everything before its last
`@` (so `ci:p@ss@host` is user `ci`, password `p@ss`); `%XX` escapes in the user part
are decoded. A URL with an `@` after its host (a password holding a raw `/`, `?` or `#`,
which urllib ends the authority at) is refused: it would send part of the password to
another host.

Guarantee: `redact_url` drops everything between `://` and the URL's last `@`, which
covers the last `@` of the authority whatever the URL holds (for a URL that parses, the
two are the same `@`), so no message, statistic, JSON document or exception built from it
shows a password, well-formed or not; `RemoteURL.shown` is the URL rebuilt from the
parsed host, port and prefix.
"""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass, field

from vyre_build.core.errors import CacheError

__all__ = ["RemoteURL", "parse_remote_url", "redact_url"]

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:(//)?")


def redact_url(url: str) -> str:
    """`url` without its user part: everything between `://` and its last `@` removed."""
    url = str(url)
    head = _SCHEME.match(url)
    start = head.end() if head else 0
    at = url.rfind("@", start)
    return url if at < 0 else url[:start] + url[at + 1 :]


@dataclass(frozen=True)
class RemoteURL:
    """A remote cache URL as the connection uses it. `user`/`password`: decoded, or None
    (the password is left out of the repr)."""

    scheme: str
    host: str
    port: int | None
    prefix: str
    user: str | None
    password: str | None = field(repr=False)  # never in a repr either

    @property
    def shown(self) -> str:
        """The URL as every message shows it: scheme, host, port and prefix only."""
        host = self.host if ":" not in self.host else f"[{self.host}]"
        port = "" if self.port is None else f":{self.port}"
        return f"{self.scheme}://{host}{port}{self.prefix}"


def parse_remote_url(url: str) -> RemoteURL:
    """The parts of a remote cache URL; CacheError (naming it without credentials) if it
    is not `http(s)://[user:password@]host[:port]/prefix`."""
    text = str(url).strip()
    shown = redact_url(text)
    try:
        parts = urllib.parse.urlsplit(text)
        host = parts.hostname
    except ValueError:  # e.g. an unclosed "[" of an IPv6 host
        parts, host = None, None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise CacheError(f"remote cache URL {shown!r} is not http(s)://host/...")
    if "@" in parts.path + parts.query + parts.fragment:
        raise CacheError(
            f"remote cache URL {shown!r} has an '@' after its host: in a password, write "
            "'/' as %2F, '?' as %3F and '#' as %23"
        )
    try:
        port = parts.port
    except ValueError:
        raise CacheError(f"remote cache URL {shown!r} has a bad port") from None
    user = password = None
    if parts.username is not None:
        user = urllib.parse.unquote(parts.username)
        password = urllib.parse.unquote(parts.password or "")
    return RemoteURL(parts.scheme, host, port, parts.path.rstrip("/"), user, password)
