# expect: TL035 3:13
def k(z: Mut[Tensor[f32, "B"]], x: Tensor[f32, "?"], n: i32):
    z.store(full((n,), 0.0, dtype=f32))
