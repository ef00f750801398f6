"""PyTorch habits hold (issue 62), on the CPU: seeds from torch's generator, TernaryOptimizer
(one update per step() from any number of backwards, lr_scheduler, checked hyperparameters),
what a scaled loss changes, NaN warnings, state_dict paths, jit.trace in train mode and the
import's OpenMP settings. test_torch_ddp.py has DistributedDataParallel."""

import copy
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

import ternarycounter as tc

torch = pytest.importorskip("torch", reason="PyTorch is not installed (Debian: python3-torch)")
from ternarycounter.torch import TernaryLinear, TernaryOptimizer  # noqa: E402


def gen(seed):
    return torch.Generator().manual_seed(seed)


def state_of(layer):
    return [t.detach().clone() for t in (layer.codes, layer.scale, layer.v, layer.steps)]


def assert_same(a, b):
    for x, y in zip(state_of(a) if isinstance(a, torch.nn.Module) else a,
                    state_of(b) if isinstance(b, torch.nn.Module) else b):
        assert x.dtype == y.dtype and x.shape == y.shape
        assert x.numpy().tobytes() == y.numpy().tobytes()


# A. Seeds.
def test_unset_seeds_come_from_torch_like_nn_linear():
    torch.manual_seed(1)
    a, b = TernaryLinear(64, 64), TernaryLinear(64, 64)
    assert not torch.equal(a.codes, b.codes)
    assert (a.seed, a.init_seed) != (b.seed, b.init_seed)
    torch.manual_seed(1)
    again = TernaryLinear(64, 64)
    assert torch.equal(again.codes, a.codes) and (again.seed, again.init_seed) == (a.seed,
                                                                                a.init_seed)
    torch.manual_seed(2)
    assert not torch.equal(TernaryLinear(64, 64).codes, a.codes)
    # The initial values are init_seed's, as an explicit init_seed gives them.
    explicit = TernaryLinear(64, 64, init_seed=a.init_seed)
    assert torch.equal(explicit.codes, a.codes) and torch.equal(explicit.scale, a.scale)


def test_generator_argument_and_explicit_seeds():
    default_state = torch.random.get_rng_state()
    one = TernaryLinear(32, 16, generator=gen(5))
    two = TernaryLinear(32, 16, generator=gen(5))
    assert torch.equal(torch.random.get_rng_state(), default_state)  # not drawn from
    assert torch.equal(one.codes, two.codes) and one.seed == two.seed
    torch.manual_seed(3)
    first = TernaryLinear(32, 16, seed=7, init_seed=8)
    torch.manual_seed(4)
    second = TernaryLinear(32, 16, seed=7, init_seed=8)
    assert_same(first, second)
    host = tc.State(16, 32, 8)
    host.randomize(8, 1.0 / (32 * 2.0 / 3.0) ** 0.5)
    assert first.codes.numpy().tobytes() == host.codes.tobytes()
    with pytest.raises(TypeError, match="generator"):
        TernaryLinear(32, 16, generator=5)


def test_seeds_travel_in_the_state_dict():
    a = TernaryLinear(16, 8, seed=21, init_seed=22, lr=0.05)
    b = TernaryLinear(16, 8, seed=31, init_seed=32, lr=0.05)
    x, g = torch.randn(4, 16, generator=gen(1)), torch.randn(4, 8, generator=gen(2))
    a(x).backward(g)
    b.load_state_dict(a.state_dict())
    assert (b.seed, b.init_seed) == (21, 22)
    for layer in (a, b):
        layer(x).backward(g)  # the same rounding seed: the same bits
    assert_same(a, b)
    b.reset_parameters()
    assert_same(b, TernaryLinear(16, 8, seed=21, init_seed=22))
    # A state_dict saved before the seeds were in it leaves the layer's own.
    old = a.state_dict()
    old["_extra_state"] = {k: v for k, v in old["_extra_state"].items()
                           if k not in ("seed", "init_seed")}
    c = TernaryLinear(16, 8, seed=41, init_seed=42)
    c.load_state_dict(old)
    assert (c.seed, c.init_seed) == (41, 42) and torch.equal(c.codes, a.codes)
    bad = a.state_dict()
    bad["_extra_state"]["seed"] = -1
    with pytest.raises(RuntimeError, match="'seed' must be an int"):
        c.load_state_dict(bad)


# B. TernaryOptimizer.
def two_layers(precision, **kwargs):
    common = dict(precision=precision, lr=0.2, lr_scale=0.01, rms_beta=0.9, **kwargs)
    return torch.nn.Sequential(TernaryLinear(24, 16, seed=1, init_seed=2, **common),
                               torch.nn.ReLU(), TernaryLinear(16, 8, seed=3, init_seed=4, **common))


