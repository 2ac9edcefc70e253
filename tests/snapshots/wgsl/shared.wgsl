// vyre_build WGSL for kernel "shared"; generated from its descriptor, do not edit.

const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);

@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read_write> sums: array<u32>;
@group(0) @binding(2) var<storage, read_write> ids: array<u32>;
var<workgroup> s: array<u32, 64>;
var<workgroup> t: array<u32, 8>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) _gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) _wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let wid: vec3<u32> = _wid + vyre_wg_base;
    let gid: vec3<u32> = _gid + vyre_wg_base * vec3<u32>(64u, 1u, 1u);
    var stride: u32 = u32();
    let _flat: u32 = lid.x + 64u * (lid.y + 1u * lid.z);
    for (var _z: u32 = _flat; _z < 8u; _z = _z + 64u) { t[_z] = 0u; }
    workgroupBarrier();
    let _len0: u32 = arrayLength(&a);
    let _len1: u32 = arrayLength(&sums);
    let _len2: u32 = arrayLength(&ids);
    let _v0: u32 = gid.x;
    let _v1: u32 = lid.x;
    let _v2: u32 = wid.x;
    let _v3: u32 = nwg.x;
    let _v4: u32 = 8u;
    let _v5: u32 = (_v1 + _v4);
    let _v6: u32 = 99u;
    let _v40: u32 = 8u;
    let _v41: bool = (_v5 < _v40);
    if _v41 {
        t[_v5] = _v6;
    }
    let _v42: u32 = _len0;
    let _v43: u32 = 1u;
    let _v44: u32 = (_v42 - _v43);
    let _v45: bool = (_v0 < _v42);
    let _v46: u32 = min(_v0, _v44);
    let _v47: u32 = a[_v46];
    let _v48: u32 = 0u;
    let _v7: u32 = select(_v48, _v47, _v45);
    s[_v1] = _v7;
    storageBarrier();
    workgroupBarrier();
    let _v8: u32 = 7u;
    let _v9: u32 = (_v1 & _v8);
    let _v10: u32 = t[_v9];
    let _v11: u32 = 0u;
    let _v12: u32 = 32u;
    stride = _v12;
    loop {
        let _v13: u32 = 0u;
        let _v14: u32 = stride;
        let _v15: u32 = 0u;
        let _v16: bool = (_v14 == _v15);
        if _v16 {
            break;
        }
        let _v17: bool = (_v1 < _v14);
        if _v17 {
            let _v18: u32 = s[_v1];
            let _v19: u32 = (_v1 + _v14);
            let _v20: u32 = s[_v19];
            let _v21: u32 = (_v18 + _v20);
            s[_v1] = _v21;
        }
        workgroupBarrier();
        continuing {
            let _v22: u32 = 0u;
            let _v23: u32 = 0u;
            let _v24: u32 = stride;
            let _v25: u32 = 1u;
            let _v26: u32 = (_v24 >> _v25);
            stride = _v26;
        }
    }
    let _v27: u32 = 0u;
    let _v28: bool = (_v1 == _v27);
    if _v28 {
        let _v29: u32 = 0u;
        let _v30: u32 = s[_v29];
        let _v49: u32 = _len1;
        let _v50: bool = (_v2 < _v49);
        if _v50 {
            sums[_v2] = _v30;
        }
    }
    let _v31: u32 = 1000u;
    let _v32: u32 = (_v2 * _v31);
    let _v33: u32 = 100u;
    let _v34: u32 = (_v3 * _v33);
    let _v35: u32 = (_v32 + _v34);
    let _v36: u32 = (_v35 + _v10);
    let _v37: u32 = 1000u;
    let _v38: u32 = 0u;
    let _v39: u32 = (_v36 + _v38);
    let _v51: u32 = _len2;
    let _v52: bool = (_v0 < _v51);
    if _v52 {
        ids[_v0] = _v39;
    }
}
