#!/bin/sh
# Rebuild bench/glsl/prebuilt/sgemm*.spv from sgemm.comp (glslangValidator and spirv-opt on
# PATH): the library's fp32 design hand-written, 8- and 16-deep, scalar and vec4 B loads,
# and the 4 x 8 subgroup layout (W48) with vec4 B loads.
set -e
cd "$(dirname "$0")"
tmp=$(mktemp -d)
for bk in "" BK16; do
  for vb in "" VECB; do
    name=sgemm${bk:+_k16}${vb:+_vecb}
    glslangValidator -V --target-env vulkan1.2 ${bk:+-D$bk} ${vb:+-D$vb} -o "$tmp/$name.spv" sgemm.comp >/dev/null
    spirv-opt --target-env=vulkan1.2 --loop-unroll -O "$tmp/$name.spv" -o "prebuilt/$name.spv"
    spirv-val --target-env vulkan1.2 "prebuilt/$name.spv"
  done
done
glslangValidator -V --target-env vulkan1.2 -DVECB -DW48 -o "$tmp/w48.spv" sgemm.comp >/dev/null
spirv-opt --target-env=vulkan1.2 --loop-unroll -O "$tmp/w48.spv" -o prebuilt/sgemm_vecb_w48.spv
spirv-val --target-env vulkan1.2 prebuilt/sgemm_vecb_w48.spv
rm -rf "$tmp"
