"""python/examples/fashion_mnist.py against the C++ main job (ternary-counter-train) on a small
slice of Fashion-MNIST: the same epoch and final: lines bit for bit, and checkpoints that either
program resumes."""

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch", reason="PyTorch is not installed (Debian: python3-torch)")

TRAIN = os.environ.get("TERNARYCOUNTER_TRAIN", "")
DATA = "/usr/share/datasets/fashion-mnist"
EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "fashion_mnist.py")
SMALL = ["--train-limit", "1024", "--test-limit", "512", "--epochs", "2", "--seed", "3"]

pytestmark = [
    pytest.mark.skipif(not os.path.isfile(TRAIN),
                       reason="TERNARYCOUNTER_TRAIN names no ternary-counter-train (ctest sets it)"),
    pytest.mark.skipif(not os.path.isdir(DATA), reason=f"no Fashion-MNIST in {DATA}"),
]


def run(command):
    env = dict(os.environ, OMP_PROC_BIND="false")
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def results(output):
    """The epoch and final: lines without their timings."""
    lines = [line for line in output.splitlines() if re.match(r"(final: )?epoch=", line)]
    return [re.sub(r" (samples/s|seconds)=\S+", "", line) for line in lines]


def cpp(*args):
    return results(run([TRAIN, "--dataset", "fashion-mnist", *args]))


def python(*args):
    return results(run([sys.executable, EXAMPLE, *args]))


def test_lines_are_the_cpp_jobs():
    expected = cpp(*SMALL)
    assert len(expected) == 3
    assert python(*SMALL) == expected


def test_torch_loss_runs_the_same_recipe():
    lines = python(*SMALL, "--torch-loss")
    assert len(lines) == 3 and lines[-1].startswith("final: epoch=2 ")


def test_checkpoints_resume_across_the_two_programs(tmp_path):
    expected = cpp(*SMALL)
    from_cpp, from_python = tmp_path / "cpp.safetensors", tmp_path / "python.safetensors"
    assert cpp(*SMALL, "--stop-after", "1", "--save", str(from_cpp))[0] == expected[0]
    assert python("--resume", str(from_cpp), "--test-limit", "512") == expected[1:]
    assert python(*SMALL, "--stop-after", "1", "--save", str(from_python))[0] == expected[0]
    assert cpp("--resume", str(from_python), "--test-limit", "512") == expected[1:]
