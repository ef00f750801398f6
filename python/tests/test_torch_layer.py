"""TernaryLinear's nn.Linear manners, one test per group of defects of issue 53 (each fails on
the layer that kept its state in the extension's memory), on the CPU. test_torch_cuda.py runs
the same calls on CUDA tensors."""

import copy
import io
import os
import pickle
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ternarycounter as tc

torch = pytest.importorskip("torch", reason="PyTorch is not installed (Debian: python3-torch)")
import ternarycounter.torch as tct  # noqa: E402
from ternarycounter.torch import TernaryLinear  # noqa: E402


def step_accumulated(model):
    tct.step_accumulated(model)


def gen(seed):
    return torch.Generator().manual_seed(seed)


def snapshot(layer):
    return [t.detach().clone() for t in (layer.codes, layer.scale, layer.v, layer.steps)]


def assert_same_state(layer, before):
    for now, then in zip(snapshot(layer), before):
        assert now.dtype == then.dtype and now.shape == then.shape
        assert torch.equal(now.view(torch.uint8) if now.dim() else now,
                           then.view(torch.uint8) if then.dim() else then)


def host_copy(layer):
    """The layer's state as a functional-API State (the C++ library's host calls)."""
    return layer.to_state()


# 1. Freezing: requires_grad_(False), eval() and torch.autograd.grad(y, x) change nothing.
def test_frozen_layers_never_change():
    layer = TernaryLinear(16, 8, init_seed=1)
    x = torch.randn(4, 16, generator=gen(0), requires_grad=True)
    reference = host_copy(layer)
    expected_grad = tc.backward_input(reference, torch.ones(4, 8).numpy(),
                                      seed=tc.step_seed(layer.seed, 0))
    before = snapshot(layer)

    (grad,) = torch.autograd.grad(layer(x).sum(), x)
    assert_same_state(layer, before)
    assert grad.numpy().tobytes() == expected_grad.tobytes()

    layer.requires_grad_(False)
    layer(x).sum().backward()
    assert_same_state(layer, before)
    assert x.grad.numpy().tobytes() == expected_grad.tobytes()

    layer.requires_grad_(True).eval()
    x.grad = None
    layer(x).sum().backward()
    assert_same_state(layer, before)
    assert x.grad.numpy().tobytes() == expected_grad.tobytes()

    layer.train()
    layer(x).sum().backward()  # trains again
    assert layer.step == 1 and not torch.equal(layer.v, before[2])


# 2. The defaults are the recipe (C++ UpdateParams and the functional calls' defaults).
def test_defaults_are_the_recipe():
    layer = TernaryLinear(8, 4)
    assert (layer.C, layer.lr, layer.lr_scale, layer.rms_beta, layer.rms_eps) == (
        8, 0.003, 0.02, 0.99, 1e-3)
    # The same step as update_from_io with its defaults and the step's seed.
    x, g = torch.randn(6, 8, generator=gen(1)), torch.randn(6, 4, generator=gen(2))
    reference = host_copy(layer)
    tc.update_from_io(reference, x.numpy(), g.numpy(), seed=tc.step_seed(layer.seed, 0))
    layer(x).backward(g)
    assert layer.to_state().codes.tobytes() == reference.codes.tobytes()
    assert layer.scale.numpy().tobytes() == reference.scale.tobytes()
    assert layer.v.numpy().tobytes() == reference.v.tobytes()


