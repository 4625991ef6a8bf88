# expect: TL010 5:5
# expect: TL013 3:7
def k(z: Mut[Tensor[f32, "B"]], b: Tensor[f32, "?"]):
    view = b
    view.store(load_tile_like(b, z))
