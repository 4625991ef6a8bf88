# expect: TL016 3:13
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(full((64,), 1.0, dtype=f32))
