"""The environment a result came from: versions, git sha, CPU/GPU (the code a run used is
its fingerprint, :mod:`bench.fingerprint`)."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from problems.backend import BackendSpec, get_backend

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("saddlebench", "numpy", "scipy", "torch", "jax", "jaxlib", "dp-accounting",
            "array-api-compat")


def package_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def git_sha() -> str | None:
    """The checkout's commit, with ``-dirty`` when tracked files have changes."""
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                             text=True, timeout=5, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, capture_output=True, text=True, timeout=5).stdout
        return sha + ("-dirty" if dirty.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name (Linux's ``cpuinfo``), else what :mod:`platform` knows: a wall
    time means little without the machine it was measured on."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@lru_cache(maxsize=1)
def _static() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "versions": {p: package_version(p) for p in PACKAGES},
        "git_sha": git_sha(),
    }


def environment(backend: BackendSpec | None = None) -> dict[str, Any]:
    """Versions, hardware and code identity; the GPU name when running on CUDA."""
    out = dict(_static())
    if backend is not None and backend.device == "cuda":
        try:
            out["gpu"] = get_backend(backend).describe().get("gpu")
        except (ImportError, ValueError):
            out["gpu"] = None
    return out
