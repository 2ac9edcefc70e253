"""Ed25519 key files for signing bundles: the format, generating a pair, reading either half.

Both files are UTF-8 text, one `field: value` per line after a versioned first line
(format in docs/bundle-format.md, "Key files"):

    vyre-build public key v1          vyre-build secret key v1
    algorithm: ed25519                algorithm: ed25519
    comment: release                  comment: release
    key: <base64, 32 bytes>           key: <base64 32-byte seed>
                                      public: <base64, 32 bytes>

A key is named by its key id: the first 16 hex digits of blake3 of the 32 public key
bytes. Every refusal raises `KeyFileError` naming the file, the line and the reason.
The Ed25519 library (PyNaCl) is imported only to derive or use a secret key.

A secret key file is written mode 0600 whatever the umask; reading one that others can
read or write (any of mode 0077, as ssh checks) prints ssh's warning once per file and
process, on stderr, and the key is still used: whoever could read it may already hold it,
so refusing would stop a build without taking the key back (`chmod 600` it, and make a
new key if others may have read it).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import threading

import blake3

from vyre_build.core.errors import BundleError
from vyre_build.core.files import NotRegular, open_regular, temp_path

__all__ = [
    "KeyFileError",
    "PublicKey",
    "SecretKey",
    "generate_key_pair",
    "key_id",
    "load_public_key",
    "load_secret_key",
    "write_key_pair",
]

FORMAT_VERSION = 1
ALGORITHM = "ed25519"
_KINDS = ("public", "secret")
_FIELDS = {
    "public": ("algorithm", "comment", "key"),
    "secret": ("algorithm", "comment", "key", "public"),
}
_MAX_FILE = 4096  # a key file is a few hundred bytes; anything larger is not one
_MAX_COMMENT = 200


class KeyFileError(BundleError):
    """A key file that cannot be read, is of the wrong kind or format, or cannot be written."""


def key_id(public: bytes) -> str:
    """The key id of a raw 32-byte Ed25519 public key: 16 hex digits of its blake3."""
    return blake3.blake3(public).hexdigest()[:16]


class PublicKey:
    """A public key that may verify bundles: `raw` (32 bytes), `comment`, `path` (or None)."""

    __slots__ = ("raw", "comment", "path")

    # A plain class, not a dataclass: building one costs a bundle open's import a millisecond.
    def __init__(self, raw: bytes, comment: str, path: str | None = None):
        self.raw, self.comment, self.path = bytes(raw), comment, path

    def __eq__(self, other) -> bool:
        return type(other) is PublicKey and (self.raw, self.comment) == (other.raw, other.comment)

    __hash__ = None

    def __repr__(self) -> str:
        return f"PublicKey({self.describe()})"

    @property
    def key_id(self) -> str:
        return key_id(self.raw)

    def describe(self) -> str:
        """How reports name the key: its comment and key id."""
        return f"{self.comment!r} (key id {self.key_id})"


class SecretKey:
    """A secret key that signs bundles: the 32-byte `seed` and its `public` key."""

    __slots__ = ("seed", "public")

    def __init__(self, seed: bytes, public: PublicKey):
        self.seed, self.public = bytes(seed), public

    def __repr__(self) -> str:  # never the seed
        return f"SecretKey({self.public.describe()})"

    def sign(self, message: bytes) -> bytes:
        """The 64-byte Ed25519 signature of `message` (deterministic)."""
        from nacl.bindings import crypto_sign

        return crypto_sign(message, self.seed + self.public.raw)[:64]


def _public_of(seed: bytes) -> bytes:
    from nacl.bindings import crypto_sign_seed_keypair

    return crypto_sign_seed_keypair(seed)[0]


def generate_key_pair(comment: str) -> SecretKey:
    """A fresh key pair (from os.urandom) carrying `comment`."""
    check_comment(comment)
    seed = os.urandom(32)
    return SecretKey(seed, PublicKey(_public_of(seed), comment))


def check_comment(comment: object, where: str = "comment") -> str:
    """`comment` if it is one non-empty printable line that fits, else KeyFileError."""
    if not isinstance(comment, str) or not comment.strip():
        raise KeyFileError(f"{where} {comment!r}: must be a non-empty line of text")
    if len(comment) > _MAX_COMMENT or any(ord(c) < 32 or ord(c) == 127 for c in comment):
        raise KeyFileError(
            f"{where} {comment[:40]!r}: must be one line of at most {_MAX_COMMENT} "
            "printable characters"
        )
    return comment


def _b64(raw: bytes) -> str:
    import base64  # only key files need it: not every bundle open

    return base64.b64encode(raw).decode("ascii")


def _encode(kind: str, fields: dict[str, str]) -> bytes:
    lines = [f"vyre-build {kind} key v{FORMAT_VERSION}"]
    lines += [f"{name}: {fields[name]}" for name in _FIELDS[kind]]
    return ("\n".join(lines) + "\n").encode("utf-8")


def encode_public_key(key: PublicKey) -> bytes:
    """The public key file's bytes."""
    return _encode("public", {"algorithm": ALGORITHM, "comment": key.comment, "key": _b64(key.raw)})


