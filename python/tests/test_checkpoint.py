"""save_layers / load_layers / read_checkpoint: the C++ library's safetensors checkpoints."""

import os

import numpy as np
import pytest

import ternarycounter as tc
from conftest import assert_state_equal, state_arrays

DATA = os.environ.get("TERNARYCOUNTER_CONFORMANCE_DIR",
                      os.path.join(os.path.dirname(__file__), "..", "..", "unit_tests", "data",
                                   "conformance"))
CORPUS = os.path.join(DATA, "..", "..", "..", "fuzz", "corpus", "checkpoint")


def trained_pair(rng):
    a, b = tc.State(8, 16, 6), tc.State(4, 8, 6)
    a.randomize(1, 0.25)
    b.randomize(2, 0.5)
    for state in (a, b):
        x = rng.standard_normal((5, state.in_)).astype(np.float32)
        g = rng.standard_normal((5, state.out)).astype(np.float32)
        tc.update_from_io(state, x, g, seed=9, lr=0.5)
    return a, b


def test_round_trip(tmp_path, rng):
    a, b = trained_pair(rng)
    path = tmp_path / "model.safetensors"
    tc.save_layers(path, {"layer1": a, "layer2": b}, step=42, metadata={"note": "python"})
    a2, b2 = tc.State(8, 16, 6), tc.State(4, 8, 6)
    step, metadata = tc.load_layers(path, {"layer1": a2, "layer2": b2})
    assert step == 42 and metadata == {"note": "python"}
    assert_state_equal(a2, state_arrays(a))
    assert_state_equal(b2, state_arrays(b))
    layers, step, _ = tc.read_checkpoint(path)
    assert sorted(layers) == ["layer1", "layer2"] and step == 42
    assert_state_equal(layers["layer2"], state_arrays(b))


def test_failed_load_changes_no_target(tmp_path, rng):
    a, b = trained_pair(rng)
    path = tmp_path / "model.safetensors"
    tc.save_layers(path, [("layer1", a), ("layer2", b)], step=1)
    good, wrong = tc.State(8, 16, 6), tc.State(5, 8, 6)
    before = state_arrays(good), state_arrays(wrong)
    with pytest.raises(tc.CheckpointError, match="layer2"):
        tc.load_layers(path, {"layer1": good, "layer2": wrong})
    with pytest.raises(tc.CheckpointError, match="C = "):
        tc.load_layers(path, {"layer1": tc.State(8, 16, 7)})
    with pytest.raises(tc.CheckpointError):
        tc.load_layers(path, {"layer3": good})
    assert_state_equal(good, before[0])
    assert_state_equal(wrong, before[1])


@pytest.mark.skipif(not os.path.isdir(CORPUS), reason="no fuzz/corpus/checkpoint in this tree")
def test_checkpoints_written_by_the_cpp_library(tmp_path):
    # The fuzzer's seeds: valid_* files written by the C++ library and broken edits of them.
    names = sorted(os.listdir(CORPUS))
    valid = [name for name in names if name.startswith("valid_")]
    assert "valid_two_layers" in valid
    for name in valid:
        layers, step, metadata = tc.read_checkpoint(os.path.join(CORPUS, name))
        # Written back from Python and read again: the same layers, step and metadata.
        path = tmp_path / name
        tc.save_layers(path, layers, step=step, metadata=metadata)
        again, step_again, metadata_again = tc.read_checkpoint(path)
        assert (sorted(again), step_again, metadata_again) == (sorted(layers), step, metadata)
        for layer, state in layers.items():
            assert (again[layer].out, again[layer].in_, again[layer].C) == (state.out, state.in_,
                                                                            state.C)
            assert_state_equal(again[layer], state_arrays(state))
    for name in names:
        if name not in valid:
            with pytest.raises(tc.CheckpointError, match=name):
                tc.read_checkpoint(os.path.join(CORPUS, name))
