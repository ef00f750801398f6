#!/usr/bin/env python3
"""Pretraining a LLaMA-shaped decoder whose projections are ternarycounter's TernaryLinear
(int8), against the same model trained by AdamW in pure BF16 or under BF16 autocast.

The model: token embedding, --layers blocks of RMSNorm -> attention with rotary positions and
grouped-query heads (n_kv_heads key/value heads shared by groups of query heads) -> residual,
RMSNorm -> SwiGLU MLP (down(silu(gate(x)) * up(x))) -> residual, then a final RMSNorm and the
output head. Attention is torch.nn.functional.scaled_dot_product_attention (causal), or an
explicit softmax attention on a torch without it (1.13). Presets (llama_memory.PRESETS): 70b,
7b, 1b (TinyLlama-1.1B's shape: 22 layers, d 2048, 32 query / 4 key-value heads, MLP 5632) and
tiny (CI: seconds on two CPU cores); all have LLaMA's 32,000-entry vocabulary.

Ternary model (the default): q, k, v, o, gate, up, down and the head are TernaryLinear with
precision int8: 0.75 byte per weight + 8 bytes per row of training state, updated inside
loss.backward(), no optimizer. The head is ternary because it is large: 32,000 x d_model weights
(131 M at 7b), which AdamW would hold at 16 B each (2.1 GB at 7b, 43% of the 7b projections'
ternary state) and a TernaryLinear at 0.75 B (0.1 GB). Each TernaryLinear's lr is --lr / fan-in:
an update moves a row's weights together, so a row's output moves with its fan-in, and one lr
for every width does not train both the tiny and the wide presets (the 1b preset cut to one
block, batch 4 x 32 on the CPU: a fixed lr of 0.003 blew the residual stream up to an RMS of
about 2,000 within 15 steps and 0.001 diverged too, loss above 40 by step 30; 0.64 / fan-in
trains, as 0.01 does at the tiny preset's 64 inputs). The head's lr is --head-lr times that,
by default 64 / d_model, so that it shrinks with width once more, as muP's output layer does: its
32,000 rows see nearly the same input direction early on, so their flips come together and move
every token's logits at once; at the projections' lr they make the loss of the wide presets jump
far above its start, while the tiny preset learns best at 1 (docs/MEMORY.md, "where the
excursions come from"). The head's lr_scale is --lr-scale times the same factor: the row scale's
step is SGD on the raw gradient (SPEC §3), whose curvature grows with the head's width once its
rows line up with their inputs: at the 70b preset with the full lr_scale some of the head's
scales fall to their floor (1e-5) within 6 steps and the loss jumps to 35-86 nats. --head sign
makes the head a float32 nn.Linear instead, trained by the embedding's sign rule (below) at
--head-sign-lr, by default 2 / d_model (it shrinks with width as the ternary head's lr does):
4 B per weight and no optimizer state (0.5 GB at 7b and 1 GB at 70b, and its float gradient
during the step). On a CPU proxy of the 1b preset it ends 0.30 nats below the ternary head,
0.03 above AdamW; on an H100 the 1b preset ends at 2.71 against 3.16 (AdamW 2.08; docs/MEMORY.md,
"The head"). The embedding is a float32 table trained by a stateless sign rule (w[token] -= lr *
sign(grad) for the tokens of the batch, from a sparse gradient): 4 B per weight and no optimizer
state. A ternary embedding would be a TernaryLinear over one-hot rows, a [tokens, 32000] x
[32000, d] product per step for what is a row lookup; the lookup costs nothing and the table is
0.5 GB at 7b. The RMSNorm gains take the same sign rule (no state).

Baselines (the same model with nn.Linear projections and head, the same data and
checkpointing): --baseline adamw-bf16 holds every parameter in bfloat16 and steps
torch.optim.AdamW, whose moments take the parameters' dtype (bf16), fused where torch has it;
--baseline adamw-amp holds float32 parameters (the master weights) and runs the forward under
BF16 autocast, AdamW with float32 moments. A CUDA out-of-memory error (the AMP baseline at 7b on
an 80 GB GPU) is printed, kept in --curve and ends the run with exit status 3.

Data: the King James text that Debian's bible-kjv prints (char_lm.py's lookup: `bible -f
Gen1:1-Rev22:21`, verse references dropped) or --text FILE, as UTF-8 bytes; byte b is token
3 + b, the place of LLaMA's byte-fallback tokens <0x00>..<0xFF>, and the embedding and head keep
all 32,000 rows. The last tenth is held out (--eval-batches). Batches are drawn with a CPU
generator seeded by --seed: the same windows in the same order on any device.

Activation checkpointing (--checkpoint, default nonreentrant): each block runs under
torch.utils.checkpoint, so only the blocks' inputs stay between forward and backward and each
block's forward runs again in the backward. A TernaryLinear trains once per backward from the
inputs of the forward: the recomputed forward sees the same state (the layer's update comes
after its own backward) and the same inputs, so checkpointing changes no bit of the training
(python/tests/test_llama_example.py compares the states). --offload-checkpoints keeps those
inputs in pinned host memory (torch.autograd.graph.save_on_cpu around the blocks' forward; the
recompute in backward copies each back and runs outside it), so the GPU holds one at a time: the
7b preset at 8 x 2048 tokens with --loss-chunk 2048 then needs about 9.6 GB by llama_memory.py's
count instead of 13.8 GB (docs/MEMORY.md). Where torch's non-reentrant checkpoint keeps its
inputs outside autograd's saved tensors (torch < 2.1), the blocks run under the reentrant one,
which saves them (the same bits). --loss-chunk N computes the final norm, head and loss N tokens
at a time under (non-reentrant) checkpointing, so the logits of only N tokens exist at once; the
head, used once per chunk, still gets one update per backward from all its uses and the input
gradient of one use: each use's int8 rounding of grad_out starts at its chunk's first row, so
the chunks change no bit either.

Lines (every --log-every steps): step, mean training loss since the last line, tokens/s, and on
CUDA torch.cuda.max_memory_allocated and the memory the driver counts in use
(torch.cuda.mem_get_info: torch's cache, the contexts and Kokkos' own allocations), on the CPU
the process's resident set size and its peak; with the ternary model also scratch_gib, the
scratch ternarycounter keeps on the device between calls (ternarycounter.scratch_bytes), which
torch's counters do not see. --curve FILE.json keeps them; --plot FILE.png
A.json B.json ... draws the runs' loss against steps and seconds.

    PYTHONPATH=build/cuda/python python3 python/examples/llama_pretrain.py --preset 7b \
        --batch 1 --steps 200 --curve ternary-7b.json
    python3 python/examples/llama_pretrain.py --preset 7b --baseline adamw-bf16 --curve bf16.json
    python3 python/examples/llama_pretrain.py --plot llama.png ternary-7b.json bf16.json

llama_memory.py computes each part's memory from the preset shapes.
"""

