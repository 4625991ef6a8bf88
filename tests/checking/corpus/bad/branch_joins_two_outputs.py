# expect: TL036 7:5
# expect: TL013 4:7
# expect: TL013 4:33
def k(z: Mut[Tensor[f32, "B"]], y: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], c: i32):
    t = load_tile_like(x, z)
    w = z if c > 0 else y
    w.store(t)
