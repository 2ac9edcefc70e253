"""User errors in a kernel tree or the tool's settings: one clear message, no Python stack,
and the rest of the tree still cleans, dry-runs and (with -k) builds."""

from __future__ import annotations

from scons_helpers import compiled, run_scons, write_tree


def test_a_kernel_that_does_not_parse_fails_only_its_own_target(tmp_path):
    root = write_tree(tmp_path / "proj", n=2)
    cache = tmp_path / "cache"
    (root / "kernels" / "broken.py").write_text("def broken(:\n")
    proc = run_scons(root, cache, "-k", check=False)
    assert proc.returncode != 0
    assert "kernels/broken.py:1:12: error: invalid syntax" in proc.stderr
    assert "Traceback" not in proc.stderr and 'File "' not in proc.stderr
    assert sorted(compiled(proc)) == ["kernels/broken.py", "kernels/k0.py", "kernels/k1.py"]
    assert (root / "build" / "k0.wgsl").exists() and not (root / "dist").exists()
    for args in (("-n",), ("-c",)):
        proc = run_scons(root, cache, *args, check=False)
        assert proc.returncode == 0, (args, proc.stderr)
    assert not (root / "build" / "k0.wgsl").exists()  # -c cleaned the good kernels
    (root / "kernels" / "broken.py").unlink()
    assert (
        run_scons(root, cache).returncode == 0 and (root / "dist" / "kernels.vyrebundle").exists()
    )


def test_a_cache_dir_that_is_a_file_is_one_line_of_error(tmp_path):
    root = write_tree(tmp_path / "proj", n=1)
    not_a_dir = tmp_path / "cachefile"
    not_a_dir.write_text("x")
    proc = run_scons(root, not_a_dir, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"scons: *** vyre cache directory {str(not_a_dir)!r} is a file, "
        "not a directory (set by $VYRECACHEDIR or $VYRE_CACHE_DIR); "
        "point it at a directory"
    )
