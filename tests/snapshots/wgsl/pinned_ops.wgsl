// vyre_build WGSL for kernel "pinned_ops"; generated from its descriptor, do not edit.

const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);

@group(0) @binding(0) var<storage, read> a: array<i32>;
@group(0) @binding(1) var<storage, read> b: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<i32>;

fn _vy_i32_to_f32(x: i32) -> f32 {
    let m = _vy_u32_to_f32(select(bitcast<u32>(x), 0u - bitcast<u32>(x), x < 0i));
    return select(m, -m, x < 0i);
}

fn _vy_mulhi_i32(a: i32, b: i32) -> i32 {
    let ua = bitcast<u32>(a);
    let ub = bitcast<u32>(b);
    return bitcast<i32>(_vy_mulhi_u32(ua, ub) - select(0u, ub, a < 0i) - select(0u, ua, b < 0i));
}

fn _vy_mulhi_u32(a: u32, b: u32) -> u32 {
    // High word of the 64-bit product from 16-bit halves (WGSL has no 64-bit integers).
    let al = a & 0xffffu;
    let ah = a >> 16u;
    let bl = b & 0xffffu;
    let bh = b >> 16u;
    let lh = al * bh;
    let hl = ah * bl;
    let mid = ((al * bl) >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    return ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
}

fn _vy_rotl(x: u32, n: u32) -> u32 {
    let s = n & 31u;
    return (x << s) | (x >> ((32u - s) & 31u));
}

fn _vy_srem(a: i32, b: i32) -> i32 {
    // Truncated remainder without `%` (OpSRem is undefined for negative operands on Vulkan).
    return a - b * (a / b);
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
    let _v1: i32 = select(0i, a[min(_v0, arrayLength(&a) - 1u)], (_v0 < arrayLength(&a)));
    let _v2: i32 = select(0i, b[min(_v0, arrayLength(&b) - 1u)], (_v0 < arrayLength(&b)));
    let _v3: u32 = bitcast<u32>(_v2);
    let _v4: i32 = (_v1 / select(_v2, 1i, _v2 == 0i || (_v1 == (-2147483647i - 1i) && _v2 == -1i)));
    let _v5: i32 = _vy_srem(_v1, select(_v2, 1i, _v2 == 0i || (_v1 == (-2147483647i - 1i) && _v2 == -1i)));
    let _v6: i32 = _vy_mulhi_i32(_v1, _v2);
    let _v7: i32 = select(_v2 - _v1, _v1 - _v2, _v1 > _v2);
    let _v8: i32 = (_v1 << (_v3 & 31u));
    let _v9: i32 = (_v1 >> (_v3 & 31u));
    let _v10: i32 = bitcast<i32>(_vy_rotl(bitcast<u32>(_v1), _v3));
    let _v11: i32 = bitcast<i32>(_vy_rotl(bitcast<u32>(_v1), 0u - _v3));
    let _v12: i32 = (0i - _v1);
    let _v13: i32 = select(_v1, 0i - _v1, _v1 < 0i);
    let _v14: i32 = select(countLeadingZeros(_v1), 32i, _v1 == 0i);
    let _v15: i32 = select(countTrailingZeros(_v1), 32i, _v1 == 0i);
    let _v16: i32 = countOneBits(_v1);
    let _v17: f32 = _vy_i32_to_f32(_v1);
    let _v18: f32 = 0.10000000149011612f;
    let _v19: f32 = -0.0f;
    let _v20: f32 = fma(_v17, _v18, _v19);
    let _v21: i32 = select(select(i32(clamp(_v20, -2147483648.0f, 2147483520.0f)), 2147483647i, _v20 >= 2147483648.0f), 0i, ((bitcast<u32>(_v20) & 0x7fffffffu) > 0x7f800000u));
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
    if (_v0 < arrayLength(&out)) { out[_v0] = _v43; }
}
