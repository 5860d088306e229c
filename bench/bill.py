"""The bill before the run (issue 39, item 4): for an experiment file, the runs, tuning runs
and steps it takes, and the hours they cost at the throughputs measured for each (problem,
algorithm, device) in :data:`TABLE`. Nothing runs.

The table (``bench/throughput.json``, versioned) holds measured steps per second, each with
the params it was measured at, the hardware, the commit and where the number comes from;
``nox -s bench`` refreshes it from bench/micro's JSON (:func:`refresh`). A run fits an entry
whose problem, algorithm and device are the run's and whose params all equal the run's; the
entry fixing the most params wins. A run that fits no entry is reported as missing, and a run
whose step count is only known once it runs (an early stop, a plan that needs the data) as
unknown: neither is guessed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from bench.spec import Experiment, RunSpec
from bench.tuning import most_added, rungs

TABLE = Path(__file__).resolve().with_name("throughput.json")
VERSION = 1
#: the params a throughput usually depends on, named where one is missing
SHAPE = ("batch_size", "batch_refresh", "batch_diff", "clients", "max_length")


@dataclass(frozen=True)
class Throughput:
    """Steps per second of ``algorithm`` on ``problem`` on ``device``, measured at ``params``
    (problem and algorithm params) on ``hardware`` at ``commit``; ``source``: where from."""

    problem: str
    algorithm: str
    device: str
    params: Mapping[str, Any]
    steps_per_s: float
    hardware: str
    commit: str
    source: str

    def fits(self, spec: RunSpec) -> bool:
        given = {**spec.problem.params, **spec.algorithm.params}
        return ((self.problem, self.algorithm, self.device)
                == (spec.problem.name, spec.algorithm.name, spec.backend.device)
                and all(given.get(k) == v for k, v in self.params.items()))

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.problem, self.algorithm, self.device, json.dumps(dict(self.params),
                                                                     sort_keys=True))


def read_table(path: Path = TABLE) -> list[Throughput]:
    """The entries of a throughput table (ValueError for another version)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("version") != VERSION:
        raise ValueError(f"{path}: throughput table version {data.get('version')!r}, this "
                         f"code reads version {VERSION}")
    return [Throughput(**entry) for entry in data["entries"]]


def write_table(entries: Iterable[Throughput], path: Path = TABLE) -> None:
    rows = [vars(e) | {"params": dict(e.params)} for e in entries]
    path.write_text(json.dumps({"version": VERSION, "entries": rows}, indent=1,
                               ensure_ascii=False) + "\n", encoding="utf-8")


def throughput(spec: RunSpec, table: list[Throughput]) -> Throughput | None:
    """The entry fitting ``spec`` that fixes the most params (the later on a tie)."""
    fitting = [(len(e.params), i, e) for i, e in enumerate(table) if e.fits(spec)]
    return max(fitting, key=lambda t: t[:2])[2] if fitting else None


def shape(spec: RunSpec) -> str:
    """What a throughput of ``spec`` is measured at: problem, algorithm, device, batch."""
    given = {**spec.problem.params, **spec.algorithm.params}
    at = ", ".join(f"{k} {given[k]}" for k in SHAPE if given.get(k) is not None)
    return f"{spec.problem.name} · {spec.algorithm.name} · {spec.backend.device}" + (
        f" ({at})" if at else "")


@cache
def steps(spec: RunSpec) -> int | None:
    """The steps one run of ``spec`` takes: its ``steps`` param, else its plan's on the
    problem's size where both are known without data; None where only the run knows."""
    from algorithms import ALGORITHMS
    from bench.spec import instantiate_params
    from problems import get_problem

    given = spec.algorithm.params.get("steps")
    if isinstance(given, int):
        return given
    if spec.algorithm.params.get("early_stop"):
        return None
    size = get_problem(spec.problem.name)(instantiate_params("problem", spec.problem)).size()
    if size is None:
        return None
    try:
        algorithm = ALGORITHMS[spec.algorithm.name](instantiate_params("algorithm",
                                                                       spec.algorithm))
        return int(algorithm.plan(size, spec.privacy).steps)
    except (ValueError, KeyError):  # the plan needs the instance's constants
        return None


