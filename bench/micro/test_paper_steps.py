"""Steps per second of the papers' GPU runs, for the bill before a run (:mod:`bench.bill`):
one full step of every (problem, algorithm, batch, clients) that a paper-scale experiment
file runs on cuda, at that file's params (a tuned entry's first candidate, the file's first
ε). Recorded as kernel ``paper_step_<algorithm>`` with those params, which ``nox -s bench``
merges into bench/throughput.json. CUDA only (marked ``gpu``).

The data are :mod:`problems.data.fake`'s stand-ins at the real sizes (random images; CoLA's
few sentences), local ImageNet weights and bert-base-uncased are replaced by random weights
of the same shapes: a step's cost depends on the shapes, not on the values. Evaluation is not
timed (a step is the algorithm's own work: batches, gradients, noise, update)."""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from algorithms import ALGORITHMS
from bench.bill import SHAPE, shape
from bench.experiment import EXPERIMENTS, load_experiment
from bench.micro.common import gpu_param, record
from bench.micro.test_steps import Stepper
from bench.spec import RunSpec, instantiate_params
from problems import PROBLEMS
from problems.backend import BackendSpec, get_backend
from problems.data.fake import FAKE_DATA

pytestmark = [pytest.mark.benchmark(max_time=1.0),
              pytest.mark.filterwarnings("ignore:Full backward hook is firing")]

ROUNDS = 8
FAKE_N = {"mnist_mlp": 60_000, "cola_bert": 8_551}  # training records; else CIFAR's
#: params that need files this benchmark has no copy of, and their shape-alike stand-ins
STAND_INS = {"weights": None, "model_dir": None}


def gpu_specs(folder: Path = EXPERIMENTS) -> dict[str, RunSpec]:
    """One run per (problem, algorithm, device, batch, clients) of the paper files on cuda."""
    found: dict[str, RunSpec] = {}
    for path in sorted(folder.glob("*/paper/*.yaml")):
        experiment = load_experiment(path)
        for spec in [*experiment.specs, *(g.candidates[0] for g in experiment.groups)]:
            if spec.backend.device.startswith("cuda"):
                found.setdefault(shape(spec), spec)
    return found


SPECS = gpu_specs()


def stand_in(spec: RunSpec) -> Any:
    """The instance of ``spec``'s problem on fake data of the real size."""
    params = {k: STAND_INS.get(k, v) for k, v in spec.problem.params.items()}
    if spec.problem.name == "cola_bert":
        params["size"] = "base"
    problem = dataclasses.replace(spec.problem, params=params)
    target, fake = FAKE_DATA[spec.problem.name]
    cls = PROBLEMS[spec.problem.name]
    n = FAKE_N.get(spec.problem.name, 50_000)
    with mock.patch(target, partial(fake, n=n)):
        return cls(instantiate_params("problem", problem)).build(spec.seed)


@pytest.mark.parametrize(("case", "device"), [gpu_param(case) for case in SPECS])
def test_paper_step(benchmark: Any, case: str, device: str) -> None:
    import torch

    spec = SPECS[case]
    instance = stand_in(spec)
    backend = get_backend(BackendSpec(name="torch", device=device, dtype="float32"))
    algorithm = ALGORITHMS[spec.algorithm.name](instantiate_params("algorithm",
                                                                   spec.algorithm))
    step = Stepper(algorithm, instance.oracle(backend), algorithm.plan(instance, spec.privacy))
    given = {**spec.problem.params, **spec.algorithm.params}
    record(benchmark, step, rounds=ROUNDS, problem=spec.problem.name, backend="torch",
           device=device, kernel=f"paper_step_{spec.algorithm.name}", d=step.oracle.d,
           params={k: given[k] for k in SHAPE if given.get(k) is not None},
           hardware=torch.cuda.get_device_name())
