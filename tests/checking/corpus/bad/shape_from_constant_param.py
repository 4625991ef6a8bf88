# expect: TL016 3:13
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], K: Const[int] = 4):
    z.store(load_tile(x, (tile_id(0),), (K,)))