@dataclass
class Work:
    """The runs of one stage (``final``, ``tune``, ``extend``: at most, if grids extend) of
    one (problem, algorithm, device, batch) in a file."""

    stage: str
    shape: str
    runs: int = 0
    steps: int = 0
    unknown_steps: int = 0  # runs whose steps only the run knows
    hours: float = 0.0
    missing: int = 0  # runs with steps but no throughput
    missing_steps: int = 0
    rates: set[str] = field(default_factory=set)

    def add(self, spec: RunSpec, table: list[Throughput], count: int = 1) -> None:
        n, rate = steps(spec), throughput(spec, table)
        self.runs += count
        if n is None:
            self.unknown_steps += count
            return
        self.steps += n * count
        if rate is None:
            self.missing += count
            self.missing_steps += n * count
        else:
            self.hours += n * count / rate.steps_per_s / 3600
            self.rates.add(f"{rate.steps_per_s:g}/s, {rate.hardware} at {rate.commit}")

    @property
    def priced(self) -> bool:
        return not (self.missing or self.unknown_steps)


@dataclass
class Bill:
    """What one experiment file costs, stage by stage."""

    path: str
    gpu: bool
    work: list[Work]

    def count(self, stage: str) -> int:
        return sum(w.runs for w in self.work if w.stage == stage)

    @property
    def steps(self) -> int:
        return sum(w.steps for w in self.work)

    @property
    def hours(self) -> float:
        """The hours of the priced runs (a lower bound where any is missing or unknown)."""
        return sum(w.hours for w in self.work)

    @property
    def complete(self) -> bool:
        return all(w.priced for w in self.work)

    @property
    def unit(self) -> str:
        return "GPU-hours" if self.gpu else "CPU-hours"

    def dominant(self) -> Work | None:
        """The work that costs the most hours (the most steps where none is priced)."""
        return max(self.work, key=lambda w: (w.hours, w.steps), default=None)


def bill(experiment: Experiment, table: list[Throughput]) -> Bill:
    """The :class:`Bill` of ``experiment`` at ``table``'s throughputs. A tuned entry's final
    runs, grid extensions and the later seeds of successive halving (which candidates run
    them is known only then) are counted at its candidate with the most steps (at most)."""
    works: dict[tuple[str, str], Work] = {}

    def work(stage: str, spec: RunSpec) -> Work:
        return works.setdefault((stage, shape(spec)), Work(stage, shape(spec)))

    for spec in experiment.specs:
        work("final", spec).add(spec, table)
    rule = experiment.tuning
    for group in experiment.groups:
        longest = max(group.candidates, key=lambda c: steps(c) or 0)
        work("final", longest).add(longest, table, len(group.seeds))
        if rule is not None:
            # successive halving: every candidate at the first seed, the rest unknown (at most)
            later = sum(rungs(len(group.candidates), rule)[1:]) if rule.halving else 0
            for spec in group.candidates:
                work("tune", spec).add(spec, table, 1 if rule.halving else len(rule.seeds))
            if later:
                work("tune", longest).add(longest, table, later)
            extra = most_added(group) * rule.extend * len(rule.seeds)
            if extra:
                work("extend", longest).add(longest, table, extra)
    specs = [*experiment.specs, *(c for g in experiment.groups for c in g.candidates)]
    gpu = any(s.backend.device.startswith("cuda") for s in specs)
    return Bill(str(experiment.path or experiment.suite), gpu, list(works.values()))