import argparse
import contextlib
import functools
import json
import math
import os
import resource
import sys
import time

os.environ.setdefault("OMP_WAIT_POLICY", "passive")  # see python/README.md: two thread pools

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch.utils.checkpoint  # noqa: E402
from torch import nn  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import curves  # noqa: E402
import update_options  # noqa: E402
from llama_memory import PRESETS  # noqa: E402

BYTE_TOKEN_OFFSET = 3  # LLaMA's <0x00> is token 3 (after <unk>, <s>, </s>)
OOM_EXIT_STATUS = 3
HEAD_LR_WIDTH = 64  # the width at which the head's lr is the projections' (the tiny preset's)
OutOfMemory = getattr(torch.cuda, "OutOfMemoryError", MemoryError)  # torch >= 1.13


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--preset", choices=list(PRESETS), default="tiny")
    p.add_argument("--layers", type=int, default=None, help="override the preset's")
    p.add_argument("--baseline", choices=["adamw-bf16", "adamw-amp"], default=None)
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    p.add_argument("--amp", choices=["auto", "on", "off"], default="auto",
                   help="BF16 autocast of the ternary model: auto = on CUDA only (adamw-amp: "
                        "always on; adamw-bf16: never, its parameters are bf16)")
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--context", type=int, default=None, help="default: the preset's")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--eval-batches", type=int, default=0,
                   help="held-out batches scored at each line (0: none)")
    p.add_argument("--checkpoint", choices=["nonreentrant", "reentrant", "none"],
                   default="nonreentrant", help="per-block activation checkpointing")
    p.add_argument("--loss-chunk", type=int, default=0,
                   help="tokens per chunk of the head and loss (0: all at once)")
    p.add_argument("--offload-checkpoints", action="store_true",
                   help="keep the checkpointed block inputs in pinned host memory "
                        "(torch.autograd.graph.save_on_cpu): the GPU holds one at a time")
    p.add_argument("--lr", type=float, default=0.64,
                   help="the TernaryLinear layers' lr times their fan-in: a layer of n inputs "
                        "gets lr / n (0.01 at 64 inputs, 1.6e-4 at 4096)")
    p.add_argument("--head-lr", type=float, default=None,
                   help="the ternary head's lr and lr_scale as multiples of the projections' "
                        "(--lr / fan-in, --lr-scale); default 64 / d_model (1 at the tiny preset, "
                        "1/32 at 1b)")
    p.add_argument("--head", choices=["ternary", "sign"], default="ternary",
                   help="the ternary model's head: a TernaryLinear (0.75 B per weight), or "
                        "float32 weights trained by the embedding's stateless sign rule at "
                        "--head-sign-lr (4 B per weight, no optimizer state)")
    p.add_argument("--head-sign-lr", type=float, default=None,
                   help="with --head sign: the head's sign-rule step; default 2 / d_model "
                        "(0.031 at the tiny preset, 9.8e-4 at 1b)")
    p.add_argument("--lr-scale", type=float, default=0.02, help="the TernaryLinear lr_scale")
    p.add_argument("--C", type=int, default=8, help="the TernaryLinear counter depth")
    update_options.add_update_options(p)
    p.add_argument("--sign-lr", type=float, default=3e-3,
                   help="the embedding's and norm gains' sign-rule step (ternary model)")
    p.add_argument("--adam-lr", type=float, default=3e-4, help="the baselines' AdamW lr")
    p.add_argument("--weight-decay", type=float, default=0.1, help="AdamW's, on matrices")
    p.add_argument("--warmup", type=int, default=10, help="linear warmup steps of every lr")
    p.add_argument("--min-lr-ratio", type=float, default=0.1,
                   help="the cosine decay ends at this fraction of the lr")
    p.add_argument("--text", default=None, help="a text file instead of bible-kjv's text")
    p.add_argument("--limit-bytes", type=int, default=0, help="use the first N bytes only")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--curve", default=None, help="write the lines' figures to this JSON file")
    p.add_argument("--label", default=None, help="the run's name in --curve and the plot")
    p.add_argument("--plot", default=None,
                   help="draw the --curve files given as arguments into this PNG, then exit")
    p.add_argument("curves", nargs="*", help="with --plot: the --curve JSON files")
    args = p.parse_args(argv)
    if args.plot is None and args.curves:
        p.error("curve files are arguments of --plot only")
    args.shape = dict(PRESETS[args.preset])
    if args.layers is not None:
        args.shape["layers"] = args.layers
    if args.context is None:
        args.context = args.shape["context"]
    if args.head_lr is None:
        args.head_lr = HEAD_LR_WIDTH / args.shape["d_model"]
    if args.head_sign_lr is None:
        args.head_sign_lr = 2.0 / args.shape["d_model"]
    for name in ("steps", "batch", "context", "log_every"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.offload_checkpoints and args.checkpoint == "none":
        p.error("--offload-checkpoints moves what --checkpoint keeps: not with --checkpoint none")
    return args


def say(*parts):
    print(*parts, flush=True)


# -- data --

def load_bytes(args):
    """The training text as UTF-8 bytes: --text FILE, else char_lm.py's bible-kjv text."""
    if args.text:
        with open(args.text, "rb") as f:
            data = f.read()
    else:
        import subprocess
        from char_lm import BIBLE_COMMAND, VERSE_REFERENCE
        try:
            printed = subprocess.run(BIBLE_COMMAND, capture_output=True, text=True,
                                     check=True).stdout
        except (OSError, subprocess.CalledProcessError) as e:
            sys.exit(f"llama_pretrain.py: can't run {' '.join(BIBLE_COMMAND)} ({e}): install "
                     f"Debian's bible-kjv package or pass --text FILE")
        data = VERSE_REFERENCE.sub("", printed).encode("utf-8")
    if args.limit_bytes:
        data = data[:args.limit_bytes]
    return data


def tokens_of(data):
    """Byte b -> token 3 + b (int16: the 32,000-entry vocabulary's byte-fallback ids)."""
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).to(torch.int16) \
        + BYTE_TOKEN_OFFSET