def batch(rows=16, seed=0):
    g = gen(seed)
    return torch.randn(rows, 24, generator=g), torch.randint(0, 8, (rows,), generator=g)


def loss_of(model, x, labels, divide=1.0):
    return torch.nn.functional.cross_entropy(model(x), labels, reduction="sum") / divide


@pytest.mark.filterwarnings("ignore:TernaryLinear .* updated itself")
@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_micro_batches_then_step_is_one_update_of_the_whole_batch(precision):
    whole, parts = two_layers(precision), two_layers(precision)
    optimizer = TernaryOptimizer(parts)
    for step in range(2):
        x, labels = batch(16, step)
        loss_of(whole, x, labels).backward()  # standalone: updates in backward
        before = [state_of(m) for m in parts[::2]]
        for i in range(4):
            loss_of(parts, x[4 * i:4 * i + 4], labels[4 * i:4 * i + 4]).backward()
            if i == 0:
                assert parts[0].pending_bytes == 4 * (24 * 4 + 16 * 4)
        for m, then in zip(parts[::2], before):  # backward did not update
            assert_same(state_of(m), then)
        assert parts[0].pending_samples == 16
        # fp32: at the third micro-batch the held rows would pass a float32 gradient's bytes
        # (16 x 24 x 4), so the passes are folded into one; int8 holds the rows.
        held = 16 * 24 * 4 if precision == "fp32" else 16 * (24 * 4 + 16 * 4)
        assert parts[0].pending_bytes == held
        optimizer.step()
        optimizer.zero_grad()
        for a, b in zip(whole[::2], parts[::2]):
            assert_same(a, b)
            assert b.step == step + 1
    assert not torch.equal(parts[0].codes, two_layers(precision)[0].codes)


@pytest.mark.filterwarnings("ignore:TernaryLinear .* updated itself")
@pytest.mark.parametrize("micro_batches", [2, 8])
def test_fp32_accumulation_holds_at_most_a_gradient(micro_batches):
    # 64 -> 64 layers: 8 rows of (in + out) float32 are a quarter of a gradient. Two
    # micro-batches of 8 stay held (in the step's buffers from the second step on); eight are
    # folded into the gradient at the fifth. Either way the step is the whole batch's update.
    rows = 8
    whole, parts = (TernaryLinear(64, 64, seed=5, init_seed=6, lr=0.2) for _ in range(2))
    optimizer = TernaryOptimizer([parts])
    gradient_bytes = 64 * 64 * 4
    for step in range(3):
        x = torch.randn(rows * micro_batches, 64, generator=gen(50 + step))
        g = torch.randn(rows * micro_batches, 64, generator=gen(60 + step))
        whole(x).backward(g)
        most = 0
        for i in range(micro_batches):
            parts(x[rows * i:rows * (i + 1)]).backward(g[rows * i:rows * (i + 1)])
            most = max(most, parts.pending_bytes)
        assert parts.pending_samples == rows * micro_batches
        if micro_batches == 2:
            assert parts.pending_bytes == 2 * rows * 128 * 4 < gradient_bytes
        else:
            assert parts.pending_bytes == gradient_bytes and most <= gradient_bytes
        optimizer.step()
        assert parts.pending_bytes == 0 and parts.step == step + 1
        assert_same(whole, parts)
    assert not torch.equal(parts.codes, TernaryLinear(64, 64, seed=5, init_seed=6).codes)


@pytest.mark.filterwarnings("ignore:TernaryLinear .* updated itself")
@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_micro_batches_of_half_inputs(precision):
    whole, parts = two_layers(precision), two_layers(precision)
    optimizer = TernaryOptimizer(parts)
    for step in range(3):
        x, labels = batch(12, step)
        x = x.to(torch.bfloat16)
        loss_of(whole, x, labels).float().backward()
        for i in range(3):
            rows = slice(4 * i, 4 * i + 4)
            loss_of(parts, x[rows], labels[rows]).float().backward()
        # bf16 inputs and output gradients are held as they came (2 bytes each): 960 bytes,
        # below a float32 gradient's 1536 (and fp32 buffers of 12 rows would take 1920)
        assert parts[0].pending_bytes == 12 * (24 + 16) * 2
        optimizer.step()
        for a, b in zip(whole[::2], parts[::2]):
            assert_same(a, b)


