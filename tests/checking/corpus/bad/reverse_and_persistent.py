# expect: TL004 2:9
@kernel(tile_order="reverse", schedule="persistent")
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(load_tile_like(x, z))
