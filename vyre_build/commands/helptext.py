"""What `vyre-build --help` and `vyre-build COMMAND --help` say: one entry per command.

A command's parser is made by `add_command(subparsers, name)`, which gives it its one-line
`help` (the top-level command list), its description and its examples, laid out as
written here (RawDescriptionHelpFormatter). Kept apart from the command modules so that
the texts can be read, and reviewed, together.
"""

from __future__ import annotations

import argparse
from typing import NamedTuple

from vyre_build.core.backends import BACKENDS

PROGRAM = """\
Compile GPU kernels written in Python ahead of time (to WGSL, SPIR-V and .kdesc), pack
them into signed bundles, and run them on wgpu, Vulkan or the cpu reference backend.
A whole kernel tree is built with scons (the `vyre` SCons tool, README); these commands
compile single files, look into caches and bundles, and run kernels."""

PROGRAM_EPILOG = """\
examples:
  vyre-build compile kernels/saxpy.py -o build       compile a kernel file into build/
  vyre-build compile kernels/saxpy.py -o - --target wgsl     print its WGSL
  vyre-build bundle ls dist/kernels.vyrebundle       the kernels of a bundle
  vyre-build run dist/kernels.vyrebundle saxpy --input x=x.npy --input y=y.npy \\
      --scalar a=2.0 --out out                       run one kernel on .npy files
  vyre-build devices                                 the adapters kernels can run on

`vyre-build COMMAND --help` describes each command and its options."""


class Text(NamedTuple):
    help: str  # one line in the top-level command list
    description: str
    epilog: str


TEXTS = {
    "compile": Text(
        "compile kernel files to WGSL, SPIR-V and .kdesc",
        """\
Compile kernel files without scons. Each kernel (and each variant) of FILE is written as
DIR/<kernel>[.<variant>].<ext> for every --target, with a .meta.json beside it. A kernel
on cooperative matrices gets no .wgsl (WGSL has none): it is SPIR-V only. With -o - the
code is printed instead: WGSL with comments naming the source line of each statement,
SPIR-V as disassembly.""",
        """\
examples:
  vyre-build compile kernels/saxpy.py -o build
  vyre-build compile kernels/*.py --target spirv -o build/spirv
  vyre-build compile kernels/reduce.py --kernel reduce_sum --target wgsl -o -""",
    ),
    "cache": Text(
        "inspect and maintain the artifact cache",
        """\
Inspect and maintain the artifact cache that scons builds share. The cache is found as
the SCons tool finds it, from anywhere inside the project: --cache-dir, else
$VYRE_CACHE_DIR, else the config files, else cache/ at the project root
(docs/cache.md).""",
        """\
examples:
  vyre-build cache stats          hits and misses of the last build and overall
  vyre-build cache why build/saxpy.wgsl   what made an output rebuild
  vyre-build cache gc --max-size 2G""",
    ),
    "bundle": Text(
        "inspect, verify, sign and unpack .vyrebundle files",
        """\
Inspect, verify, sign, unpack and warm .vyrebundle files (docs/bundle-format.md). Every
action takes --json. ls, show and extract honour $VYRE_TRUSTED_KEYS as the runtime
does; verify exits 1 when it finds a problem.""",
        """\
examples:
  vyre-build bundle ls dist/kernels.vyrebundle
  vyre-build bundle show dist/kernels.vyrebundle saxpy
  vyre-build bundle verify dist/kernels.vyrebundle --key keys/release.key.pub
  vyre-build bundle sign dist/kernels.vyrebundle --key keys/release.key""",
    ),
    "key": Text(
        "make Ed25519 key pairs that sign bundles",
        """\
Make Ed25519 key pairs that sign bundles. `generate` writes KEYFILE (the secret key,
mode 0600) and KEYFILE.pub (the public key, for those who load your bundles), creating
KEYFILE's folder when it is missing; it never overwrites a key file.""",
        """\
examples:
  vyre-build key generate keys/release.key --comment "release 2026"
  VYRESIGNKEY=keys/release.key scons      sign the bundle scons builds""",
    ),
    "run": Text(
        "dispatch one kernel of a bundle on .npy inputs",
        """\
Dispatch one kernel of a bundle on .npy inputs and write each buffer it writes as
DIR/NAME.npy. A write-only buffer not given with --input is allocated zeroed with the
shape from --alloc. Runs on wgpu, Vulkan or the cpu reference backend.""",
        """\
examples:
  vyre-build run dist/kernels.vyrebundle saxpy --input x=x.npy --input y=y.npy \\
      --scalar a=2.0 --out out
  vyre-build run dist/kernels.vyrebundle add.f32 --input a=a.npy --input b=b.npy \\
      --alloc out=1000 --backend cpu --out out
  vyre-build run --list-adapters --backend vulkan""",
    ),
    "devices": Text(
        "list the adapters of every runtime backend, with features and limits",
        f"""\
List every adapter of every runtime backend ({", ".join(BACKENDS)}) with its profile: its
identity, subgroup size and operations, 16-bit types, cooperative-matrix shapes, limits
and features, which are what kernels are checked against. No device is created. A
backend that cannot be used (its package or driver missing) is listed with the reason;
the exit code is 1 when no backend has an adapter.""",
        """\
examples:
  vyre-build devices
  vyre-build devices --backend vulkan --json""",
    ),
    "tune": Text(
        "measure every tunable's candidates on this device and record the fastest",
        """\
Run every candidate of every tunable of BUNDLE (kernels/tuning.yaml, docs/tuning.md) on
the device, check each result against the cpu reference on the tunable's case (a wrong
candidate is dropped and reported, never chosen), time it with the device's timestamps
(median of --rounds after a warm-up) and write a tuning record keyed by the device
profile. By default the record is merged into BUNDLE, which is rewritten atomically (a
signed bundle needs --sign-key, and is re-signed with it); --record FILE merges it into
FILE instead. --time-limit bounds the run: what was not tuned is reported.""",
        """\
examples:
  vyre-build tune dist/kernels.vyrebundle --backend vulkan
  vyre-build tune dist/kernels.vyrebundle --sign-key keys/release.key --time-limit 600
  vyre-build tune dist/kernels.vyrebundle --record tuning/h200.json""",
    ),
}


def add_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser], name: str
) -> argparse.ArgumentParser:
    """Add command `name`'s parser, with its help, description and examples."""
    text = TEXTS[name]
    return subparsers.add_parser(
        name,
        help=text.help,
        description=text.description,
        epilog=text.epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def fill_descriptions(parser: argparse.ArgumentParser) -> None:
    """Give every action parser under `parser` (`bundle ls`, `cache gc`) whose description
    is missing, or its one-line help again, that help as a sentence, so that its --help
    says what it does."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                if sub.description in (None, helps.get(name)) and helps.get(name):
                    text = helps[name]
                    sub.description = text[0].upper() + text[1:] + "."
                fill_descriptions(sub)
