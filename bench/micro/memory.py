"""Peak memory of one oracle call, in a fresh process so nothing else shares the peak::

    python -m bench.micro.memory cifar10_vgg clipped_grad_sum --batch 256 [--device cuda]

prints ``{"peak_bytes": ..., "baseline_bytes": ...}``. On CPU the peak is the rise of the
resident set (Linux: ``VmHWM`` after resetting it through ``/proc/self/clear_refs``;
elsewhere ``ru_maxrss``) over its size just before the call; on CUDA, torch's peak
allocation over the memory allocated before it. The kernel runs once on two samples first,
so lazy initialisation is not counted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.micro.common import MEMORY_BATCH, ORACLE_KERNELS, REFERENCE_KERNELS

STATUS = Path("/proc/self/status")


def _status_bytes(field: str) -> int | None:
    """A ``kB`` field of /proc/self/status in bytes (None where there is no /proc)."""
    try:
        lines = STATUS.read_text().splitlines()
    except OSError:
        return None
    value = next(line.split()[1] for line in lines if line.startswith(f"{field}:"))
    return int(value) * 1024


def _maxrss() -> int:
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, kB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


def rss() -> int:
    """The resident set size now (the peak so far where it cannot be read)."""
    return _status_bytes("VmRSS") or _maxrss()


def peak_rss() -> int:
    return _status_bytes("VmHWM") or _maxrss()


def reset_peak_rss() -> None:
    """Set the peak resident size to the current one (Linux); a no-op elsewhere."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def cpu_peak(fn: Callable[[], Any]) -> tuple[int, int]:
    base = rss()
    reset_peak_rss()
    fn()
    return max(0, peak_rss() - base), base


def cuda_peak(fn: Callable[[], Any]) -> tuple[int, int]:
    import torch

    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return max(0, torch.cuda.max_memory_allocated() - base), base


def measure(problem: str, kernel: str, batch: int, device: str) -> dict[str, int]:
    """Peak and baseline bytes of ``kernel`` on ``problem`` (torch, ``device``): an oracle
    kernel or a reference one (:mod:`bench.micro.reference`)."""
    from bench.micro.reference import kernel_call

    kernel_call(problem, kernel, 2, device)[1]()
    fn = kernel_call(problem, kernel, batch, device)[1]
    peak, base = cuda_peak(fn) if device == "cuda" else cpu_peak(fn)
    return {"peak_bytes": peak, "baseline_bytes": base}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.micro.memory",
                                     description="peak memory of one oracle call")
    parser.add_argument("problem")
    parser.add_argument("kernel", choices=(*ORACLE_KERNELS, *REFERENCE_KERNELS))
    parser.add_argument("--batch", type=int, default=MEMORY_BATCH)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.problem, args.kernel, args.batch, args.device)))


if __name__ == "__main__":
    main()
