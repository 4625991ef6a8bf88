# expect: TL025 3:9
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"]):
    t = x.load()
    z.store(t)
