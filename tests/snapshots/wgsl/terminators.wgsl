// vyre_build WGSL for kernel "terminators"; generated from its descriptor, do not edit.

const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);

@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<storage, read_write> out2: array<u32>;

@compute @workgroup_size(32, 1, 1)
fn main(@builtin(global_invocation_id) _gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) _wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let wid: vec3<u32> = _wid + vyre_wg_base;
    let gid: vec3<u32> = _gid + vyre_wg_base * vec3<u32>(32u, 1u, 1u);
    var cnt: u32 = u32();
    let _len0: u32 = arrayLength(&out);
    let _len1: u32 = arrayLength(&out2);
    let _v0: u32 = gid.x;
    let _v1: u32 = _len0;
    let _v2: bool = (_v0 >= _v1);
    if _v2 {
        return;
    }
    let _v3: u32 = 0u;
    let _v4: u32 = 10u;
    for (var _i0: u32 = _v3; _i0 < _v4; _i0 = _i0 + 1u) {
        let _v5: u32 = 0u;
        let _v6: u32 = 0u;
        let _v7: u32 = cnt;
        let _v8: u32 = 1u;
        let _v9: u32 = (_v7 + _v8);
        cnt = _v9;
        let _v10: u32 = _i0;
        let _v11: u32 = 5u;
        let _v12: u32 = (_v0 % _v11);
        let _v13: bool = (_v10 == _v12);
        if _v13 {
            break;
        } else {
            continue;
        }
        let _v14: u32 = 999u;
        out[_v0] = _v14;
    }
    let _v15: u32 = 0u;
    let _v16: u32 = cnt;
    out[_v0] = _v16;
    let _v17: u32 = 1u;
    let _v18: u32 = (_v0 & _v17);
    let _v19: u32 = 0u;
    let _v20: bool = (_v18 == _v19);
    if _v20 {
        let _v21: u32 = 1u;
        let _v24: u32 = _len1;
        let _v25: bool = (_v0 < _v24);
        if _v25 {
            out2[_v0] = _v21;
        }
        return;
    } else {
        let _v22: u32 = 2u;
        let _v26: u32 = _len1;
        let _v27: bool = (_v0 < _v26);
        if _v27 {
            out2[_v0] = _v22;
        }
        return;
    }
    let _v23: u32 = 777u;
    out[_v0] = _v23;
}
