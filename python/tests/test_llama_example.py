"""python/examples/llama_pretrain.py and llama_memory.py: the tiny preset trains on the CPU and
its loss falls; per-block checkpointing leaves every ternary layer's state bit for bit as it is
without checkpointing (one update per backward); the baselines hold their AdamW moments in the
parameters' dtype; an out-of-memory error is reported and ends the run with status 3; the memory
model's 7b figures match a hand computation, and its tiny figures the model's own buffers and
what a block saves for its backward."""

import json
import os
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
sys.path.insert(0, EXAMPLES)

import llama_memory  # noqa: E402  (no torch)


def has_bible():
    try:
        subprocess.run(["bible", "-f", "Gen1:1"], capture_output=True, check=True)
        return True
    except (OSError, subprocess.CalledProcessError):
        return False


needs_bible = pytest.mark.skipif(not has_bible(),
                                 reason="no `bible` command (Debian: bible-kjv): the example "
                                        "trains on its King James text")

# The CI configuration: the tiny preset (2 blocks, d_model 64, vocabulary 32,000), short windows.
TINY = ["--preset", "tiny", "--device", "cpu", "--context", "32", "--batch", "8",
        "--limit-bytes", "400000"]


def test_memory_model_7b_by_hand():
    m = llama_memory.model("7b", batch=1, context=2048)
    # One block: q, k, v, o are 4096 x 4096 (32 kv heads of 128), gate, up, down 4096 x 11008.
    block_weights = 4 * 4096 * 4096 + 3 * 4096 * 11008  # 202,375,168
    block_rows = 4 * 4096 + 2 * 11008 + 4096  # 42,496
    weights, rows = 32 * block_weights, 32 * block_rows
    assert weights == 6_476_005_376
    # 0.75 B per weight + 8 B per row (scale, v) + 8 B per layer (the int64 step count).
    assert m["ternary_parts"]["projections"] == weights * 3 // 4 + rows * 8 + 32 * 7 * 8
    assert m["ternary_parts"]["projections"] == 4_867_884_800
    # Every parameter: the projections, embedding and head (32,000 x 4096 each), 65 norm gains
    # vectors; AMP AdamW holds 16 B of each, pure-BF16 AdamW 8 B.
    params = weights + 2 * 32000 * 4096 + 65 * 4096
    assert m["parameters"] == params == 6_738_415_616
    assert m["adamw_amp_state"] == 16 * params
    assert m["adamw_bf16_state"] == 8 * params
    # Checkpointed activations: each of the 32 blocks' bf16 input, 4096 x 2 B per token.
    assert m["per_token"]["checkpointed"] == 32 * 4096 * 2 == 262_144


def test_memory_model_7b_batch_8_offloaded_by_hand():
    tokens = 8 * 2048
    on_gpu, offloaded = (llama_memory.model("7b", batch=8, context=2048, loss_chunk=2048,
                                            offload=offload) for offload in (False, True))
    # The checkpointed block inputs: 32 blocks x 4096 x 2 B per token on the GPU, or in pinned
    # host memory with one block's input back on the GPU at a time.
    assert on_gpu["checkpointed"] == offloaded["pinned_host"] == tokens * 32 * 4096 * 2
    assert offloaded["checkpointed"] == tokens * 4096 * 2 and on_gpu["pinned_host"] == 0
    # The head in chunks holds every chunk's float32 grad_out, beside one chunk's log-softmax
    # buffers or its update's two int32 [32000, 4096] arrays (d_model > the chunk).
    assert offloaded["logits_and_loss"] == 4 * 32000 * tokens + 8 * 32000 * 4096
    # The int8 scratch: the gate/up projections' update, 16,384 x (4096 + 11008) bytes.
    assert offloaded["ternary_scratch"] == tokens * (4096 + 11008)
    total = llama_memory.ternary_total
    assert total(on_gpu) - total(offloaded) == tokens * 31 * 4096 * 2
    assert total(offloaded) < 12e9 < total(on_gpu)
    # Without the loss chunk the logits (12 B x 32,000 per token) exceed 12 GB even offloaded.
    assert total(llama_memory.model("7b", batch=8, context=2048, offload=True)) > 12e9


