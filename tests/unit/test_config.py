"""Where the cache lives and how it behaves: config files, the environment over them,
the project root found from anywhere inside it, and every bad value named with its
source."""

from __future__ import annotations

import pytest

from vyre_build.cache.config import (
    DEFAULT_MAX_SIZE,
    ConfigError,
    find_project_root,
    format_size,
    load_config,
    parse_size,
)


def project(tmp_path, **files):
    root = tmp_path / "proj"
    (root / "kernels" / "deep").mkdir(parents=True)
    for name, text in files.items():
        (root / name.replace("__", "/")).write_text(text)
    return root


def test_sizes_in_binary_units_and_unlimited():
    assert parse_size("2k") == 2048 and parse_size("1.5M") == 1572864
    assert (
        parse_size("7") == 7 and parse_size(" 5 GiB ") == 5 << 30 and parse_size("3gb") == 3 << 30
    )
    assert parse_size(0) == 0 and parse_size("unlimited") is None
    with pytest.raises(ConfigError) as err:
        parse_size("lots", "--max-size")
    assert str(err.value) == (
        "--max-size 'lots' is not a size; write e.g. 500M, 2G, 1048576 or unlimited"
    )
    assert format_size(5 << 30) == "5.0 GiB" and format_size(1536) == "1.5 KiB"
    assert format_size(12) == "12 bytes" and format_size(None) == "unlimited"


def test_defaults_at_the_project_root_found_from_a_subdirectory(tmp_path):
    root = project(tmp_path, SConstruct="")
    cfg = load_config(start=root / "kernels" / "deep", environ={})
    assert cfg.project_root == str(root) and cfg.cache_dir == str(root / "cache")
    assert cfg.max_size == DEFAULT_MAX_SIZE and cfg.max_age_s is None and cfg.remote_url is None
    assert cfg.sources["cache_dir"] == "default"
    assert find_project_root(tmp_path) is None


def test_project_file_then_user_file_then_environment(tmp_path):
    root = project(
        tmp_path,
        **{
            "SConstruct": "",
            "vyre.toml": '[cache]\ndir = "build-cache"\nmax-size = "2G"\n'
            '[remote]\nurl = "http://cache.example/team/"\n',
        },
    )
    user = tmp_path / "user.toml"
    user.write_text('[cache]\nmax-age = 30\nmax-size = "1G"\n[remote]\ntimeout = 2.5\n')
    env = {"VYRE_CONFIG": str(user)}
    cfg = load_config(start=root / "kernels", environ=env)
    assert cfg.cache_dir == str(root / "build-cache") and cfg.max_size == 2 << 30
    assert cfg.max_age_s == 30 * 86400 and cfg.remote_timeout_s == 2.5
    assert cfg.remote_url == "http://cache.example/team" and cfg.remote_mode is None
    assert cfg.sources["max_size"] == f"max-size in [cache] of {root / 'vyre.toml'}"
    assert cfg.sources["max_age"] == f"max-age in [cache] of {user}"
    env.update(VYRE_CACHE_DIR=str(tmp_path / "elsewhere"), VYRE_CACHE_MAX_SIZE="unlimited")
    env.update(VYRE_REMOTE_CACHE_MODE="read-write")
    cfg = load_config(start=root, environ=env)
    assert cfg.cache_dir == str(tmp_path / "elsewhere") and cfg.max_size is None
    assert cfg.remote_mode == "read-write" and cfg.sources["cache_dir"] == "VYRE_CACHE_DIR"


def test_tool_vyre_in_pyproject_marks_and_configures_a_project(tmp_path):
    root = project(
        tmp_path,
        **{"pyproject.toml": '[project]\nname = "x"\n\n[tool.vyre.cache]\nmax-size = "100M"\n'},
    )
    cfg = load_config(start=root / "kernels" / "deep", environ={})
    assert cfg.project_root == str(root) and cfg.max_size == 100 << 20
    assert cfg.sources["max_size"] == f"max-size in [tool.vyre.cache] of {root / 'pyproject.toml'}"
    (root / "kernels" / "pyproject.toml").write_text('[project]\nname = "not vyre"\n')
    assert find_project_root(root / "kernels") == str(root)  # no [tool.vyre]: not a project


@pytest.mark.parametrize(
    "text, message",
    [
        (
            '[cache]\nmax_size = "1G"\n',
            "unknown key 'max_size' in [cache]; keys: dir, max-size, max-age",
        ),
        ("[caches]\n", "unknown table [caches]; tables: [cache], [remote]"),
        ('[cache]\nmax-size = "huge"\n', "max-size in [cache] of {path} 'huge' is not a size"),
        (
            "[cache]\nmax-age = -1\n",
            "max-age in [cache] of {path}: -1 is not a number of days >= 0",
        ),
        (
            '[remote]\nmode = "rw"\n',
            "mode in [remote] of {path}: 'rw' is not read-only or read-write",
        ),
        (
            '[remote]\nurl = "ftp://u:hunter2@h/x"\n',
            "url in [remote] of {path}: 'ftp://h/x' is not an http:// or https:// URL",
        ),
        ("[cache\n", "is not valid TOML"),
    ],
)
def test_bad_config_values_name_the_file_the_key_and_the_value(tmp_path, text, message):
    root = project(tmp_path, **{"vyre.toml": text})
    path = root / "vyre.toml"
    with pytest.raises(ConfigError) as err:
        load_config(root, environ={})
    assert message.format(path=path) in str(err.value)
    assert "hunter2" not in str(err.value)


def test_bad_environment_values_name_the_variable(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path, environ={"VYRE_REMOTE_CACHE_TIMEOUT": "soon"})
    assert str(err.value) == "VYRE_REMOTE_CACHE_TIMEOUT: 'soon' is not a number of seconds"
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path, environ={"VYRE_CACHE_MAX_SIZE": "-3"})
    assert "VYRE_CACHE_MAX_SIZE '-3' is not a size" in str(err.value)
