"""Mandelbrot escape counts on a width x height grid starting at (x0, y0) with pixel size step."""
from vyre_build.lang import Buffer, f32, global_id, kernel, u32

ESCAPE_RADIUS_SQ = 4.0


@kernel(workgroup_size=(8, 8, 1), grid=("width", "height"))
def mandelbrot(counts: Buffer[u32, "w"], width: u32, height: u32, max_iter: u32,
               x0: f32, y0: f32, step: f32):
    px = global_id().x
    py = global_id().y
    if px >= width or py >= height:
        return
    cr = x0 + f32(px) * step
    ci = y0 + f32(py) * step
    zr: f32 = 0.0
    zi: f32 = 0.0
    n: u32 = 0
    while n < max_iter:
        zr2 = zr * zr
        zi2 = zi * zi
        if zr2 + zi2 > ESCAPE_RADIUS_SQ:
            break
        zi = 2.0 * zr * zi + ci
        zr = zr2 - zi2 + cr
        n += 1
    counts[py * width + px] = n
