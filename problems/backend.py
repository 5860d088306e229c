"""The backend layer: array namespace, device, dtype, random streams and sync.

Everything that differs between numpy, torch and jax lives here and in the oracles.
Algorithms see only ``oracle.xp`` (an array-API namespace from ``array_api_compat``) and
flat parameter vectors of the backend's array type.

Random numbers come from two places (see :class:`NoiseSource`): privacy noise is drawn on
the backend's device by its native generator (``noise="native"``) or replayed from a numpy
stream (``noise="replay"``), which makes numpy, torch and jax runs draw the same numbers
for parity tests. Data sampling always uses a numpy generator on the host (indices are
small), so every backend sees the same batches for a given seed.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

BACKENDS = ("numpy", "torch", "jax")
DEVICES = ("cpu", "cuda")
DTYPES = ("float32", "float64")
NOISE_MODES = ("native", "replay")

_EXTRA = {"torch": "torch", "jax": "jax"}


class MissingExtraError(ImportError):
    """An optional backend is not installed."""


def require(module: str, extra: str) -> Any:
    """Import ``module`` lazily; on failure name the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError(
            f"{module} is not installed; install it with: pip install 'saddlebench[{extra}]'"
        ) from exc


@dataclass(frozen=True)
class BackendSpec:
    """Which backend a run uses: name, device, floating dtype and noise source."""

    name: str = "numpy"
    device: str = "cpu"
    dtype: str = "float64"
    noise: str = "native"

    def __post_init__(self) -> None:
        for value, allowed, what in (
            (self.name, BACKENDS, "backend"),
            (self.device, DEVICES, "device"),
            (self.dtype, DTYPES, "dtype"),
            (self.noise, NOISE_MODES, "noise"),
        ):
            if value not in allowed:
                raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(allowed)}")
        if self.name == "numpy" and self.device != "cpu":
            raise ValueError("the numpy backend runs on cpu only; use torch or jax for cuda")


class NoiseSource(Protocol):
    """Draws standard normal arrays on the backend's device."""

    def normal(self, shape: tuple[int, ...]) -> Any: ...


class Backend:
    """One backend: converts arrays, draws noise, synchronises the device."""

    spec: BackendSpec
    xp: Any

    def __init__(self, spec: BackendSpec) -> None:
        self.spec = spec

    @property
    def name(self) -> str:
        return self.spec.name

    def asarray(self, a: Any) -> Any:
        """Floating data to the backend's dtype and device."""
        raise NotImplementedError

    def as_index(self, idx: np.ndarray) -> Any:
        """Host integer indices (or labels) to the backend's integer array."""
        raise NotImplementedError

    def to_numpy(self, a: Any) -> np.ndarray:
        raise NotImplementedError

    def sync(self, a: Any = None) -> None:
        """Wait until queued device work (on ``a``, where that matters) is done."""

    def native_noise(self, seed: int) -> NoiseSource:
        raise NotImplementedError

    def noise_source(self, seed: int) -> NoiseSource:
        """The run's privacy-noise stream, native or replayed from numpy."""
        if self.spec.noise == "replay":
            return ReplayNoise(np.random.default_rng(seed), self)
        return self.native_noise(seed)

    def describe(self) -> dict[str, str]:
        return {"backend": self.name, "device": self.spec.device, "dtype": self.spec.dtype}


class ReplayNoise:
    """Noise drawn by numpy on the host, then moved to the backend (parity tests)."""

    def __init__(self, rng: np.random.Generator, backend: Backend) -> None:
        self._rng = rng
        self._backend = backend

    def normal(self, shape: tuple[int, ...]) -> Any:
        return self._backend.asarray(self._rng.standard_normal(shape))


class NumpyBackend(Backend):
    def __init__(self, spec: BackendSpec) -> None:
        super().__init__(spec)
        from array_api_compat import numpy as xp_numpy

        self.xp = xp_numpy
        self._dtype = np.dtype(spec.dtype)

    def asarray(self, a: Any) -> np.ndarray:
        return np.asarray(a, dtype=self._dtype)

    def as_index(self, idx: np.ndarray) -> np.ndarray:
        return np.asarray(idx)

    def to_numpy(self, a: Any) -> np.ndarray:
        return np.asarray(a)

    def native_noise(self, seed: int) -> NoiseSource:
        return ReplayNoise(np.random.default_rng(seed), self)