def batch_starts(count, batch, limit, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, limit, (count, batch), generator=g)


def window(tokens, starts, context):
    idx = starts[:, None] + torch.arange(context + 1)
    chunk = tokens[idx].long()
    return chunk[:, :-1], chunk[:, 1:]


# -- model --

def autocast_dtype(device_type):
    if hasattr(torch, "get_autocast_dtype"):  # torch >= 2.4
        return torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) \
            else None
    if device_type == "cuda":
        return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None
    return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-5, device=None, dtype=None):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d, device=device, dtype=dtype))

    def forward(self, x):
        out = autocast_dtype(x.device.type) or x.dtype
        xf = x.float()
        # (xf * xf).sum / d, not xf.pow(2).mean: the backward then keeps xf and y only (torch
        # 1.13's mean keeps its input, a third float32 copy of the activations).
        mean_square = (xf * xf).sum(-1, keepdim=True) * (1.0 / x.shape[-1])
        y = xf * torch.rsqrt(mean_square + self.eps)
        return (y * self.weight.float()).to(out)


def rotary_tables(head_dim, context, device, base=10000.0):
    """cos, sin [context, head_dim] of LLaMA's rotary positions (halves rotated together)."""
    inv = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(context, dtype=torch.float32), inv)
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos().to(device), angles.sin().to(device)


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    turned = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + turned * sin


