"""torch networks as flat-parameter problems (avdiukhin2024 §4/App. A; notes §5.3).

Per-sample gradients from the oracle (vmap over grad of the flat-vector loss) must equal a
plain loop of ``torch.autograd.grad`` over single-sample losses, in float64; the networks
must have the paper's / torchvision's parameter counts; pretrained ResNet weights must map
BN → GN; problems with data files are built on fake data patched over their loaders.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import fake_images, fake_text, make_instance
from torch.nn import functional

from algorithms import PrivacyTarget
from bench.runner import run_one
from bench.spec import EvalSpec, RunSpec, component
from problems import get_problem
from problems.backend import BackendSpec, MissingExtraError, get_backend
from problems.data.common import DataMissingError, Split
from problems.models import cnn, resnet
from problems.models.bert import BertClassifier, char_vocab
from problems.models.cnn import appendix_cnn, feature_size
from problems.models.resnet import ResNet18, init_resnet
from problems.models.torch_module import TorchModel
from problems.supervised import ClassificationInstance, EncodedSplit, classification_instance

F64 = get_backend(BackendSpec(name="torch", dtype="float64"))
TINY_BERT = {"vocab_size": len(char_vocab()), "hidden_size": 16, "num_hidden_layers": 2,
             "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 16}


def random_images(n: int, channels: int = 3, size: int = 32, classes: int = 10) -> Split:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2 * n, channels, size, size)).astype(np.float32)
    y = rng.integers(0, classes, 2 * n)
    return Split(x[:n], y[:n], x[n:], y[n:], classes)


def tiny_bert() -> BertClassifier:
    return BertClassifier(config=TINY_BERT, vocab=char_vocab(), max_length=16)


def bert_instance(sentences: Sequence[str] = tuple(fake_text().train_sentences[:6])
                  ) -> ClassificationInstance:
    model = tiny_bert()
    y = np.arange(len(sentences)) % 2
    encoded = model.encode(sentences)
    return classification_instance("bert", EncodedSplit(encoded, y, encoded, y, 2), model, 0)


def loop_grads(inst: ClassificationInstance, idx: np.ndarray) -> np.ndarray:
    """∇ of each sample's cross-entropy, one ``torch.autograd.grad`` per sample."""
    assert isinstance(inst.model, TorchModel) and inst.split is not None
    module = inst.model.module
    x = torch.tensor(inst.x0, dtype=torch.float64, requires_grad=True)
    x_train = inst.split.x_train
    features = x_train if isinstance(x_train, tuple) else (x_train,)
    rows = []
    for i in idx:
        params, offset = {}, 0
        for name, p in module.named_parameters():
            params[name] = x[offset : offset + p.numel()].reshape(p.shape)
            offset += p.numel()
        inputs = tuple(torch.as_tensor(f[i : i + 1]) if f.dtype.kind == "i"
                       else torch.as_tensor(f[i : i + 1], dtype=torch.float64) for f in features)
        state = {**params, **dict(module.named_buffers())}
        logits = torch.func.functional_call(module, state, inputs)
        loss = functional.cross_entropy(logits, torch.as_tensor(inst.split.y_train[i : i + 1]))
        rows.append(torch.autograd.grad(loss, x)[0].numpy())
    return np.stack(rows)


def assert_per_sample_grads_match(inst: ClassificationInstance, idx: np.ndarray) -> None:
    oracle = inst.oracle(F64)
    psg = F64.to_numpy(oracle.per_sample_grads(oracle.x0, idx))
    assert psg.shape == (len(idx), inst.d)
    ref = loop_grads(inst, idx)
    assert np.abs(ref).max() > 0
    np.testing.assert_allclose(psg, ref, rtol=1e-9, atol=1e-12)


# -- per-sample gradients = loop of autograd.grad ---------------------------------------

def test_per_sample_grads_digits_cnn() -> None:
    inst = make_instance("digits_cnn")
    assert isinstance(inst, ClassificationInstance)
    assert_per_sample_grads_match(inst, np.array([0, 5, 17]))


