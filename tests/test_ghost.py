"""Book-keeping clipping (problems/ghost.py) equals clipping materialised per-sample
gradients, on every supported layer type, and falls back where it does not apply."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_setup

torch = pytest.importorskip("torch")
nn = torch.nn

from problems.backend import BackendSpec, get_backend  # noqa: E402
from problems.ghost import BookkeepingOracle, module_layers, module_tracer  # noqa: E402
from problems.oracles import TorchOracle, auto_chunk  # noqa: E402

# one model per layer mix: linear MLP (flat parameters), conv + GroupNorm, conv + tanh
# (VGG), residual conv + GroupNorm, the appendix CNN (no biases), a small BERT (embeddings
# with padding, LayerNorm, linear layers over tokens: ghost norms)
MODELS = [("digits_mlp", {}), ("digits_cnn", {"width": 0.25}), ("cifar10_vgg", {"width": 0.125}),
          ("cifar10_resnet18", {"width": 0.0625}), ("cifar10_cnn", {"width": 0.0625}),
          ("cola_bert", {"max_length": 32})]  # padded: most CoLA sentences are shorter


def oracle(name: str, **overrides: object) -> TorchOracle:
    made = make_setup(name, BackendSpec(name="torch", dtype="float64"), **overrides).oracle
    assert isinstance(made, TorchOracle)
    return made


@pytest.mark.parametrize(("name", "overrides"), MODELS)
@pytest.mark.parametrize("clip", [1e-3, 1e3])  # every sample clipped / none
def test_clipped_sums_equal_materialised_clipping(name: str, overrides: dict, clip: float
                                                  ) -> None:
    o = oracle(name, **overrides)
    assert isinstance(o, BookkeepingOracle)
    gen = torch.Generator().manual_seed(0)
    x = o.x0 + 0.01 * torch.randn(o.d, dtype=o.x0.dtype, generator=gen)
    x_prev = x + 0.05 * torch.randn(o.d, dtype=o.x0.dtype, generator=gen)
    idx = np.array([0, 3, 4, 7, 9, 10, 11])
    want = TorchOracle.clipped_grad_sum(o, x, idx, clip)
    got = o.clipped_grad_sum(x, idx, clip)
    assert torch.allclose(got, want, rtol=1e-9, atol=1e-12 * float(want.abs().max()))
    want = TorchOracle.clipped_grad_diff_sum(o, x, x_prev, idx, clip / 10)
    got = o.clipped_grad_diff_sum(x, x_prev, idx, clip / 10)
    assert torch.allclose(got, want, rtol=1e-9, atol=1e-12 * float(want.abs().max()))
    if clip < 1:  # all clipped: the sum of unit-scaled rows has norm at most b·C
        assert float(torch.linalg.vector_norm(o.clipped_grad_sum(x, idx, clip))) <= (
            len(idx) * clip * (1 + 1e-9))


@pytest.mark.parametrize(("name", "overrides"), MODELS[:2])
def test_sum_and_norms_equal_the_per_sample_rows(name: str, overrides: dict) -> None:
    o = oracle(name, **overrides)
    idx = np.arange(5)
    total, norms = o.grad_sum_and_norms(o.x0, idx)
    want_total, want_norms = TorchOracle.grad_sum_and_norms(o, o.x0, idx)
    assert torch.allclose(total, want_total, rtol=1e-9, atol=1e-14)
    assert torch.allclose(norms, want_norms, rtol=1e-9)


def test_empty_batch_and_the_non_clipping_sum() -> None:
    o = oracle("digits_mlp")
    assert torch.count_nonzero(o.clipped_grad_sum(o.x0, np.array([], dtype=int), 1.0)) == 0
    idx = np.arange(6)
    assert torch.allclose(o.clipped_grad_sum(o.x0, idx, 1e9), o.grad(o.x0, idx) * len(idx))


def test_l2_and_unsupported_layers_keep_the_per_sample_path() -> None:
    assert not isinstance(oracle("digits_mlp", l2=1e-3), BookkeepingOracle)  # L2 per sample
    assert module_layers(nn.Sequential(nn.Embedding(9, 4, max_norm=1.0)),
                         [("0.weight", (9, 4), 36)]) is None  # renormalising embedding


def test_a_layer_broadcast_over_the_batch_is_refused() -> None:
    """An embedding applied to one row of ids shared by the batch has no per-sample
    output: book-keeping says so instead of mixing the samples' gradients."""
    emb, head = nn.Embedding(5, 3), nn.Linear(3, 2)
    module = nn.ModuleDict({"emb": emb, "head": head})
    layout = [(n, tuple(p.shape), p.numel()) for n, p in module.named_parameters()]
    layers = module_layers(module, layout)
    assert layers is not None

    def losses(x: object, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        shared = emb(torch.arange(4).unsqueeze(0))  # (1, 4, 3): positions, not per sample
        return head(shared.sum(1) + 0 * ids.unsqueeze(-1)).sum(-1)

    trace = module_tracer(module, layers, losses)
    with pytest.raises(RuntimeError, match="not batched per sample"):
        trace(torch.zeros(1), (torch.zeros(6), torch.zeros(6)))


def test_auto_chunk_follows_the_memory_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SADDLEBENCH_PSG_MEMORY", str(3 * 1000 * 8 * 50))
    assert auto_chunk(1000, 8) == 50
    assert auto_chunk(10**9, 8) == 1
    monkeypatch.setenv("SADDLEBENCH_PSG_MEMORY", str(10**9))
    instance = make_setup("cifar10_vgg", "torch", width=0.125).instance
    fresh = instance.oracle(get_backend(BackendSpec(name="torch", dtype="float64")))
    assert isinstance(fresh, TorchOracle) and fresh.chunk_size == 10**9 // (3 * fresh.d * 8)


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "overrides"), MODELS)
def test_bookkeeping_on_cuda_matches_cpu(name: str, overrides: dict) -> None:
    cpu = oracle(name, **overrides)
    gpu = make_setup(name, BackendSpec(name="torch", device="cuda", dtype="float64"),
                     **overrides).oracle
    idx = np.arange(8)
    want = cpu.clipped_grad_sum(cpu.x0, idx, 0.1)
    got = gpu.clipped_grad_sum(gpu.x0, idx, 0.1)
    assert torch.allclose(got.cpu(), want, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize(("name", "overrides"), MODELS)
def test_combined_group_means_equal_the_per_sample_rows(name: str, overrides: dict) -> None:
    """PriSMA's per-sample combination (each point's gradient clipped, their difference
    clipped again) from Grams equals the per-sample rows, over unequal groups."""
    o = oracle(name, **overrides)
    gen = torch.Generator().manual_seed(1)
    x = o.x0 + 0.01 * torch.randn(o.d, dtype=o.x0.dtype, generator=gen)
    x_prev = x + 0.05 * torch.randn(o.d, dtype=o.x0.dtype, generator=gen)
    seen: list[torch.Tensor] = []

    def combine(sq: torch.Tensor, sq_prev: torch.Tensor, inner: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        c, c_prev = 1 / torch.clamp(sq.sqrt() / 0.01, min=1), 1 / torch.clamp(sq_prev.sqrt(), min=1)
        diff = (c * c * sq + c_prev * c_prev * sq_prev - 2 * c * c_prev * inner).clamp(min=0).sqrt()
        s = 1 / torch.clamp(diff / 0.005, min=1)
        seen.append(diff)
        return c * (0.9 + 0.1 * s), -0.1 * s * c_prev

    groups = [np.array([0, 3, 4]), np.array([7]), np.array([9, 10, 11])]
    got = o.combined_group_means(x, x_prev, groups, combine)
    want = TorchOracle.combined_group_means(o, x, x_prev, groups, combine)
    assert torch.allclose(got, want, rtol=1e-8, atol=1e-12 * float(want.abs().max()))
    assert torch.allclose(seen[0], seen[1], rtol=1e-8)
