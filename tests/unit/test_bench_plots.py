"""bench/plots.py: RESULTS.md's benchmark lines -> one PNG per family, linked from it."""

from __future__ import annotations

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import plots  # noqa: E402

SAMPLE = """\
# results

```
  [vulkan] reduce_sum_f32  16777216       ours    1921.4 GB/s (gpu      34.9 us, host-inclusive      35.8 us) | torch    2925.4 GB/s (     22.9 us) ratio  0.657x   matches torch
  [wgpu  ] reduce_sum_f32  16777216       ours     497.1 GB/s (wall     135.0 us, host-inclusive     135.0 us) | torch    2925.4 GB/s (     22.9 us) ratio  0.170x   matches torch
  [vulkan] reduce_sum_f32  268435456      ours    4363.3 GB/s (gpu     246.1 us, host-inclusive     250.1 us) | torch    4305.6 GB/s (    249.4 us) ratio  1.013x   matches torch
  [vulkan] softmax         (4096, 1024)   ours     955.4 GB/s (gpu      35.1 us, host-inclusive      36.1 us) | torch    3282.7 GB/s (     10.2 us) ratio  0.291x   matches torch
  lib_matmul_f16     n=2048   ours    14.4 TFLOP/s   torch fp16   689.8 TFLOP/s   ratio 0.021x   (matches torch)
  lib_matmul_f16     n=4096   ours    41.7 TFLOP/s   torch fp16   769.6 TFLOP/s   ratio 0.054x   (matches torch)
  matmul           n=2048       ours    2094.2 us   GLSL    2112.2 us   ratio 0.991x   (outputs agree)
  matmul           n=4096       ours   16875.1 us   GLSL   17003.4 us   ratio 0.992x   (outputs agree)
  saxpy    auto n=16777216  GPU ours  3.98 TB/s, torch  4.02 TB/s: 0.989x   host-inclusive 0.946x
  saxpy    auto n=67108864  GPU ours  4.29 TB/s, torch  4.28 TB/s: 1.003x   host-inclusive 0.988x
[vulkan] saxpy4                         size=4194240: host   3333.80 GB/s, gpu   3968.56 GB/s | torch (cuda)   3983.30 GB/s (gpu 1.00x)
[wgpu] saxpy4                         size=16776960: host   3672.51 GB/s | torch (cuda)   4297.41 GB/s | hand-written WGSL    942.16 GB/s
[wgpu] saxpy           size=65536:      0.71 GB/s | hand-written WGSL      1.24 GB/s
```
A later run:
```
  [vulkan] reduce_sum_f32  268435456      ours    4400.0 GB/s (gpu     246.1 us, host-inclusive     250.1 us) | torch    4305.6 GB/s (    249.4 us) ratio  1.013x   matches torch
```
"""


def test_parse_keeps_the_latest_figure_of_each_series_and_size():
    assert plots.parse(SAMPLE) == {
        ("library", "reduce_sum_f32"): {
            "unit": "GB/s",
            "what": "throughput",
            "better": "higher",
            "series": {
                "ours (vulkan)": {"16777216": 1921.4, "268435456": 4400.0},
                "ours (wgpu)": {"16777216": 497.1},
                "torch": {"16777216": 2925.4, "268435456": 4305.6},
            },
        },
        ("coop", "lib_matmul_f16"): {
            "unit": "TFLOP/s",
            "what": "throughput",
            "better": "higher",
            "series": {
                "ours": {"2048": 14.4, "4096": 41.7},
                "torch fp16": {"2048": 689.8, "4096": 769.6},
            },
        },
        ("codegen", "matmul"): {
            "unit": "us",
            "what": "GPU time per dispatch",
            "better": "lower",
            "series": {
                "ours": {"2048": 2094.2, "4096": 16875.1},
                "GLSL": {"2048": 2112.2, "4096": 17003.4},
            },
        },
        ("elementwise", "saxpy"): {
            "unit": "TB/s",
            "what": "throughput",
            "better": "higher",
            "series": {
                "ours (auto)": {"16777216": 3.98, "67108864": 4.29},
                "torch": {"16777216": 4.02, "67108864": 4.28},
            },
        },
        ("device", "saxpy4"): {
            "unit": "GB/s",
            "what": "throughput",
            "better": "higher",
            "series": {
                "ours host (vulkan)": {"4194240": 3333.8},
                "ours gpu (vulkan)": {"4194240": 3968.56},
                "torch": {"4194240": 3983.3, "16776960": 4297.41},
                "ours host (wgpu)": {"16776960": 3672.51},
                "hand-written WGSL": {"16776960": 942.16},
            },
        },
    }  # softmax (one size) and the lavapipe line without torch are left out
    assert sorted(["(16384, 4096)", "(4096, 1024)", "65536"], key=plots.size_key) == [
        "65536",
        "(4096, 1024)",
        "(16384, 4096)",
    ]


