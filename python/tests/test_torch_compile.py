# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""torch.compile of a model with TernaryLinear layers: it compiles (the layers run eagerly, a
graph break around each) and trains to the bits of the eager model, on the CPU and on CUDA."""
import pytest

torch = pytest.importorskip("torch")
if not hasattr(torch, "compile"):
    pytest.skip(f"torch {torch.__version__} has no torch.compile (2.0 and later)",
                allow_module_level=True)

from ternarycounter.torch import TernaryLinear  # noqa: E402

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def model_of(precision, device):
    torch.manual_seed(3)
    return torch.nn.Sequential(
        TernaryLinear(32, 64, precision=precision, lr=0.05), torch.nn.GELU(),
        torch.nn.LayerNorm(64), TernaryLinear(64, 8, precision=precision, lr=0.05)).to(device)


def train(model, device, steps=4):
    losses = []
    for step in range(steps):
        g = torch.Generator().manual_seed(100 + step)
        x = torch.randn(16, 32, generator=g).to(device)
        labels = torch.randint(0, 8, (16,), generator=g).to(device)
        loss = torch.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        losses.append(loss.item())
    return losses


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_compiled_model_trains_to_the_eager_bits(device, precision):
    eager = model_of(precision, device)
    compiled_module = model_of(precision, device)
    compiled = torch.compile(compiled_module)
    assert train(compiled, device) == train(eager, device)
    for a, b in zip(eager, compiled_module):
        if isinstance(a, TernaryLinear):
            assert int(a.steps) == 4
            for name in ("codes", "scale", "v"):
                assert torch.equal(getattr(a, name), getattr(b, name)), name
