"""Device helpers for the fidelity tests, in a module of their own that imports cuTile's names
one by one (``from cuda.tile import ...``) instead of ``import cuda.tile as ct``."""
from cuda.tile import exp, function, log, maximum


@function
def softplus(x):
    return maximum(x, 0.0) + log(1.0 + exp(-abs(x)))


def twice(x):
    return x + x


TABLE = (softplus, twice)
