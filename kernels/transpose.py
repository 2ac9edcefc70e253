"""2-D f32 transpose through a padded 16x16 shared tile (coalesced reads and writes)."""
from vyre_build.lang import Buffer, barrier, f32, kernel, local_id, shared, u32, workgroup_id

TILE = 16
# one extra column per tile row keeps the column reads off a single bank
PITCH = TILE + 1


@kernel(workgroup_size=(TILE, TILE, 1), grid=("cols", "rows"))
def transpose(src: Buffer[f32], dst: Buffer[f32, "w"], rows: u32, cols: u32):
    # src is rows x cols row-major; dst is cols x rows row-major
    tile = shared(f32, TILE * PITCH)
    lx = local_id().x
    ly = local_id().y
    bx = workgroup_id().x * TILE
    by = workgroup_id().y * TILE
    if bx + lx < cols and by + ly < rows:
        tile[ly * PITCH + lx] = src[(by + ly) * cols + bx + lx]
    barrier()
    # dst row = src column; threads along x now walk src rows
    if by + lx < rows and bx + ly < cols:
        dst[(bx + ly) * rows + by + lx] = tile[lx * PITCH + ly]
