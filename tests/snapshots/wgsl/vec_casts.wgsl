// vyre_build WGSL for kernel "vec_casts"; generated from its descriptor, do not edit.

const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);

@group(0) @binding(0) var<storage, read> f: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> ci: array<vec4<i32>>;
@group(0) @binding(2) var<storage, read_write> cu: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> fi: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> fu: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> bits: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read_write> two: array<vec2<u32>>;

fn _vy_cast_v2f32_v2u32(x: vec2<f32>) -> vec2<u32> {
    return vec2<u32>(
        select(select(u32(clamp(x.x, 0.0f, 4294967040.0f)), 4294967295u, x.x >= 4294967296.0f), 0u, ((bitcast<u32>(x.x) & 0x7fffffffu) > 0x7f800000u)),
        select(select(u32(clamp(x.y, 0.0f, 4294967040.0f)), 4294967295u, x.y >= 4294967296.0f), 0u, ((bitcast<u32>(x.y) & 0x7fffffffu) > 0x7f800000u)));
}

fn _vy_cast_v4f32_v4i32(x: vec4<f32>) -> vec4<i32> {
    return vec4<i32>(
        select(select(i32(clamp(x.x, -2147483648.0f, 2147483520.0f)), 2147483647i, x.x >= 2147483648.0f), 0i, ((bitcast<u32>(x.x) & 0x7fffffffu) > 0x7f800000u)),
        select(select(i32(clamp(x.y, -2147483648.0f, 2147483520.0f)), 2147483647i, x.y >= 2147483648.0f), 0i, ((bitcast<u32>(x.y) & 0x7fffffffu) > 0x7f800000u)),
        select(select(i32(clamp(x.z, -2147483648.0f, 2147483520.0f)), 2147483647i, x.z >= 2147483648.0f), 0i, ((bitcast<u32>(x.z) & 0x7fffffffu) > 0x7f800000u)),
        select(select(i32(clamp(x.w, -2147483648.0f, 2147483520.0f)), 2147483647i, x.w >= 2147483648.0f), 0i, ((bitcast<u32>(x.w) & 0x7fffffffu) > 0x7f800000u)));
}

fn _vy_cast_v4f32_v4u32(x: vec4<f32>) -> vec4<u32> {
    return vec4<u32>(
        select(select(u32(clamp(x.x, 0.0f, 4294967040.0f)), 4294967295u, x.x >= 4294967296.0f), 0u, ((bitcast<u32>(x.x) & 0x7fffffffu) > 0x7f800000u)),
        select(select(u32(clamp(x.y, 0.0f, 4294967040.0f)), 4294967295u, x.y >= 4294967296.0f), 0u, ((bitcast<u32>(x.y) & 0x7fffffffu) > 0x7f800000u)),
        select(select(u32(clamp(x.z, 0.0f, 4294967040.0f)), 4294967295u, x.z >= 4294967296.0f), 0u, ((bitcast<u32>(x.z) & 0x7fffffffu) > 0x7f800000u)),
        select(select(u32(clamp(x.w, 0.0f, 4294967040.0f)), 4294967295u, x.w >= 4294967296.0f), 0u, ((bitcast<u32>(x.w) & 0x7fffffffu) > 0x7f800000u)));
}

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
    let _v0: u32 = gid.x;
    let _v1: u32 = 16u;
    let _v2: bool = (_v0 < _v1);
    if _v2 {
        let _v3: vec4<f32> = select(vec4<f32>(), f[min(_v0, arrayLength(&f) - 1u)], (_v0 < arrayLength(&f)));
        let _v4: vec4<i32> = _vy_cast_v4f32_v4i32(_v3);
        let _v5: vec4<u32> = _vy_cast_v4f32_v4u32(_v3);
        if (_v0 < arrayLength(&ci)) { ci[_v0] = _v4; }
        if (_v0 < arrayLength(&cu)) { cu[_v0] = _v5; }
        let _v6: vec4<f32> = _vy_cast_v4i32_v4f32(_v4);
        if (_v0 < arrayLength(&fi)) { fi[_v0] = _v6; }
        let _v7: vec4<f32> = _vy_cast_v4u32_v4f32(_v5);
        if (_v0 < arrayLength(&fu)) { fu[_v0] = _v7; }
        let _v8: vec4<u32> = bitcast<vec4<u32>>(_v4);
        if (_v0 < arrayLength(&bits)) { bits[_v0] = _v8; }
        let _v9: f32 = _v3.x;
        let _v10: f32 = _v3.w;
        let _v11: vec2<f32> = vec2<f32>(_v9, _v10);
        let _v12: vec2<u32> = _vy_cast_v2f32_v2u32(_v11);
        if (_v0 < arrayLength(&two)) { two[_v0] = _v12; }
    }
}