def attention(q, k, v):
    """Causal attention of q [b, h, t, hd] over k, v [b, h, t, hd]."""
    if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    t = q.shape[-2]
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    mask = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
    return scores.masked_fill(mask, float("-inf")).softmax(-1) @ v


class Block(nn.Module):
    def __init__(self, shape, linear, norm):
        super().__init__()
        d, self.heads, self.kv_heads = shape["d_model"], shape["heads"], shape["kv_heads"]
        self.head_dim = d // self.heads
        kv = self.kv_heads * self.head_dim
        self.attn_norm, self.mlp_norm = norm(d), norm(d)
        self.q, self.k, self.v = linear(d, d, False), linear(d, kv, False), linear(d, kv, False)
        self.o = linear(d, d, True)
        self.gate, self.up = linear(d, shape["d_ff"], False), linear(d, shape["d_ff"], False)
        self.down = linear(shape["d_ff"], d, True)

    def forward(self, x, cos, sin):
        b, t, d = x.shape
        h = self.attn_norm(x)
        q = self.q(h).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(h).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = cos[:t].to(q.dtype), sin[:t].to(q.dtype)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        if self.kv_heads != self.heads:  # grouped-query: each kv head serves a group
            group = self.heads // self.kv_heads
            k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        a = attention(q, k, v).transpose(1, 2).reshape(b, t, d)
        x = x + self.o(a).to(x.dtype)
        h = self.mlp_norm(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h)).to(x.dtype)