def encode_secret_key(key: SecretKey) -> bytes:
    """The secret key file's bytes."""
    fields = {
        "algorithm": ALGORITHM,
        "comment": key.public.comment,
        "key": _b64(key.seed),
        "public": _b64(key.public.raw),
    }
    return _encode("secret", fields)


def _create_new(path: str, data: bytes, mode: int, exact: bool = False) -> None:
    """Create `path` with `data` and `mode` (`exact`: that mode, not narrowed by the
    umask, nor widened by a directory's default ACL), whole or not at all;
    FileExistsError if it exists."""
    tmp = temp_path(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        if exact:
            try:
                os.fchmod(fd, mode)
            except OSError:
                os.close(fd)
                raise
        with open(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.link(tmp, path)  # unlike a rename, a link never replaces an existing file
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def write_key_pair(path: str | os.PathLike, key: SecretKey) -> tuple[str, str]:
    """Write `key` to `path` (secret, mode 0600) and `path`.pub (public, 0644).

    Arguments:
        path: the secret key file; the public one is the same name plus ".pub".
        key: from `generate_key_pair`.
    Returns:
        (secret path, public path). Refuses (KeyFileError) to overwrite either file;
        on any failure neither file is left behind.
    """
    secret_path = os.fspath(path)
    public_path = secret_path + ".pub"
    for p in (secret_path, public_path):
        if os.path.lexists(p):
            raise KeyFileError(f"{p}: already exists; refusing to overwrite a key file")
    written = []
    try:
        for p, data, mode, exact in (
            (secret_path, encode_secret_key(key), 0o600, True),
            (public_path, encode_public_key(key.public), 0o644, False),
        ):
            _create_new(p, data, mode, exact)
            written.append(p)
    except FileExistsError:
        _remove(written)
        raise KeyFileError(f"{p}: already exists; refusing to overwrite a key file") from None
    except OSError as exc:
        _remove(written)
        raise KeyFileError(f"{p}: cannot write key file: {exc.strerror or exc}") from None
    return secret_path, public_path


def _remove(paths: list[str]) -> None:
    for p in paths:
        with contextlib.suppress(OSError):
            os.unlink(p)


# --- reading ---------------------------------------------------------------------------


_warned: set[tuple[str, int, int]] = set()  # secret key files warned about: (path, dev, inode)
_warn_lock = threading.Lock()


def unprotected_warning(path: str, mode: int) -> str:
    """What reading a secret key file of permissions `mode` (others may read or write it)
    prints: ssh's warning, and that the key is used anyway."""
    return (
        "vyre: WARNING: UNPROTECTED PRIVATE KEY FILE! "
        f"Permissions {stat.S_IMODE(mode):04o} for {path!r} are too open.\n"
        "vyre: a secret key must not be accessible by others: whoever reads it can sign "
        f"bundles as you. It is used anyway; run chmod 600 {path!r} (and make a new key "
        "if others may have read it)."
    )


def _check_private(path: str, info: os.stat_result) -> None:
    if not info.st_mode & 0o077 or os.name != "posix":
        return
    with _warn_lock:
        seen = (os.path.realpath(path), info.st_dev, info.st_ino)
        if seen in _warned:
            return
        _warned.add(seen)
    print(unprotected_warning(path, info.st_mode), file=sys.stderr, flush=True)


def _read_text(path: str) -> tuple[str, os.stat_result]:
    try:
        fd, info = open_regular(path)
    except NotRegular as exc:
        raise KeyFileError(f"{path}: not a key file ({exc})") from None
    except OSError as exc:
        raise KeyFileError(f"{path}: cannot read key file: {exc.strerror or exc}") from None
    with open(fd, "rb") as f:
        if info.st_size > _MAX_FILE:
            raise KeyFileError(
                f"{path}: not a key file ({info.st_size} bytes; a key file has a few hundred)"
            )
        try:
            data = f.read(_MAX_FILE + 1)
        except OSError as exc:
            raise KeyFileError(f"{path}: cannot read key file: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8"), info
    except UnicodeDecodeError as exc:
        raise KeyFileError(
            f"{path}: not a vyre-build key file (bad UTF-8 at byte {exc.start})"
        ) from None


def _parse(path: str, want: str) -> tuple[dict[str, str], os.stat_result]:
    """The fields of key file `path`, which must be a `want` ("public"/"secret") key, and
    the file's status as read (fstat of the file read, so no other file's)."""
    text, info = _read_text(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    first = lines[0] if lines else ""
    words = first.split(" ")
    if len(words) != 4 or words[0] != "vyre-build" or words[2] != "key" or words[1] not in _KINDS:
        hint = (
            " (an OpenSSH or PEM key? make one with `vyre-build key generate`)"
            if first.startswith(("-----BEGIN", "ssh-"))
            else " (make one with `vyre-build key generate`)"
        )
        raise KeyFileError(
            f"{path}:1: not a vyre-build key file: the first line is {first[:60]!r}, "
            f"expected 'vyre-build {want} key v{FORMAT_VERSION}'{hint}"
        )
    if words[3] != f"v{FORMAT_VERSION}":
        raise KeyFileError(
            f"{path}:1: key file format {words[3]!r} is not supported "
            f"(this vyre-build reads v{FORMAT_VERSION})"
        )
    if words[1] != want:
        fix = (
            "signing needs the secret key file (the same name without .pub)"
            if want == "secret"
            else "verifying takes the public key file (KEYFILE.pub); never hand out the secret one"
        )
        raise KeyFileError(f"{path}: this is a {words[1]} key; {fix}")
    fields: dict[str, str] = {}
    for n, line in enumerate(lines[1:], start=2):
        name, sep, value = line.partition(": ")
        if not sep or name not in _FIELDS[want]:
            raise KeyFileError(
                f"{path}:{n}: expected one of {', '.join(_FIELDS[want])} as 'name: value', "
                f"got {line[:60]!r}"
            )
        if name in fields:
            raise KeyFileError(f"{path}:{n}: field {name!r} appears twice")
        fields[name] = value
    missing = [f for f in _FIELDS[want] if f not in fields]
    if missing:
        raise KeyFileError(f"{path}: missing field(s) {', '.join(missing)}")
    if fields["algorithm"] != ALGORITHM:
        raise KeyFileError(
            f"{path}: key algorithm {fields['algorithm'][:40]!r} is not supported "
            f"(bundles are signed with {ALGORITHM})"
        )
    check_comment(fields["comment"], f"{path}: comment")
    return fields, info


def _raw32(path: str, name: str, value: str) -> bytes:
    import base64
    import binascii

    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise KeyFileError(f"{path}: field {name!r} is not base64") from None
    if len(raw) != 32:
        raise KeyFileError(f"{path}: field {name!r} must hold 32 bytes, got {len(raw)}")
    return raw


def load_public_key(path: str | os.PathLike) -> PublicKey:
    """Read a public key file (`vyre-build key generate` writes KEYFILE.pub).

    Returns:
        PublicKey(raw, comment, path). KeyFileError on anything but a v1 ed25519 public key.
    """
    path = os.fspath(path)
    fields = _parse(path, "public")[0]
    return PublicKey(_raw32(path, "key", fields["key"]), fields["comment"], path)


def load_secret_key(path: str | os.PathLike) -> SecretKey:
    """Read a secret key file; checks that its public half belongs to its seed, and warns
    (once per file, on stderr) when others may read or write it.

    Returns:
        SecretKey(seed, public). KeyFileError on anything but a v1 ed25519 secret key.
    """
    path = os.fspath(path)
    fields, info = _parse(path, "secret")
    seed = _raw32(path, "key", fields["key"])
    public = _raw32(path, "public", fields["public"])
    if _public_of(seed) != public:
        raise KeyFileError(
            f"{path}: the public key does not belong to the secret key (corrupt file)"
        )
    _check_private(path, info)
    return SecretKey(seed, PublicKey(public, fields["comment"], path))