def test_per_sample_grads_appendix_cnn() -> None:
    model = TorchModel(appendix_cnn(width=1 / 16), sample_ndim=3)
    assert_per_sample_grads_match(classification_instance("cnn", random_images(3), model, 0),
                                  np.arange(3))


@pytest.mark.parametrize(("stem", "size"), [("cifar", 32), ("imagenet", 64)])
def test_per_sample_grads_resnet18(stem: str, size: int) -> None:
    # (the ImageNet stem leaves 1x1 maps after layer4 at 32x32: one value per narrow group)
    model = TorchModel(ResNet18(10, width=1 / 16, stem=stem), sample_ndim=3, reinit=init_resnet)
    split = random_images(3, size=size)
    assert_per_sample_grads_match(classification_instance("rn", split, model, 0), np.arange(3))


def test_per_sample_grads_bert() -> None:
    assert_per_sample_grads_match(bert_instance(), np.array([0, 3, 4]))


@pytest.mark.parametrize("name", ["digits_cnn", "bert"])
def test_hvp_matches_finite_differences(name: str) -> None:
    """Forward-over-reverse HVPs (for λ_min) through functional_call (central differences)."""
    inst = make_instance("digits_cnn") if name == "digits_cnn" else bert_instance()
    oracle = inst.oracle(F64)
    x, idx = oracle.x0, np.arange(6)
    v = torch.as_tensor(np.random.default_rng(0).standard_normal(inst.d))
    v = v / v.norm()
    fd = (oracle.grad(x + 1e-6 * v, idx) - oracle.grad(x - 1e-6 * v, idx)) / 2e-6
    torch.testing.assert_close(oracle.hvp(x, v, idx), fd, rtol=1e-6, atol=1e-8)


# -- architectures ------------------------------------------------------------------------

def n_params(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_appendix_cnn_matches_notes_table() -> None:
    """Shapes and trainable parameters layer by layer, notes §5.3 (GN affine = BN affine)."""
    net = appendix_cnn()
    shapes = [(64, 32, 32), (128, 16, 16), (128, 16, 16), (256, 16, 16), (256, 8, 8),
              (256, 8, 8), (128, 6, 6), (128, 1, 1), (128,), (10,), (10,)]
    params = [1_728 + 128, 204_800 + 256, 2 * 147_456 + 2 * 256, 294_912 + 512, 0,
              2 * 589_824 + 2 * 512, 294_912 + 256, 0, 0, 1_280, 0]
    h = torch.zeros(1, 3, 32, 32)
    with torch.no_grad():
        for layer, shape, count in zip(net, shapes, params, strict=True):
            h = layer(h)
            assert tuple(h.shape[1:]) == shape, layer
            assert n_params(layer) == count, layer
    assert TorchModel(net, sample_ndim=3).n_params == 2_274_880
    assert n_params(appendix_cnn(norm="none")) == 2_274_880 - 2_688
    assert not any(isinstance(m, torch.nn.Conv2d) and m.bias is not None for m in net.modules())


def test_cnn_small_inputs() -> None:
    assert feature_size(32) == 6 and feature_size(8, stride=1) == 2
    with pytest.raises(ValueError, match="stride=1"):
        appendix_cnn(1, 10, input_size=8)
    net = appendix_cnn(1, 10, width=0.25, stride=1, input_size=8)
    assert net(torch.zeros(2, 1, 8, 8)).shape == (2, 10)


def test_resnet18_parameter_counts() -> None:
    assert n_params(ResNet18(10)) == 11_173_962      # CIFAR stem, 10 classes
    assert n_params(ResNet18(1000, stem="imagenet")) == 11_689_512  # = torchvision resnet18
    assert not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
                   for m in ResNet18(10).modules())