@functools.lru_cache(maxsize=None)
def checkpoint_saves_inputs():
    """Whether torch's non-reentrant checkpoint saves its inputs as autograd saved tensors, which
    save_on_cpu moves (torch >= 2.1); torch 1.13's keeps them in a closure, out of its reach, where
    the reentrant checkpoint saves them."""
    packed = []
    x = torch.zeros(4, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        torch.utils.checkpoint.checkpoint(lambda t: t * 2, x, use_reentrant=False)
    return any(t.data_ptr() == x.data_ptr() for t in packed)


class Llama(nn.Module):
    def __init__(self, shape, context, linear, norm, embedding, head, residual_dtype, checkpoint,
                 loss_chunk, device, progress=None, offload=False):
        super().__init__()
        self.shape, self.checkpoint, self.loss_chunk = shape, checkpoint, loss_chunk
        self.offload = offload and checkpoint != "none"
        # Offloading needs the block inputs among autograd's saved tensors: where torch's
        # non-reentrant checkpoint keeps them elsewhere (torch < 2.1) the blocks take the
        # reentrant one, which saves them; the bits are the same (test_llama_example.py).
        self.reentrant_blocks = checkpoint == "reentrant" or (
            self.offload and not checkpoint_saves_inputs())
        self.residual_dtype = residual_dtype
        self.embed = embedding
        blocks = []
        for i in range(shape["layers"]):
            blocks.append(Block(shape, linear, norm))
            if progress:
                progress(i + 1, shape["layers"])
        self.blocks = nn.ModuleList(blocks)
        self.norm = norm(shape["d_model"])
        self.head = head(shape["d_model"], shape["vocab"])
        cos, sin = rotary_tables(shape["d_model"] // shape["heads"], context, device)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def _checkpointed(self):
        return self.checkpoint != "none" and self.training and torch.is_grad_enabled()

    def hidden(self, idx):
        x = self.embed(idx).to(self.residual_dtype)
        checkpointed = self._checkpointed()
        # Offloaded, each checkpoint's saved input (its block's input) is copied to pinned host
        # memory as it is saved and back for the block's recompute, which runs in backward,
        # outside this context: its own saved tensors stay on the device. The rotary tables are
        # no checkpoint input (partial), so they are not copied once per block.
        offloading = torch.autograd.graph.save_on_cpu(pin_memory=True) \
            if checkpointed and self.offload else contextlib.nullcontext()
        with offloading:
            for block in self.blocks:
                if checkpointed:
                    x = torch.utils.checkpoint.checkpoint(
                        functools.partial(block, cos=self.cos, sin=self.sin), x,
                        use_reentrant=self.reentrant_blocks, preserve_rng_state=False)
                else:
                    x = block(x, self.cos, self.sin)
        return x

    def _loss_sum(self, x, targets):
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1),
                               reduction="sum")

    def loss(self, idx, targets):
        """Mean cross-entropy over the batch's tokens (nats)."""
        x = self.hidden(idx).reshape(-1, self.shape["d_model"])
        targets = targets.reshape(-1)
        n = targets.numel()
        if not self.loss_chunk or self.loss_chunk >= n or not self._checkpointed():
            return self._loss_sum(x, targets) / n
        total = None
        for first in range(0, n, self.loss_chunk):
            part = torch.utils.checkpoint.checkpoint(
                self._loss_sum, x[first:first + self.loss_chunk],
                targets[first:first + self.loss_chunk], use_reentrant=False,
                preserve_rng_state=False)
            total = part if total is None else total + part
        return total / n


def build_model(args, device, progress=None):
    """The Llama of args on device: ternary (TernaryLinear int8 projections and head, fp32
    embedding) or a baseline (nn.Linear; bf16 or fp32 parameters)."""
    shape = args.shape
    torch.manual_seed(args.seed)
    residual_gain = 1.0 / math.sqrt(2 * shape["layers"])  # outputs into the residual stream
    param_dtype = torch.bfloat16 if args.baseline == "adamw-bf16" else torch.float32
    made = []

    if args.baseline:
        def linear(n_in, n_out, residual):
            layer = nn.Linear(n_in, n_out, bias=False, device=device, dtype=param_dtype)
            nn.init.normal_(layer.weight, 0.0, 0.02 * (residual_gain if residual else 1.0))
            return layer
    else:
        from ternarycounter.torch import TernaryLinear

        def linear(n_in, n_out, residual):
            made.append(None)
            number = args.seed * 10000 + len(made)
            gain = residual_gain if residual else 1.0
            return TernaryLinear(n_in, n_out, C=args.C, lr=args.lr / n_in, lr_scale=args.lr_scale,
                                 precision="int8", seed=number, init_seed=number,
                                 **update_options.update_settings(args),
                                 init_scale=gain / math.sqrt(2.0 * n_in / 3.0), device=device)

    def norm(d):
        return RMSNorm(d, device=device, dtype=param_dtype)

    embedding = nn.Embedding(shape["vocab"], shape["d_model"], sparse=not args.baseline,
                             device=device, dtype=param_dtype)
    nn.init.normal_(embedding.weight, 0.0, 1.0 if not args.baseline else 0.02)
    residual_dtype = torch.bfloat16 if (args.baseline == "adamw-bf16" or args.amp_on) \
        else torch.float32
    def head(n_in, n_out):
        if args.baseline or args.head == "ternary":
            return linear(n_in, n_out, False)
        layer = nn.Linear(n_in, n_out, bias=False, device=device, dtype=param_dtype)
        nn.init.normal_(layer.weight, 0.0, 0.02)
        return layer

    model = Llama(shape, args.context, linear, norm, embedding, head, residual_dtype,
                  args.checkpoint, args.loss_chunk, device, progress,
                  offload=args.offload_checkpoints)
    if not args.baseline and args.head == "ternary":
        model.head.lr_scale = args.lr_scale * args.head_lr  # its lr takes --head-lr in train()
    return model


