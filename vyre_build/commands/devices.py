"""`vyre-build devices [--json] [--backend B]`: every adapter of every runtime backend with
its profile (identity, subgroups, 16-bit types, cooperative matrices, limits, features).

No device is created. A backend that cannot be used (its package or driver missing) is
reported with the reason; exit code 1 when no backend lists an adapter.
"""

from __future__ import annotations

import argparse
import json

from vyre_build.core.backends import BACKENDS
from vyre_build.commands.helptext import add_command
from vyre_build.core.errors import VyreError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(subparsers, "devices")
    p.add_argument("--backend", choices=tuple(BACKENDS), help="only this backend")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from vyre_build.runtime import adapter_profiles

    report: dict[str, dict[str, object]] = {}
    found = 0
    for backend in (args.backend,) if args.backend else BACKENDS:
        try:
            profiles = adapter_profiles(backend)
        except VyreError as exc:
            report[backend] = {"error": str(exc), "adapters": []}
            continue
        found += len(profiles)
        report[backend] = {"adapters": [p.as_json() for p in profiles]}
        if not args.json:
            for index, profile in enumerate(profiles):
                print(f"{backend} adapter {index}:")
                for line in profile.describe():
                    print(f"  {line}")
    if args.json:
        print(json.dumps({"backends": report}, sort_keys=True, indent=2))
    else:
        for backend, entry in report.items():
            if "error" in entry:
                print(f"{backend}: unavailable: {entry['error']}")
            elif not entry["adapters"]:
                print(f"{backend}: no adapter")
    return 0 if found else 1
