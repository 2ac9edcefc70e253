"""`vyre-build --help` and every command's --help: written for a user, complete sentences."""

from __future__ import annotations

import argparse

import pytest

from vyre_build.cli import COMMANDS, build_parser
from vyre_build.cli import main as cli_main
from vyre_build.commands.helptext import PROGRAM, TEXTS


def help_of(capsys, monkeypatch, *argv: str) -> str:
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as exc:
        cli_main([*argv, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_the_program_help_says_what_the_tool_is_and_shows_examples(capsys, monkeypatch):
    out = help_of(capsys, monkeypatch)
    assert out.startswith("usage: vyre-build [-h] [--version] COMMAND ...\n\n" + PROGRAM + "\n")
    assert "argparse" not in out and "vyre_build/commands" not in out
    commands = out[out.index("  COMMAND\n") :].split("\n\n")[0].splitlines()[1:]
    assert commands == [
        "    compile   compile kernel files to WGSL, SPIR-V and .kdesc",
        "    cache     inspect and maintain the artifact cache",
        "    bundle    inspect, verify, sign and unpack .vyrebundle files",
        "    key       make Ed25519 key pairs that sign bundles",
        "    run       dispatch one kernel of a bundle on .npy inputs",
        "    devices   list the adapters of every runtime backend, with features and limits",
        "    tune      measure every tunable's candidates on this device and record the fastest",
    ]
    assert out.endswith(
        "  vyre-build devices                                 the adapters kernels can run on\n"
        "\n`vyre-build COMMAND --help` describes each command and its options.\n"
    )


def test_devices_help_is_whole(capsys, monkeypatch):
    out = help_of(capsys, monkeypatch, "devices")
    assert out.split("\n\n")[1] == (
        "List every adapter of every runtime backend (wgpu, vulkan, cpu) with its profile: its\n"
        "identity, subgroup size and operations, 16-bit types, cooperative-matrix shapes, limits\n"
        "and features, which are what kernels are checked against. No device is created. A\n"
        "backend that cannot be used (its package or driver missing) is listed with the reason;\n"
        "the exit code is 1 when no backend has an adapter."
    )
    assert out.endswith(
        "examples:\n  vyre-build devices\n  vyre-build devices --backend vulkan --json\n"
    )


def parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*path, name))


def test_every_command_and_action_has_a_whole_sentence_description(capsys, monkeypatch):
    found = dict(parsers(build_parser()))
    assert set(COMMANDS) == set(TEXTS) and {(c,) for c in COMMANDS} <= set(found)
    assert ("bundle", "verify") in found and ("cache", "gc") in found
    for path, parser in found.items():
        text = parser.description
        assert text and text[0].isupper() and text.endswith("."), path
        assert "`vyre-build" not in text and "argparse" not in text, path
        out = help_of(capsys, monkeypatch, *path)
        assert text.replace("\n", " ").split()[-1] in out, path
        assert max(map(len, out.splitlines())) <= 100, path
    assert found[("bundle", "ls")].description == "List the kernels of a bundle."
