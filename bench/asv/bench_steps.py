"""Cost of algorithm steps: time and peak memory per algorithm × backend × d.

Each benchmark times :data:`STEPS` iterates of ``algorithm.iterate`` from x0 with fresh
fixed-seed noise and sampling streams, ending with a device sync. Calibration (σ is given)
and one warm-up pass (jit compilation) happen in ``setup``, outside the timing.
Combinations that do not apply raise ``NotImplementedError`` in ``setup`` (asv: n/a):
minimax algorithms on minimisation problems and the reverse, missing instance constants
(``cls.needs``), backends the problem does not declare, and d above ``_common.MAX_D``.
"""

from __future__ import annotations

from algorithms import ALGORITHMS

from ._common import Run, prepare, warmed

STEPS = 20
BACKENDS = ["numpy", "torch", "jax"]
#: Minimisation algorithms (every registered one, private or not, that is not minimax).
MINIMISERS = sorted(name for name, cls in ALGORITHMS.items() if not cls.minimax)
MINIMAX = sorted(name for name, cls in ALGORITHMS.items() if cls.minimax)


class Steps:
    """Minimisers on the cosine strict saddle (n = 2000, float64)."""

    params = (MINIMISERS, BACKENDS, [10, 1000])
    param_names = ("algorithm", "backend", "d")
    timeout = 120.0

    def setup(self, algorithm: str, backend: str, d: int) -> None:
        self.run: Run = warmed(prepare(algorithm, "strict_saddle", backend, STEPS,
                                       problem_params={"d": d, "n": 2000}))

    def time_steps(self, algorithm: str, backend: str, d: int) -> None:
        self.run()

    def peakmem_steps(self, algorithm: str, backend: str, d: int) -> None:
        self.run()


class MinimaxSteps:
    """Minimax algorithms on the NC-SC double well (d = d_y = 10, n = 2000, numpy)."""

    params = (MINIMAX,)
    param_names = ("algorithm",)
    timeout = 120.0

    def setup(self, algorithm: str) -> None:
        self.run: Run = warmed(prepare(algorithm, "ncsc_double_well", "numpy", STEPS,
                                       problem_params={"d": 10, "d_y": 10, "n": 2000}))

    def time_steps(self, algorithm: str) -> None:
        self.run()

    def peakmem_steps(self, algorithm: str) -> None:
        self.run()


class ModelSteps:
    """dp_sgd against sgd on the digits MLP (hidden 32, d = 2410), float32, batch 64."""

    params = (["dp_sgd", "sgd"], ["torch", "jax"])
    param_names = ("algorithm", "backend")
    timeout = 120.0

    def setup(self, algorithm: str, backend: str) -> None:
        self.run: Run = warmed(prepare(algorithm, "digits_mlp", backend, STEPS,
                                       dtype="float32", batch_size=64, lr=0.1))

    def time_steps(self, algorithm: str, backend: str) -> None:
        self.run()

    def peakmem_steps(self, algorithm: str, backend: str) -> None:
        self.run()
