# expect: TL016 3:13
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    z.store(0.0)
