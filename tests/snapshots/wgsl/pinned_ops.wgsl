// vyre_build WGSL for kernel "pinned_ops"; generated from its descriptor, do not edit.

const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);

@group(0) @binding(0) var<storage, read> a: array<i32>;
@group(0) @binding(1) var<storage, read> b: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<i32>;

fn _vy_i32_to_f32(x: i32) -> f32 {
    let m = _vy_u32_to_f32(select(bitcast<u32>(x), 0u - bitcast<u32>(x), x < 0i));
    return select(m, -m, x < 0i);
}

fn _vy_u32_to_f32(x: u32) -> f32 {
    // Both halves convert exactly; the one add rounds to nearest even on every backend.
    return f32(x >> 16u) * 65536.0f + f32(x & 0xffffu);
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) _gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) _wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let wid: vec3<u32> = _wid + vyre_wg_base;
    let gid: vec3<u32> = _gid + vyre_wg_base * vec3<u32>(64u, 1u, 1u);
    let _v0: u32 = gid.x;
    let _v44: u32 = arrayLength(&a);
    let _v45: u32 = 1u;
    let _v46: u32 = (_v44 - _v45);
    let _v47: bool = (_v0 < _v44);
    let _v48: u32 = min(_v0, _v46);
    let _v49: i32 = a[_v48];
    let _v50: i32 = 0i;
    let _v1: i32 = select(_v50, _v49, _v47);
    let _v51: u32 = arrayLength(&b);
    let _v52: u32 = (_v51 - _v45);
    let _v53: bool = (_v0 < _v51);
    let _v54: u32 = min(_v0, _v52);
    let _v55: i32 = b[_v54];
    let _v2: i32 = select(_v50, _v55, _v53);
    let _v3: u32 = bitcast<u32>(_v2);
    let _v56: bool = (_v2 == _v50);
    let _v57: i32 = (-2147483647i - 1i);
    let _v58: bool = (_v1 == _v57);
    let _v59: i32 = -1i;
    let _v60: bool = (_v2 == _v59);
    let _v61: bool = (_v58 && _v60);
    let _v62: bool = (_v56 || _v61);
    let _v63: i32 = 1i;
    let _v64: i32 = select(_v2, _v63, _v62);
    let _v4: i32 = (_v1 / _v64);
    let _v65: bool = (_v2 == _v50);
    let _v66: bool = (_v1 == _v57);
    let _v67: bool = (_v2 == _v59);
    let _v68: bool = (_v66 && _v67);
    let _v69: bool = (_v65 || _v68);
    let _v70: i32 = select(_v2, _v63, _v69);
    let _v71: i32 = (_v1 / _v70);
    let _v72: i32 = (_v70 * _v71);
    let _v5: i32 = (_v1 - _v72);
    let _v73: u32 = bitcast<u32>(_v1);
    let _v74: u32 = bitcast<u32>(_v2);
    let _v75: u32 = 65535u;
    let _v76: u32 = 16u;
    let _v77: u32 = (_v73 & _v75);
    let _v78: u32 = (_v73 >> _v76);
    let _v79: u32 = (_v74 & _v75);
    let _v80: u32 = (_v74 >> _v76);
    let _v81: u32 = (_v77 * _v79);
    let _v82: u32 = (_v77 * _v80);
    let _v83: u32 = (_v78 * _v79);
    let _v84: u32 = (_v78 * _v80);
    let _v85: u32 = (_v82 & _v75);
    let _v86: u32 = (_v83 & _v75);
    let _v87: u32 = (_v85 + _v86);
    let _v88: u32 = (_v81 >> _v76);
    let _v89: u32 = (_v88 + _v87);
    let _v90: u32 = (_v82 >> _v76);
    let _v91: u32 = (_v83 >> _v76);
    let _v92: u32 = (_v90 + _v91);
    let _v93: u32 = (_v84 + _v92);
    let _v94: u32 = (_v89 >> _v76);
    let _v95: u32 = (_v93 + _v94);
    let _v96: u32 = 0u;
    let _v97: bool = (_v1 < _v50);
    let _v98: u32 = select(_v96, _v74, _v97);
    let _v99: bool = (_v2 < _v50);
    let _v100: u32 = select(_v96, _v73, _v99);
    let _v101: u32 = (_v95 - _v98);
    let _v102: u32 = (_v101 - _v100);
    let _v6: i32 = bitcast<i32>(_v102);
    let _v103: bool = (_v1 > _v2);
    let _v104: i32 = (_v1 - _v2);
    let _v105: i32 = (_v2 - _v1);
    let _v7: i32 = select(_v105, _v104, _v103);
    let _v106: u32 = 31u;
    let _v107: u32 = (_v3 & _v106);
    let _v8: i32 = (_v1 << _v107);
    let _v108: u32 = (_v3 & _v106);
    let _v9: i32 = (_v1 >> _v108);
    let _v109: u32 = bitcast<u32>(_v1);
    let _v110: u32 = (_v3 & _v106);
    let _v111: u32 = 32u;
    let _v112: u32 = (_v111 - _v110);
    let _v113: u32 = (_v112 & _v106);
    let _v114: u32 = (_v109 << _v110);
    let _v115: u32 = (_v109 >> _v113);
    let _v116: u32 = (_v114 | _v115);
    let _v10: i32 = bitcast<i32>(_v116);
    let _v117: u32 = bitcast<u32>(_v1);
    let _v118: u32 = (_v3 & _v106);
    let _v119: u32 = (_v111 - _v118);
    let _v120: u32 = (_v119 & _v106);
    let _v121: u32 = (_v117 >> _v118);
    let _v122: u32 = (_v117 << _v120);
    let _v123: u32 = (_v121 | _v122);
    let _v11: i32 = bitcast<i32>(_v123);
    let _v12: i32 = (0i - _v1);
    let _v124: bool = (_v1 < _v50);
    let _v125: i32 = (_v50 - _v1);
    let _v13: i32 = select(_v1, _v125, _v124);
    let _v126: bool = (_v1 == _v50);
    let _v127: i32 = countLeadingZeros(_v1);
    let _v128: i32 = 32i;
    let _v14: i32 = select(_v127, _v128, _v126);
    let _v129: bool = (_v1 == _v50);
    let _v130: i32 = countTrailingZeros(_v1);
    let _v15: i32 = select(_v130, _v128, _v129);
    let _v16: i32 = countOneBits(_v1);
    let _v17: f32 = _vy_i32_to_f32(_v1);
    let _v18: f32 = 0.10000000149011612f;
    let _v19: f32 = -0.0f;
    let _v20: f32 = fma(_v17, _v18, _v19);
    let _v131: bool = ((bitcast<u32>(_v20) & 0x7fffffffu) > 0x7f800000u);
    let _v132: f32 = 0.0f;
    let _v133: f32 = select(_v20, _v132, _v131);
    let _v134: f32 = 2147483520.0f;
    let _v135: f32 = min(_v133, _v134);
    let _v136: f32 = -2147483648.0f;
    let _v137: f32 = max(_v135, _v136);
    let _v138: i32 = i32(_v137);
    let _v139: bool = (_v133 > _v134);
    let _v140: i32 = 2147483647i;
    let _v21: i32 = select(_v138, _v140, _v139);
    let _v22: f32 = bitcast<f32>(0x7fc00000u);
    let _v23: bool = ((bitcast<u32>(_v22) & 0x7fffffffu) > 0x7f800000u);
    let _v24: i32 = select(0i, 1i, _v23);
    let _v25: i32 = (-2147483647i - 1i);
    let _v26: f32 = bitcast<f32>(0xff800000u);
    let _v27: i32 = bitcast<i32>(_v26);
    let _v28: i32 = (_v4 ^ _v5);
    let _v29: i32 = (_v28 ^ _v6);
    let _v30: i32 = (_v29 ^ _v7);
    let _v31: i32 = (_v30 ^ _v8);
    let _v32: i32 = (_v31 ^ _v9);
    let _v33: i32 = (_v32 ^ _v10);
    let _v34: i32 = (_v33 ^ _v11);
    let _v35: i32 = (_v34 ^ _v12);
    let _v36: i32 = (_v35 ^ _v13);
    let _v37: i32 = (_v36 ^ _v14);
    let _v38: i32 = (_v37 ^ _v15);
    let _v39: i32 = (_v38 ^ _v16);
    let _v40: i32 = (_v39 ^ _v21);
    let _v41: i32 = (_v40 ^ _v24);
    let _v42: i32 = (_v41 ^ _v25);
    let _v43: i32 = (_v42 ^ _v27);
    let _v141: u32 = arrayLength(&out);
    let _v142: bool = (_v0 < _v141);
    if _v142 {
        out[_v0] = _v43;
    }
}