def test_norm_constants_match_models() -> None:
    from problems import vision

    assert vision.NORMS == cnn.NORMS and vision.STEMS == resnet.STEMS


# -- pretrained ResNet-18 -----------------------------------------------------------------

def torchvision_keys() -> list[str]:
    """The state_dict keys of torchvision's resnet18 (BatchNorm, ImageNet stem)."""
    def bn(name: str) -> list[str]:
        return [f"{name}.{k}" for k in ("weight", "bias", "running_mean", "running_var",
                                         "num_batches_tracked")]

    keys = ["conv1.weight", *bn("bn1")]
    for layer in range(1, 5):
        for block in range(2):
            p = f"layer{layer}.{block}."
            keys += [p + "conv1.weight", *bn(p + "bn1"), p + "conv2.weight", *bn(p + "bn2")]
            if layer > 1 and block == 0:
                keys += [p + "downsample.0.weight", *bn(p + "downsample.1")]
    return [*keys, "fc.weight", "fc.bias"]


def fake_torchvision_file(path: Path, width: float = 1 / 16) -> dict[str, torch.Tensor]:
    """A torchvision-layout resnet18 state_dict (random values) saved at ``path``."""
    shapes = {k: v.shape for k, v in ResNet18(1000, width=width, stem="imagenet")
              .state_dict().items()}
    gen = torch.Generator().manual_seed(3)
    state = {}
    for key in torchvision_keys():
        module, leaf = key.rsplit(".", 1)
        if leaf == "num_batches_tracked":
            state[key] = torch.tensor(100)
        else:
            shape = shapes[f"{module}.weight"] if leaf.startswith("running") else shapes[key]
            state[key] = torch.randn(shape, generator=gen).abs()
    assert len(state) == 122
    torch.save(state, path)
    return state


def test_load_pretrained_maps_bn_to_gn(tmp_path: Path) -> None:
    saved = fake_torchvision_file(tmp_path / "r18.pth")
    net = ResNet18(7, width=1 / 16, stem="imagenet")
    net.load_pretrained(tmp_path / "r18.pth")
    got = net.state_dict()
    for key in ("conv1.weight", "layer3.1.conv2.weight", "layer2.0.downsample.0.weight"):
        torch.testing.assert_close(got[key], saved[key], rtol=0, atol=0)
    for key in ("bn1", "layer4.1.bn2", "layer4.0.downsample.1"):
        assert isinstance(net.get_submodule(key), torch.nn.GroupNorm)
        for leaf in ("weight", "bias"):
            torch.testing.assert_close(got[f"{key}.{leaf}"], saved[f"{key}.{leaf}"], rtol=0, atol=0)
    assert not any("running" in k for k in got)
    assert net.fc.weight.shape == (7, 32) and net.fc.bias.shape == (7,)


def test_load_pretrained_errors(tmp_path: Path) -> None:
    saved = fake_torchvision_file(tmp_path / "ok.pth")
    broken = {k: v for k, v in saved.items() if k != "layer3.1.conv2.weight"}
    broken["layer9.conv.weight"] = torch.zeros(1)
    torch.save(broken, tmp_path / "broken.pth")
    net = ResNet18(7, width=1 / 16, stem="imagenet")
    with pytest.raises(ValueError, match=r"missing keys \['layer3.1.conv2.weight'\], "
                                         r"unexpected keys \['layer9.conv.weight'\]"):
        net.load_pretrained(tmp_path / "broken.pth")
    with pytest.raises(ValueError, match="stem='imagenet'"):
        ResNet18(7, width=1 / 16).load_pretrained(tmp_path / "ok.pth")
    with pytest.raises(FileNotFoundError, match=r"nope\.pth"):
        net.load_pretrained(tmp_path / "nope.pth")


# -- TorchModel ---------------------------------------------------------------------------

