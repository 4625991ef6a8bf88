# expect: TL004 2:19
@kernel(occupancy=OCC)
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))
