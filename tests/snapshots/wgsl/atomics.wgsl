// vyre_build WGSL for kernel "atomics"; generated from its descriptor, do not edit.

const vyre_wg_base: vec3<u32> = vec3<u32>(0u, 0u, 0u);

@group(0) @binding(0) var<storage, read_write> counters: array<atomic<u32>>;
@group(0) @binding(1) var<storage, read_write> icounters: array<atomic<i32>>;
@group(0) @binding(2) var<storage, read_write> olds: array<u32>;
@group(0) @binding(3) var<storage, read_write> oob: array<u32>;
@group(0) @binding(4) var<storage, read_write> cas_old: array<u32>;
@group(0) @binding(5) var<storage, read_write> hist_out: array<u32>;
var<workgroup> hist: array<atomic<u32>, 4>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) _gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) _wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let wid: vec3<u32> = _wid + vyre_wg_base;
    let gid: vec3<u32> = _gid + vyre_wg_base * vec3<u32>(64u, 1u, 1u);
    var u_vyre_2e_old_2e_9: u32 = u32();
    var u_vyre_2e_old_2e_11: u32 = u32();
    var u_vyre_2e_old_2e_14: u32 = u32();
    var u_vyre_2e_old_2e_16: u32 = u32();
    var u_vyre_2e_old_2e_20: u32 = u32();
    var u_vyre_2e_old_2e_22: u32 = u32();
    var u_vyre_2e_old_2e_25: u32 = u32();
    var u_vyre_2e_old_2e_30: u32 = u32();
    var u_vyre_2e_old_2e_35: i32 = i32();
    var u_vyre_2e_old_2e_37: i32 = i32();
    var u_vyre_2e_old_2e_40: u32 = u32();
    let _flat: u32 = lid.x + 64u * (lid.y + 1u * lid.z);
    for (var _z: u32 = _flat; _z < 4u; _z = _z + 64u) { atomicStore(&hist[_z], 0u); }
    workgroupBarrier();
    let _len0: u32 = arrayLength(&counters);
    let _len1: u32 = arrayLength(&icounters);
    let _len2: u32 = arrayLength(&olds);
    let _len3: u32 = arrayLength(&oob);
    let _len4: u32 = arrayLength(&cas_old);
    let _len5: u32 = arrayLength(&hist_out);
    let _v0: u32 = gid.x;
    let _v1: u32 = lid.x;
    let _v2: u32 = wid.x;
    let _v3: u32 = 1u;
    let _v4: u32 = 31u;
    let _v5: u32 = (_v0 & _v4);
    let _v6: u32 = (_v3 << _v5);
    let _v7: u32 = 0u;
    let _v8: u32 = 1u;
    let _v53: u32 = _len0;
    let _v54: bool = (_v7 < _v53);
    let _v55: u32 = 0u;
    u_vyre_2e_old_2e_9 = _v55;
    if _v54 {
        let _v56: u32 = atomicAdd(&counters[_v7], _v8);
        u_vyre_2e_old_2e_9 = _v56;
    }
    let _v9: u32 = u_vyre_2e_old_2e_9;
    let _v57: u32 = _len2;
    let _v58: bool = (_v0 < _v57);
    if _v58 {
        olds[_v0] = _v9;
    }
    let _v10: u32 = 1u;
    let _v59: u32 = _len0;
    let _v60: bool = (_v10 < _v59);
    u_vyre_2e_old_2e_11 = _v55;
    if _v60 {
        let _v61: u32 = atomicOr(&counters[_v10], _v6);
        u_vyre_2e_old_2e_11 = _v61;
    }
    let _v11: u32 = u_vyre_2e_old_2e_11;
    let _v12: u32 = 2u;
    let _v13: u32 = (~_v6);
    let _v62: u32 = _len0;
    let _v63: bool = (_v12 < _v62);
    u_vyre_2e_old_2e_14 = _v55;
    if _v63 {
        let _v64: u32 = atomicAnd(&counters[_v12], _v13);
        u_vyre_2e_old_2e_14 = _v64;
    }
    let _v14: u32 = u_vyre_2e_old_2e_14;
    let _v15: u32 = 3u;
    let _v65: u32 = _len0;
    let _v66: bool = (_v15 < _v65);
    u_vyre_2e_old_2e_16 = _v55;
    if _v66 {
        let _v67: u32 = atomicXor(&counters[_v15], _v0);
        u_vyre_2e_old_2e_16 = _v67;
    }
    let _v16: u32 = u_vyre_2e_old_2e_16;
    let _v17: u32 = 4u;
    let _v18: u32 = 5u;
    let _v19: u32 = (_v0 + _v18);
    let _v68: u32 = _len0;
    let _v69: bool = (_v17 < _v68);
    u_vyre_2e_old_2e_20 = _v55;
    if _v69 {
        let _v70: u32 = atomicMin(&counters[_v17], _v19);
        u_vyre_2e_old_2e_20 = _v70;
    }
    let _v20: u32 = u_vyre_2e_old_2e_20;
    let _v21: u32 = 5u;
    let _v71: u32 = _len0;
    let _v72: bool = (_v21 < _v71);
    u_vyre_2e_old_2e_22 = _v55;
    if _v72 {
        let _v73: u32 = atomicMax(&counters[_v21], _v0);
        u_vyre_2e_old_2e_22 = _v73;
    }
    let _v22: u32 = u_vyre_2e_old_2e_22;
    let _v23: u32 = 6u;
    let _v24: u32 = 7u;
    let _v74: u32 = _len0;
    let _v75: bool = (_v23 < _v74);
    u_vyre_2e_old_2e_25 = _v55;
    if _v75 {
        let _v76: u32 = atomicExchange(&counters[_v23], _v24);
        u_vyre_2e_old_2e_25 = _v76;
    }
    let _v25: u32 = u_vyre_2e_old_2e_25;
    let _v26: u32 = 7u;
    let _v27: u32 = 0u;
    let _v28: u32 = 1u;
    let _v29: u32 = (_v0 + _v28);
    let _v77: u32 = _len0;
    let _v78: bool = (_v26 < _v77);
    u_vyre_2e_old_2e_30 = _v55;
    if _v78 {
        let _v79: u32 = atomicCompareExchangeWeak(&counters[_v26], _v27, _v29).old_value;
        u_vyre_2e_old_2e_30 = _v79;
    }
    let _v30: u32 = u_vyre_2e_old_2e_30;
    let _v80: u32 = _len4;
    let _v81: bool = (_v0 < _v80);
    if _v81 {
        cas_old[_v0] = _v30;
    }
    let _v31: i32 = bitcast<i32>(_v0);
    let _v32: i32 = 100i;
    let _v33: i32 = (_v31 - _v32);
    let _v34: u32 = 0u;
    let _v82: u32 = _len1;
    let _v83: bool = (_v34 < _v82);
    let _v84: i32 = 0i;
    u_vyre_2e_old_2e_35 = _v84;
    if _v83 {
        let _v85: i32 = atomicMin(&icounters[_v34], _v33);
        u_vyre_2e_old_2e_35 = _v85;
    }
    let _v35: i32 = u_vyre_2e_old_2e_35;
    let _v36: u32 = 1u;
    let _v86: u32 = _len1;
    let _v87: bool = (_v36 < _v86);
    u_vyre_2e_old_2e_37 = _v84;
    if _v87 {
        let _v88: i32 = atomicMax(&icounters[_v36], _v33);
        u_vyre_2e_old_2e_37 = _v88;
    }
    let _v37: i32 = u_vyre_2e_old_2e_37;
    let _v38: u32 = 1000u;
    let _v39: u32 = 1u;
    let _v89: u32 = _len0;
    let _v90: bool = (_v38 < _v89);
    u_vyre_2e_old_2e_40 = _v55;
    if _v90 {
        let _v91: u32 = atomicAdd(&counters[_v38], _v39);
        u_vyre_2e_old_2e_40 = _v91;
    }
    let _v40: u32 = u_vyre_2e_old_2e_40;
    let _v41: u32 = 5u;
    let _v42: u32 = (_v40 + _v41);
    let _v92: u32 = _len3;
    let _v93: bool = (_v0 < _v92);
    if _v93 {
        oob[_v0] = _v42;
    }
    let _v43: u32 = 3u;
    let _v44: u32 = (_v1 & _v43);
    let _v45: u32 = 1u;
    let _v46: u32 = atomicAdd(&hist[_v44], _v45);
    workgroupBarrier();
    let _v47: u32 = 4u;
    let _v48: bool = (_v1 < _v47);
    if _v48 {
        let _v49: u32 = 4u;
        let _v50: u32 = (_v2 * _v49);
        let _v51: u32 = (_v50 + _v1);
        let _v52: u32 = atomicLoad(&hist[_v1]);
        let _v94: u32 = _len5;
        let _v95: bool = (_v51 < _v94);
        if _v95 {
            hist_out[_v51] = _v52;
        }
    }
}
