"""Issue 9's runtime targets as ratios of figures measured in one pytest-benchmark run::

    python -m bench.micro.ratios out/bench/micro.json [--out ratios.json] [--stat median]

Benchmarks are matched through their ``extra_info`` (see :mod:`bench.micro.common`): a
ratio divides a numerator benchmark by the one with the same problem, backend, device,
kernel, batch and metric except for the fields its rule replaces. Times are the ``stat``
(median by default) of each benchmark's rounds; memory is ``extra_info["peak_bytes"]``.

A benchmark that timed several kernels interleaved (``extra_info["paired"]``: kernel →
seconds per round, :func:`bench.micro.common.record_paired`) gives one measurement per
kernel; a ratio of two kernels of one such benchmark is the median of their per-round
ratios, with its distribution-free 95 % interval (the machine's drift falls on both sides
of each round alike).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

KEY_FIELDS = ("problem", "backend", "device", "kernel", "batch", "metric")
STATS = ("median", "mean", "min")


@dataclass(frozen=True)
class Rule:
    """Numerator benchmarks (the fields they must have) ÷ their counterparts (the fields
    replaced); met when the ratio is ≤ ``target`` (< when ``strict``). A rule without a
    target is a reference: a ratio shown beside the targets to explain one, never met or
    missed (``met`` None)."""

    name: str
    label: str
    numerator: Mapping[str, Any]
    denominator: Mapping[str, Any]
    target: float | None
    strict: bool = False

    def met(self, value: float) -> bool | None:
        if self.target is None:
            return None
        return value < self.target if self.strict else value <= self.target


RULES = (
    Rule("dp_sgd_step", "dp_sgd step ÷ sgd step",
         {"kernel": "step_dp_sgd", "metric": "time", "problem": "digits_mlp"},
         {"kernel": "step_sgd"}, 1.5),
    Rule("dp_sgd_step_vgg", "dp_sgd step ÷ sgd step",  # issue 24: at batch 64 on the VGG
         {"kernel": "step_dp_sgd", "metric": "time", "problem": "cifar10_vgg"},
         {"kernel": "step_sgd"}, 1.2),
    Rule("clipped_sum_vs_opacus", "clipped sum ÷ Opacus clipped sum",
         {"kernel": "clipped_grad_sum", "backend": "torch", "metric": "time"},
         {"kernel": "opacus_clipped_sum"}, 1.0, strict=True),
    Rule("diff_sum_vs_grad", "clipped diff sum ÷ gradient",
         {"kernel": "clipped_grad_diff_sum", "metric": "time", "problem": "cifar10_vgg"},
         {"kernel": "grad"}, 2.2),
    Rule("diff_sum_vs_grad_mlp", "clipped diff sum ÷ gradient",
         {"kernel": "clipped_grad_diff_sum", "metric": "time", "problem": "digits_mlp"},
         {"kernel": "grad"}, 1.5),
    # issue 38: tao2025's Fashion-MNIST MLP at batch 256
    Rule("clipped_sum_vs_grad_fm", "clipped sum ÷ gradient",
         {"kernel": "clipped_grad_sum", "metric": "time", "problem": "fashion_mnist_mlp"},
         {"kernel": "grad"}, 1.5),
    Rule("diff_sum_vs_grad_fm", "clipped diff sum ÷ gradient",
         {"kernel": "clipped_grad_diff_sum", "metric": "time", "problem": "fashion_mnist_mlp"},
         {"kernel": "grad"}, 2.5),
    Rule("clients_step_fm", "m = 10 ÷ m = 1 clients' means at one total batch",
         {"kernel": "client_means_m10", "metric": "time", "problem": "fashion_mnist_mlp"},
         {"kernel": "client_means_m1"}, 1.3),
    Rule("clients_rows_floor_fm", "m = 1 clients' means as 10 rows ÷ m = 1 means (the "
         "(m, d) output's own cost)",
         {"kernel": "client_means_m1_rows10", "metric": "time",
          "problem": "fashion_mnist_mlp"},
         {"kernel": "client_means_m1"}, None),
    Rule("clients_diff_step_fm", "m = 10 ÷ m = 1 clients' diff means at one total batch",
         {"kernel": "client_diff_means_m10", "metric": "time",
          "problem": "fashion_mnist_mlp"},
         {"kernel": "client_diff_means_m1"}, 1.3),
    Rule("clients_combined_step_fm", "m = 10 ÷ m = 1 PriSMA combined means at one total batch",
         {"kernel": "client_combined_means_m10", "metric": "time",
          "problem": "fashion_mnist_mlp"},
         {"kernel": "client_combined_means_m1"}, 1.3),
    # issue 39, on a GPU at the papers' batches (bench/micro/test_paper_batches.py)
    *(Rule(f"clipped_sum_vs_plain_gpu_{p}", "clipped sum ÷ plain backward",
           {"kernel": "clipped_grad_sum", "metric": "time", "device": "cuda", "problem": p},
           {"kernel": "module_grad"}, 1.5)
      for p in ("cifar10_cnn", "cifar10_vgg", "cifar10_resnet18")),
    Rule("clipped_sum_vs_opacus_ghost", "clipped sum ÷ Opacus ghost clipping",
         {"kernel": "clipped_grad_sum", "metric": "time", "device": "cuda"},
         {"kernel": "opacus_ghost_clipped_sum"}, 0.5),
    Rule("bert_base_memory", "private ÷ plain backward peak memory",
         {"kernel": "clipped_grad_sum", "metric": "peak_bytes", "problem": "cola_bert_base"},
         {"kernel": "module_grad"}, 2.0),
    Rule("jax_vs_torch", "jax ÷ torch",
         {"backend": "jax", "problem": "digits_mlp", "metric": "time"}, {"backend": "torch"},
         1.2),
    Rule("peak_memory", "private ÷ non-private peak memory",
         {"kernel": "clipped_grad_sum", "metric": "peak_bytes", "batch": 256},
         {"kernel": "grad"}, 2.0),
)


@dataclass(frozen=True)
class Measurement:
    """One benchmark: its name, extra_info and value (seconds, or bytes for memory)."""

    name: str
    info: Mapping[str, Any]
    value: float
    rounds: tuple[float, ...] = ()  # its times per round, where timed interleaved

    @property
    def unit(self) -> str:
        return "bytes" if self.info["metric"] == "peak_bytes" else "s"

    @property
    def key(self) -> tuple[Any, ...]:
        return key(self.info)


def key(info: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(info.get(f) for f in KEY_FIELDS)


def scheme_info(bench: Mapping[str, Any]) -> dict[str, Any] | None:
    """A benchmark's extra_info (``metric`` defaulting to ``"time"``), or None when it does
    not follow the scheme."""
    info = {"metric": "time", **(bench.get("extra_info") or {})}
    return info if all(f in info for f in KEY_FIELDS) else None


def measurements(data: Mapping[str, Any], stat: str = "median") -> list[Measurement]:
    """The benchmarks that follow the extra_info scheme (others are ignored); a paired one
    as one measurement per kernel it timed."""
    out = []
    for bench in data["benchmarks"]:
        info = scheme_info(bench)
        if info is None:
            continue
        name = bench.get("fullname", bench["name"])
        if info.get("paired"):
            out += [Measurement(name, {**info, "kernel": kernel},
                                float(getattr(np, stat)(times)), tuple(times))
                    for kernel, times in info["paired"].items()]
            continue
        memory = info["metric"] == "peak_bytes"
        value = info.get("peak_bytes") if memory else bench["stats"][stat]
        if value is not None:
            out.append(Measurement(name, info, float(value)))
    return out


def paired_ratio(num: Measurement, den: Measurement, level: float = 0.95
                 ) -> tuple[float, tuple[float, float]]:
    """The median of the per-round ratios of two kernels timed in the same rounds, and its
    distribution-free ``level`` interval (order statistics j and n + 1 − j, j from the
    binomial(n, ½) quantile)."""
    ratios = np.sort(np.asarray(num.rounds) / np.asarray(den.rounds))
    n = len(ratios)
    j = max(1, int(stats.binom.ppf((1 - level) / 2, n, 0.5)))
    return float(np.median(ratios)), (float(ratios[j - 1]), float(ratios[n - j]))


def machine(machine_info: Mapping[str, Any], device: str) -> str:
    """The GPU's name on cuda, else the CPU's brand and core count."""
    if device == "cuda":
        return str(machine_info.get("gpu") or "unknown GPU")
    cpu = machine_info.get("cpu") or {}
    brand = cpu.get("brand_raw") or machine_info.get("processor") or "unknown CPU"
    return f"{brand} ({cpu['count']} cores)" if cpu.get("count") else str(brand)


def _title(rule: Rule, info: Mapping[str, Any]) -> str:
    """``label (problem, [backend,] [kernel,] device)``: the fields the rule leaves free."""
    free = [f for f in ("backend", "kernel") if f not in rule.numerator]
    parts = [info["problem"], *(str(info[f]) for f in free), info["device"]]
    return f"{rule.label} ({', '.join(parts)})"


def _side(m: Measurement) -> dict[str, Any]:
    return {"benchmark": m.name, "value": m.value, "unit": m.unit}


def compute_ratios(data: Mapping[str, Any], stat: str = "median") -> list[dict[str, Any]]:
    """Every ratio of :data:`RULES` that the run has both sides of."""
    found = measurements(data, stat)
    index = {m.key: m for m in found}
    out = []
    for rule in RULES:
        for num in found:
            if any(num.info.get(f) != v for f, v in rule.numerator.items()):
                continue
            den = index.get(key({**num.info, **rule.denominator}))
            if den is None or den.value <= 0:
                continue
            paired = bool(num.rounds) and num.name == den.name
            value, interval = (paired_ratio(num, den) if paired
                               else (num.value / den.value, None))
            out.append({
                "name": _title(rule, num.info), "rule": rule.name,
                "problem": num.info["problem"], "backend": num.info.get("backend"),
                "kernel": num.info.get("kernel"), "value": value, "target": rule.target,
                "op": "<" if rule.strict else "≤", "met": rule.met(value),
                "numerator": _side(num), "denominator": _side(den),
                "device": num.info["device"],
                "machine": machine(data.get("machine_info") or {}, num.info["device"]),
                "stat": ("peak" if num.unit == "bytes" else
                         f"median of {len(num.rounds)} paired rounds" if paired else stat),
                **({"interval": interval} if paired else {}),
            })
    return out


def value_text(r: Mapping[str, Any], form: Callable[[float], str] = "{:.3g}".format) -> str:
    """A ratio's value, with its 95 % interval where it was measured paired, each number
    written by ``form``."""
    interval = r.get("interval")
    return form(r["value"]) + (f" [{form(interval[0])}, {form(interval[1])}]"
                               if interval else "")


def target_text(r: Mapping[str, Any], form: Callable[[float], str] = "{:g}".format) -> str:
    """A ratio's target (``≤ 1.3``), or "reference" for a rule without one."""
    return "reference" if r["target"] is None else f"{r['op']} {form(r['target'])}"


def table(ratios: list[dict[str, Any]]) -> str:
    """The ratios as a plain-text table."""
    rows = [("ratio", "value", "target", "")] + [
        (r["name"], value_text(r), target_text(r),
         "" if r["met"] is None else "met" if r["met"] else "NOT MET") for r in ratios]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                     for row in rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.micro.ratios",
                                     description="issue 9's runtime ratios from a "
                                                 "pytest-benchmark JSON")
    parser.add_argument("bench_json", type=Path)
    parser.add_argument("--out", type=Path, help="write the ratios as JSON here")
    parser.add_argument("--stat", choices=STATS, default="median")
    args = parser.parse_args(argv)
    ratios = compute_ratios(json.loads(args.bench_json.read_text()), args.stat)
    print(table(ratios))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(ratios, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
