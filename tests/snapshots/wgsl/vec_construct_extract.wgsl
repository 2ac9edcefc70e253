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
    let _v0: u32 = gid.x;
    let _v1: u32 = 30u;
    let _v2: bool = (_v0 < _v1);
    if _v2 {
        let _v3: vec4<f32> = select(vec4<f32>(), x[min(_v0, arrayLength(&x) - 1u)], (_v0 < arrayLength(&x)));
        let _v4: f32 = _v3.x;
        let _v5: f32 = _v3.y;
        let _v6: f32 = _v3.z;
        let _v7: f32 = _v3.w;
        let _v8: vec4<f32> = vec4<f32>(_v7, _v6, _v5, _v4);
        if (_v0 < arrayLength(&rev)) { rev[_v0] = _v8; }
        let _v9: vec2<f32> = vec2<f32>(_v5, _v6);
        if (_v0 < arrayLength(&pair)) { pair[_v0] = _v9; }
        let _v10: u32 = 3u;
        let _v11: u32 = (_v0 * _v10);
        let _v12: vec2<u32> = vec2<u32>(_v0, _v11);
        if (_v0 < arrayLength(&ids)) { ids[_v0] = _v12; }
        let _v13: vec2<f32> = vec2<f32>(_v6, _v7);
        let _v14: f32 = _v13.y;
        let _v15: f32 = (_v4 + _v14);
        if (_v0 < arrayLength(&sums)) { sums[_v0] = _v15; }
    }
}