def ternary_layers(model):
    if "ternarycounter.torch" not in sys.modules:  # the baselines run without the package
        return []
    from ternarycounter.torch import TernaryLinear
    return [m for m in model.modules() if isinstance(m, TernaryLinear)]


def float_parameters(model):
    return [p for name, p in model.named_parameters() if not name.endswith("update_trigger")]


class SignRule:
    """The ternary model's float parameters (embedding, norm gains, a --head sign head):
    p -= lr * sign(grad), no state; a sparse gradient (the embedding's) moves only its rows, once
    per distinct row. The head takes --head-sign-lr, the others --sign-lr."""

    def __init__(self, model, args):
        ternary_head = any(m is model.head for m in ternary_layers(model))
        head = [] if ternary_head else [model.head.weight]
        rest = [p for p in float_parameters(model) if not any(p is h for h in head)]
        self.groups = [(rest, "sign_lr"), (head, "head_sign_lr")]
        self.lrs = [getattr(args, name) for _, name in self.groups]

    @torch.no_grad()
    def step(self):
        for (params, _), lr in zip(self.groups, self.lrs):
            for p in params:
                g = p.grad
                if g is None:
                    continue
                if g.is_sparse:
                    g = g.coalesce()
                    p.index_add_(0, g.indices()[0], g.values().sign(), alpha=-lr)
                else:
                    p.add_(g.sign(), alpha=-lr)

    def zero_grad(self, set_to_none=True):
        for params, _ in self.groups:
            for p in params:
                p.grad = None

    def set_lr(self, factor, args):
        self.lrs = [getattr(args, name) * factor for _, name in self.groups]


class AdamW:
    """torch.optim.AdamW over the baseline's parameters (weight decay on matrices), fused where
    this torch and device have it; its moments take the parameters' dtype."""

    def __init__(self, model, args, device):
        import inspect
        decay = [p for p in model.parameters() if p.dim() == 2]
        other = [p for p in model.parameters() if p.dim() != 2]
        groups = [{"params": decay, "weight_decay": args.weight_decay},
                  {"params": other, "weight_decay": 0.0}]
        options = dict(lr=args.adam_lr, betas=(0.9, 0.95))
        self.fused = device.type == "cuda" and \
            "fused" in inspect.signature(torch.optim.AdamW).parameters
        self.opt = torch.optim.AdamW(groups, fused=True, **options) if self.fused \
            else torch.optim.AdamW(groups, **options)

    def step(self):
        self.opt.step()

    def zero_grad(self, set_to_none=True):
        self.opt.zero_grad(set_to_none=True)

    def set_lr(self, factor, args):
        for group in self.opt.param_groups:
            group["lr"] = args.adam_lr * factor

    def state_bytes(self):
        return sum(t.numel() * t.element_size() for s in self.opt.state.values()
                   for t in s.values() if isinstance(t, torch.Tensor))