class TorchBackend(Backend):
    def __init__(self, spec: BackendSpec) -> None:
        super().__init__(spec)
        self.torch = require("torch", "torch")
        from array_api_compat import torch as xp_torch

        self.xp = xp_torch
        if spec.device == "cuda" and not self.torch.cuda.is_available():
            raise ValueError("device 'cuda' requested but torch sees no CUDA GPU; use device: cpu")
        self.device = self.torch.device(spec.device)
        self.dtype = getattr(self.torch, spec.dtype)

    def asarray(self, a: Any) -> Any:
        return self.torch.as_tensor(np.asarray(a), dtype=self.dtype, device=self.device)

    def as_index(self, idx: np.ndarray) -> Any:
        return self.torch.as_tensor(np.asarray(idx), device=self.device)

    def to_numpy(self, a: Any) -> np.ndarray:
        return np.asarray(a.detach().cpu().numpy())

    def sync(self, a: Any = None) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def native_noise(self, seed: int) -> NoiseSource:
        return TorchNoise(self, seed)

    def describe(self) -> dict[str, str]:
        out = super().describe()
        if self.device.type == "cuda":
            out["gpu"] = self.torch.cuda.get_device_name(self.device)
        return out


class TorchNoise:
    def __init__(self, backend: TorchBackend, seed: int) -> None:
        torch = backend.torch
        self._gen = torch.Generator(device=backend.device)
        self._gen.manual_seed(int(seed) % (2**63))
        self._backend = backend

    def normal(self, shape: tuple[int, ...]) -> Any:
        b = self._backend
        return b.torch.randn(shape, generator=self._gen, device=b.device, dtype=b.dtype)


class JaxBackend(Backend):
    def __init__(self, spec: BackendSpec) -> None:
        super().__init__(spec)
        self.jax = require("jax", "jax")
        # float64 runs need x64; float32 arrays are still created explicitly as float32.
        self.jax.config.update("jax_enable_x64", True)
        # every run builds fresh jitted closures of the same shapes: a persistent compilation
        # cache (keyed by the compiled program) spares recompiling them run after run
        cache = os.environ.get("SADDLEBENCH_JAX_CACHE",
                               str(Path.home() / ".cache" / "saddlebench" / "jax"))
        if cache:
            self.jax.config.update("jax_compilation_cache_dir", cache)
            self.jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
            self.jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        _tune_jax_cpu(self.jax)
        import jax.numpy as jnp

        self.xp = jnp
        self.jnp = jnp
        platform = "gpu" if spec.device == "cuda" else "cpu"
        try:
            self.device = self.jax.devices(platform)[0]
        except RuntimeError as exc:
            raise ValueError(f"device {spec.device!r} requested but jax has none: {exc}") from None
        self.dtype = getattr(jnp, spec.dtype)

    def asarray(self, a: Any) -> Any:
        return self.jax.device_put(self.jnp.asarray(np.asarray(a), dtype=self.dtype), self.device)

    def as_index(self, idx: np.ndarray) -> Any:
        return self.jax.device_put(self.jnp.asarray(np.asarray(idx)), self.device)

    def to_numpy(self, a: Any) -> np.ndarray:
        return np.asarray(a)

    def sync(self, a: Any = None) -> None:
        if a is not None:
            self.jax.block_until_ready(a)

    def native_noise(self, seed: int) -> NoiseSource:
        return JaxNoise(self, seed)

    def describe(self) -> dict[str, str]:
        out = super().describe()
        if self.spec.device == "cuda":
            out["gpu"] = str(self.device.device_kind)
        return out


def _tune_jax_cpu(jax: Any) -> None:
    """Small kernels on cpu without needless overhead; numbers are unchanged.

    * Synchronous cpu dispatch: a computation runs on the calling thread instead of being
      handed to a worker thread, whose wake-up on a busy machine took ~40 µs of a 10 µs
      kernel (jax reads the flag when it creates its cpu client, so it holds only when a
      JaxBackend is made before anything else uses jax).
    * The threefry hash unrolled on cpu, as jax lowers it on gpu: jax rolls its 20 rounds
      into a loop on cpu (a smaller program) whose every round is a pass over memory; the
      unrolled hash fuses into one loop, 1.6× faster per draw, and computes the same bits.
      It uses a private lowering rule of jax, so it is skipped where jax no longer has it.
    """
    if "jax_cpu_enable_async_dispatch" in jax.config.values:
        jax.config.update("jax_cpu_enable_async_dispatch", False)
    try:
        from jax._src.random.threefry2x32 import _threefry2x32_lowering_rule
        from jax.extend.random import threefry2x32_p
        from jax.interpreters import mlir
    except ImportError:  # pragma: no cover - depends on the jax version
        return
    mlir.register_lowering(threefry2x32_p, _threefry2x32_lowering_rule, platform="cpu")


