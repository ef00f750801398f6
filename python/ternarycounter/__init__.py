"""TernaryCounter from Python: ternary layers trained by integer counters, the same bits as the
C++ library (this package calls it; it links the same TernaryCounter::TernaryCounter target).

The calls mirror the C++ API on the host (Kokkos' DefaultHostExecutionSpace of the build, e.g.
OpenMP): ``State(out, in_, C)`` is a layer's PackedState, ``forward``, ``backward_input``,
``update``, ``update_from_io`` and ``save_layers``/``load_layers`` (the same safetensors
checkpoints as the C++ tools).

Arrays are taken without a copy: NumPy float32 C-contiguous arrays, PyTorch CPU float32
contiguous tensors (their memory, through ``Tensor.numpy()``) and any other CPU ``__dlpack__``
producer (``numpy.from_dlpack``). Another dtype, a non-contiguous array, a wrong shape or a
non-CPU device raises TypeError/ValueError naming the argument, before anything changes.
``State.codes``, ``.scale`` and ``.v`` are the state's own memory as NumPy arrays.

Kokkos is initialized when the package is imported (unless the process already did) and
finalized at interpreter exit; ``execution_space`` and ``concurrency`` say where the calls run
and on how many threads (OMP_NUM_THREADS or KOKKOS_NUM_THREADS when set, else every logical
CPU, whatever an earlier ``import torch`` set). The extension module is built with pybind11: Debian packages it
(pybind11-dev), so the package builds from the distribution's packages without pip.
"""

import os as _os
import sys as _sys
import warnings as _warnings

import numpy as _np


def _openmp_defaults():
    """OpenMP settings for a process where torch's threads and the library's share the cores,
    set in the environment before the extension loads the OpenMP runtime (which reads them
    once), and only where the user has not set them:

    - OMP_PROC_BIND: ``false`` (``true`` when OMP_PLACES is set), what the runtime does when it
      is unset; set, Kokkos does not print its 4-line warning about it;
    - OMP_WAIT_POLICY: ``passive``, unless torch was imported first (its OpenMP runtime, the
      same one, has read the environment already): threads that spin after a parallel region
      starve the other pool (training steps several times slower on few cores).

    Returns whether the runtime runs with an active wait policy the package did not choose."""
    if "OMP_PROC_BIND" not in _os.environ:
        _os.environ["OMP_PROC_BIND"] = "true" if "OMP_PLACES" in _os.environ else "false"
    if "OMP_WAIT_POLICY" in _os.environ:
        return False
    if "torch" in _sys.modules:
        return True
    _os.environ["OMP_WAIT_POLICY"] = "passive"
    return False


_SPINNING = _openmp_defaults()

from . import _ternarycounter as _tc  # noqa: E402
from ._ternarycounter import (CheckpointError, State, concurrency, decode_counter,  # noqa: E402
                              decode_ternary, encode, execution_space, hash_u32, step_seed)

if _SPINNING and execution_space == "OpenMP" and concurrency > 1:
    _warnings.warn(
        "ternarycounter: torch was imported before ternarycounter without OMP_WAIT_POLICY, so "
        "OpenMP threads spin after each parallel region and torch's and the library's threads "
        "slow each other down (several times on few cores); set OMP_WAIT_POLICY=passive in the "
        "environment, or import ternarycounter before torch", RuntimeWarning, stacklevel=2)

__all__ = [
    "State",
    "CheckpointError",
    "forward",
    "backward_input",
    "update",
    "update_from_io",
    "save_layers",
    "load_layers",
    "read_checkpoint",
    "as_array",
    "softmax_cross_entropy",
    "encode",
    "decode_ternary",
    "decode_counter",
    "hash_u32",
    "step_seed",
    "execution_space",
    "concurrency",
    "scratch_bytes",
]

# DLPack's device type of host memory (kDLCPU).
_DLPACK_CPU = 1


def as_array(obj, call, name):
    """``obj`` as a NumPy array over the same memory (no copy): a NumPy array itself, a PyTorch
    CPU tensor's ``numpy()`` view, a CPU DLPack producer's ``numpy.from_dlpack`` or a buffer
    protocol object's ``numpy.asarray``. Raises TypeError/ValueError naming ``name``."""
    if isinstance(obj, _np.ndarray):
        return obj
    if type(obj).__module__.split(".")[0] == "torch":
        device = getattr(obj, "device", None)
        if device is not None and device.type != "cpu":
            raise ValueError(
                f"{call}: {name} is on device '{device}'; this build runs on the host "
                f"({execution_space}) and takes CPU tensors")
        try:
            return obj.detach().numpy()
        except (TypeError, RuntimeError) as error:
            raise TypeError(f"{call}: {name} must be float32, not {obj.dtype} ({error})") from None
    if hasattr(obj, "__dlpack__"):
        device_type, _ = obj.__dlpack_device__()
        if int(device_type) != _DLPACK_CPU:
            raise ValueError(
                f"{call}: {name} is on DLPack device type {int(device_type)}; this build takes "
                f"host (CPU) memory")
        return _np.from_dlpack(obj)
    try:
        memoryview(obj)
    except TypeError:
        raise TypeError(
            f"{call}: {name} must be a NumPy array, a CPU tensor or a buffer "
            f"(float32, C-contiguous), not {type(obj).__name__}") from None
    return _np.asarray(obj)