def describe(b: Bill) -> list[str]:
    """The bill in lines: counts and hours, what dominates, what is missing or unknown (one
    line per problem, algorithm, device and batch, its stages together)."""
    ext = b.count("extend")
    hours = f"{b.hours:,.1f} {b.unit}" + ("" if b.complete else
                                         " for the priced runs only (a lower bound)")
    lines = [f"{b.count('final'):,} runs, {b.count('tune'):,} tuning runs"
             + (f" (+ at most {ext:,} if grids extend)" if ext else "")
             + f", {b.steps:,} steps; {hours}"]
    top = b.dominant()
    if top is not None and b.hours > 0:
        lines.append(f"dominated by {STAGES[top.stage]} {top.shape}: {top.hours:,.1f} h "
                     f"({top.hours / b.hours:.0%})")
    missing: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for w in b.work:
        counts = missing[w.shape]
        counts[0] += w.missing
        counts[1] += w.missing_steps
        counts[2] += w.unknown_steps
    lines += [f"missing throughput: {what} ({runs:,} runs, {steps:,} steps)"
              for what, (runs, steps, _) in missing.items() if runs]
    lines += [f"steps known only when run: {what} ({runs:,} runs)"
              for what, (_, _, runs) in missing.items() if runs]
    return lines


STAGES = {"final": "the runs of", "tune": "the tuning of", "extend": "the grid extensions of"}


def total(bills: list[Bill], name: str = "") -> str:
    """One line: the priced hours per unit (GPU-hours, CPU-hours) over ``bills``, said to be
    a lower bound where any run is missing or unknown."""
    hours: dict[str, float] = defaultdict(float)
    for b in bills:
        hours[b.unit] += b.hours
    priced = ", ".join(f"{h:,.1f} {unit}" for unit, h in hours.items())
    lower = "" if all(b.complete for b in bills) else " (a lower bound: runs missing)"
    files = f"{len(bills)} file{'s' if len(bills) != 1 else ''}"
    return f"total{f' {name}' if name else ''}: {files}, {priced}{lower}"


# -- refresh ----------------------------------------------------------------------------

def measured(micro: Mapping[str, Any]) -> list[Throughput]:
    """The step throughputs of a pytest-benchmark JSON of bench/micro: each benchmark whose
    kernel is ``step_<algorithm>`` or ``paper_step_<algorithm>`` (bench/micro/test_steps.py,
    test_paper_steps.py), at its problem, device, batch and params, steps per second from
    its median time."""
    commit = str(micro.get("commit_info", {}).get("id", "unknown"))[:7]
    machine = micro.get("machine_info", {})
    out = []
    for b in micro.get("benchmarks", []):
        info = b.get("extra_info", {})
        kernel = str(info.get("kernel", "")).removeprefix("paper_")
        if not kernel.startswith("step_") or info.get("metric", "time") != "time":
            continue
        device = str(info.get("device", "cpu"))
        hardware = str(info.get("hardware") or (
            machine.get("cpu", {}).get("brand_raw", "cpu") if device == "cpu" else device))
        params = {"batch_size": info["batch"]} if "batch" in info else {}
        source = f"nox -s bench ({b.get('name', kernel)}, {micro.get('datetime', '')})"
        out.append(Throughput(str(info["problem"]), kernel.removeprefix("step_"), device,
                              params | dict(info.get("params", {})),
                              round(1 / b["stats"]["median"], 4), hardware, commit, source))
    return out


def refresh(micro_json: Path, path: Path = TABLE) -> list[Throughput]:
    """Merge the throughputs measured in ``micro_json`` into the table at ``path``: a new
    measurement replaces the entry of the same problem, algorithm, device and params on the
    same hardware; the others are kept. The merged table."""
    new = measured(json.loads(micro_json.read_text(encoding="utf-8")))
    fresh = {(e.key, e.hardware) for e in new}
    merged = [e for e in read_table(path) if (e.key, e.hardware) not in fresh] + new
    write_table(merged, path)
    return merged


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.bill MICRO_JSON [TABLE]``: refresh the throughput table."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    table = refresh(Path(args[0]), Path(args[1]) if len(args) > 1 else TABLE)
    print(f"throughput table: {len(table)} entries ({args[1] if len(args) > 1 else TABLE})")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
