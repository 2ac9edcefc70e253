// vyre_build WGSL for kernel "shared_atomics"; generated from its descriptor, do not edit.

const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);

struct Params {
    flag: u32,
    bias: i32,
}

@group(0) @binding(0) var<storage, read> values: array<u32>;
@group(0) @binding(1) var<storage, read_write> histogram: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> u_select: array<u32>;
@group(0) @binding(3) var<uniform> params: Params;
var<workgroup> bins: array<atomic<u32>, 16>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) _gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) _wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let wid: vec3<u32> = _wid + vyre_wg_base;
    let gid: vec3<u32> = _gid + vyre_wg_base * vec3<u32>(64u, 1u, 1u);
    var u_vyre_2e_old_2e_10: u32 = u32();
    var u_vyre_2e_old_2e_14: u32 = u32();
    let _flat: u32 = lid.x + 64u * (lid.y + 1u * lid.z);
    for (var _z: u32 = _flat; _z < 16u; _z = _z + 64u) { atomicStore(&bins[_z], 0u); }
    workgroupBarrier();
    let _len0: u32 = arrayLength(&values);
    let _len1: u32 = arrayLength(&histogram);
    let _len2: u32 = arrayLength(&u_select);
    let _v0: u32 = gid.x;
    let _v1: u32 = lid.x;
    let _v16: u32 = _len0;
    let _v17: u32 = 1u;
    let _v18: u32 = (_v16 - _v17);
    let _v19: bool = (_v0 < _v16);
    let _v20: u32 = min(_v0, _v18);
    let _v21: u32 = values[_v20];
    let _v22: u32 = 0u;
    let _v2: u32 = select(_v22, _v21, _v19);
    let _v3: u32 = 15u;
    let _v4: u32 = (_v2 & _v3);
    let _v5: u32 = 1u;
    let _v6: u32 = atomicAdd(&bins[_v4], _v5);
    workgroupBarrier();
    let _v7: u32 = 16u;
    let _v8: bool = (_v1 < _v7);
    if _v8 {
        let _v9: u32 = atomicLoad(&bins[_v1]);
        let _v23: u32 = _len1;
        let _v24: bool = (_v1 < _v23);
        u_vyre_2e_old_2e_10 = _v22;
        if _v24 {
            let _v25: u32 = atomicAdd(&histogram[_v1], _v9);
            u_vyre_2e_old_2e_10 = _v25;
        }
        let _v10: u32 = u_vyre_2e_old_2e_10;
        let _v11: u32 = 16u;
        let _v12: u32 = 0u;
        let _v13: u32 = nwg.x;
        let _v26: u32 = _len1;
        let _v27: bool = (_v11 < _v26);
        u_vyre_2e_old_2e_14 = _v22;
        if _v27 {
            let _v28: u32 = atomicCompareExchangeWeak(&histogram[_v11], _v12, _v13).old_value;
            u_vyre_2e_old_2e_14 = _v28;
        }
        let _v14: u32 = u_vyre_2e_old_2e_14;
        let _v15: u32 = wid.x;
        let _v29: u32 = _len2;
        let _v30: bool = (_v15 < _v29);
        if _v30 {
            u_select[_v15] = _v14;
        }
    }
    storageBarrier();
    workgroupBarrier();
}