def scratch_bytes(device=None):
    """Bytes of scratch the library keeps between calls (the int8 path's quantized operands, 16-bit
    inputs widened to float): one buffer per purpose and Kokkos execution-space instance, shared
    by every layer, grown to the largest call and held until Kokkos finalizes. Torch's memory
    counters do not see it. ``device``: ``"cpu"`` (host memory), ``"cuda"``, ``"cuda:N"``, a
    ``torch.device`` or an int N (the GPU's; 0 for a GPU that Kokkos does not run on, or in a
    build without CUDA), or None: host and GPU together. Returns an int."""
    if device is None:
        return _tc.scratch_bytes(False, -1) + (_tc.scratch_bytes(True, -1) if _tc.cuda else 0)
    kind, index = _device_of("scratch_bytes", device)
    return _tc.scratch_bytes(kind == "cuda", index)


def _device_of(call, device):
    """("cpu" or "cuda", the GPU's index or -1 for Kokkos' own) of a str, int or torch.device."""
    if isinstance(device, bool) or not (isinstance(device, (int, str)) or hasattr(device, "type")):
        raise TypeError(f"{call}: device must be a str, an int or a torch.device, not "
                        f"{type(device).__name__}")
    if isinstance(device, int):
        kind, index = "cuda", device
    elif isinstance(device, str):
        kind, _, number = device.partition(":")
        index = int(number) if number.isdigit() else (-1 if not number else -2)
    else:
        kind, index = device.type, -1 if device.index is None else device.index
    if kind not in ("cpu", "cuda") or index < -1 or (kind == "cpu" and index > 0) or \
            (isinstance(device, int) and device < 0):
        raise ValueError(f"{call}: device {device!r} is not 'cpu', 'cuda', 'cuda:N' or N >= 0")
    return kind, index


def _check_state(call, state):
    if not isinstance(state, State):
        raise TypeError(f"{call}: state must be a ternarycounter.State, not {type(state).__name__}")


def forward(state, x, y=None, *, precision="fp32"):
    """y [M, out] = x [M, in] W^T (C++ TernaryCounter::forward). Writes into ``y`` when given
    (float32 [M, out]), else returns a new array."""
    _check_state("forward", state)
    xa = as_array(x, "forward", "x")
    ya = None if y is None else as_array(y, "forward", "y")
    result = _tc.forward(state, xa, ya, precision)
    return result if y is None else y


def backward_input(state, grad_out, grad_x=None, *, precision="fp32", seed=0):
    """grad_x [M, in] = grad_out [M, out] W with the weights as they are (call it before the
    step's update). ``seed`` seeds int8's stochastic rounding of grad_out (the step's seed)."""
    _check_state("backward_input", state)
    ga = as_array(grad_out, "backward_input", "grad_out")
    xa = None if grad_x is None else as_array(grad_x, "backward_input", "grad_x")
    result = _tc.backward_input(state, ga, xa, precision, seed)
    return result if grad_x is None else grad_x


def update(state, grad_w, **params):
    """One dense update step from grad_w [out, in] (C++ TernaryCounter::update). Keyword
    parameters are UpdateParams' (lr, lr_scale, rms_beta, rms_eps, clip, seed, lagged,
    row_offset, team_size, workspace_bytes; C is the state's). Returns the rows skipped for a
    non-finite gradient."""
    _check_state("update", state)
    return _tc.update(state, as_array(grad_w, "update", "grad_w"), **params)


def update_from_io(state, x, grad_out, **params):
    """One strict update step from the layer's input x [M, in] and output gradient
    grad_out [M, out] (C++ TernaryCounter::update_from_io): the weight gradient is never stored.
    Keyword parameters as ``update`` plus ``precision="fp32"|"int8"``. Returns the rows skipped
    for a non-finite gradient."""
    _check_state("update_from_io", state)
    xa = as_array(x, "update_from_io", "x")
    ga = as_array(grad_out, "update_from_io", "grad_out")
    return _tc.update_from_io(state, xa, ga, **params)


def softmax_cross_entropy(logits, labels, grad=None, *, grad_scale=1.0):
    """The C++ main job's softmax cross-entropy (portable exp/log: the same bits on every
    backend). Per sample m of logits [M, K] (float32) and labels [M] (int32): returns
    (losses [M] float32, correct [M] int32: whether the first largest logit is the label's) and,
    when ``grad`` [M, K] is given, writes (softmax - onehot) * grad_scale into it."""
    call = "softmax_cross_entropy"
    la = as_array(logits, call, "logits")
    ya = as_array(labels, call, "labels")
    ga = None if grad is None else as_array(grad, call, "grad")
    return _tc.softmax_cross_entropy(la, ya, ga, grad_scale)


def _named(call, layers):
    items = list(layers.items()) if isinstance(layers, dict) else list(layers)
    for name, state in items:
        if not isinstance(name, str):
            raise TypeError(f"{call}: layer names must be str, not {type(name).__name__}")
        if not isinstance(state, State):
            raise TypeError(f"{call}: layer '{name}' must be a ternarycounter.State, "
                            f"not {type(state).__name__}")
    return items


def save_layers(path, layers, step=0, metadata=None):
    """Writes the layers ({name: State} or (name, State) pairs, one C) to the safetensors
    checkpoint ``path`` with the training ``step`` and string ``metadata`` (crash-safe: the old
    file or the new one)."""
    _tc.save_layers(str(path), _named("save_layers", layers), step, dict(metadata or {}))


def load_layers(path, layers):
    """Copies each named layer of checkpoint ``path`` into the given States; on any error
    (CheckpointError) no State changes. Returns (step, metadata)."""
    return _tc.load_layers(str(path), _named("load_layers", layers))


def read_checkpoint(path):
    """Every layer of checkpoint ``path`` as new States: ({name: State}, step, metadata)."""
    return _tc.read_checkpoint(str(path))
