"""State: shapes, dtypes and its arrays being the state's own memory."""

import numpy as np
import pytest

import ternarycounter as tc


def test_execution_space():
    assert tc.execution_space in ("OpenMP", "Serial", "Threads", "HPX")
    assert tc.concurrency >= 1


def test_new_state_shapes_dtypes_and_values():
    state = tc.State(6, 20, 5)
    assert (state.out, state.in_, state.C) == (6, 20, 5)
    assert state.codes.shape == (6, 15) and state.codes.dtype == np.uint8
    assert state.scale.shape == (6,) and state.scale.dtype == np.float32
    assert state.v.shape == (6,) and state.v.dtype == np.float32
    assert state.codes.flags.c_contiguous
    np.testing.assert_array_equal(state.scale, np.ones(6, np.float32))
    np.testing.assert_array_equal(state.v, np.zeros(6, np.float32))
    np.testing.assert_array_equal(state.unpacked_codes(),
                                  np.full((6, 20), tc.encode(0, 0, 5), np.uint8))


@pytest.mark.parametrize("out, in_, C", [(4, 6, 8), (4, 8, 1), (4, 8, 12), (-1, 8, 8)])
def test_bad_shape_or_C_raises(out, in_, C):
    with pytest.raises(ValueError):
        tc.State(out, in_, C)


def test_arrays_are_the_states_memory(layer, rng):
    # The same memory on every access, not a copy per access.
    assert layer.codes.ctypes.data == layer.codes.ctypes.data
    assert layer.scale.ctypes.data == layer.scale.ctypes.data
    x = rng.standard_normal((3, 16)).astype(np.float32)
    y = tc.forward(layer, x)
    # Written through NumPy, seen by the library: y = scale * sum, the scale applied once.
    layer.scale[2] = 1.5
    y2 = tc.forward(layer, x)
    np.testing.assert_array_equal(y2[:, 2], y[:, 2] / np.float32(0.5) * np.float32(1.5))
    np.testing.assert_array_equal(np.delete(y2, 2, axis=1), np.delete(y, 2, axis=1))
    # Codes written through NumPy: every weight of row 0 t = 0 -> y[:, 0] = 0.
    layer.codes[0, :] = tc.State(1, 16, 8).codes[0, :]
    assert not np.any(tc.forward(layer, x)[:, 0])
    # Written by the library, seen through NumPy.
    before = layer.v.copy()
    tc.update_from_io(layer, x, rng.standard_normal((3, 12)).astype(np.float32), seed=3)
    assert not np.array_equal(layer.v, before)


def test_from_codes_round_trip(rng):
    C = 4
    codes = rng.integers(0, 3 * (2 * C - 1), size=(5, 8)).astype(np.uint8)
    scale = rng.random(5).astype(np.float32)
    v = rng.random(5).astype(np.float32)
    state = tc.State.from_codes(codes, scale, v, C)
    np.testing.assert_array_equal(state.unpacked_codes(), codes)
    np.testing.assert_array_equal(state.scale, scale)
    np.testing.assert_array_equal(state.v, v)
    codes[0, 0] = 3 * (2 * C - 1)
    with pytest.raises(ValueError, match="code"):
        tc.State.from_codes(codes, scale, v, C)


def test_codes_helpers_agree():
    for C in (2, 8, 11):
        for t in (-1, 0, 1):
            for c in range(-(C - 1), C):
                code = tc.encode(t, c, C)
                assert (tc.decode_ternary(code, C), tc.decode_counter(code, C)) == (t, c)