# 3. A layer used twice: each use's input gradient from its forward's weights, then one update
# from both uses' samples; accumulate=True gives one update from K micro-batches.
@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_layer_used_twice_gets_one_update_after_both_gradients(precision):
    layer = TernaryLinear(16, 16, init_seed=3, seed=9, precision=precision, lr=0.05)
    x = torch.randn(5, 16, generator=gen(3), requires_grad=True)
    g = torch.randn(5, 16, generator=gen(4))
    ref = host_copy(layer)
    seed = tc.step_seed(9, 0)
    y1 = tc.forward(ref, x.detach().numpy(), precision=precision)
    # The second use's samples follow the first's in the batch of the update, so int8 rounds
    # its grad_out as rows 5..9 of one call (each row is quantized on its own, SPEC §6).
    both = np.concatenate([np.zeros_like(g.numpy()), g.numpy()])
    grad_y1 = tc.backward_input(ref, both, seed=seed, precision=precision)[5:]
    grad_x = tc.backward_input(ref, grad_y1, seed=seed, precision=precision)
    tc.update_from_io(ref, np.concatenate([x.detach().numpy(), y1]),
                      np.concatenate([grad_y1, g.numpy()]), seed=seed,
                      **layer.update_params())
    layer(layer(x)).backward(g)
    assert x.grad.numpy().tobytes() == grad_x.tobytes()
    assert layer.step == 1
    state = layer.to_state()
    assert state.codes.tobytes() == ref.codes.tobytes()
    assert state.scale.tobytes() == ref.scale.tobytes() and state.v.tobytes() == ref.v.tobytes()


# A layer called on chunks of a batch in one pass (a loss computed a chunk at a time): the input
# gradient and the update of one call on the concatenation, bit for bit, int8 included (each
# use's rounding starts at its chunk's row in the batch of the update), under non-reentrant
# checkpointing (whose recomputed forwards run in backward) and after a held micro-batch.
CHUNKS = (0, 7, 19, 30)


@pytest.mark.parametrize("precision", ["fp32", "int8"])
@pytest.mark.parametrize("how", ["plain", "checkpointed", "accumulated"])
def test_layer_on_three_chunks_is_one_call(precision, how):
    import torch.utils.checkpoint
    accumulate = how == "accumulated"
    whole, parts = (TernaryLinear(24, 12, init_seed=4, seed=8, precision=precision, lr=0.05,
                                  accumulate=accumulate) for _ in range(2))
    x, g = torch.randn(30, 24, generator=gen(7)), torch.randn(30, 12, generator=gen(8))
    if accumulate:  # a held micro-batch first: the chunks' rows follow its 9
        x0, g0 = torch.randn(9, 24, generator=gen(9)), torch.randn(9, 12, generator=gen(10))
        whole(x0).backward(g0)
        parts(x0).backward(g0)
    xw, xp = x.clone().requires_grad_(), x.clone().requires_grad_()
    whole(xw).backward(g)
    outputs = []
    for first, last in zip(CHUNKS, CHUNKS[1:]):
        if how == "checkpointed":
            outputs.append(torch.utils.checkpoint.checkpoint(parts, xp[first:last],
                                                             use_reentrant=False))
        else:
            outputs.append(parts(xp[first:last]))
    torch.cat(outputs).backward(g)
    if accumulate:
        step_accumulated(whole)
        step_accumulated(parts)
    assert whole.step == parts.step == 1
    assert xw.grad.numpy().tobytes() == xp.grad.numpy().tobytes()
    assert_same_state(parts, snapshot(whole))
    assert not torch.equal(parts.v, torch.zeros(12))


def test_accumulation_is_one_step_over_all_micro_batches():
    whole = TernaryLinear(16, 8, seed=2, init_seed=4, lr=0.05)
    parts = TernaryLinear(16, 8, seed=2, init_seed=4, lr=0.05, accumulate=True)
    x, g = torch.randn(12, 16, generator=gen(5)), torch.randn(12, 8, generator=gen(6))
    whole(x).backward(g)
    for k in range(3):
        parts(x[4 * k:4 * k + 4]).backward(g[4 * k:4 * k + 4])
    assert parts.step == 0 and torch.equal(parts.v, torch.zeros(8))
    step_accumulated(torch.nn.Sequential(parts))
    assert parts.step == 1
    assert_same_state(parts, snapshot(whole))


def test_backward_after_an_update_is_refused():
    layer = TernaryLinear(8, 4)
    x = torch.randn(3, 8, requires_grad=True)
    y1, y2 = layer(x), layer(x)
    y1.sum().backward()
    with pytest.raises(RuntimeError, match="accumulate=True"):
        y2.sum().backward()


