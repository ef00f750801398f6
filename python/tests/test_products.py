"""forward and backward_input: the documented float32 order, checked bit for bit in NumPy; the
output arguments; int8."""

import numpy as np
import pytest

import ternarycounter as tc


def ternary_values(state):
    decode = np.vectorize(lambda code: tc.decode_ternary(int(code), state.C))
    return decode(state.unpacked_codes()).astype(np.float32)


def reference_forward(state, x):
    # acc = fma(x, t, acc) ascending in i: x * t is exact, so a float32 sum in that order.
    t = ternary_values(state)
    acc = np.zeros((x.shape[0], state.out), np.float32)
    for i in range(state.in_):
        acc = acc + x[:, i:i + 1] * t[:, i][None, :]
    return acc * state.scale[None, :]


def reference_backward_input(state, grad_out):
    # acc = fma(g, scale * t, acc) ascending in o; exact products when scale is a power of two.
    w = ternary_values(state) * state.scale[:, None]
    acc = np.zeros((grad_out.shape[0], state.in_), np.float32)
    for o in range(state.out):
        acc = acc + grad_out[:, o:o + 1] * w[o][None, :]
    return acc


def test_forward_matches_the_documented_order(layer, rng):
    layer.scale[:] = rng.random(12).astype(np.float32) + 0.25
    x = rng.standard_normal((7, 16)).astype(np.float32)
    y = tc.forward(layer, x)
    assert y.shape == (7, 12) and y.dtype == np.float32
    assert y.tobytes() == reference_forward(layer, x).tobytes()


def test_backward_input_matches_the_documented_order(layer, rng):
    layer.scale[:] = np.float32(2.0) ** rng.integers(-3, 3, 12).astype(np.float32)
    grad_out = rng.standard_normal((5, 12)).astype(np.float32)
    grad_x = tc.backward_input(layer, grad_out)
    assert grad_x.shape == (5, 16) and grad_x.dtype == np.float32
    assert grad_x.tobytes() == reference_backward_input(layer, grad_out).tobytes()


def test_outputs_are_written_in_place(layer, rng):
    x = rng.standard_normal((4, 16)).astype(np.float32)
    y = np.full((4, 12), np.nan, np.float32)
    assert tc.forward(layer, x, y) is y
    np.testing.assert_array_equal(y, tc.forward(layer, x))
    g = rng.standard_normal((4, 12)).astype(np.float32)
    grad_x = np.full((4, 16), np.nan, np.float32)
    assert tc.backward_input(layer, g, grad_x) is grad_x
    np.testing.assert_array_equal(grad_x, tc.backward_input(layer, g))


def test_int8_products(layer, rng):
    x = rng.standard_normal((6, 16)).astype(np.float32)
    y8 = tc.forward(layer, x, precision="int8")
    y32 = tc.forward(layer, x)
    # Another arithmetic (absmax int8 quantization of x), close to fp32's, and deterministic.
    assert y8.tobytes() != y32.tobytes()
    tolerance = 16 * np.abs(x).max() / 127 * 0.5 * np.float32(0.5)
    assert np.abs(y8 - y32).max() <= tolerance
    assert tc.forward(layer, x, precision="int8").tobytes() == y8.tobytes()
    g = rng.standard_normal((6, 12)).astype(np.float32)
    a = tc.backward_input(layer, g, precision="int8", seed=1)
    assert tc.backward_input(layer, g, precision="int8", seed=1).tobytes() == a.tobytes()
    assert a.tobytes() != tc.backward_input(layer, g).tobytes()
    with pytest.raises(ValueError, match="precision"):
        tc.forward(layer, x, precision="fp16")


def test_scratch_bytes_grow_after_an_int8_forward():
    # A fresh process holds no scratch; an int8 forward keeps at least its quantized x (64 x 512
    # int8) in host memory, which torch's counters do not see.
    import os
    import subprocess
    import sys
    script = """if True:
        import numpy as np
        import ternarycounter as tc
        before = tc.scratch_bytes("cpu")
        state = tc.State(8, 512, 8)
        state.randomize(1, 0.1)
        tc.forward(state, np.ones((64, 512), np.float32), precision="int8")
        every = tc.scratch_bytes()
        print(before, tc.scratch_bytes("cpu"), every, type(every).__name__)
        """
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    before, after, every, kind = result.stdout.split()
    assert kind == "int"
    assert int(before) == 0 and int(after) >= 64 * 512
    assert int(every) >= int(after)  # with a GPU's, where the build has one


def test_scratch_bytes_names_its_device():
    assert isinstance(tc.scratch_bytes("cpu"), int) and tc.scratch_bytes("cpu") >= 0
    if not tc._tc.cuda:
        assert tc.scratch_bytes("cuda") == tc.scratch_bytes("cuda:0") == tc.scratch_bytes(0) == 0
    with pytest.raises(ValueError, match="'cpu', 'cuda'"):
        tc.scratch_bytes("gpu")
    with pytest.raises(TypeError, match="str, an int or a torch.device"):
        tc.scratch_bytes(1.5)