def test_torch_model_init_is_seeded_and_private() -> None:
    model = TorchModel(appendix_cnn(width=1 / 16), sample_ndim=3)
    state = torch.get_rng_state()
    a = model.init(np.random.default_rng(0))
    assert torch.equal(torch.get_rng_state(), state)  # the global generator is untouched
    model.logits(None, torch.as_tensor(a), torch.zeros(1, 3, 32, 32, dtype=torch.float64))
    np.testing.assert_array_equal(model.init(np.random.default_rng(0)), a)  # after float64 use
    assert not np.array_equal(model.init(np.random.default_rng(1)), a)
    assert a.shape == (model.n_params,) and a.dtype == np.float64


def test_torch_model_single_sample_and_batch_agree() -> None:
    model = TorchModel(appendix_cnn(width=1 / 16), sample_ndim=3)
    x = torch.as_tensor(model.init(np.random.default_rng(0)), dtype=torch.float32)
    images = torch.as_tensor(random_images(3).x_train)
    batch = model.logits(None, x, images)
    one = model.logits(None, x, images[1])
    assert batch.shape == (3, 10) and one.shape == (10,)
    torch.testing.assert_close(one, batch[1])
    assert model.unflatten(x)["0.0.weight"].data_ptr() == x.data_ptr()  # views, no copies


def test_torch_model_refuses_batchnorm() -> None:
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2))
    with pytest.raises(ValueError, match="GroupNorm"):
        TorchModel(net, sample_ndim=3)


# -- BERT ---------------------------------------------------------------------------------

def test_bert_ignores_padding_and_is_deterministic() -> None:
    model = tiny_bert()
    x = torch.as_tensor(model.init(np.random.default_rng(0)), dtype=torch.float64)
    ids, mask = (torch.as_tensor(a) for a in model.encode(["the cat sat.", "a dog ran far."]))
    padded = ids.masked_fill(mask == 0, 7)  # change every padded token
    out = model.logits(None, x, (ids, mask))
    torch.testing.assert_close(model.logits(None, x, (padded, mask)), out, rtol=0, atol=1e-12)
    assert torch.equal(model.logits(None, x, (ids, mask)), out)
    assert ids.shape == (2, 16) and int(mask[0].sum()) < 16


def test_bert_from_local_directory(tmp_path: Path) -> None:
    import transformers

    config = transformers.BertConfig(**TINY_BERT)
    base = transformers.BertModel(config)  # what bert-base-uncased's checkpoint holds
    base.save_pretrained(tmp_path)
    transformers.BertTokenizer(vocab={t: i for i, t in enumerate(char_vocab())}
                               ).save_pretrained(tmp_path)
    model = BertClassifier(str(tmp_path), max_length=12, num_labels=3)
    assert model.n_params == n_params(base) + 3 * 16 + 3
    x0, x1 = (model.init(np.random.default_rng(s)) for s in (0, 1))
    encoder = torch.cat([p.detach().reshape(-1) for p in base.parameters()]).numpy()
    np.testing.assert_array_equal(x0[: encoder.size], encoder)  # pretrained weights kept
    assert not np.array_equal(x0[encoder.size :], x1[encoder.size :])  # fresh head per seed
    assert model.encode(["hello"])[0].shape == (1, 12)
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        BertClassifier(str(tmp_path / "absent"))


def test_bert_needs_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(MissingExtraError, match=r"saddlebench\[nlp\]"):
        tiny_bert()


# -- problems -----------------------------------------------------------------------------

def test_digits_cnn_through_the_runner() -> None:
    spec = RunSpec(
        problem=component("problem", "digits_cnn", {"width": 0.125}, "test"),
        algorithm=component("algorithm", "dp_sgd",
                            {"steps": 3, "batch_size": 32, "lr": 0.1, "clip": 1.0}, "test"),
        privacy=PrivacyTarget(epsilon=2.0, delta=1e-5),
        backend=BackendSpec(name="torch", dtype="float32"),
        seed=0,
        eval=EvalSpec(points=2, metrics=("loss", "grad_norm", "test", "train")),
    )
    record = run_one(spec)
    assert record.status == "done", record.error
    final = record.rows[-1]
    assert final["step"] == 3
    for key in ("loss", "grad_norm", "test_loss", "test_acc", "train_acc"):
        assert math.isfinite(final[key]), key
    assert 0 <= final["test_acc"] <= 1


