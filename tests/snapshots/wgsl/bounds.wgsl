// vyre_build WGSL for kernel "bounds"; generated from its descriptor, do not edit.

const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);

struct Params {
    off: u32,
    scale: f32,
    bias: i32,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<storage, read_write> out2: array<f32>;
@group(0) @binding(3) var<storage, read_write> lens: array<u32>;
@group(0) @binding(4) var<storage, read_write> flags: array<i32>;
@group(0) @binding(5) var<uniform> params: Params;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) _gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) _wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let wid: vec3<u32> = _wid + vyre_wg_base;
    let gid: vec3<u32> = _gid + vyre_wg_base * vec3<u32>(64u, 1u, 1u);
    var local: array<f32, 4> = array<f32, 4>();
    var flag: bool = bool();
    let _len0: u32 = arrayLength(&a);
    let _len1: u32 = arrayLength(&out);
    let _len2: u32 = arrayLength(&out2);
    let _len3: u32 = arrayLength(&lens);
    let _len4: u32 = arrayLength(&flags);
    let _v0: u32 = gid.x;
    let _v1: u32 = 0u;
    let _v2: u32 = params.off;
    let _v3: u32 = (_v0 + _v2);
    let _v34: u32 = _len0;
    let _v35: u32 = 1u;
    let _v36: u32 = (_v34 - _v35);
    let _v37: bool = (_v3 < _v34);
    let _v38: u32 = min(_v3, _v36);
    let _v39: f32 = a[_v38];
    let _v40: f32 = 0.0f;
    let _v4: f32 = select(_v40, _v39, _v37);
    let _v5: u32 = 0u;
    let _v6: f32 = params.scale;
    let _v7: f32 = (_v4 * _v6);
    let _v41: u32 = _len1;
    let _v42: bool = (_v0 < _v41);
    if _v42 {
        out[_v0] = _v7;
    }
    let _v8: u32 = 7u;
    let _v9: u32 = (_v0 & _v8);
    let _v10: f32 = 1.0f;
    let _v11: f32 = (_v7 + _v10);
    let _v43: u32 = 4u;
    let _v44: bool = (_v9 < _v43);
    if _v44 {
        local[_v9] = _v11;
    }
    let _v12: u32 = 7u;
    let _v13: u32 = (_v0 & _v12);
    let _v45: u32 = 3u;
    let _v46: bool = (_v13 < _v43);
    let _v47: u32 = min(_v13, _v45);
    let _v48: f32 = local[_v47];
    let _v14: f32 = select(_v40, _v48, _v46);
    let _v49: u32 = _len2;
    let _v50: bool = (_v0 < _v49);
    if _v50 {
        out2[_v0] = _v14;
    }
    let _v15: u32 = 0u;
    let _v16: f32 = 0.5f;
    let _v17: bool = (_v7 > _v16);
    flag = _v17;
    let _v18: u32 = 0u;
    let _v19: bool = flag;
    let _v20: i32 = 1i;
    let _v21: i32 = 0i;
    let _v22: i32 = select(_v21, _v20, _v19);
    let _v23: u32 = 0u;
    let _v24: i32 = params.bias;
    let _v25: i32 = (_v22 + _v24);
    let _v51: u32 = _len4;
    let _v52: bool = (_v0 < _v51);
    if _v52 {
        flags[_v0] = _v25;
    }
    let _v26: u32 = 0u;
    let _v27: bool = (_v0 == _v26);
    if _v27 {
        let _v28: u32 = 0u;
        let _v29: u32 = _len0;
        let _v53: u32 = _len3;
        let _v54: bool = (_v28 < _v53);
        if _v54 {
            lens[_v28] = _v29;
        }
        let _v30: u32 = 1u;
        let _v31: u32 = 4u;
        let _v55: u32 = _len3;
        let _v56: bool = (_v30 < _v55);
        if _v56 {
            lens[_v30] = _v31;
        }
        let _v32: u32 = 2u;
        let _v33: u32 = _len2;
        let _v57: u32 = _len3;
        let _v58: bool = (_v32 < _v57);
        if _v58 {
            lens[_v32] = _v33;
        }
    }
}
