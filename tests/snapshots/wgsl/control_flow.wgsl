// vyre_build WGSL for kernel "control_flow"; generated from its descriptor, do not edit.

const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);

@group(0) @binding(0) var<storage, read_write> out: array<i32>;

@compute @workgroup_size(32, 1, 1)
fn main(@builtin(global_invocation_id) _gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) _wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let wid: vec3<u32> = _wid + vyre_wg_base;
    let gid: vec3<u32> = _gid + vyre_wg_base * vec3<u32>(32u, 1u, 1u);
    var acc: i32 = i32();
    var j: u32 = u32();
    var u_loop: array<i32, 4> = array<i32, 4>();
    let _len0: u32 = arrayLength(&out);
    let _v0: u32 = gid.x;
    let _v1: u32 = _len0;
    let _v2: bool = (_v0 >= _v1);
    if _v2 {
        return;
    }
    let _v3: i32 = 0i;
    let _v4: i32 = 8i;
    for (var _i0: i32 = _v3; _i0 < _v4; _i0 = _i0 + 1i) {
        let _v5: i32 = _i0;
        let _v6: i32 = 3i;
        let _v28: i32 = (_v5 / _v6);
        let _v29: i32 = (_v6 * _v28);
        let _v7: i32 = (_v5 - _v29);
        let _v8: i32 = 0i;
        let _v9: bool = (_v7 == _v8);
        if _v9 {
            continue;
        }
        let _v10: u32 = 0u;
        let _v11: i32 = acc;
        let _v12: u32 = 0u;
        let _v13: i32 = (_v11 + _v5);
        acc = _v13;
    }
    loop {
        let _v14: u32 = 0u;
        let _v15: u32 = j;
        let _v16: bool = (_v15 >= _v0);
        if _v16 {
            break;
        } else {
            let _v17: i32 = bitcast<i32>(_v15);
            let _v30: u32 = 4u;
            let _v31: bool = (_v15 < _v30);
            if _v31 {
                u_loop[_v15] = _v17;
            }
        }
        continuing {
            let _v18: u32 = 0u;
            let _v19: u32 = 0u;
            let _v20: u32 = j;
            let _v21: u32 = 2u;
            let _v22: u32 = (_v20 + _v21);
            j = _v22;
        }
    }
    let _v23: u32 = 0u;
    let _v24: i32 = acc;
    let _v25: u32 = 3u;
    let _v26: i32 = u_loop[_v25];
    let _v27: i32 = (_v24 + _v26);
    out[_v0] = _v27;
}
