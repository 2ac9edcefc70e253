"""`cache -M SIZE` edits one line of a config file and nothing else (vyre_build.cache.config
set_file_max_size), and what a build's SConstruct set is recorded per project."""

from __future__ import annotations

import pytest

from vyre_build.cache.config import (
    ConfigError,
    load_config,
    read_build_settings,
    set_file_max_size,
    write_build_settings,
)


def test_a_missing_file_is_created_with_the_table(tmp_path):
    path = tmp_path / "sub" / "vyre.toml"
    set_file_max_size(str(path), "", "2G")
    assert path.read_text() == '[cache]\nmax-size = "2G"\n'


def test_the_key_is_replaced_in_place_keeping_its_comment_and_every_other_line(tmp_path):
    path = tmp_path / "vyre.toml"
    path.write_text(
        "# team settings\n[cache]\nmax-age = 30\nmax-size = '1G'   # CI runners are small\n"
        '\n[remote]\nurl = "https://cache.example.com/v"  # max-size = "9G" is not this\n'
    )
    set_file_max_size(str(path), "", "10G")
    assert path.read_text() == (
        '# team settings\n[cache]\nmax-age = 30\nmax-size = "10G"  # CI runners are small\n'
        '\n[remote]\nurl = "https://cache.example.com/v"  # max-size = "9G" is not this\n'
    )
    cfg = load_config(tmp_path, environ={})
    assert cfg.max_size == 10 << 30 and cfg.max_age_s == 30 * 86400.0


def test_a_table_without_the_key_gets_it_after_its_last_line(tmp_path):
    path = tmp_path / "vyre.toml"
    path.write_text("[cache]\nmax-age = 3\n\n[remote]\nmode = 'read-only'\n")
    set_file_max_size(str(path), "", "unlimited")
    assert path.read_text() == (
        "[cache]\nmax-age = 3\nmax-size = \"unlimited\"\n\n[remote]\nmode = 'read-only'\n"
    )


def test_pyprojects_tool_vyre_cache(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "p"\n\n[tool.vyre.remote]\nmode = "read-only"\n')
    set_file_max_size(str(path), "tool.vyre.", "500M")
    assert path.read_text() == (
        '[project]\nname = "p"\n\n[tool.vyre.remote]\nmode = "read-only"\n\n'
        '[tool.vyre.cache]\nmax-size = "500M"\n'
    )
    assert load_config(tmp_path, environ={}).max_size == 500 << 20


def test_a_file_it_cannot_edit_safely_is_left_alone_with_what_to_do(tmp_path):
    path = tmp_path / "pyproject.toml"
    before = '[project]\nname = "p"\n[tool.vyre]\ncache = {max-size = "1G"}\n'
    path.write_text(before)
    with pytest.raises(ConfigError) as info:
        set_file_max_size(str(path), "tool.vyre.", "3G")
    assert str(info.value) == (
        f"cannot set max-size in {path} without changing its other settings; edit it by "
        'hand: max-size = "3G" in [tool.vyre.cache]'
    )
    assert path.read_text() == before


def test_build_settings_are_per_project_and_written_only_when_changed(tmp_path):
    cache = str(tmp_path / "cache")
    assert read_build_settings(cache, "/p/one") is None
    write_build_settings(cache, "/p/one", {"VYRECACHEMAXAGE": 7})
    write_build_settings(cache, "/p/two", {})
    assert read_build_settings(cache, "/p/one") == {"VYRECACHEMAXAGE": 7}
    assert read_build_settings(cache, "/p/two") == {}
    folder = tmp_path / "cache" / "settings"
    stamps = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    assert len(stamps) == 2
    write_build_settings(cache, "/p/one", {"VYRECACHEMAXAGE": 7})  # a null build: no write
    write_build_settings(cache, "/p/two", {})
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == stamps
    write_build_settings(cache, "/p/two", {"VYREWORKERS": 0})
    assert read_build_settings(cache, "/p/two") == {"VYREWORKERS": 0}
