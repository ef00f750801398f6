"""Bit-identity with the C++ library: every conformance case (unit_tests/data/conformance)
run through update / update_from_io from Python gives its spec_ results bit for bit; the int8
cases (SPEC §6) also through forward and backward_input."""

import os

import numpy as np
import pytest

import ternarycounter as tc

DATA = os.environ.get("TERNARYCOUNTER_CONFORMANCE_DIR",
                      os.path.join(os.path.dirname(__file__), "..", "..", "unit_tests", "data",
                                   "conformance"))
CASES = sorted(name for name in os.listdir(DATA) if os.path.isfile(os.path.join(DATA, name,
                                                                                "case.txt")))


def read_case(folder):
    with open(os.path.join(folder, "case.txt")) as f:
        fields = dict(line.split() for line in f if line.strip())
    return fields


def array(folder, name, dtype, shape):
    return np.fromfile(os.path.join(folder, name), dtype=dtype).reshape(shape)


def test_there_are_cases_of_both_kinds():
    kinds = {read_case(os.path.join(DATA, name))["kind"] for name in CASES}
    assert kinds == {"dense", "from_io"}


@pytest.mark.parametrize("name", CASES)
def test_case(name):
    folder = os.path.join(DATA, name)
    case = read_case(folder)
    out, in_, M, C = (int(case[k]) for k in ("out", "in", "M", "C"))
    state = tc.State(out, in_, C)
    # Loaded through the state's own arrays.
    state.codes[...] = array(folder, "state_in.u8", np.uint8, state.codes.shape)
    state.scale[...] = array(folder, "scale_in.f32", "<f4", out)
    state.v[...] = array(folder, "v_in.f32", "<f4", out)
    params = dict(lr=float(case["lr"]), lr_scale=float(case["lr_scale"]),
                  rms_beta=float(case["rms_beta"]), rms_eps=float(case["rms_eps"]),
                  clip=float(case["clip"]), seed=int(case["seed"]),
                  lagged=bool(int(case["lagged"])))
    precision = case.get("precision", "fp32")
    if precision == "int8":
        x = array(folder, "x.f32", "<f4", (M, in_))
        grad_out = array(folder, "grad_out.f32", "<f4", (M, out))
        y = tc.forward(state, x, precision="int8")
        grad_x = tc.backward_input(state, grad_out, precision="int8",
                                   seed=int(case["product_seed"]))
        assert y.astype("<f4").tobytes() == open(os.path.join(folder, "spec_y_out.f32"),
                                                 "rb").read()
        assert grad_x.astype("<f4").tobytes() == open(os.path.join(folder, "spec_grad_x_out.f32"),
                                                      "rb").read()
    if case["kind"] == "dense":
        skipped = tc.update(state, array(folder, "grad_w.f32", "<f4", (out, in_)), **params)
    else:
        skipped = tc.update_from_io(state, array(folder, "x.f32", "<f4", (M, in_)),
                                    array(folder, "grad_out.f32", "<f4", (M, out)),
                                    precision=precision, **params)
    with open(os.path.join(folder, "spec_skipped.txt")) as f:
        assert skipped == int(f.read())
    assert state.unpacked_codes().tobytes() == open(os.path.join(folder, "spec_codes_out.u8"),
                                                    "rb").read()
    assert state.scale.astype("<f4").tobytes() == open(os.path.join(folder, "spec_scale_out.f32"),
                                                       "rb").read()
    assert state.v.astype("<f4").tobytes() == open(os.path.join(folder, "spec_v_out.f32"),
                                                   "rb").read()
