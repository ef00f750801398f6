"""Shared helpers of the package's tests."""

import numpy as np
import pytest

import ternarycounter as tc


def state_arrays(state):
    """Copies of a State's codes, scale and v (to compare before and after a call)."""
    return state.codes.copy(), state.scale.copy(), state.v.copy()


def assert_state_equal(state, arrays):
    codes, scale, v = arrays
    np.testing.assert_array_equal(state.codes, codes)
    assert state.scale.tobytes() == scale.tobytes()
    assert state.v.tobytes() == v.tobytes()


@pytest.fixture
def layer():
    """A 12 x 16 layer (C = 8) with drawn ternary values, scale 0.5 and v 0."""
    state = tc.State(12, 16, 8)
    state.randomize(seed=5, init_scale=0.5)
    return state


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