def test_cifar_problems_normalise_and_subsample(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("problems.vision.load_images", fake_images)
    cls = get_problem("cifar10_cnn")
    raw = cls(cls.Params(width=1 / 16, n_train=20, n_test=10, normalize="none")).build(0)
    norm = cls(cls.Params(width=1 / 16, n_train=20, n_test=10)).build(0)
    assert (raw.n, norm.n, norm.constants["n_test"]) == (20, 20, 10)
    assert isinstance(raw.split, Split) and isinstance(norm.split, Split)
    mean, std = (np.array(v, np.float32)[:, None, None] for v in
                 ((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)))
    np.testing.assert_allclose(norm.split.x_train, (raw.split.x_train - mean) / std, rtol=1e-5)
    assert norm.split.x_train.dtype == np.float32
    assert len(set(raw.split.y_train.tolist())) == 10  # stratified subset keeps every class


def test_cifar100_pretrained_problem(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr("problems.vision.load_images", fake_images)
    saved = fake_torchvision_file(tmp_path / "r18.pth")
    cls = get_problem("cifar100_resnet18")
    params = cls.Params(width=1 / 16, weights=str(tmp_path / "r18.pth"))
    a, b = (cls(params).build(seed) for seed in (0, 1))
    assert isinstance(a.model, TorchModel) and a.constants["classes"] == 100
    conv1 = saved["conv1.weight"]
    assert a.model.module.conv1.kernel_size == (7, 7)  # stem defaults to imagenet
    np.testing.assert_array_equal(a.x0[: conv1.numel()], conv1.numpy().ravel())
    head = 100 * 32 + 100
    np.testing.assert_array_equal(a.x0[:-head], b.x0[:-head])
    assert not np.array_equal(a.x0[-head:], b.x0[-head:])


def test_cola_bert_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("problems.text.load_text", fake_text)
    cls = get_problem("cola_bert")
    inst = cls(cls.Params(max_length=16, n_train=10, n_test=4)).build(0)
    assert isinstance(inst, ClassificationInstance) and isinstance(inst.split, EncodedSplit)
    assert (inst.n, inst.constants["n_test"]) == (10, 4)
    ids, mask = inst.split.x_train
    assert ids.shape == mask.shape == (10, 16) and ids.dtype == np.int64
    oracle = inst.oracle(F64)
    assert oracle.per_sample_grads(oracle.x0, np.arange(3)).shape == (3, inst.d)
    assert set(inst.evaluate_test(F64, oracle.x0)) == {"test_loss", "test_acc"}


@pytest.mark.parametrize(("name", "params"), [
    ("cifar10_cnn", {}), ("cifar10_resnet18", {}), ("cifar100_resnet18", {}), ("cola_bert", {})])
def test_missing_data_names_the_files(name: str, params: dict, tmp_path: Path) -> None:
    cls = get_problem(name)
    with pytest.raises(DataMissingError, match=re.escape(str(tmp_path))):
        cls(cls.Params(data_dir=str(tmp_path), **params)).build(0)


@pytest.mark.parametrize(("name", "bad"), [
    ("digits_cnn", {"width": 0.0}), ("digits_cnn", {"norm": "batch"}),
    ("cifar10_cnn", {"n_train": 0}), ("cifar10_cnn", {"normalize": "zscore"}),
    ("cifar10_resnet18", {"stem": "tiny"}), ("cola_bert", {"max_length": 1}),
    ("cola_bert", {"chunk_size": 0})])
def test_bad_params_are_refused(name: str, bad: dict) -> None:
    cls = get_problem(name)
    with pytest.raises(ValueError):
        cls.Params(**bad)
