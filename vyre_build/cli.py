"""`vyre-build`: the command line; one module per command in `vyre_build/commands/`.

Each command module provides `register(subparsers)`, which adds its parser and sets
`func=handler`; a handler takes the parsed args and returns the exit code. A `VyreError`
is printed as a message (no traceback) with exit code 1.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from vyre_build import __version__
from vyre_build.commands.helptext import PROGRAM, PROGRAM_EPILOG, fill_descriptions
from vyre_build.core.errors import VyreError

COMMANDS = ("compile", "cache", "bundle", "key", "run", "devices", "tune")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vyre-build",
        description=PROGRAM,
        epilog=PROGRAM_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"vyre-build {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"vyre_build.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"vyre_build.commands.{name}":
                raise
            continue
        module.register(sub)
    fill_descriptions(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except VyreError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except BrokenPipeError:
        # Output piped into `head` and closed: not an error worth a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