def test_zero_grad_drops_what_is_held_and_layers_left_out_update_themselves():
    model = two_layers("fp32")
    optimizer = TernaryOptimizer(model[0])
    x, labels = batch()
    fresh = state_of(model[0])
    with pytest.warns(UserWarning, match="updated itself in backward"):
        loss_of(model, x, labels).backward()
    assert model[2].step == 1 and model[0].step == 0  # model[2] is under no optimizer
    with pytest.warns(UserWarning, match=r"dropped 16 held samples that no step\(\) applied"):
        optimizer.zero_grad()
    assert model[0].pending_samples == 0
    optimizer.step()
    assert_same(state_of(model[0]), fresh)


@pytest.mark.filterwarnings("ignore:TernaryLinear .* updated itself")
def test_lr_schedulers_drive_the_update():
    layer = TernaryLinear(16, 8, seed=5, init_seed=6, lr=0.4)
    reference = copy.deepcopy(layer)
    optimizer = TernaryOptimizer([layer])
    assert optimizer.param_groups[0]["lr"] == 0.4 and optimizer.param_groups[0]["lr_scale"] == 0.02
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    for step in range(3):
        x, g = torch.randn(4, 16, generator=gen(step)), torch.randn(4, 8, generator=gen(9 + step))
        assert layer.lr == 0.4 * 0.5 ** step
        reference.lr = 0.4 * 0.5 ** step
        layer(x).backward(g)
        optimizer.step()
        scheduler.step()
        reference(x).backward(g)
        assert_same(layer, reference)
    assert layer.lr == 0.05
    lambdas = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 1.0 / (epoch + 1))
    optimizer.step()
    lambdas.step()
    assert layer.lr == optimizer.param_groups[0]["initial_lr"] / 2
    # A schedule that leaves the range raises at once and changes nothing.
    bad = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 1.0 - epoch)
    optimizer.step()
    bad.step()
    assert layer.lr == 0.0
    optimizer.step()
    with pytest.raises(ValueError, match="lr = -0.4 is out of range"):
        bad.step()
    assert layer.lr == 0.0 and optimizer.param_groups[0]["lr"] == 0.0


@pytest.mark.parametrize("name, value, error", [
    ("lr", -1.0, ValueError), ("lr", float("nan"), ValueError), ("lr", float("inf"), ValueError),
    ("lr_scale", -0.1, ValueError), ("rms_beta", 1.5, ValueError),
    ("rms_eps", 0.0, ValueError), ("clip", -1.0, ValueError), ("lr", "0.1", TypeError),
])
def test_settings_out_of_range_raise_at_once(name, value, error):
    layer = TernaryLinear(8, 4, seed=1, init_seed=1)
    before = getattr(layer, name)
    with pytest.raises(error, match=name):
        setattr(layer, name, value)
    assert getattr(layer, name) == before
    optimizer = TernaryOptimizer(layer)
    with pytest.raises(error, match=name):
        optimizer.param_groups[0][name] = value
    assert optimizer.param_groups[0][name] == before and getattr(layer, name) == before
    with pytest.raises(error, match=name):
        TernaryOptimizer(TernaryLinear(8, 4), **{name: value})


@pytest.mark.parametrize("name, value, error", [
    ("seed", -1, ValueError), ("seed", 2**32, ValueError), ("seed", 1.5, TypeError),
    ("init_seed", -1, ValueError), ("precision", "int4", ValueError),
])
def test_layer_settings_are_checked_when_set(name, value, error):
    layer = TernaryLinear(8, 4, seed=1, init_seed=1)
    before = getattr(layer, name)
    with pytest.raises(error, match=name):
        setattr(layer, name, value)
    assert getattr(layer, name) == before