# 4. deepcopy, pickle and torch.save(model).
def test_copies_pickles_and_torch_save():
    model = torch.nn.Sequential(TernaryLinear(8, 8, init_seed=5), torch.nn.ReLU(),
                                TernaryLinear(8, 4, init_seed=6))
    x = torch.randn(3, 8, generator=gen(7))
    model(x).sum().backward()
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    load_args = {"weights_only": False} if "weights_only" in torch.load.__code__.co_varnames else {}
    copies = [copy.deepcopy(model), pickle.loads(pickle.dumps(model)),
              torch.load(buffer, **load_args)]
    for other in copies + [model]:
        other(x).sum().backward()  # copies train on, independently, with the same bits
    for other in copies:
        for a, b in zip(model.state_dict().values(), other.state_dict().values()):
            assert not isinstance(a, torch.Tensor) or torch.equal(a, b)
        assert other[0].step == 2


# 5. A forked child gets a clear error naming the fix instead of hanging.
def test_forked_child_gets_an_error_not_a_hang():
    script = textwrap.dedent("""
        import os, sys, torch
        from ternarycounter.torch import TernaryLinear
        layer = TernaryLinear(8, 4)
        layer(torch.ones(2, 8))
        pid = os.fork()
        if pid == 0:
            try:
                layer(torch.ones(2, 8))
                print("child: no error")
            except RuntimeError as error:
                print("child:", error)
            sys.stdout.flush()
            sys.exit(0)  # runs atexit: Kokkos' finalize is the parent's
        os.waitpid(pid, 0)
        print("parent:", float(layer(torch.ones(1, 8)).sum()))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    if tc.execution_space == "Serial":
        # A Serial host space (CUDA builds) has no threads to lose in the fork: the child's host
        # calls work.
        assert "child: no error" in result.stdout
    else:
        assert "child: ternarycounter: this process" in result.stdout
        assert "'spawn'" in result.stdout
    assert "parent:" in result.stdout


# 6. load_state_dict validates as load_layers does, and changes nothing when it refuses.
@pytest.mark.parametrize("spoil, message", [
    (lambda sd: sd, "C = 8 but the layer 4"),
    (lambda sd: sd.update(codes=torch.full_like(sd["codes"], 255)), "holds code 63"),
    (lambda sd: sd["scale"].fill_(float("nan")), "scale"),
    (lambda sd: sd["v"].fill_(-1.0), "'v'"),
    (lambda sd: sd.update(scale=sd["scale"].double()), "torch.float32"),
])
def test_load_state_dict_validates(spoil, message):
    source = TernaryLinear(16, 8, C=8, init_seed=7)
    target = TernaryLinear(16, 8, C=4 if "C = 8" in message else 8, init_seed=8)
    state_dict = copy.deepcopy(source.state_dict())
    spoil(state_dict)
    before = snapshot(target)
    with pytest.raises(RuntimeError, match=message):
        target.load_state_dict(state_dict)
    assert_same_state(target, before)


def test_state_dict_round_trip():
    a = TernaryLinear(16, 8, init_seed=3)
    x = torch.randn(4, 16)
    for _ in range(2):
        a(x).sum().backward()
    b = TernaryLinear(16, 8, init_seed=None)
    b.load_state_dict(a.state_dict())
    assert b.step == 2
    assert_same_state(b, snapshot(a))
    assert torch.equal(a(x), b(x))


# 7. dtype round trips and share_memory() keep the layer working.
def test_dtype_round_trips_and_shared_memory_keep_working():
    reference, layer = (TernaryLinear(16, 8, seed=3, init_seed=9),
                        TernaryLinear(16, 8, seed=3, init_seed=9))
    x = torch.randn(4, 16, generator=gen(8))
    layer.half().double().float().share_memory()
    assert layer.scale.dtype == torch.float32 and layer.codes.is_shared()
    assert_same_state(layer, snapshot(reference))
    for model in (reference, layer):
        model(x).sum().backward()
    assert_same_state(layer, snapshot(reference))


# 8. Non-contiguous inputs, and bf16/fp16 inputs under autocast with specified bits.
def test_non_contiguous_inputs():
    layer = TernaryLinear(16, 8, init_seed=10)
    h = torch.randn(4, 3, 16, generator=gen(9))
    for view in (h[:, 0], h.permute(1, 0, 2), h[..., ::1].transpose(0, 1)):
        assert not view.is_contiguous() or view is h
        with torch.no_grad():
            assert torch.equal(layer(view), layer(view.contiguous()))
    x = h.permute(1, 0, 2).requires_grad_()
    layer.requires_grad_(False)
    layer(x).sum().backward()
    assert x.grad.shape == x.shape


@pytest.mark.parametrize("precision", ["fp32", "int8"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_inputs_are_their_float32_widening(precision, dtype):
    layer = TernaryLinear(16, 8, init_seed=11, precision=precision)
    x = torch.randn(4, 16, generator=gen(10)).to(dtype)
    with torch.no_grad():
        widened = layer(x.float())
        assert torch.equal(layer(x), widened.to(dtype))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = layer(x)
        assert y.dtype == torch.bfloat16 and torch.equal(y, widened.to(torch.bfloat16))
    x.requires_grad_()
    layer(x).float().sum().backward()
    assert x.grad.dtype == dtype


@pytest.mark.parametrize("precision", ["fp32", "int8"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_steps_are_the_steps_of_their_float32_widening(precision, dtype):
    # 16-bit rows go to the library as they are (no float32 copy): the output, the input
    # gradient and the update are those of the float32 widening, rounded where 16-bit.
    half, wide = (TernaryLinear(16, 8, init_seed=15, seed=3, precision=precision)
                  for _ in range(2))
    for k in range(3):
        x = torch.randn(6, 16, generator=gen(20 + k)).to(dtype).requires_grad_()
        grad_y = torch.randn(6, 8, generator=gen(30 + k)).to(dtype)
        x32 = x.detach().float().requires_grad_()
        y = half(x)
        y.backward(grad_y)
        y32 = wide(x32)
        y32.backward(grad_y.float())
        assert y.dtype == dtype and x.grad.dtype == dtype
        assert torch.equal(y, y32.to(dtype)) and torch.equal(x.grad, x32.grad.to(dtype))
        assert_same_state(half, snapshot(wide))
    assert half.step == 3 and not torch.equal(half.codes, TernaryLinear(
        16, 8, init_seed=15, seed=3, precision=precision).codes)


# 9. jit.trace of inference, constructor checks, CheckpointError messages.
def test_jit_trace_of_inference():
    model = torch.nn.Sequential(TernaryLinear(16, 8, init_seed=12), torch.nn.ReLU(),
                                TernaryLinear(8, 4, init_seed=13)).eval()
    x = torch.randn(5, 16, generator=gen(11))
    with torch.no_grad():
        traced = torch.jit.trace(model, x)
        assert torch.equal(traced(x), model(x))
        assert "ternarycounter::linear" in str(traced.inlined_graph)


@pytest.mark.parametrize("kwargs, error", [
    (dict(init_scale=float("nan")), ValueError), (dict(init_scale=-1.0), ValueError),
    (dict(init_scale=20.0), ValueError), (dict(seed=-1), ValueError),
    (dict(seed=2**32), ValueError), (dict(out_features=0), ValueError),
    (dict(in_features=0), ValueError), (dict(in_features=6), ValueError),
    (dict(C=12), ValueError), (dict(lr=-1.0), ValueError), (dict(precision="int4"), ValueError),
    (dict(in_features=8.0), TypeError),
])
def test_constructor_arguments_are_checked(kwargs, error):
    args = dict(in_features=8, out_features=4)
    args.update(kwargs)
    with pytest.raises(error):
        TernaryLinear(**args)


def test_checkpoint_error_quotes_bytes_that_are_not_utf8(tmp_path):
    header = b'{"\xffname.state":{"dtype":"U8","shape":[1,3],"data_offsets":[0,3]}}'
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0\0\0")
    with pytest.raises(tc.CheckpointError) as error:
        tc.read_checkpoint(path)
    assert str(error.value) and "\\xff" in str(error.value)


def test_reset_parameters_and_extra_repr():
    layer = TernaryLinear(16, 8, init_seed=14, bias=True)
    fresh = snapshot(layer)
    layer(torch.randn(3, 16)).sum().backward()
    layer.reset_parameters()
    assert_same_state(layer, fresh)
    text = repr(layer)
    assert "in_features=16, out_features=8, bias=True" in text and "C=8" in text
