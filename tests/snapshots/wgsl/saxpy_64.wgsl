// vyre_build WGSL for kernel "saxpy"; generated from its descriptor, do not edit.

const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);

struct Params {
    a: f32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) _gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) _wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let wid: vec3<u32> = _wid + vyre_wg_base;
    let gid: vec3<u32> = _gid + vyre_wg_base * vec3<u32>(64u, 1u, 1u);
    let _len0: u32 = arrayLength(&x);
    let _len1: u32 = arrayLength(&y);
    let _v0: u32 = gid.x;
    let _v1: u32 = _len1;
    let _v2: bool = (_v0 < _v1);
    if _v2 {
        let _v3: u32 = 0u;
        let _v4: f32 = params.a;
        let _v9: u32 = _len0;
        let _v10: u32 = 1u;
        let _v11: u32 = (_v9 - _v10);
        let _v12: bool = (_v0 < _v9);
        let _v13: u32 = min(_v0, _v11);
        let _v14: f32 = x[_v13];
        let _v15: f32 = 0.0f;
        let _v5: f32 = select(_v15, _v14, _v12);
        let _v6: f32 = (_v4 * _v5);
        let _v7: f32 = y[_v0];
        let _v8: f32 = (_v6 + _v7);
        y[_v0] = _v8;
    }
}