def test_optimizer_groups_params_and_state_dict():
    model = torch.nn.Sequential(TernaryLinear(16, 8, bias=True, lr=0.1), torch.nn.ReLU(),
                                TernaryLinear(8, 4, lr=0.2))
    with pytest.raises(ValueError, match="different lr"):
        TernaryOptimizer(model)
    with pytest.raises(TypeError, match="torch optimizer"):
        TernaryOptimizer(model.parameters())  # the bias is torch's
    ternary = [p for name, p in model.named_parameters() if name.endswith("update_trigger")]
    optimizer = TernaryOptimizer([{"params": ternary[:1]}, {"params": [model[2]], "lr": 0.3}])
    assert model[2].lr == 0.3 and optimizer.param_groups[0]["lr"] == 0.1
    assert optimizer.param_groups[0].layers == [model[0]]
    with pytest.raises(ValueError, match="another TernaryOptimizer"):
        TernaryOptimizer(model[0])
    saved = optimizer.state_dict()
    optimizer.param_groups[1]["lr"] = 0.5
    assert model[2].lr == 0.5
    optimizer.load_state_dict(saved)
    assert model[2].lr == 0.3
    optimizer.param_groups[1]["lr"] = 0.25
    assert model[2].lr == 0.25


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_dividing_the_loss_by_k_changes_only_v_and_the_scale_step(precision):
    """SPEC §3: a loss scaled by a = 1/K scales g by a (exactly, for K a power of two); the
    codes' tick g / max(sqrt(v), rms_eps) does not change while sqrt(v) stays above rms_eps,
    v becomes a^2 v, and the row scale's SGD step lr_scale * grad_s (the raw gradient) is a
    times as long, which changes the scale and, through it, the codes."""
    K = 4
    results = {}
    for lr_scale in (0.0, 0.05):
        for divide in (1.0, float(K)):
            model = two_layers(precision, rms_eps=1e-9)
            for m in model[::2]:
                m.lr_scale = lr_scale
            optimizer = TernaryOptimizer(model)
            for step in range(2):
                x, labels = batch(16, step)
                for i in range(K):
                    loss_of(model, x[4 * i:4 * i + 4], labels[4 * i:4 * i + 4], divide).backward()
                optimizer.step()
            results[lr_scale, divide] = [state_of(m) for m in model[::2]]
    for plain, scaled in zip(results[0.0, 1.0], results[0.0, float(K)]):
        codes, scale, v, _ = plain
        assert torch.equal(codes, scaled[0]) and torch.equal(scale, scaled[1])
        assert torch.equal(v, scaled[2] * K * K) and not torch.equal(v, scaled[2])
    fresh = two_layers(precision)
    assert not torch.equal(results[0.0, 1.0][0][0], fresh[0].codes)
    for plain, scaled in zip(results[0.05, 1.0], results[0.05, float(K)]):
        assert not torch.equal(plain[1], scaled[1])  # the scale step is not normalized


# D. Small ones.
def test_nan_skips_warn_once_with_the_count():
    layer = TernaryLinear(8, 4, seed=1, init_seed=1)
    x = torch.randn(3, 8, generator=gen(1))
    x[1, 2] = float("nan")
    before = state_of(layer)
    with pytest.warns(RuntimeWarning, match="left 4 of its 4 rows unchanged"):
        layer(x).sum().backward()
    assert layer.skipped_rows == 4 and layer.skipped_rows_total == 4
    assert_same(state_of(layer)[:3], before[:3])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        layer(x).sum().backward()
        layer(x[:1]).sum().backward()
    assert layer.skipped_rows == 0 and layer.skipped_rows_total == 8


def test_state_dict_errors_name_the_layers_path():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Sequential(TernaryLinear(8, 4)))
    other = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Sequential(TernaryLinear(8, 8)))
    with pytest.raises(RuntimeError, match="TernaryLinear '1.0': the state has out_features"):
        model.load_state_dict(other.state_dict())
    with pytest.raises(RuntimeError, match=r"TernaryLinear \(the model itself\)"):
        TernaryLinear(8, 4).load_state_dict(TernaryLinear(8, 8).state_dict())


def test_jit_trace_in_train_mode_says_what_to_do():
    model = torch.nn.Sequential(TernaryLinear(8, 4))
    with pytest.raises(RuntimeError, match=r"eval\(\) mode or under torch.no_grad\(\)"):
        torch.jit.trace(model, torch.randn(2, 8))
    traced = torch.jit.trace(model.eval(), torch.randn(2, 8))
    assert traced(torch.ones(1, 8)).shape == (1, 4)


def run_python(code, **env_changes):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_PROC_BIND", "OMP_PLACES", "OMP_WAIT_POLICY")}
    env["OMP_NUM_THREADS"] = "2"  # (without it, the package silences Kokkos' warnings itself)
    env.update(env_changes)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, env=env)


def test_import_sets_openmp_defaults_without_kokkos_warnings():
    show = "import os; print(os.environ['OMP_PROC_BIND'], os.environ.get('OMP_WAIT_POLICY'))"
    result = run_python("import ternarycounter\n" + show)
    assert result.returncode == 0, result.stderr
    assert "OMP_PROC_BIND" not in result.stderr and "WARNING" not in result.stderr
    assert result.stdout.split() == ["false", "passive"]
    # The user's settings stand.
    result = run_python("import ternarycounter\n" + show, OMP_WAIT_POLICY="active",
                        OMP_PLACES="cores")
    assert result.stdout.split() == ["true", "active"], result.stderr
    # torch first: its OpenMP runtime has read the environment; a warning says so.
    if tc.execution_space == "OpenMP" and tc.concurrency > 1:
        result = run_python("import torch, ternarycounter\n" + show)
        assert "OMP_WAIT_POLICY=passive" in result.stderr and "RuntimeWarning" in result.stderr
        assert result.stdout.split() == ["false", "None"]
