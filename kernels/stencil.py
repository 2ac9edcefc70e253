"""7-point 3-D Laplacian on an nx x ny x nz f32 volume (zero outside), 3-D workgroups."""
from vyre_build.lang import Buffer, f32, global_id, kernel, u32


@kernel(workgroup_size=(4, 4, 4), grid=("nx", "ny", "nz"))
def laplacian3d(v: Buffer[f32], out: Buffer[f32, "w"], nx: u32, ny: u32, nz: u32):
    x = global_id().x
    y = global_id().y
    z = global_id().z
    if x >= nx or y >= ny or z >= nz:
        return
    plane = nx * ny
    c = z * plane + y * nx + x
    acc = -6.0 * v[c]
    # each neighbour counts only inside the volume (indices wrap below 0, so test both ends)
    if x > 0:
        acc += v[c - 1]
    if x + 1 < nx:
        acc += v[c + 1]
    if y > 0:
        acc += v[c - nx]
    if y + 1 < ny:
        acc += v[c + nx]
    if z > 0:
        acc += v[c - plane]
    if z + 1 < nz:
        acc += v[c + plane]
    out[c] = acc
