"""`vyre-build key generate KEYFILE [--comment TEXT]`: an Ed25519 key pair for signing bundles.

Writes KEYFILE (the secret key, mode 0600) and KEYFILE.pub (the public key, to hand to
whoever loads the bundles); refuses to overwrite either. KEYFILE's folder is created
(mode 0700, with its parents) when it does not exist. Format: docs/bundle-format.md.
"""

from __future__ import annotations

import argparse
import os

from vyre_build.bundle.keys import check_comment, generate_key_pair, write_key_pair
from vyre_build.commands.helptext import add_command
from vyre_build.core.errors import VyreError


def register(subparsers) -> None:
    parser = add_command(subparsers, "key")
    sub = parser.add_subparsers(dest="key_command", required=True, metavar="ACTION")
    p = sub.add_parser("generate", help="write KEYFILE (secret, 0600) and KEYFILE.pub")
    p.add_argument("keyfile", metavar="KEYFILE", help="the secret key file to create")
    p.add_argument(
        "--comment",
        help="who the key belongs to, shown when a bundle's signature is verified "
        "(default: the file name without its directory)",
    )
    p.set_defaults(func=cmd_generate)


def cmd_generate(args: argparse.Namespace) -> int:
    if not args.keyfile or args.keyfile.endswith(("/", os.sep)) or os.path.isdir(args.keyfile):
        raise VyreError(
            f"error: KEYFILE {args.keyfile!r}: give the secret key's file path, e.g. "
            "keys/release.key (the public key goes beside it as .pub)"
        )
    comment = args.comment if args.comment is not None else os.path.basename(args.keyfile)
    key = generate_key_pair(check_comment(comment, "--comment"))
    folder = os.path.dirname(args.keyfile)
    if folder and not os.path.isdir(folder):
        _make_key_folder(folder)
        print(f"created folder {folder} (mode 0700)")
    secret, public = write_key_pair(args.keyfile, key)
    print(f"secret key: {secret} (keep it private; mode 0600)")
    print(f"public key: {public} (give it to those who load your bundles)")
    print(f"key id {key.public.key_id}, comment {comment!r}")
    return 0


def _make_key_folder(folder: str) -> None:
    """Create `folder` and its parents, private (0700) since it holds a secret key."""
    try:
        os.makedirs(folder, mode=0o700)
    except FileExistsError:
        raise VyreError(f"error: {folder}: exists and is not a folder") from None
    except OSError as exc:
        raise VyreError(
            f"error: {folder}: cannot create the key folder: {exc.strerror or exc}"
        ) from None
