"""TernaryLinear on CUDA tensors (a CUDA build of the package on a machine with a GPU; skipped
elsewhere): the same bits as the CPU module and as the library's host calls on the same inputs
(forward, input gradient, state after the update), on torch's current stream; device moves and
state_dict between devices bit-exact; wrong device, dtype or shape refused before anything
changes."""

import copy

import pytest

import ternarycounter as tc

torch = pytest.importorskip("torch", reason="PyTorch is not installed (Debian: python3-torch)")
from ternarycounter.torch import TernaryLinear  # noqa: E402

pytestmark = [
    pytest.mark.skipif(not tc._tc.cuda, reason="this build of ternarycounter is host-only"),
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
]

# in = 320: two blocks of the canonical 256-column order, the second one short; rows = 70: not a
# multiple of any tile.
IN, OUT, ROWS = 320, 96, 70


def gen(seed):
    return torch.Generator().manual_seed(seed)


def make_layer(precision, **kwargs):
    return TernaryLinear(IN, OUT, precision=precision, lr=0.05, lr_scale=0.01, seed=9,
                         init_seed=4, **kwargs)


def bits(t):
    t = t.detach().cpu().contiguous()
    return t.view(torch.uint8) if t.dim() else t.reshape(1).view(torch.uint8)


def state_bits(layer):
    return [bits(t) for t in (layer.codes, layer.scale, layer.v, layer.steps)]


def assert_same_state(a, b):
    for left, right in zip(state_bits(a) if isinstance(a, torch.nn.Module) else a,
                           state_bits(b) if isinstance(b, torch.nn.Module) else b):
        assert torch.equal(left, right)


def step(layer, x, grad_y):
    """One training step of `layer` on x (moved to its device): (y, grad_x) on the host."""
    x = x.detach().to(layer.codes.device).requires_grad_()  # a leaf, never the caller's x
    y = layer(x)
    y.backward(grad_y.to(layer.codes.device))
    return y.detach().cpu(), x.grad.cpu()


def functional_step(layer, x, grad_y):
    """The library's host calls on a copy of `layer`'s state: (y, grad_x, state after)."""
    state = layer.to_state()
    seed = tc.step_seed(layer.seed, layer.step)
    y = tc.forward(state, x.numpy(), precision=layer.precision)
    grad_x = tc.backward_input(state, grad_y.numpy(), seed=seed, precision=layer.precision)
    tc.update_from_io(state, x.numpy(), grad_y.numpy(), seed=seed, **layer.update_params())
    return torch.from_numpy(y), torch.from_numpy(grad_x), state


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_cuda_steps_are_the_cpu_module_and_the_host_calls(precision):
    on_cpu = make_layer(precision)
    on_gpu = make_layer(precision, device="cuda")
    assert on_gpu.codes.is_cuda and not on_gpu.steps.is_cuda
    assert_same_state(on_cpu, on_gpu)
    for k in range(3):
        x = torch.randn(ROWS, IN, generator=gen(10 + k))
        grad_y = torch.randn(ROWS, OUT, generator=gen(20 + k))
        y_ref, grad_x_ref, state_ref = functional_step(on_cpu, x, grad_y)
        y_cpu, grad_x_cpu = step(on_cpu, x, grad_y)
        y_gpu, grad_x_gpu = step(on_gpu, x, grad_y)
        assert torch.equal(bits(y_gpu), bits(y_ref)) and torch.equal(bits(y_cpu), bits(y_ref))
        assert torch.equal(bits(grad_x_gpu), bits(grad_x_ref))
        assert torch.equal(bits(grad_x_cpu), bits(grad_x_ref))
        reference = [bits(torch.from_numpy(a)) for a in (state_ref.codes, state_ref.scale,
                                                         state_ref.v)]
        assert_same_state(on_gpu, on_cpu)
        assert_same_state(state_bits(on_gpu)[:3], reference)
        assert on_gpu.step == k + 1
    # The steps changed the state (a test of equality between unchanged states proves nothing).
    assert not torch.equal(on_gpu.codes.cpu(), make_layer(precision).codes)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_inputs_on_cuda_are_the_cpu_modules(dtype):
    on_cpu, on_gpu = make_layer("int8"), make_layer("int8", device="cuda")
    x = torch.randn(ROWS, IN, generator=gen(3)).to(dtype)
    grad_y = torch.randn(ROWS, OUT, generator=gen(4)).to(dtype)
    y_cpu, grad_x_cpu = step(on_cpu, x, grad_y)
    y_gpu, grad_x_gpu = step(on_gpu, x, grad_y)
    assert y_gpu.dtype == dtype and grad_x_gpu.dtype == dtype
    assert torch.equal(bits(y_gpu), bits(y_cpu)) and torch.equal(bits(grad_x_gpu), bits(grad_x_cpu))
    assert_same_state(on_gpu, on_cpu)