def test_memory_model_sign_head_by_hand():
    ternary, sign = (llama_memory.model("7b", batch=8, context=2048, loss_chunk=2048,
                                        offload=True, head=head) for head in ("ternary", "sign"))
    head = 32000 * 4096
    # float32 weights (4 B) in the state instead of the ternary head's 0.75 B + 8 B per row and
    # step count, and a dense float32 gradient (4 B) with the activations.
    assert sign["ternary_parts"]["head"] == 4 * head
    assert ternary["ternary_parts"]["head"] == head * 3 // 4 + 32000 * 8 + 8
    assert sign["head_gradient"] == 4 * head and ternary["head_gradient"] == 0
    # A float head keeps no grad_out: one chunk's log-softmax output and gradient only.
    assert sign["logits_and_loss"] == 8 * 32000 * 2048
    # The block recompute is the larger term either way: the totals differ by the head alone.
    total = llama_memory.ternary_total
    assert total(sign) - total(ternary) == 8 * head - ternary["ternary_parts"]["head"]
    with pytest.raises(ValueError):
        llama_memory.model("7b", head="float")


def test_memory_table_prints_every_preset():
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, "llama_memory.py")],
                            capture_output=True, text=True, check=True, timeout=60)
    assert "not measured" in result.stdout
    for name in llama_memory.PRESETS:
        assert f"| {name} |" in result.stdout


def test_measured_memory_plot(tmp_path):
    pytest.importorskip("matplotlib", reason="python3-matplotlib is not installed")
    runs = {"fits": {"label": "fits", "points": [], "error": None,
                     "final": {"driver_used_gib": 10.5, "max_allocated_gib": 9.0}},
            "oom": {"label": "oom", "points": [], "final": None,
                    "error": {"kind": "out of memory", "driver_used_gib": 79.2,
                              "max_allocated_gib": 77.3}}}
    records = tmp_path / "runs.json"
    records.write_text(json.dumps(runs))
    png = tmp_path / "memory.png"
    result = subprocess.run([sys.executable, os.path.join(EXAMPLES, "llama_memory.py"),
                             "--plot-measured", str(png), "--limit-gb", "12", str(records)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10000


# -- with torch and the package --

def example():
    pytest.importorskip("torch", reason="PyTorch is not installed (Debian: python3-torch)")
    pytest.importorskip("ternarycounter.torch", reason="the ternarycounter package is not built")
    import llama_pretrain
    return llama_pretrain


def test_memory_model_counts_the_tiny_models_buffers():
    llama_pretrain = example()
    import torch
    args = llama_pretrain.parse_args(["--preset", "tiny"])
    args.amp_on = False
    model = llama_pretrain.build_model(args, torch.device("cpu"))
    layers = llama_pretrain.ternary_layers(model)
    assert len(layers) == 2 * 7 + 1
    held = sum(t.numel() * t.element_size() for m in layers
               for t in (m.codes, m.scale, m.v, m.steps))
    parts = llama_memory.model("tiny")["ternary_parts"]
    assert held == parts["projections"] + parts["head"]
    assert model.embed.weight.numel() * 4 == 32000 * 64 * 4
    assert all(m.precision == "int8" for m in layers)
    # --head sign: the projections' buffers and the float head's weights.
    args = llama_pretrain.parse_args(["--preset", "tiny", "--head", "sign"])
    args.amp_on = False
    model = llama_pretrain.build_model(args, torch.device("cpu"))
    held = sum(t.numel() * t.element_size() for m in llama_pretrain.ternary_layers(model)
               for t in (m.codes, m.scale, m.v, m.steps))
    parts = llama_memory.model("tiny", head="sign")["ternary_parts"]
    assert held == parts["projections"]
    assert model.head.weight.numel() * model.head.weight.element_size() == parts["head"]


@needs_bible
def test_tiny_preset_loss_falls(tmp_path):
    example()
    curve = tmp_path / "tiny.json"
    env = dict(os.environ, OMP_PROC_BIND="false")
    result = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, "llama_pretrain.py"), *TINY, "--steps", "40",
         "--log-every", "20", "--curve", str(curve)],
        capture_output=True, text=True, env=env, check=False, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert sum(line.startswith("step=") for line in lines) == 2
    assert lines[-1].startswith("final: label=ternary-int8 steps=40 ")
    record = json.loads(curve.read_text())
    points = record["points"]
    assert [p["step"] for p in points] == [20, 40]
    assert record["error"] is None and record["final"]["steps"] == 40
    assert all(p["rss_gib"] > 0 and p["peak_rss_gib"] >= p["rss_gib"] for p in points)
    # The library's kept scratch (the head's int8 operands: 8 MB of grad_out), beside the RSS.
    assert all(p["scratch_gib"] > 0 for p in points)
    # Uniform over 32,000 tokens is ln 32000 = 10.37 nats. Measured with torch 1.13 on 2 CPU
    # cores, seeds 1, 2, 3: mean loss 6.26, 6.29, 6.36 over steps 1-20 and 2.82, 2.89, 2.89 over
    # steps 21-40. The bounds leave a margin for other builds' rounding.
    assert points[0]["loss"] < 7.5
    assert points[-1]["loss"] < 3.2
    assert points[-1]["loss"] < points[0]["loss"] - 2.5


