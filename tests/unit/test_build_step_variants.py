"""A variants YAML keys only the kernel file it has a section for."""

import textwrap

from vyre_build.build.step import compute_key, rebuild_record, build_kernel_file
from vyre_build.cache.store import Store
from vyre_build.compiler import compiler_identity, kernel_dependencies

ADD = textwrap.dedent("""\
    from vyre_build.lang import *
    @kernel
    def add(a: Buffer[T], out: Buffer[T, "w"]):
        out[global_id().x] = a[global_id().x] + T(1)
    """)
COPY = textwrap.dedent("""\
    from vyre_build.lang import *
    @kernel
    def copy(a: Buffer[u32], out: Buffer[u32, "w"]):
        out[global_id().x] = a[global_id().x]
    """)


def key_of(path):
    return compute_key(
        str(path), kernel_dependencies(str(path)), ["wgsl", "kdesc"], {}, compiler_identity()
    )[0].key


def test_only_the_own_section_of_variants_yaml_is_in_the_key(tmp_path):
    (tmp_path / "add.py").write_text(ADD)
    (tmp_path / "copy.py").write_text(COPY)
    yaml_path = tmp_path / "variants.yaml"
    yaml_path.write_text("add.py:\n  add:\n    f32: {T: f32}\n")
    add0, copy0 = key_of(tmp_path / "add.py"), key_of(tmp_path / "copy.py")
    yaml_path.write_text("# a comment\nadd.py:\n  add:\n    f32: {T: f32}  # same\n")
    assert (key_of(tmp_path / "add.py"), key_of(tmp_path / "copy.py")) == (add0, copy0)
    yaml_path.write_text("add.py:\n  add:\n    f32: {T: f32}\n    u32: {T: u32}\n")
    assert key_of(tmp_path / "add.py") != add0
    assert key_of(tmp_path / "copy.py") == copy0
    yaml_path.write_text("add.py:\n  add:\n    f32: {T: f32}\ncopy.py: {}\n")
    assert key_of(tmp_path / "copy.py") != copy0  # a section of its own appears


def test_rebuild_from_the_recorded_section_gives_the_same_bytes(tmp_path):
    (tmp_path / "add.py").write_text(ADD)
    (tmp_path / "copy.py").write_text(COPY)
    (tmp_path / "variants.yaml").write_text("copy.py: {}\nadd.py:\n  add:\n    i32: {T: i32}\n")
    store = Store(str(tmp_path / "cache"))
    step = build_kernel_file(
        str(tmp_path / "add.py"),
        str(tmp_path / "out"),
        store=store,
        targets=["wgsl", "kdesc"],
        options={},
    )
    assert step.stems == ["add.i32"]
    record = store.get_record(step.key.key)
    assert rebuild_record(store, record)["status"] == "same"


def test_spirv_opt_itself_is_part_of_the_key(tmp_path, monkeypatch):
    import vyre_build.core.targets as targets
    from vyre_build.build.step import with_tools

    base = compiler_identity()
    assert with_tools(base, {}) == base
    monkeypatch.setattr(targets, "_spirv_opt_identity", lambda: "v2024.1 blake3:aa")
    first = with_tools(base, {"spirv_opt": True})
    monkeypatch.setattr(targets, "_spirv_opt_identity", lambda: "v2025.5 blake3:bb")
    second = with_tools(base, {"spirv_opt": True})
    assert first["tools"] == {"spirv-opt": "v2024.1 blake3:aa"} and first != second
