// vyre_build WGSL for kernel "vec_construct_extract"; generated from its descriptor, do not edit.

const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> rev: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> pair: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> ids: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read_write> sums: array<f32>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) _gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) _wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let wid: vec3<u32> = _wid + vyre_wg_base;
    let gid: vec3<u32> = _gid + vyre_wg_base * vec3<u32>(64u, 1u, 1u);
    let _len0: u32 = arrayLength(&x);
    let _len1: u32 = arrayLength(&rev);
    let _len2: u32 = arrayLength(&pair);
    let _len3: u32 = arrayLength(&ids);
    let _len4: u32 = arrayLength(&sums);
    let _v0: u32 = gid.x;
    let _v1: u32 = 30u;
    let _v2: bool = (_v0 < _v1);
    if _v2 {
        let _v16: u32 = _len0;
        let _v17: u32 = 1u;
        let _v18: u32 = (_v16 - _v17);
        let _v19: bool = (_v0 < _v16);
        let _v20: u32 = min(_v0, _v18);
        let _v21: vec4<f32> = x[_v20];
        let _v22: f32 = 0.0f;
        let _v23: vec4<f32> = vec4<f32>(_v22);
        let _v3: vec4<f32> = select(_v23, _v21, _v19);
        let _v4: f32 = _v3.x;
        let _v5: f32 = _v3.y;
        let _v6: f32 = _v3.z;
        let _v7: f32 = _v3.w;
        let _v8: vec4<f32> = vec4<f32>(_v7, _v6, _v5, _v4);
        let _v24: u32 = _len1;
        let _v25: bool = (_v0 < _v24);
        if _v25 {
            rev[_v0] = _v8;
        }
        let _v9: vec2<f32> = vec2<f32>(_v5, _v6);
        let _v26: u32 = _len2;
        let _v27: bool = (_v0 < _v26);
        if _v27 {
            pair[_v0] = _v9;
        }
        let _v10: u32 = 3u;
        let _v11: u32 = (_v0 * _v10);
        let _v12: vec2<u32> = vec2<u32>(_v0, _v11);
        let _v28: u32 = _len3;
        let _v29: bool = (_v0 < _v28);
        if _v29 {
            ids[_v0] = _v12;
        }
        let _v13: vec2<f32> = vec2<f32>(_v6, _v7);
        let _v14: f32 = _v13.y;
        let _v15: f32 = (_v4 + _v14);
        let _v30: u32 = _len4;
        let _v31: bool = (_v0 < _v30);
        if _v31 {
            sums[_v0] = _v15;
        }
    }
}