def test_plots_written_linked_and_reproducible(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    results = tmp_path / "RESULTS.md"
    results.write_text(SAMPLE)
    assert plots.main(["--results", str(results), "--check"]) == 1  # nothing drawn yet
    assert capsys.readouterr().err.splitlines() == [
        "stale: codegen-matmul.png",
        "stale: coop-lib_matmul_f16.png",
        "stale: device-saxpy4.png",
        "stale: elementwise-saxpy.png",
        "stale: library-reduce_sum_f32.png",
        "stale: RESULTS.md",
    ]
    assert plots.main(["--results", str(results)]) == 0
    names = sorted(os.listdir(tmp_path / "plots"))
    assert names == [
        "codegen-matmul.png",
        "coop-lib_matmul_f16.png",
        "device-saxpy4.png",
        "elementwise-saxpy.png",
        "library-reduce_sum_f32.png",
    ]
    first = {n: (tmp_path / "plots" / n).read_bytes() for n in names}
    assert all(data.startswith(b"\x89PNG\r\n\x1a\n") for data in first.values())
    text = results.read_text()
    assert text.startswith(SAMPLE) and text[len(SAMPLE) :] == (
        "\n" + plots.BEGIN + "\n## Plots\n\n"
        "One PNG per benchmark family (the latest figures above; `python3 bench/plots.py`\n"
        "redraws them after new results are added):\n\n"
        "- codegen `matmul`: ![matmul](plots/codegen-matmul.png)\n"
        "- coop `lib_matmul_f16`: ![lib_matmul_f16](plots/coop-lib_matmul_f16.png)\n"
        "- device `saxpy4`: ![saxpy4](plots/device-saxpy4.png)\n"
        "- elementwise `saxpy`: ![saxpy](plots/elementwise-saxpy.png)\n"
        "- library `reduce_sum_f32`: ![reduce_sum_f32](plots/library-reduce_sum_f32.png)\n"
        + plots.END
        + "\n"
    )
    assert plots.main(["--results", str(results), "--check"]) == 0
    assert b"Software" not in first["library-reduce_sum_f32.png"]  # no tool or time stamp
    # A rerun writes the same bytes and replaces the section in place (never a second one).
    results.write_text(text + "more results, appended later\n")
    assert plots.main(["--results", str(results)]) == 0
    assert {n: (tmp_path / "plots" / n).read_bytes() for n in names} == first
    again = results.read_text()
    assert again.count(plots.BEGIN) == 1 and again.endswith("more results, appended later\n")
    assert capsys.readouterr().err == ""


def test_without_matplotlib_it_says_what_to_install(tmp_path, capsys, monkeypatch):
    results = tmp_path / "RESULTS.md"
    results.write_text(SAMPLE)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert plots.main(["--results", str(results)]) == 1
    assert capsys.readouterr().err == (
        "error: bench/plots.py needs matplotlib: pip install matplotlib\n"
    )
    assert results.read_text() == SAMPLE and not (tmp_path / "plots").exists()


def test_matplotlib_is_no_runtime_dependency():
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        assert "matplotlib" not in f.read()
