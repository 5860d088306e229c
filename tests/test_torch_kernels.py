"""The fused book-keeping kernels of problems/ghost.py equal materialised clipping: the patch
Gram without unfolding, the ghost and the per-sample-row path of every layer (forced), the
differences of two passes (one term where the input is shared; the MLP's two points in one
stacked pass), in float64 and float32, and jax's materialised clipping on the MLP."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from conftest import make_setup

torch = pytest.importorskip("torch")

from torch import Tensor, nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

from problems import ghost  # noqa: E402
from problems.backend import BackendSpec  # noqa: E402
from problems.ghost import BookkeepingOracle, module_layers  # noqa: E402
from problems.models.mlp import MLP  # noqa: E402
from problems.models.torch_module import TorchModel  # noqa: E402
from problems.oracles import TorchOracle  # noqa: E402

# conv, linear (VGG); conv without bias at stride 2, GroupNorm, shortcuts (ResNet); 5 × 5 and
# unpadded conv, GroupNorm (CNN); flat MLP (ghost only)
MODELS = [("cifar10_vgg", {"width": 0.125}), ("cifar10_resnet18", {"width": 0.0625}),
          ("digits_cnn", {"width": 0.25}), ("digits_mlp", {})]
IDX = np.array([0, 2, 3, 5, 8, 9])


def bookkeeping(name: str, overrides: dict, dtype: str = "float64") -> BookkeepingOracle:
    made = make_setup(name, BackendSpec(name="torch", dtype=dtype), **overrides).oracle
    assert isinstance(made, BookkeepingOracle)
    return made


def points(o: TorchOracle) -> tuple[Tensor, Tensor]:
    gen = torch.Generator().manual_seed(1)
    x = o.x0 + 0.01 * torch.randn(o.d, generator=gen).to(o.x0.dtype)
    return x, x + 0.05 * torch.randn(o.d, generator=gen).to(o.x0.dtype)


def unfolded(conv: nn.Conv2d, a: Tensor) -> Tensor:
    """The input patches of every output position, (b, L, C·k_h·k_w)."""
    return F.unfold(a, conv.kernel_size, dilation=conv.dilation,
                    padding=conv.padding,  # type: ignore[arg-type]
                    stride=conv.stride).transpose(1, 2)


@pytest.mark.parametrize("kw", [dict(kernel_size=3, padding=1),
                                dict(kernel_size=(3, 2), padding=(1, 0), stride=2),
                                dict(kernel_size=3, padding=2, dilation=2),
                                dict(kernel_size=1, stride=(2, 1))])
def test_patch_gram_equals_the_unfolded_patches(kw: dict) -> None:
    conv = nn.Conv2d(3, 4, **kw)
    gen = torch.Generator().manual_seed(0)
    first, second = (torch.randn(2, 3, 7, 6, dtype=torch.float64, generator=gen)
                     for _ in range(2))
    out = conv(first.float()).shape
    got = ghost._patch_gram(conv, first, second, (out[2], out[3]))
    assert torch.allclose(got, unfolded(conv, first) @ unfolded(conv, second).transpose(1, 2),
                          rtol=1e-12, atol=1e-12)


def forced(rows: bool) -> Callable[[ghost.Site, Tensor], bool]:
    """Materialise every layer that can be (rows), or only GroupNorm and the layers at more
    than 16 × 16 positions (where Grams are slow to test)."""
    def rule(site: ghost.Site, g: Tensor) -> bool:
        if site.kind == "scale":
            return True
        positions = g[0, 0].numel() if site.kind == "conv" else g.shape[1]
        return site.transposed and (rows or positions > 256)
    return rule


@pytest.mark.parametrize(("name", "overrides"), MODELS)
@pytest.mark.parametrize("rows", [True, False])
def test_every_layer_path_equals_materialised_clipping(name: str, overrides: dict, rows: bool,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    o = bookkeeping(name, overrides)
    monkeypatch.setattr(ghost, "_materialise", forced(rows))
    x, x_prev = points(o)
    pairs = [(o.clipped_grad_sum_and_norms(x, IDX, 0.05),
              TorchOracle.clipped_grad_sum_and_norms(o, x, IDX, 0.05)),
             (o.grad_sum_and_norms(x, IDX), TorchOracle.grad_sum_and_norms(o, x, IDX)),
             (o.clipped_grad_diff_sum_and_norms(x, x_prev, IDX, 0.01),
              TorchOracle.clipped_grad_diff_sum_and_norms(o, x, x_prev, IDX, 0.01))]
    for (total, norms), (want_total, want_norms) in pairs:
        assert torch.allclose(norms, want_norms, rtol=1e-9)
        assert torch.allclose(total, want_total, rtol=1e-9,
                              atol=1e-12 * float(want_total.abs().max()))


@pytest.mark.parametrize(("name", "overrides"), MODELS)
def test_float32_differences_equal_materialised_clipping(name: str, overrides: dict) -> None:
    o = bookkeeping(name, overrides, "float32")
    x, x_prev = points(o)
    total, norms = o.clipped_grad_diff_sum_and_norms(x, x_prev, IDX, 0.01)
    want_total, want_norms = TorchOracle.clipped_grad_diff_sum_and_norms(o, x, x_prev, IDX, 0.01)
    assert torch.allclose(norms, want_norms, rtol=1e-4)
    assert torch.allclose(total, want_total, rtol=1e-4, atol=1e-5 * float(want_total.abs().max()))


@pytest.mark.parametrize(("name", "overrides"), MODELS)
def test_a_difference_shares_the_first_layer_input(name: str, overrides: dict) -> None:
    o = bookkeeping(name, overrides)
    x, x_prev = points(o)
    terms = [len(layer.terms) for layer in o._layers(IDX, x, x_prev)]
    assert terms == [1] + [2] * (len(terms) - 1)  # the batch is the first layer's input
    assert [len(layer.terms) for layer in o._layers(IDX, x)] == [1] * len(terms)


def test_jax_materialised_clipping_equals_torch_bookkeeping() -> None:
    pytest.importorskip("jax")
    o = bookkeeping("digits_mlp", {})
    j = make_setup("digits_mlp", BackendSpec(name="jax", dtype="float64")).oracle
    x, x_prev = points(o)
    xj, xj_prev = (j.backend.asarray(v.numpy()) for v in (x, x_prev))
    for got, want in [(o.clipped_grad_sum(x, IDX, 0.05), j.clipped_grad_sum(xj, IDX, 0.05)),
                      (o.clipped_grad_diff_sum(x, x_prev, IDX, 0.01),
                       j.clipped_grad_diff_sum(xj, xj_prev, IDX, 0.01))]:
        np.testing.assert_allclose(got.numpy(), j.backend.to_numpy(want), rtol=1e-9,
                                   atol=1e-12 * float(np.abs(j.backend.to_numpy(want)).max()))


@pytest.mark.parametrize("kw", [dict(padding="same"), dict(padding=1, padding_mode="reflect"),
                                dict(padding=1, groups=2)])
def test_convolutions_book_keeping_cannot_follow_keep_the_per_sample_path(kw: dict) -> None:
    model = TorchModel(nn.Sequential(nn.Conv2d(2, 4, 3, **kw), nn.Flatten()), sample_ndim=3)
    assert module_layers(model.module, model._layout) is None
    plain = TorchModel(nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.Flatten()), 3)
    assert module_layers(plain.module, plain._layout) is not None


def test_mlp_logits_of_stacked_points_are_each_points_logits() -> None:
    mlp = MLP((5, 4, 3))
    rng = np.random.default_rng(0)
    points, features = rng.standard_normal((2, mlp.n_params)), rng.standard_normal((6, 5))
    stacked = mlp.logits(np, points, features)
    assert stacked.shape == (2, 6, 3)
    for point, logits in zip(points, stacked, strict=True):
        np.testing.assert_allclose(logits, mlp.logits(np, point, features), rtol=1e-13)
    np.testing.assert_allclose(mlp.logits(np, points[0], features[0]), stacked[0, 0], rtol=1e-13)
