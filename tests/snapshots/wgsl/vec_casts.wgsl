// vyre_build WGSL for kernel "vec_casts"; generated from its descriptor, do not edit.

const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);

@group(0) @binding(0) var<storage, read> f: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> ci: array<vec4<i32>>;
@group(0) @binding(2) var<storage, read_write> cu: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> fi: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> fu: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> bits: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read_write> two: array<vec2<u32>>;

fn _vy_cast_v4i32_v4f32(x: vec4<i32>) -> vec4<f32> {
    return vec4<f32>(
        _vy_i32_to_f32(x.x),
        _vy_i32_to_f32(x.y),
        _vy_i32_to_f32(x.z),
        _vy_i32_to_f32(x.w));
}

fn _vy_cast_v4u32_v4f32(x: vec4<u32>) -> vec4<f32> {
    return vec4<f32>(
        _vy_u32_to_f32(x.x),
        _vy_u32_to_f32(x.y),
        _vy_u32_to_f32(x.z),
        _vy_u32_to_f32(x.w));
}

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
    let _len0: u32 = arrayLength(&f);
    let _len1: u32 = arrayLength(&ci);
    let _len2: u32 = arrayLength(&cu);
    let _len3: u32 = arrayLength(&fi);
    let _len4: u32 = arrayLength(&fu);
    let _len5: u32 = arrayLength(&bits);
    let _len6: u32 = arrayLength(&two);
    let _v0: u32 = gid.x;
    let _v1: u32 = 16u;
    let _v2: bool = (_v0 < _v1);
    if _v2 {
        let _v13: u32 = _len0;
        let _v14: u32 = 1u;
        let _v15: u32 = (_v13 - _v14);
        let _v16: bool = (_v0 < _v13);
        let _v17: u32 = min(_v0, _v15);
        let _v18: vec4<f32> = f[_v17];
        let _v19: f32 = 0.0f;
        let _v20: vec4<f32> = vec4<f32>(_v19);
        let _v3: vec4<f32> = select(_v20, _v18, _v16);
        let _v21: f32 = _v3.x;
        let _v22: bool = ((bitcast<u32>(_v21) & 0x7fffffffu) > 0x7f800000u);
        let _v23: f32 = select(_v21, _v19, _v22);
        let _v24: f32 = 2147483520.0f;
        let _v25: f32 = min(_v23, _v24);
        let _v26: f32 = -2147483648.0f;
        let _v27: f32 = max(_v25, _v26);
        let _v28: i32 = i32(_v27);
        let _v29: bool = (_v23 > _v24);
        let _v30: i32 = 2147483647i;
        let _v31: i32 = select(_v28, _v30, _v29);
        let _v32: f32 = _v3.y;
        let _v33: bool = ((bitcast<u32>(_v32) & 0x7fffffffu) > 0x7f800000u);
        let _v34: f32 = select(_v32, _v19, _v33);
        let _v35: f32 = min(_v34, _v24);
        let _v36: f32 = max(_v35, _v26);
        let _v37: i32 = i32(_v36);
        let _v38: bool = (_v34 > _v24);
        let _v39: i32 = select(_v37, _v30, _v38);
        let _v40: f32 = _v3.z;
        let _v41: bool = ((bitcast<u32>(_v40) & 0x7fffffffu) > 0x7f800000u);
        let _v42: f32 = select(_v40, _v19, _v41);
        let _v43: f32 = min(_v42, _v24);
        let _v44: f32 = max(_v43, _v26);
        let _v45: i32 = i32(_v44);
        let _v46: bool = (_v42 > _v24);
        let _v47: i32 = select(_v45, _v30, _v46);
        let _v48: f32 = _v3.w;
        let _v49: bool = ((bitcast<u32>(_v48) & 0x7fffffffu) > 0x7f800000u);
        let _v50: f32 = select(_v48, _v19, _v49);
        let _v51: f32 = min(_v50, _v24);
        let _v52: f32 = max(_v51, _v26);
        let _v53: i32 = i32(_v52);
        let _v54: bool = (_v50 > _v24);
        let _v55: i32 = select(_v53, _v30, _v54);
        let _v4: vec4<i32> = vec4<i32>(_v31, _v39, _v47, _v55);
        let _v56: f32 = _v3.x;
        let _v57: bool = ((bitcast<u32>(_v56) & 0x7fffffffu) > 0x7f800000u);
        let _v58: f32 = select(_v56, _v19, _v57);
        let _v59: f32 = 4294967040.0f;
        let _v60: f32 = min(_v58, _v59);
        let _v61: f32 = max(_v60, _v19);
        let _v62: u32 = u32(_v61);
        let _v63: bool = (_v58 > _v59);
        let _v64: u32 = 4294967295u;
        let _v65: u32 = select(_v62, _v64, _v63);
        let _v66: f32 = _v3.y;
        let _v67: bool = ((bitcast<u32>(_v66) & 0x7fffffffu) > 0x7f800000u);
        let _v68: f32 = select(_v66, _v19, _v67);
        let _v69: f32 = min(_v68, _v59);
        let _v70: f32 = max(_v69, _v19);
        let _v71: u32 = u32(_v70);
        let _v72: bool = (_v68 > _v59);
        let _v73: u32 = select(_v71, _v64, _v72);
        let _v74: f32 = _v3.z;
        let _v75: bool = ((bitcast<u32>(_v74) & 0x7fffffffu) > 0x7f800000u);
        let _v76: f32 = select(_v74, _v19, _v75);
        let _v77: f32 = min(_v76, _v59);
        let _v78: f32 = max(_v77, _v19);
        let _v79: u32 = u32(_v78);
        let _v80: bool = (_v76 > _v59);
        let _v81: u32 = select(_v79, _v64, _v80);
        let _v82: f32 = _v3.w;
        let _v83: bool = ((bitcast<u32>(_v82) & 0x7fffffffu) > 0x7f800000u);
        let _v84: f32 = select(_v82, _v19, _v83);
        let _v85: f32 = min(_v84, _v59);
        let _v86: f32 = max(_v85, _v19);
        let _v87: u32 = u32(_v86);
        let _v88: bool = (_v84 > _v59);
        let _v89: u32 = select(_v87, _v64, _v88);
        let _v5: vec4<u32> = vec4<u32>(_v65, _v73, _v81, _v89);
        let _v90: u32 = _len1;
        let _v91: bool = (_v0 < _v90);
        if _v91 {
            ci[_v0] = _v4;
        }
        let _v92: u32 = _len2;
        let _v93: bool = (_v0 < _v92);
        if _v93 {
            cu[_v0] = _v5;
        }
        let _v6: vec4<f32> = _vy_cast_v4i32_v4f32(_v4);
        let _v94: u32 = _len3;
        let _v95: bool = (_v0 < _v94);
        if _v95 {
            fi[_v0] = _v6;
        }
        let _v7: vec4<f32> = _vy_cast_v4u32_v4f32(_v5);
        let _v96: u32 = _len4;
        let _v97: bool = (_v0 < _v96);
        if _v97 {
            fu[_v0] = _v7;
        }
        let _v8: vec4<u32> = bitcast<vec4<u32>>(_v4);
        let _v98: u32 = _len5;
        let _v99: bool = (_v0 < _v98);
        if _v99 {
            bits[_v0] = _v8;
        }
        let _v9: f32 = _v3.x;
        let _v10: f32 = _v3.w;
        let _v11: vec2<f32> = vec2<f32>(_v9, _v10);
        let _v100: f32 = _v11.x;
        let _v101: bool = ((bitcast<u32>(_v100) & 0x7fffffffu) > 0x7f800000u);
        let _v102: f32 = select(_v100, _v19, _v101);
        let _v103: f32 = min(_v102, _v59);
        let _v104: f32 = max(_v103, _v19);
        let _v105: u32 = u32(_v104);
        let _v106: bool = (_v102 > _v59);
        let _v107: u32 = select(_v105, _v64, _v106);
        let _v108: f32 = _v11.y;
        let _v109: bool = ((bitcast<u32>(_v108) & 0x7fffffffu) > 0x7f800000u);
        let _v110: f32 = select(_v108, _v19, _v109);
        let _v111: f32 = min(_v110, _v59);
        let _v112: f32 = max(_v111, _v19);
        let _v113: u32 = u32(_v112);
        let _v114: bool = (_v110 > _v59);
        let _v115: u32 = select(_v113, _v64, _v114);
        let _v12: vec2<u32> = vec2<u32>(_v107, _v115);
        let _v116: u32 = _len6;
        let _v117: bool = (_v0 < _v116);
        if _v117 {
            two[_v0] = _v12;
        }
    }
}