def chunked_int8_layer():
    """(grad_x of one call over 40 samples, grad_x of two calls over 16 + 24, the layers)."""
    example()
    import torch
    from ternarycounter.torch import TernaryLinear
    g = torch.Generator().manual_seed(3)
    x, grad_y = torch.randn(40, 64, generator=g), torch.randn(40, 96, generator=g)
    whole, parts = (TernaryLinear(64, 96, precision="int8", init_seed=3, seed=5)
                    for _ in range(2))
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    whole(xa).backward(grad_y)
    torch.cat([parts(xb[:16]), parts(xb[16:])]).backward(grad_y)
    return xa.grad, xb.grad, whole, parts


def test_head_lr_is_a_multiple_of_the_projections():
    """--head-lr scales the head's lr and lr_scale; its default is 64 / d_model (1 at the tiny
    preset)."""
    llama_pretrain = example()
    assert llama_pretrain.parse_args(["--preset", "tiny"]).head_lr == 1.0
    assert llama_pretrain.parse_args(["--preset", "1b"]).head_lr == 64 / 2048
    assert llama_pretrain.parse_args(["--preset", "7b", "--head-lr", "0.5"]).head_lr == 0.5
    args = llama_pretrain.parse_args([*TINY, "--batch", "2", "--context", "16", "--steps", "1",
                                      "--log-every", "1", "--head-lr", "0.25", "--warmup", "1"])
    model, _ = llama_pretrain.train(args)
    # The tiny preset's head and q projection both have 64 inputs: the same lr but the factor.
    assert model.head.in_features == model.blocks[0].q.in_features == 64
    assert model.blocks[0].q.lr == args.lr / 64
    assert model.head.lr == args.lr / 64 * 0.25
    assert model.blocks[0].q.lr_scale == args.lr_scale
    assert model.head.lr_scale == args.lr_scale * 0.25


@needs_bible
def test_sign_head_is_float_and_moves_by_its_own_step(monkeypatch):
    """--head sign: the head is a float32 nn.Linear without optimizer state, each weight moved by
    --head-sign-lr (times the schedule's factor) per step; the default step is 2 / d_model."""
    llama_pretrain = example()
    assert llama_pretrain.parse_args(["--preset", "tiny"]).head_sign_lr == 2 / 64
    assert llama_pretrain.parse_args(["--preset", "1b"]).head_sign_lr == 2 / 2048
    import torch
    built = []
    build_model = llama_pretrain.build_model

    def recording(*a, **k):
        model = build_model(*a, **k)
        built.append(model.head.weight.detach().clone())
        return model

    monkeypatch.setattr(llama_pretrain, "build_model", recording)
    args = llama_pretrain.parse_args([*TINY, "--batch", "2", "--context", "16", "--steps", "1",
                                      "--log-every", "1", "--warmup", "1", "--head", "sign",
                                      "--head-sign-lr", "0.125"])
    model, record = llama_pretrain.train(args)
    head = model.head.weight.detach()
    assert head.dtype == torch.float32
    assert all(m is not model.head for m in llama_pretrain.ternary_layers(model))
    assert len(llama_pretrain.ternary_layers(model)) == 2 * 7  # the blocks' projections only
    # One step at the schedule's factor 1 (warmup 1): every weight moved by exactly +-0.125 (the
    # head's gradient is dense: every row's logit enters the softmax).
    step = (head - built[0]).abs()
    assert torch.allclose(step, torch.full_like(step, 0.125), rtol=0, atol=1e-6)
    # No optimizer state: the float parameters and the projections' ternary buffers only.
    floats = sum(p.numel() * 4 for p in llama_pretrain.float_parameters(model))
    ternary = sum(sum(t.numel() * t.element_size() for t in (m.codes, m.scale, m.v, m.steps))
                  for m in llama_pretrain.ternary_layers(model))
    assert record["points"][0]["state_bytes"] == floats + ternary


def test_int8_layer_in_chunks_updates_as_one_call():
    import torch
    whole_grad, parts_grad, whole, parts = chunked_int8_layer()
    assert whole.step == parts.step == 1  # one update from both uses
    assert torch.equal(whole.codes, parts.codes)
    assert whole.scale.numpy().tobytes() == parts.scale.numpy().tobytes()
    assert whole.v.numpy().tobytes() == parts.v.numpy().tobytes()
    assert torch.equal(whole_grad[:16], parts_grad[:16])  # the first chunk starts at m = 0


