"""Wrong dtype, layout, shape, writability, parameters or state: an exception naming the
argument, and the state left as it was."""

import numpy as np
import pytest

import ternarycounter as tc
from conftest import assert_state_equal, state_arrays


def good_io(rng):
    return (rng.standard_normal((4, 16)).astype(np.float32),
            rng.standard_normal((4, 12)).astype(np.float32))


@pytest.mark.parametrize("which", ["x", "grad_out"])
@pytest.mark.parametrize("bad, error, message", [
    (lambda a: a.astype(np.float64), TypeError, "float32"),
    (lambda a: np.asfortranarray(a), ValueError, "C-contiguous"),
    (lambda a: np.repeat(a, 2, axis=1)[:, ::2], ValueError, "C-contiguous"),
    (lambda a: a[:, :-4].copy(), ValueError, "shape"),
    (lambda a: a.reshape(-1), ValueError, "2-D"),
    (lambda a: a.tolist(), TypeError, "must be"),
])
def test_update_from_io_rejects_bad_arrays_before_changing_anything(layer, rng, which, bad, error,
                                                                    message):
    x, grad_out = good_io(rng)
    args = {"x": x, "grad_out": grad_out}
    args[which] = bad(args[which])
    before = state_arrays(layer)
    with pytest.raises(error, match=f"update_from_io: {which} .*{message}"):
        tc.update_from_io(layer, args["x"], args["grad_out"], seed=1)
    assert_state_equal(layer, before)


def test_mismatched_batch_rows(layer, rng):
    x, grad_out = good_io(rng)
    before = state_arrays(layer)
    with pytest.raises(ValueError, match="grad_out has shape"):
        tc.update_from_io(layer, x, grad_out[:3].copy())
    assert_state_equal(layer, before)


@pytest.mark.parametrize("params, field", [
    ({"lr": -1.0}, "lr"),
    ({"rms_beta": 1.5}, "rms_beta"),
    ({"rms_eps": 0.0}, "rms_eps"),
    ({"lr": float("nan")}, "lr"),
    ({"precision": "fp16"}, "precision"),
])
def test_bad_parameters_change_nothing(layer, rng, params, field):
    x, grad_out = good_io(rng)
    before = state_arrays(layer)
    with pytest.raises(ValueError, match=field):
        tc.update_from_io(layer, x, grad_out, **params)
    assert_state_equal(layer, before)


def test_dense_update_rejects_bad_gradient(layer, rng):
    before = state_arrays(layer)
    with pytest.raises(TypeError, match="update: grad_w must be float32"):
        tc.update(layer, rng.standard_normal((12, 16)))
    with pytest.raises(ValueError, match="update: grad_w has shape"):
        tc.update(layer, rng.standard_normal((16, 12)).astype(np.float32))
    assert_state_equal(layer, before)


def test_outputs_must_be_writable_float32_of_the_right_shape(layer, rng):
    x, _ = good_io(rng)
    y = np.zeros((4, 12), np.float32)
    y.setflags(write=False)
    with pytest.raises(ValueError, match="forward: y is read-only"):
        tc.forward(layer, x, y)
    with pytest.raises(ValueError, match="forward: y has shape"):
        tc.forward(layer, x, np.zeros((4, 13), np.float32))
    with pytest.raises(TypeError, match="backward_input: grad_x must be float32"):
        tc.backward_input(layer, np.zeros((4, 12), np.float32), np.zeros((4, 16), np.float64))


def test_state_argument_must_be_a_state(rng):
    x, _ = good_io(rng)
    with pytest.raises(TypeError, match="state must be a ternarycounter.State"):
        tc.forward(object(), x)


def test_outputs_must_not_share_memory_with_inputs(rng):
    square = tc.State(8, 8, 8)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    with pytest.raises(ValueError, match="forward: y shares memory with x"):
        tc.forward(square, x, x)
    with pytest.raises(ValueError, match="backward_input: grad_x shares memory with grad_out"):
        tc.backward_input(square, x, x)
