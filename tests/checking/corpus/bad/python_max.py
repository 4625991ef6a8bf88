# expect: TL027 4:13
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], y: Tensor[f32, "?"]):
    tx, ty = load_tile_like(x, z), load_tile_like(y, z)
    z.store(max(tx, ty))
