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
    let _flat: u32 = lid.x + 64u * (lid.y + 1u * lid.z);
    for (var _z: u32 = _flat; _z < 4u; _z = _z + 64u) { atomicStore(&hist[_z], 0u); }
    workgroupBarrier();
    let _v0: u32 = gid.x;
    let _v1: u32 = lid.x;
    let _v2: u32 = wid.x;
    let _v3: u32 = 1u;
    let _v4: u32 = 31u;
    let _v5: u32 = (_v0 & _v4);
    let _v6: u32 = (_v3 << (_v5 & 31u));
    let _v7: u32 = 0u;
    let _v8: u32 = 1u;
    var _o9: u32 = 0u;
    if (_v7 < arrayLength(&counters)) { _o9 = atomicAdd(&counters[_v7], _v8); }
    let _v9: u32 = _o9;
    if (_v0 < arrayLength(&olds)) { olds[_v0] = _v9; }
    let _v10: u32 = 1u;
    var _o11: u32 = 0u;
    if (_v10 < arrayLength(&counters)) { _o11 = atomicOr(&counters[_v10], _v6); }
    let _v11: u32 = _o11;
    let _v12: u32 = 2u;
    let _v13: u32 = (~_v6);
    var _o14: u32 = 0u;
    if (_v12 < arrayLength(&counters)) { _o14 = atomicAnd(&counters[_v12], _v13); }
    let _v14: u32 = _o14;
    let _v15: u32 = 3u;
    var _o16: u32 = 0u;
    if (_v15 < arrayLength(&counters)) { _o16 = atomicXor(&counters[_v15], _v0); }
    let _v16: u32 = _o16;
    let _v17: u32 = 4u;
    let _v18: u32 = 5u;
    let _v19: u32 = (_v0 + _v18);
    var _o20: u32 = 0u;
    if (_v17 < arrayLength(&counters)) { _o20 = atomicMin(&counters[_v17], _v19); }
    let _v20: u32 = _o20;
    let _v21: u32 = 5u;
    var _o22: u32 = 0u;
    if (_v21 < arrayLength(&counters)) { _o22 = atomicMax(&counters[_v21], _v0); }
    let _v22: u32 = _o22;
    let _v23: u32 = 6u;
    let _v24: u32 = 7u;
    var _o25: u32 = 0u;
    if (_v23 < arrayLength(&counters)) { _o25 = atomicExchange(&counters[_v23], _v24); }
    let _v25: u32 = _o25;
    let _v26: u32 = 7u;
    let _v27: u32 = 0u;
    let _v28: u32 = 1u;
    let _v29: u32 = (_v0 + _v28);
    var _o30: u32 = 0u;
    if (_v26 < arrayLength(&counters)) { _o30 = atomicCompareExchangeWeak(&counters[_v26], _v27, _v29).old_value; }
    let _v30: u32 = _o30;
    if (_v0 < arrayLength(&cas_old)) { cas_old[_v0] = _v30; }
    let _v31: i32 = bitcast<i32>(_v0);
    let _v32: i32 = 100i;
    let _v33: i32 = (_v31 - _v32);
    let _v34: u32 = 0u;
    var _o35: i32 = 0i;
    if (_v34 < arrayLength(&icounters)) { _o35 = atomicMin(&icounters[_v34], _v33); }
    let _v35: i32 = _o35;
    let _v36: u32 = 1u;
    var _o37: i32 = 0i;
    if (_v36 < arrayLength(&icounters)) { _o37 = atomicMax(&icounters[_v36], _v33); }
    let _v37: i32 = _o37;
    let _v38: u32 = 1000u;
    let _v39: u32 = 1u;
    var _o40: u32 = 0u;
    if (_v38 < arrayLength(&counters)) { _o40 = atomicAdd(&counters[_v38], _v39); }
    let _v40: u32 = _o40;
    let _v41: u32 = 5u;
    let _v42: u32 = (_v40 + _v41);
    if (_v0 < arrayLength(&oob)) { oob[_v0] = _v42; }
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
        if (_v51 < arrayLength(&hist_out)) { hist_out[_v51] = _v52; }
    }
}
