"""Fixtures of the corpus tests: the corpus files loaded once, fresh random generators."""
import functools
import os

import numpy as np
import pytest


@functools.lru_cache(maxsize=None)
def load(path: str):
    import cutile_lab as cl
    return cl.load_kernels(path)


@pytest.fixture
def rng():
    """A fresh generator per test; its seed is in the test's name of failure output."""
    seed = int.from_bytes(os.urandom(4), "little")
    print(f"random seed {seed}")
    return np.random.default_rng(seed)


def runtime_args(kernel, inputs: dict) -> list:
    return [inputs[p.name] for p in kernel.definition.params if p.role != "const"]
