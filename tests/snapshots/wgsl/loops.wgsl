// vyre_build WGSL for kernel "loops"; generated from its descriptor, do not edit.

const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);

@group(0) @binding(0) var<storage, read_write> out1: array<u32>;
@group(0) @binding(1) var<storage, read_write> out2: array<u32>;
@group(0) @binding(2) var<storage, read_write> out3: array<u32>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) _gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) _wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let wid: vec3<u32> = _wid + vyre_wg_base;
    let gid: vec3<u32> = _gid + vyre_wg_base * vec3<u32>(64u, 1u, 1u);
    var acc: u32 = u32();
    var k: u32 = u32();
    var steps: u32 = u32();
    var j: u32 = u32();
    var acc2: u32 = u32();
    let _len0: u32 = arrayLength(&out1);
    let _len1: u32 = arrayLength(&out2);
    let _len2: u32 = arrayLength(&out3);
    let _v0: u32 = gid.x;
    let _v1: u32 = _len0;
    let _v2: bool = (_v0 >= _v1);
    if _v2 {
        return;
    }
    let _v3: u32 = 0u;
    let _v4: u32 = 0u;
    let _v5: u32 = 7u;
    let _v6: u32 = (_v0 % _v5);
    for (var _i0: u32 = _v4; _i0 < _v6; _i0 = _i0 + 1u) {
        let _v7: u32 = _i0;
        let _v8: u32 = 3u;
        let _v9: bool = (_v7 == _v8);
        if _v9 {
            continue;
        }
        let _v10: u32 = 5u;
        let _v11: bool = (_v7 == _v10);
        if _v11 {
            break;
        }
        let _v12: u32 = 0u;
        let _v13: u32 = 0u;
        let _v14: u32 = acc;
        let _v15: u32 = (_v14 + _v7);
        acc = _v15;
    }
    let _v16: u32 = acc;
    out1[_v0] = _v16;
    let _v17: u32 = 1u;
    let _v18: u32 = (_v0 + _v17);
    k = _v18;
    loop {
        let _v19: u32 = 0u;
        let _v20: u32 = k;
        let _v21: u32 = 1u;
        let _v22: bool = (_v20 <= _v21);
        if _v22 {
            break;
        }
        let _v23: u32 = 2u;
        let _v24: u32 = (_v20 % _v23);
        let _v25: u32 = 0u;
        let _v26: bool = (_v24 == _v25);
        if _v26 {
            let _v27: u32 = 0u;
            let _v28: u32 = 2u;
            let _v29: u32 = (_v20 / _v28);
            k = _v29;
        } else {
            let _v30: u32 = 0u;
            let _v31: u32 = 3u;
            let _v32: u32 = (_v20 * _v31);
            let _v33: u32 = 1u;
            let _v34: u32 = (_v32 + _v33);
            k = _v34;
        }
        let _v35: u32 = 0u;
        let _v36: u32 = 0u;
        let _v37: u32 = steps;
        let _v38: u32 = 1u;
        let _v39: u32 = (_v37 + _v38);
        steps = _v39;
    }
    let _v40: u32 = steps;
    let _v59: u32 = _len1;
    let _v60: bool = (_v0 < _v59);
    if _v60 {
        out2[_v0] = _v40;
    }
    let _v41: u32 = 3u;
    let _v42: u32 = (_v0 % _v41);
    j = _v42;
    loop {
        let _v43: u32 = 0u;
        let _v44: u32 = j;
        let _v45: u32 = 20u;
        let _v46: bool = (_v44 >= _v45);
        if _v46 {
            break;
        }
        let _v47: u32 = 9u;
        let _v48: bool = (_v44 == _v47);
        if _v48 {
            continue;
        }
        let _v49: u32 = 0u;
        let _v50: u32 = 0u;
        let _v51: u32 = acc2;
        let _v52: u32 = (_v51 + _v44);
        acc2 = _v52;
        continuing {
            let _v53: u32 = 0u;
            let _v54: u32 = 0u;
            let _v55: u32 = j;
            let _v56: u32 = 3u;
            let _v57: u32 = (_v55 + _v56);
            j = _v57;
        }
    }
    let _v58: u32 = acc2;
    let _v61: u32 = _len2;
    let _v62: bool = (_v0 < _v61);
    if _v62 {
        out3[_v0] = _v58;
    }
}