def test_int8_layer_in_chunks_input_gradient():
    import torch
    whole_grad, parts_grad, _, _ = chunked_int8_layer()
    assert torch.equal(whole_grad[16:], parts_grad[16:])


# Short runs for the bit comparisons: 2 steps of 4 windows of 32 tokens.
SHORT = [*TINY, "--batch", "4", "--steps", "2", "--log-every", "2"]
_runs = {}


def train_states(llama_pretrain, *checkpointing):
    """(ternary states, float parameters, logged loss) after SHORT's steps (cached)."""
    if checkpointing not in _runs:
        model, record = llama_pretrain.train(llama_pretrain.parse_args([*SHORT,
                                                                         *checkpointing]))
        ternary = set(llama_pretrain.ternary_layers(model))
        states = {name: (m.codes.clone(), m.scale.clone(), m.v.clone(), m.step)
                  for name, m in model.named_modules() if m in ternary}
        floats = {name: p.detach().clone() for name, p in model.named_parameters()
                  if not name.endswith("update_trigger")}
        _runs[checkpointing] = states, floats, record["points"][-1]["loss"]
    return _runs[checkpointing]


@needs_bible
@pytest.mark.parametrize("checkpointing", [
    ["--checkpoint", "nonreentrant"],
    ["--checkpoint", "reentrant"],
    # The head and loss in chunks of 100 tokens: the head gets one update from its three uses,
    # and each use's input gradient starts at its chunk's first row.
    ["--checkpoint", "nonreentrant", "--loss-chunk", "100"],
    # The blocks' inputs kept by save_on_cpu (on a CPU a copy in host memory, back as it was).
    ["--checkpoint", "nonreentrant", "--loss-chunk", "100", "--offload-checkpoints"],
    ["--checkpoint", "reentrant", "--offload-checkpoints"],
], ids=["nonreentrant", "reentrant", "nonreentrant-loss-chunk", "offload-loss-chunk",
        "reentrant-offload"])
def test_checkpointing_changes_no_bit(checkpointing):
    checkpointing = tuple(checkpointing)
    llama_pretrain = example()
    import torch
    steps = 2
    plain, plain_floats, plain_loss = train_states(llama_pretrain, "--checkpoint", "none")
    ckpt, ckpt_floats, ckpt_loss = train_states(llama_pretrain, *checkpointing)
    assert plain.keys() == ckpt.keys() and len(plain) == 15
    args = llama_pretrain.parse_args(SHORT)
    args.amp_on = False
    initial = {name: m.codes for name, m in
               llama_pretrain.build_model(args, torch.device("cpu")).named_modules()
               if name in plain}
    for name, (codes, scale, v, step) in plain.items():
        c_codes, c_scale, c_v, c_step = ckpt[name]
        # Exactly one update per backward, with or without checkpointing.
        assert step == c_step == steps, name
        # The updates did something (else equality would prove nothing).
        assert bool((v > 0).any()), f"{name}: v is still 0"
        assert not torch.equal(codes, initial[name]), f"{name}: codes never changed"
        assert torch.equal(codes, c_codes), f"{name}: codes differ"
        assert scale.numpy().tobytes() == c_scale.numpy().tobytes(), f"{name}: scale differs"
        assert v.numpy().tobytes() == c_v.numpy().tobytes(), f"{name}: v differs"
    for name, p in plain_floats.items():
        assert p.numpy().tobytes() == ckpt_floats[name].numpy().tobytes(), f"{name} differs"
    assert plain_loss == ckpt_loss


def test_offloading_saves_each_blocks_input_through_save_on_cpu(monkeypatch):
    """--offload-checkpoints: what save_on_cpu packs in the forward is each block's input and
    nothing else (the rotary tables are no checkpoint input); the backward then runs."""
    llama_pretrain = example()
    import torch
    from torch.autograd.graph import saved_tensors_hooks
    packed, pinned = [], []

    class Recording(saved_tensors_hooks):
        def __init__(self, pin_memory=False):
            pinned.append(pin_memory)
            super().__init__(lambda t: packed.append(t) or t, lambda t: t)

    monkeypatch.setattr(torch.autograd.graph, "save_on_cpu", Recording)
    for checkpoint in ("nonreentrant", "reentrant"):
        args = llama_pretrain.parse_args(["--preset", "tiny", "--context", "16",
                                          "--checkpoint", checkpoint, "--offload-checkpoints"])
        args.amp_on = False
        model = llama_pretrain.build_model(args, torch.device("cpu"))
        idx = torch.randint(0, 256, (2, 16)) + llama_pretrain.BYTE_TOKEN_OFFSET
        packed.clear()
        loss = model.loss(idx, idx)
        assert pinned[-1] is True
        inputs = [tuple(t.shape) for t in packed if t.numel()]
        assert inputs == [(2, 16, 64)] * 2, checkpoint
        loss.backward()
        assert all(m.step == 1 for m in llama_pretrain.ternary_layers(model))
    with pytest.raises(SystemExit):
        llama_pretrain.parse_args(["--checkpoint", "none", "--offload-checkpoints"])


