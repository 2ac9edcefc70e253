// vyre_build WGSL for kernel "returns"; generated from its descriptor, do not edit.

const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);

@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(0) @binding(1) var<storage, read_write> out2: array<u32>;

@compute @workgroup_size(32, 1, 1)
fn main(@builtin(global_invocation_id) _gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) _wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let wid: vec3<u32> = _wid + vyre_wg_base;
    let gid: vec3<u32> = _gid + vyre_wg_base * vec3<u32>(32u, 1u, 1u);
    let _len0: u32 = arrayLength(&out);
    let _len1: u32 = arrayLength(&out2);
    let _v0: u32 = gid.x;
    let _v1: u32 = _len0;
    let _v2: bool = (_v0 >= _v1);
    if _v2 {
        return;
    }
    let _v3: u32 = 4u;
    let _v4: u32 = (_v0 % _v3);
    let _v5: u32 = 1u;
    let _v6: bool = (_v4 == _v5);
    if _v6 {
        let _v7: u32 = 10u;
        let _v23: u32 = _len1;
        let _v24: bool = (_v0 < _v23);
        if _v24 {
            out2[_v0] = _v7;
        }
        return;
    } else {
        let _v8: u32 = 2u;
        let _v9: bool = (_v4 == _v8);
        if _v9 {
            let _v10: u32 = 20u;
            let _v25: u32 = _len1;
            let _v26: bool = (_v0 < _v25);
            if _v26 {
                out2[_v0] = _v10;
            }
            return;
        }
        let _v11: u32 = 30u;
        let _v27: u32 = _len1;
        let _v28: bool = (_v0 < _v27);
        if _v28 {
            out2[_v0] = _v11;
        }
    }
    loop {
        let _v12: u32 = 2u;
        let _v13: u32 = (_v0 * _v12);
        out[_v0] = _v13;
        let _v14: u32 = 3u;
        let _v15: u32 = (_v0 % _v14);
        let _v16: u32 = 0u;
        let _v17: bool = (_v15 == _v16);
        if _v17 {
            return;
        }
        let _v18: u32 = 2u;
        let _v19: u32 = (_v0 * _v18);
        let _v20: u32 = 1u;
        let _v21: u32 = (_v19 + _v20);
        out[_v0] = _v21;
        return;
    }
    let _v22: u32 = 5u;
    out[_v0] = _v22;
}