#: bytes of normal draws of one shape that JaxNoise makes at once (at most BLOCK_ROWS)
BLOCK_BYTES = 2**20
BLOCK_ROWS = 64


@lru_cache(maxsize=1)
def _jax_normal_block() -> Any:
    """jit(key ↦ (next key, a block of N(0, I) draws of a shape)): the split and the draws
    in one dispatch."""
    import jax  # lazy: needs the jax extra

    def draw(key: Any, shape: tuple[int, ...], rows: int, dtype: Any) -> tuple[Any, Any]:
        key, sub = jax.random.split(key)
        return key, jax.random.normal(sub, (rows, *shape), dtype=dtype)

    return jax.jit(draw, static_argnums=(1, 2, 3))


@lru_cache(maxsize=1)
def _jax_key() -> Any:
    """jit(jax.random.PRNGKey): one dispatch instead of ~10 eager operations (0.1 ms)."""
    import jax  # lazy: needs the jax extra

    return jax.jit(jax.random.PRNGKey)


class JaxNoise:
    """jax's threefry stream, drawn ahead in blocks of up to :data:`BLOCK_ROWS` draws of a
    shape (at most :data:`BLOCK_BYTES`): one dispatch and one split per block instead of per
    draw, which made a small draw cost 3× torch's. Each draw is N(0, I), independent of the
    others, and a seed's draws depend only on the sequence of shapes asked for, as before;
    the numbers differ from the one-split-per-draw stream of earlier versions."""

    def __init__(self, backend: JaxBackend, seed: int) -> None:
        self._backend = backend
        self._key = backend.jax.device_put(_jax_key()(int(seed) % (2**32)), backend.device)
        self._ahead: dict[tuple[int, ...], list[Any]] = {}

    def normal(self, shape: tuple[int, ...]) -> Any:
        shape = tuple(shape)
        ahead = self._ahead.setdefault(shape, [])
        if not ahead:
            self._key, block = _jax_normal_block()(self._key, shape, self._rows(shape),
                                                  self._backend.dtype)
            ahead.extend(reversed(list(block)))  # list(): one unstacking dispatch
        return ahead.pop()

    def _rows(self, shape: tuple[int, ...]) -> int:
        size = math.prod(shape) * self._backend.jnp.dtype(self._backend.dtype).itemsize
        return max(1, min(BLOCK_ROWS, BLOCK_BYTES // max(1, size)))


_CLASSES: dict[str, type[Backend]] = {
    "numpy": NumpyBackend,
    "torch": TorchBackend,
    "jax": JaxBackend,
}


def get_backend(spec: BackendSpec | str) -> Backend:
    """The backend for ``spec`` (a :class:`BackendSpec` or a backend name)."""
    if isinstance(spec, str):
        spec = BackendSpec(name=spec)
    return _CLASSES[spec.name](spec)


def available_backends() -> dict[str, bool]:
    """Which backends can be imported here."""
    out = {"numpy": True}
    for name in ("torch", "jax"):
        try:
            importlib.import_module(name)
            out[name] = True
        except ImportError:
            out[name] = False
    return out


def unavailable(name: str, device: str = "cpu") -> str | None:
    """Why backend ``name`` cannot run on ``device`` on this machine (None: it can): not
    installed, or a CUDA device the library does not see."""
    if name == "numpy":
        return None
    if importlib.util.find_spec(name) is None:
        return (f"{name} is not installed; pip install 'saddlebench[{name}]', "
                "or choose another backend")
    if device != "cuda":
        return None
    module = importlib.import_module(name)
    try:
        found = bool(module.cuda.is_available() if name == "torch" else module.devices("gpu"))
    except RuntimeError:  # jax without a GPU platform
        found = False
    return None if found else (f"{name} sees no CUDA GPU on this machine (devices: cpu); "
                               "set device: cpu, or run it on a machine with a GPU")