def test_a_side_stream_gives_the_same_bits():
    on_default, on_side = make_layer("int8", device="cuda"), make_layer("int8", device="cuda")
    x = torch.randn(ROWS, IN, generator=gen(5))
    grad_y = torch.randn(ROWS, OUT, generator=gen(6))
    expected = step(on_default, x, grad_y)
    side = torch.cuda.Stream()
    x_gpu, g_gpu = x.cuda(), grad_y.cuda()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        xs = x_gpu.clone().requires_grad_()
        y = on_side(xs)
        y.backward(g_gpu)
    torch.cuda.current_stream().wait_stream(side)
    assert torch.equal(bits(y), bits(expected[0])) and torch.equal(bits(xs.grad), bits(expected[1]))
    assert_same_state(on_side, on_default)


def test_device_moves_keep_the_layer_working():
    reference, moving = make_layer("fp32"), make_layer("fp32")
    moves = [("cuda", lambda m: m.cuda()), ("cpu", lambda m: m.cpu()),
             ("cuda", lambda m: m.to("cuda")), ("cpu", lambda m: m.to(torch.device("cpu")))]
    for k, (device, move) in enumerate(moves):
        moving = move(moving)
        assert moving.codes.device.type == device and moving.steps.device.type == "cpu"
        x = torch.randn(ROWS, IN, generator=gen(30 + k))
        grad_y = torch.randn(ROWS, OUT, generator=gen(40 + k))
        expected = step(reference, x, grad_y)
        got = step(moving, x, grad_y)
        assert torch.equal(bits(got[0]), bits(expected[0]))
        assert torch.equal(bits(got[1]), bits(expected[1]))
        assert_same_state(moving, reference)
    # A deep copy of a CUDA layer is a CUDA layer with the same state.
    clone = copy.deepcopy(moving.cuda())
    assert clone.codes.is_cuda
    assert_same_state(clone, reference)


def test_state_dict_moves_between_devices_bit_exact():
    on_gpu = make_layer("int8", device="cuda")
    for k in range(2):
        step(on_gpu, torch.randn(ROWS, IN, generator=gen(50 + k)),
             torch.randn(ROWS, OUT, generator=gen(60 + k)))
    on_cpu = TernaryLinear(IN, OUT, precision="int8", lr=0.05, lr_scale=0.01, seed=9,
                           init_seed=None)
    on_cpu.load_state_dict(on_gpu.state_dict())
    assert_same_state(on_cpu, on_gpu)
    assert on_cpu.step == 2
    x, grad_y = torch.randn(ROWS, IN, generator=gen(70)), torch.randn(ROWS, OUT, generator=gen(71))
    step(on_cpu, x, grad_y)
    back = TernaryLinear(IN, OUT, precision="int8", lr=0.05, lr_scale=0.01, seed=9, init_seed=None,
                         device="cuda")
    back.load_state_dict(on_cpu.state_dict())
    assert back.codes.is_cuda
    assert_same_state(back, on_cpu)
    # And the reloaded layer goes on as the original would.
    step(on_gpu, x, grad_y)
    assert_same_state(back, on_gpu)


def test_wrong_inputs_raise_naming_the_argument_and_change_nothing():
    layer = make_layer("int8", device="cuda")
    before = state_bits(layer)
    cases = [
        (torch.randn(ROWS, IN), ValueError, "x is on cpu but the layer's state"),
        (torch.randn(ROWS, IN, device="cuda", dtype=torch.float64), TypeError,
         "x must be float32, bfloat16 or float16"),
        (torch.randn(ROWS, IN + 4, device="cuda"), ValueError, r"x has shape \(70, 324\)"),
    ]
    for x, error, message in cases:
        with pytest.raises(error, match=message):
            layer(x.requires_grad_())
    # The host calls take host memory only, and say which argument is on the GPU.
    state = layer.to_state()
    with pytest.raises(ValueError, match="forward: x .*device"):
        tc.forward(state, torch.randn(ROWS, IN, device="cuda"))
    # A CPU state_dict of another shape is refused whole.
    other = TernaryLinear(IN, OUT + 4).state_dict()
    with pytest.raises(RuntimeError, match="unchanged"):
        layer.load_state_dict(other)
    torch.cuda.synchronize()
    for now, then in zip(state_bits(layer), before):
        assert torch.equal(now, then)
    assert layer.step == 0
