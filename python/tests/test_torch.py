"""PyTorch: CPU tensors in the functional calls (zero-copy, checked) and the TernaryLinear layer.
Skipped, with the reason, where PyTorch is not installed (Debian: python3-torch)."""

import numpy as np
import pytest

import ternarycounter as tc
from conftest import assert_state_equal, state_arrays

torch = pytest.importorskip("torch", reason="PyTorch is not installed (Debian: python3-torch)")
from ternarycounter.torch import TernaryLinear  # noqa: E402


def test_tensors_are_used_in_place(layer):
    x = torch.randn(3, 16, generator=torch.Generator().manual_seed(0))
    y = torch.full((3, 12), float("nan"))
    assert tc.forward(layer, x, y) is y
    np.testing.assert_array_equal(y.numpy(), tc.forward(layer, x.numpy()))
    # A tensor that requires grad is read through its memory as well.
    assert tc.forward(layer, x.requires_grad_()).shape == (3, 12)
    # The state's arrays as tensors share its memory.
    scale = torch.from_numpy(layer.scale)
    scale[0] = 7.0
    assert layer.scale[0] == 7.0


@pytest.mark.parametrize("bad, error, message", [
    (lambda t: t.double(), TypeError, "float32"),
    (lambda t: t.half(), TypeError, "float32"),
    (lambda t: t.t().contiguous().t(), ValueError, "C-contiguous"),
    (lambda t: t.to("meta"), ValueError, "device"),
])
def test_bad_tensors_raise_and_change_nothing(layer, bad, error, message):
    x, g = torch.randn(4, 16), torch.randn(4, 12)
    before = state_arrays(layer)
    with pytest.raises(error, match=f"update_from_io: x .*{message}"):
        tc.update_from_io(layer, bad(x), g)
    assert_state_equal(layer, before)


def test_dlpack_producers(layer):
    class OnDevice:
        def __dlpack__(self, stream=None):
            raise AssertionError("not to be read")

        def __dlpack_device__(self):
            return (2, 0)  # kDLCUDA

    with pytest.raises(ValueError, match="forward: x is on DLPack device type 2"):
        tc.forward(layer, OnDevice())

    class HostProducer:
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, stream=None):
            return self.array.__dlpack__()

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    x = np.ones((2, 16), np.float32)
    np.testing.assert_array_equal(tc.forward(layer, HostProducer(x)), tc.forward(layer, x))


def reference_step(layer, x, grad_y):
    """What one training step of `layer` must do, through the functional calls on a copy."""
    copy = layer.to_state()
    seed = tc.step_seed(layer.seed, layer.step)
    y = tc.forward(copy, x.numpy(), precision=layer.precision)
    grad_x = tc.backward_input(copy, grad_y.numpy(), seed=seed, precision=layer.precision)
    tc.update_from_io(copy, x.numpy(), grad_y.numpy(), seed=seed, **layer.update_params())
    return y, grad_x, copy


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_layer_step_is_forward_backward_input_and_update_from_io(precision):
    layer = TernaryLinear(16, 8, C=6, lr=0.3, seed=11, init_seed=2, precision=precision)
    # No float weights: the one Parameter is the zero-size update trigger.
    assert [p.numel() for p in layer.parameters()] == [0]
    x = torch.randn(5, 16, generator=torch.Generator().manual_seed(1)).requires_grad_()
    grad_y = torch.randn(5, 8, generator=torch.Generator().manual_seed(2))
    y_ref, grad_x_ref, state_ref = reference_step(layer, x.detach(), grad_y)
    y = layer(x)
    assert y.detach().numpy().tobytes() == y_ref.tobytes()
    y.backward(grad_y)
    assert x.grad.numpy().tobytes() == grad_x_ref.tobytes()
    assert layer.step == 1
    assert_state_equal(layer.to_state(), state_arrays(state_ref))
    # No gradient of [out, in] anywhere.
    assert all(p.grad is None or p.grad.numel() == 0 for p in layer.parameters())


def test_evaluation_does_not_update():
    layer = TernaryLinear(8, 4)
    before = state_arrays(layer.to_state())
    with torch.no_grad():
        layer(torch.randn(3, 8))
    layer(torch.randn(3, 8))  # no backward: no step
    assert_state_equal(layer.to_state(), before)
    assert layer.step == 0


def test_layer_rejects_bad_input_and_stays_unchanged():
    layer = TernaryLinear(8, 4, init_seed=1)
    before = state_arrays(layer.to_state())
    with pytest.raises(TypeError, match="float32"):
        layer(torch.randn(2, 8, dtype=torch.float64))
    with pytest.raises(ValueError, match="shape"):
        layer(torch.randn(2, 9))
    with pytest.raises(ValueError, match="x is on meta"):
        layer(torch.randn(2, 8).to("meta"))
    with pytest.raises(ValueError, match="lr"):
        TernaryLinear(8, 4, lr=-1.0)
    assert_state_equal(layer.to_state(), before)


def test_learns_in_an_ordinary_training_loop():
    # Two classes of Gaussian blobs; ternary layers with ReLU and torch's cross-entropy.
    g = torch.Generator().manual_seed(0)
    centers = torch.randn(2, 32, generator=g)
    labels = torch.randint(0, 2, (512,), generator=g)
    x = centers[labels] + 0.5 * torch.randn(512, 32, generator=g)
    model = torch.nn.Sequential(TernaryLinear(32, 16, lr=0.01, lr_scale=0.0, init_seed=1),
                                torch.nn.ReLU(),
                                TernaryLinear(16, 2, lr=0.01, lr_scale=0.0, init_seed=2))

    def accuracy():
        with torch.no_grad():
            return (model(x).argmax(1) == labels).float().mean().item()

    assert accuracy() < 0.9
    for _ in range(3):
        for batch in range(0, 512, 64):
            loss = torch.nn.functional.cross_entropy(model(x[batch:batch + 64]),
                                                     labels[batch:batch + 64])
            loss.backward()
    assert accuracy() > 0.95