def lr_factor(step, args):
    if step < args.warmup:
        return (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.min_lr_ratio + (1 - args.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def train_step(model, optimizer, inputs, targets, args):
    """Forward, loss, backward (which updates the ternary layers), the float rule's step."""
    with torch.autocast(inputs.device.type, dtype=torch.bfloat16, enabled=args.amp_on):
        loss = model.loss(inputs, targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


@torch.no_grad()
def evaluate(model, tokens, starts, args):
    model.eval()
    total = 0.0
    for i in range(0, starts.shape[0], args.batch):
        inputs, targets = window(tokens, starts[i:i + args.batch], args.context)
        with torch.autocast(inputs.device.type, dtype=torch.bfloat16, enabled=args.amp_on):
            total += float(model.loss(inputs.to(args.device_), targets.to(args.device_)))
    model.train()
    return total / math.ceil(starts.shape[0] / args.batch)


# -- memory figures --

def rss_gib():
    """(resident set size, its peak) of this process in GiB."""
    current = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                current = int(line.split()[1]) * 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return current / 2**30, peak / 2**30


def memory_fields(device):
    """torch's counters (CUDA) or the process's resident set (CPU), and the ternary layers'
    scratch that ternarycounter keeps on the device between calls, which torch does not count."""
    if device.type == "cuda":
        free, total = torch.cuda.mem_get_info(device)
        fields = dict(max_allocated_gib=round(torch.cuda.max_memory_allocated(device) / 2**30, 3),
                      driver_used_gib=round((total - free) / 2**30, 3))
    else:
        current, peak = rss_gib()
        fields = dict(rss_gib=round(current, 3), peak_rss_gib=round(peak, 3))
    if "ternarycounter" in sys.modules:  # the baselines run without the package
        scratch = sys.modules["ternarycounter"].scratch_bytes(device)
        fields["scratch_gib"] = round(scratch / 2**30, 3)
    return fields


def state_bytes(model, optimizer):
    """Bytes of training state: ternary buffers, float parameters and optimizer moments."""
    total = 0
    for layer in ternary_layers(model):
        total += sum(t.numel() * t.element_size() for t in (layer.codes, layer.scale, layer.v,
                                                            layer.steps))
    total += sum(p.numel() * p.element_size() for p in float_parameters(model))
    if isinstance(optimizer, AdamW):
        total += optimizer.state_bytes()
    return total


def describe(args):
    return args.baseline or "ternary-int8"


# -- the run --

def train(args):
    """Trains args' model; returns (model, points, final)."""
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    args.device_ = device
    args.amp_on = args.baseline == "adamw-amp" or (
        args.baseline is None and (args.amp == "on" or (args.amp == "auto" and
                                                        device.type == "cuda")))
    label = args.label or describe(args)
    shape = args.shape
    data = load_bytes(args)
    tokens = tokens_of(data)
    split = len(tokens) * 9 // 10
    if split - args.context - 1 < 1 or len(tokens) - split <= args.context + 1:
        sys.exit("llama_pretrain.py: the text is too short for a window of --context tokens")
    train_tokens, held_out = tokens[:split], tokens[split:]
    starts = batch_starts(args.steps, args.batch, split - args.context - 1, args.seed)
    eval_starts = batch_starts(1, args.eval_batches * args.batch,
                               len(held_out) - args.context - 1, 12345)[0]
    offload = ""
    if args.offload_checkpoints:
        offload = " (inputs in pinned host memory" + (
            "" if args.checkpoint == "reentrant" or checkpoint_saves_inputs() else
            "; blocks reentrant: this torch's non-reentrant checkpoint keeps its inputs out of "
            "save_on_cpu's reach") + ")"
    say(f"{label}: preset {args.preset} ({shape['layers']} layers, d_model {shape['d_model']}, "
        f"{shape['heads']} heads / {shape['kv_heads']} kv, MLP {shape['d_ff']}, vocabulary "
        f"{shape['vocab']}), context {args.context}, batch {args.batch}, {args.steps} steps on "
        f"{device}{' (bf16 autocast)' if args.amp_on else ''}, checkpoint {args.checkpoint}"
        f"{offload}, {len(data)} bytes of text")
    record = dict(label=label, preset=args.preset, shape=shape, device=(
        torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"),
        torch=torch.__version__, argv=sys.argv[1:], points=[], final=None, error=None)
    model = optimizer = None
    phase = "building the model"
    try:
        started = time.perf_counter()
        last_note = [started]

        def progress(done, total):
            now = time.perf_counter()
            if now - last_note[0] > 10 or done == total:
                say(f"  built {done}/{total} blocks ({now - started:.0f} s)")
                last_note[0] = now

        model = build_model(args, device, progress)
        if args.baseline:
            optimizer = AdamW(model, args, device)
        else:
            optimizer = SignRule(model, args)
        say(f"model built in {time.perf_counter() - started:.1f} s: "
            f"{sum(p.numel() for p in float_parameters(model)) / 1e6:.1f} M float parameters, "
            f"{sum(m.in_features * m.out_features for m in ternary_layers(model)) / 1e6:.1f} M "
            f"ternary weights" + (", fused AdamW" if getattr(optimizer, "fused", False) else ""))
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        losses, since = torch.zeros((), device=device), 0
        seconds = 0.0
        per_step = args.batch * args.context
        synchronize(device)
        mark = time.perf_counter()
        for step in range(args.steps):
            phase = f"step {step + 1}"
            factor = lr_factor(step, args)
            optimizer.set_lr(factor, args)
            moment = update_options.moment_factor(args, step)
            for layer in ternary_layers(model):
                gain = args.head_lr if layer is model.head else 1.0
                layer.lr = args.lr / layer.in_features * factor * moment * gain
            inputs, targets = window(train_tokens, starts[step], args.context)
            losses += train_step(model, optimizer, inputs.to(device), targets.to(device), args)
            since += 1
            done = step + 1
            if done == 1 and args.log_every > 1:  # progress before the first line
                synchronize(device)
                say(f"  first step done in {time.perf_counter() - mark:.1f} s")
            if done % args.log_every == 0 or done == args.steps:
                synchronize(device)
                elapsed = time.perf_counter() - mark
                seconds += elapsed
                point = dict(step=done, loss=round(float(losses) / since, 4),
                             tokens_per_s=round(since * per_step / elapsed, 1),
                             seconds=round(seconds, 3))
                if args.eval_batches:
                    point["held_out_loss"] = round(evaluate(model, held_out, eval_starts, args), 4)
                point.update(memory_fields(device))
                point["state_bytes"] = state_bytes(model, optimizer)
                record["points"].append(point)
                say(" ".join(f"{k}={v}" for k, v in point.items()))
                write_curve(args, record)
                losses.zero_()
                since = 0
                synchronize(device)
                mark = time.perf_counter()
    except RuntimeError as e:  # torch.cuda.OutOfMemoryError, or a failed Kokkos allocation
        text = str(e).lower()
        if not (isinstance(e, OutOfMemory) or "out of memory" in text
                or "failed to allocate" in text):
            raise
        message = str(e).strip().splitlines()[0]
        record["error"] = dict(kind="out of memory", phase=phase, message=message,
                               **memory_fields(device))
        say(f"error: out of memory while {phase}" if phase.startswith("building")
            else f"error: out of memory at {phase}")
        say(f"error: {message}")
        say("error: " + " ".join(f"{k}={v}" for k, v in memory_fields(device).items()))
        write_curve(args, record)
        return model, record
    points = record["points"]
    total_tokens = args.steps * args.batch * args.context
    record["final"] = dict(label=label, steps=args.steps, loss=points[-1]["loss"],
                           tokens_per_s=round(total_tokens / seconds, 1),
                           seconds=round(seconds, 2), state_bytes=points[-1]["state_bytes"],
                           **({k: max(p[k] for p in points) for k in points[-1]
                               if k.endswith("_gib")}))
    say("final: " + " ".join(f"{k}={v}" for k, v in record["final"].items()))
    write_curve(args, record)
    return model, record


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def write_curve(args, record):
    if args.curve:
        with open(args.curve, "w") as f:
            json.dump(record, f, indent=1)


def plot(path, curve_paths):
    def name_of(run):
        memory = [p.get("max_allocated_gib", p.get("peak_rss_gib")) for p in run["points"]]
        name = f"{run['label']} ({run['preset']}, peak {max(memory):.1f} GiB)"
        return name + (": " + run["error"]["kind"] if run.get("error") else "")
    curves.plot_runs(path, curve_paths, "loss", "training loss (nats/byte)",
                     "llama_pretrain.py: training loss", name_of, log_scale=True)


def main(argv=None):
    args = parse_args(argv)
    if args.plot:
        if not args.curves:
            sys.exit("llama_pretrain.py: --plot needs --curve JSON files as arguments")
        plot(args.plot, args.curves)
        return 0
    _, record = train(args)
    return OOM_EXIT_STATUS if record["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