@needs_bible
@pytest.mark.parametrize("baseline, bytes_per_parameter", [
    ("adamw-bf16", 2 + 2 + 2),  # bf16 weight, bf16 moments (the gradient is freed after the step)
    ("adamw-amp", 4 + 4 + 4),  # float32 master weight and moments
])
def test_baselines_hold_their_moments(baseline, bytes_per_parameter):
    llama_pretrain = example()
    args = llama_pretrain.parse_args([*TINY, "--batch", "2", "--context", "16", "--steps", "1",
                                      "--log-every", "1", "--baseline", baseline])
    model, record = llama_pretrain.train(args)
    assert not llama_pretrain.ternary_layers(model)
    params = sum(p.numel() for p in model.parameters())
    assert params == llama_memory.model("tiny")["parameters"]
    # ... plus AdamW's step count per parameter tensor (a scalar tensor: 4 or 8 B).
    extra = record["points"][0]["state_bytes"] - bytes_per_parameter * params
    assert 0 < extra <= 8 * len(list(model.parameters()))
    assert record["final"]["loss"] < 11.0


@needs_bible
def test_out_of_memory_is_reported(tmp_path, monkeypatch, capsys):
    llama_pretrain = example()
    import torch
    real_step = llama_pretrain.train_step
    calls = []

    def step_then_fail(*args):
        calls.append(None)
        if len(calls) == 2:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_step(*args)

    monkeypatch.setattr(llama_pretrain, "train_step", step_then_fail)
    curve = tmp_path / "oom.json"
    status = llama_pretrain.main([*TINY, "--batch", "2", "--context", "16", "--steps", "3",
                                  "--log-every", "1", "--curve", str(curve)])
    assert status == llama_pretrain.OOM_EXIT_STATUS != 0
    out = capsys.readouterr().out
    assert "error: out of memory at step 2" in out
    assert "Tried to allocate 2.00 GiB" in out
    record = json.loads(curve.read_text())
    assert record["error"]["phase"] == "step 2" and record["final"] is None
    assert [p["step"] for p in record["points"]] == [1]


def test_memory_model_counts_what_a_block_saves(monkeypatch):
    """One tiny block under bf16 autocast, with an attention that keeps q, k, v and its output
    as the fused kernels do: the bytes it saves for its backward per token are the memory
    model's block_recompute."""
    llama_pretrain = example()
    import torch
    from torch.autograd.graph import saved_tensors_hooks
    attention = llama_pretrain.attention

    class KeepsInputsAndOutput(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v):
            out = attention(q, k, v)
            ctx.save_for_backward(q, k, v, out)
            return out

    args = llama_pretrain.parse_args(["--preset", "tiny", "--context", "16"])
    args.amp_on = True
    model = llama_pretrain.build_model(args, torch.device("cpu"))
    monkeypatch.setattr(llama_pretrain, "attention", KeepsInputsAndOutput.apply)
    b, t, d = 2, 16, 64
    x = torch.randn(b, t, d, dtype=torch.bfloat16, requires_grad=True)
    saved = {}

    def pack(tensor):
        # Per-token tensors only ([b, ...] or [b t, ...]); the rotary tables' casts ([t, hd]),
        # parameters and the grouped heads' int64 index are not per token.
        if tensor.dim() and tensor.shape[0] in (b, b * t) and tensor.dtype != torch.int64:
            storage = tensor.untyped_storage() if hasattr(tensor, "untyped_storage") \
                else tensor.storage()
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    with saved_tensors_hooks(pack, lambda tensor: tensor), \
            torch.autocast("cpu", dtype=torch.bfloat16):
        model.blocks[0](x, model.cos, model.sin)
    parameters = {p.data_ptr() for p in model.parameters()}
    per_token = sum(n for ptr, n in saved.items() if ptr not in parameters) / (b * t)
    assert per_token == llama_memory.per_token(llama_memory.PRESETS["tiny"])["block_recompute"]
