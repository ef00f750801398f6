#!/usr/bin/env python3
"""A character-level GPT on the King James Bible or on the Linux kernel's C source, with
ternarycounter's TernaryLinear as every attention projection and MLP layer (token and position
embeddings, LayerNorm and the output head stay torch's, trained by AdamW), or with nn.Linear and
AdamW everywhere (--baseline adamw).

--corpus kjv (the default: 4.1 MB, the small case) is the text Debian's bible-kjv package prints
(`bible -f Gen1:1-Rev22:21`, the verse references dropped). --corpus kernel is 67 MB of C: the
.c and .h files of Debian's linux-source-6.1 that python/examples/data/kernel_corpus.list names,
concatenated, as make_kernel_corpus.py writes them. It is read as bytes (one character a byte;
the vocabulary is the byte values present, 165 in the whole corpus) from the first of
data/kernel_corpus.txt at the repository root, /usr/share/ternarycounter/kernel_corpus.txt,
data/kernel_corpus.txt.xz and data/kernel_corpus.txt.gz, its sha256 checked against the list's.
--text FILE (UTF-8; plain, .xz or .gz) replaces either. The text's last tenth (after
--limit-chars) is the validation split: for the whole kernel corpus, from lib/test_parman.c on
(the end of lib/, then mm/). Every step draws --batch windows of --context characters from the
training split with a CPU generator seeded by --seed, so both models see the same data in the
same order on any device.

On CUDA both models run under BF16 autocast (--amp): torch's layers compute in bfloat16, and a
TernaryLinear gets its input rounded to bfloat16 as nn.Linear does under autocast (the layer
keeps that narrow copy for its update: half the memory of float32). loss.backward() applies the
ternary layers' updates (no optimizer holds them); AdamW steps the torch parameters. A warmup
then cosine schedule scales AdamW's lr and the ternary layers' lr alike. The ternary layers'
rms_eps is 1e-8 (--rms-eps), below their rows' gradient RMS, where the library's default floor
of 1e-3 lies above most rows' RMS and turns their step into SGD (docs/PERFORMANCE.md, "The
kernel corpus, and the RMS floor"); their rms_beta is 0.6 (--rms-beta), which bounds a row's
normalized step when its gradient jumps (docs/PERFORMANCE.md, "The RMS moment's decay").

Lines (every --eval-every steps, and a final: line): step, train loss (mean since the last
line), validation loss (--eval-batches fixed windows), tokens/s of the training steps (the
evaluation's time excluded), bytes of training state of the linear layers (TernaryLinear: codes,
scale, v and step count; nn.Linear: weight, gradient and AdamW's two moments) in all and per
weight, the peak GPU memory torch allocated, and the GPU memory in use as the driver counts it
(torch's cache, the contexts and the library's own allocations, read at each line; the final:
line gives the largest reading). The final: line also gives the best validation loss and its
step, and the excursion: the largest rise of the validation loss above its running minimum after
the warmup (0 for a loss that never rose). --curve FILE.json keeps them; --plot FILE.png
A.json B.json ... draws the validation curves of such runs against steps and against seconds.

    PYTHONPATH=build/cuda/python python3 python/examples/char_lm.py --precision int8 --curve int8.json
    PYTHONPATH=build/cuda/python python3 python/examples/char_lm.py --baseline adamw --curve adamw.json
    python3 python/examples/char_lm.py --plot char_lm.png int8.json adamw.json

The model, the optimizer and the step are separate functions (build_model, build_optimizer,
train_step) so that a data-parallel wrapper can take the model and the step as they are.

--distributed trains data-parallel under torchrun (Gloo on the CPU, NCCL on CUDA, one GPU per
process): each process takes its block of each step's --batch windows, the TernaryLinear layers
update collectively (ternarycounter.distributed: one process's bits for any process count) and
DDP sums the torch parameters' gradients. The loss is normalized by the global batch and the
printed losses are reduced over the gathered per-token losses in batch order, so the lines
depend on the process count through DDP's float all-reduce of the torch parameters' gradients
(none with --adam-lr 0, which leaves them as initialized) and through torch's own products,
whose last bits depend on how many rows each process holds (a CPU GEMM of 512 rows rounds
otherwise than two of 256): the gradients reaching the ternary layers differ in their last bits,
and at rms_eps 1e-8 that changes a few codes within tens of steps:

    torchrun --standalone --nproc_per_node 2 python/examples/char_lm.py --distributed --device cpu
"""

import argparse
import hashlib
import io
import json
import math
import os
import re
import subprocess
import sys
import time

# Torch's OpenMP threads and the library's (Kokkos OpenMP) alternate in one process: threads
# that spin after their parallel region starve the other pool's (20x slower steps on 2 cores).
# libgomp reads this when torch loads it.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import curves  # noqa: E402
import update_options  # noqa: E402

BIBLE_COMMAND = ["bible", "-f", "Gen1:1-Rev22:21"]
REPOSITORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
KERNEL_LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                           "kernel_corpus.list")
KERNEL_CORPUS = [os.path.normpath(os.path.join(REPOSITORY, "data", "kernel_corpus.txt")),
                 "/usr/share/ternarycounter/kernel_corpus.txt",
                 os.path.normpath(os.path.join(REPOSITORY, "data", "kernel_corpus.txt.xz")),
                 os.path.normpath(os.path.join(REPOSITORY, "data", "kernel_corpus.txt.gz"))]
VERSE_REFERENCE = re.compile(r"^[1-3]?[A-Za-z]+[0-9]+:[0-9]+ ", re.MULTILINE)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--baseline", choices=["adamw"], default=None,
                   help="train nn.Linear layers with torch.optim.AdamW instead")
    p.add_argument("--precision", choices=["fp32", "int8"], default="int8",
                   help="the TernaryLinear layers' precision")
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    p.add_argument("--amp", choices=["auto", "bf16", "off"], default="auto",
                   help="BF16 autocast: auto = on CUDA only")
    p.add_argument("--corpus", choices=["kjv", "kernel"], default="kjv",
                   help="the King James text or the kernel's C source (see above)")
    p.add_argument("--text", default=None, help="a text file (.xz, .gz) instead of the corpus")
    p.add_argument("--limit-chars", type=int, default=0, help="use the first N characters only")
    p.add_argument("--d-model", type=int, default=512)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--context", type=int, default=256)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=100, help="linear warmup steps of the lr")
    p.add_argument("--min-lr-ratio", type=float, default=0.1,
                   help="the cosine schedule ends at this fraction of the lr")
    p.add_argument("--adam-lr", type=float, default=1e-3,
                   help="AdamW's lr (the baseline's layers; the torch layers of both models)")
    p.add_argument("--weight-decay", type=float, default=0.1,
                   help="AdamW's weight decay of matrices (embeddings, head, nn.Linear)")
    p.add_argument("--grad-clip", type=float, default=1.0,
                   help="gradient norm clip of the AdamW parameters (0: none)")
    p.add_argument("--lr", type=float, default=0.003, help="the TernaryLinear layers' lr")
    p.add_argument("--lr-scale", type=float, default=0.02, help="the TernaryLinear layers' lr_scale")
    # rms_eps below the rows' gradient RMS, so that every row takes the normalized step: better
    # than the library's floor of 1e-3 on both corpora (docs/PERFORMANCE.md, "the RMS floor").
    # rms_beta 0.6: v follows the current gradient, so a batch whose gradient jumps cannot take
    # a step many times the usual size (docs/PERFORMANCE.md, "The RMS moment's decay").
    update_options.add_update_options(p, rms_eps=1e-8, rms_beta=0.6)
    p.add_argument("--C", type=int, default=8, help="the TernaryLinear layers' counter depth")
    p.add_argument("--sub-norm", action="store_true",
                   help="a LayerNorm before each block's attention output and MLP down "
                        "projections too (BitNet's SubLN placement), not only before qkv and fc")
    p.add_argument("--init-gain", type=float, default=1.0,
                   help="TernaryLinear init scale as a multiple of 1/sqrt(2 in / 3)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--eval-batches", type=int, default=10)
    p.add_argument("--curve", default=None, help="write the lines' figures to this JSON file")
    p.add_argument("--label", default=None, help="the run's name in --curve (and the plot)")
    p.add_argument("--distributed", action="store_true",
                   help="data-parallel over the processes torchrun starts (see above)")
    p.add_argument("--profile", default=None,
                   help="profile steps 5..14 with torch.profiler and write its table here")
    p.add_argument("--plot", default=None,
                   help="draw the --curve files given as arguments into this PNG, then exit")
    p.add_argument("curves", nargs="*", help="with --plot: the --curve JSON files")
    args = p.parse_args(argv)
    if args.plot is None and args.curves:
        p.error("curve files are arguments of --plot only")
    if args.d_model % args.heads:
        p.error("--d-model must be a multiple of --heads")
    if args.distributed and args.profile:
        p.error("--profile runs in one process: drop --distributed")
    return args


# -- data --

def open_file(path):
    """A plain, .xz or .gz file, decompressed as it is read."""
    if path.endswith(".xz"):
        import lzma
        return lzma.open(path, "rb")
    if path.endswith(".gz"):
        import gzip
        return gzip.open(path, "rb")
    return open(path, "rb")


def kernel_corpus_path():
    """The first of KERNEL_CORPUS that exists, or None."""
    return next((path for path in KERNEL_CORPUS if os.path.isfile(path)), None)


def kernel_corpus_sha256():
    with open(KERNEL_LIST, encoding="utf-8") as f:
        return next(line.split()[1] for line in f if line.startswith("sha256: "))


def load_kernel_corpus():
    """The kernel corpus as a str of one character per byte (latin-1), its checksum checked."""
    path = kernel_corpus_path()
    if path is None:
        sys.exit(f"char_lm.py: no kernel corpus ({', '.join(KERNEL_CORPUS)}): install Debian's "
                 f"linux-source-6.1 and run python/examples/make_kernel_corpus.py")
    with open_file(path) as f:
        data = f.read()
    digest, expected = hashlib.sha256(data).hexdigest(), kernel_corpus_sha256()
    if digest != expected:
        sys.exit(f"char_lm.py: {path} has sha256 {digest}, {KERNEL_LIST} says {expected}: "
                 f"write it again with python/examples/make_kernel_corpus.py")
    return data.decode("latin-1")


def load_text(args):
    if args.text:
        with io.TextIOWrapper(open_file(args.text), encoding="utf-8") as f:
            return f.read()
    if args.corpus == "kernel":
        return load_kernel_corpus()
    try:
        printed = subprocess.run(BIBLE_COMMAND, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"char_lm.py: can't run {' '.join(BIBLE_COMMAND)} ({e}): install Debian's "
                 f"bible-kjv package or pass --text FILE")
    return VERSE_REFERENCE.sub("", printed)


def encode(text):
    """The text as a uint8 tensor of character indices, and the characters."""
    vocab = sorted(set(text))
    if len(vocab) > 256:
        sys.exit(f"char_lm.py: the text has {len(vocab)} distinct characters (256 at most)")
    if ord(vocab[-1]) < 256:  # one byte a character: a table lookup instead of a Python loop
        table = torch.zeros(256, dtype=torch.uint8)
        table[torch.tensor([ord(c) for c in vocab])] = torch.arange(len(vocab), dtype=torch.uint8)
        return table[torch.frombuffer(bytearray(text.encode("latin-1")),
                                      dtype=torch.uint8).long()], vocab
    index = {c: i for i, c in enumerate(vocab)}
    return torch.tensor([index[c] for c in text], dtype=torch.uint8), vocab


def batch_offsets(count, batch, limit, seed):
    """[count, batch] window starts in [0, limit), drawn on the CPU (the same on any device)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, limit, (count, batch), generator=g)


def windows(data, starts, context):
    """(inputs, targets) [batch, context] int64 of the windows starting at `starts`."""
    idx = starts[:, None] + torch.arange(context + 1, device=data.device)
    chunk = data[idx].long()
    return chunk[:, :-1], chunk[:, 1:]


# -- model --

def autocast_dtype(device_type):
    if hasattr(torch, "get_autocast_dtype"):
        return torch.get_autocast_dtype(device_type) if torch.is_autocast_enabled(device_type) \
            else None
    if device_type == "cuda":
        return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None
    return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None


def ternary_linear_class():
    from ternarycounter.torch import TernaryLinear

    class AutocastTernaryLinear(TernaryLinear):
        """Under autocast, rounds its input to the autocast dtype first, as nn.Linear does."""

        def forward(self, x):
            narrow = autocast_dtype(x.device.type)
            if narrow is not None and x.dtype == torch.float32:
                x = x.to(narrow)
            return super().forward(x)

    return AutocastTernaryLinear


class Block(nn.Module):
    def __init__(self, d, heads, linear, sub_norm=False):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = linear(d, 3 * d, False), linear(d, d, True)
        self.fc, self.out = linear(d, 4 * d, False), linear(4 * d, d, True)
        # SubLN: the projections that read attention's and the MLP's outputs see normalized
        # inputs too, so every layer's per-row int8 quantization sees a steady range.
        self.ln_proj = nn.LayerNorm(d) if sub_norm else nn.Identity()
        self.ln_out = nn.LayerNorm(4 * d) if sub_norm else nn.Identity()

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        a = attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x + self.proj(self.ln_proj(a.transpose(1, 2).reshape(b, t, d)))
        return x + self.out(self.ln_out(F.gelu(self.fc(self.ln2(x)))))


def attention(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    t = q.shape[-2]
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    mask = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
    return scores.masked_fill(mask, float("-inf")).softmax(-1) @ v


class CharGPT(nn.Module):
    def __init__(self, vocab, d, layers, heads, context, linear, sub_norm=False):
        super().__init__()
        self.token = nn.Embedding(vocab, d)
        self.position = nn.Embedding(context, d)
        self.blocks = nn.ModuleList(Block(d, heads, linear, sub_norm) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.token(idx) + self.position(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def build_model(args, vocab, device):
    """The CharGPT of args on device: TernaryLinear layers, or nn.Linear for the baseline."""
    torch.manual_seed(args.seed)  # the torch layers' initialization
    residual_gain = 1.0 / math.sqrt(2 * args.layers)  # GPT-2's scaling of residual outputs
    made = []

    if args.baseline:
        def linear(n_in, n_out, residual):
            layer = nn.Linear(n_in, n_out, bias=False)
            nn.init.normal_(layer.weight, 0.0, 0.02 * (residual_gain if residual else 1.0))
            return layer
    else:
        ternary = ternary_linear_class()

        def linear(n_in, n_out, residual):
            number = len(made) + 1
            made.append(number)
            gain = args.init_gain * (residual_gain if residual else 1.0)
            return ternary(n_in, n_out, C=args.C, lr=args.lr, lr_scale=args.lr_scale,
                           precision=args.precision, **update_options.update_settings(args),
                           seed=args.seed * 1000 + number, init_seed=args.seed * 1000 + number,
                           init_scale=gain / math.sqrt(2.0 * n_in / 3.0))

    model = CharGPT(vocab, args.d_model, args.layers, args.heads, args.context, linear,
                    args.sub_norm)
    for m in model.modules():
        if isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, 0.0, 0.02)
    nn.init.normal_(model.head.weight, 0.0, 0.02)
    return model.to(device)


def ternary_layers(model):
    from ternarycounter.torch import TernaryLinear
    return [m for m in model.modules() if isinstance(m, TernaryLinear)]


def build_optimizer(model, args):
    """AdamW over the torch parameters (the ternary layers train in their backward)."""
    decay, other = [], []
    for name, p in model.named_parameters():
        if name.endswith("update_trigger"):
            continue
        (decay if p.dim() == 2 else other).append(p)
    groups = [{"params": decay, "weight_decay": args.weight_decay},
              {"params": other, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=args.adam_lr, betas=(0.9, 0.95))


def lr_factor(step, args):
    """Warmup then cosine decay to --min-lr-ratio, at step (0-based)."""
    if step < args.warmup:
        return (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.min_lr_ratio + (1 - args.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def set_learning_rates(model, optimizer, step, args):
    factor = lr_factor(step, args)
    for group in optimizer.param_groups:
        group["lr"] = args.adam_lr * factor
    moment = update_options.moment_factor(args, step)
    for layer in ternary_layers(model):
        layer.lr = args.lr * factor * moment


def train_step(model, optimizer, inputs, targets, args, amp, team=None):
    """One step: forward, loss, backward (which updates the ternary layers), AdamW. Returns the
    loss as a tensor (reading it would wait for the GPU). With a Team (--distributed), `inputs`
    are this process's windows: the loss is their summed per-token losses over the global
    batch's token count, and the returned loss the global mean over the gathered losses."""
    with torch.autocast(inputs.device.type, dtype=torch.bfloat16, enabled=amp):
        logits = model(inputs)
    if team is None:
        loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
    else:
        per_token = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                    targets.reshape(-1), reduction="none")
        (per_token.sum() / (args.batch * args.context)).backward()
        loss = team.gather_rows(per_token.detach()).mean()
    if args.grad_clip > 0:
        torch.nn.utils.clip_grad_norm_([p for g in optimizer.param_groups for p in g["params"]],
                                       args.grad_clip)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach()


@torch.no_grad()
def evaluate(model, data, starts, args, amp):
    model.eval()
    total = torch.zeros((), device=data.device)
    for i in range(0, starts.shape[0], args.batch):
        inputs, targets = windows(data, starts[i:i + args.batch], args.context)
        with torch.autocast(data.device.type, dtype=torch.bfloat16, enabled=amp):
            logits = model(inputs)
        total += F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                 targets.reshape(-1), reduction="sum")
    model.train()
    return float(total) / (starts.shape[0] * args.context)


class Team:
    """--distributed: this process's place among the processes torchrun started."""

    def __init__(self, device):
        import torch.distributed as dist
        self.dist = dist
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        self.rank, self.size = dist.get_rank(), dist.get_world_size()

    def block(self, n):
        """This process's rows [first, last) of n: contiguous blocks in rank order."""
        return n * self.rank // self.size, n * (self.rank + 1) // self.size

    def gather_rows(self, values):
        """Every process's `values` [n_r, ...] concatenated in rank order, on every process."""
        sizes = torch.tensor([values.shape[0]], device=values.device)
        all_sizes = [torch.empty_like(sizes) for _ in range(self.size)]
        self.dist.all_gather(all_sizes, sizes)
        counts = [int(n) for n in all_sizes]
        padded = values.new_zeros((max(counts),) + tuple(values.shape[1:]))
        padded[:values.shape[0]] = values
        parts = [torch.empty_like(padded) for _ in range(self.size)]
        self.dist.all_gather(parts, padded)
        return torch.cat([part[:n] for part, n in zip(parts, counts)])

    def wrap(self, model, device):
        """The ternary layers data-parallel, the torch parameters under DDP (summed gradients:
        the loss is normalized by the global batch)."""
        from torch.nn.parallel import DistributedDataParallel
        from ternarycounter.distributed import data_parallel, sum_gradients_hook
        data_parallel(model)
        ddp = DistributedDataParallel(model, broadcast_buffers=False,
                                      device_ids=[device.index] if device.type == "cuda" else None)
        ddp.register_comm_hook(None, sum_gradients_hook)
        return ddp


def state_bytes(model, optimizer):
    """(bytes, weights) of the linear layers' training state: TernaryLinear's buffers, or
    nn.Linear's weight, gradient and AdamW moments (after a step has created them)."""
    total = weights = 0
    for m in model.modules():
        if hasattr(m, "codes"):
            total += sum(t.numel() * t.element_size() for t in (m.codes, m.scale, m.v, m.steps))
            weights += m.in_features * m.out_features
        elif isinstance(m, nn.Linear) and m is not model.head:
            w = m.weight
            total += w.numel() * w.element_size() * 2  # weight and its gradient
            for value in optimizer.state.get(w, {}).values():
                if isinstance(value, torch.Tensor) and value.numel() == w.numel():
                    total += value.numel() * value.element_size()
            weights += w.numel()
    return total, weights


def peak_gib(device):
    return torch.cuda.max_memory_allocated(device) / 2**30 if device.type == "cuda" else 0.0


def device_used_gib(device):
    """Memory in use on the GPU as the driver counts it: torch's cache, the CUDA contexts and
    what Kokkos allocates itself (the integer path's scratch), which torch's figures omit."""
    if device.type != "cuda":
        return 0.0
    free, total = torch.cuda.mem_get_info(device)
    return (total - free) / 2**30


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def describe(args):
    if args.baseline:
        return "adamw-bf16" if args.amp_on else "adamw-fp32"
    return f"ternary-{args.precision}"


def profile_steps(model, optimizer, data, offsets, args, amp, device, path):
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda"
                                           else [])
    for step in range(5):
        train_step(model, optimizer, *windows(data, offsets[step], args.context), args, amp)
    synchronize(device)
    with profile(activities=activities) as prof:
        for step in range(5, 15):
            train_step(model, optimizer, *windows(data, offsets[step], args.context), args, amp)
        synchronize(device)
    key = "cuda_time_total" if device.type == "cuda" else "cpu_time_total"
    if device.type == "cuda" and hasattr(prof.key_averages()[0], "device_time_total"):
        key = "device_time_total"
    table = prof.key_averages().table(sort_by=key, row_limit=60, max_name_column_width=110)
    with open(path, "w") as f:
        f.write(f"{describe(args)}: 10 steps, batch {args.batch} x {args.context}\n{table}\n")
    print(f"profile: {path}", flush=True)


def train(args):
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    team = None
    if args.distributed:
        if device.type == "cuda":  # one GPU per process, before ternarycounter starts Kokkos
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        team = Team(device)
    amp = args.amp == "bf16" or (args.amp == "auto" and device.type == "cuda")
    args.amp_on = amp
    text = load_text(args)
    if args.limit_chars:
        text = text[:args.limit_chars]
    data, vocab = encode(text)
    split = len(data) * 9 // 10
    train_data, val_data = data[:split].to(device), data[split:].to(device)
    if len(val_data) <= args.context + 1:
        sys.exit("char_lm.py: the validation split is shorter than a window")
    offsets = batch_offsets(args.steps, args.batch, split - args.context - 1,
                            args.seed).to(device)
    val_starts = batch_offsets(1, args.eval_batches * args.batch,
                               len(val_data) - args.context - 1, 12345)[0].to(device)

    model = build_model(args, len(vocab), device)
    optimizer = build_optimizer(model, args)
    stepped = model if team is None else team.wrap(model, device)
    first, last = (0, args.batch) if team is None else team.block(args.batch)
    label = args.label or describe(args)
    say = print if team is None or team.rank == 0 else (lambda *a, **k: None)
    if team is not None:
        say(f"data-parallel: {team.size} processes, windows [{first}, {last}) of each batch on "
            f"rank 0", flush=True)
    say(f"{label} on {args.text or args.corpus}: {len(text)} characters, vocabulary "
          f"{len(vocab)}, d_model {args.d_model}, {args.layers} layers, {args.heads} heads, "
          f"context {args.context}, batch {args.batch}, {args.steps} steps on {device}"
          f"{' (bf16 autocast)' if amp else ''}", flush=True)
    if args.profile:
        profile_steps(model, optimizer, train_data, offsets, args, amp, device, args.profile)
        model = build_model(args, len(vocab), device)  # the run starts from scratch
        optimizer = build_optimizer(model, args)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    points = []
    seconds = 0.0
    losses = torch.zeros((), device=device)
    since, tokens = 0, args.batch * args.context
    synchronize(device)
    started = time.perf_counter()
    for step in range(args.steps):
        set_learning_rates(model, optimizer, step, args)
        inputs, targets = windows(train_data, offsets[step][first:last], args.context)
        losses += train_step(stepped, optimizer, inputs, targets, args, amp, team)
        since += 1
        done = step + 1
        if done % args.eval_every == 0 or done == args.steps:
            synchronize(device)
            elapsed = time.perf_counter() - started
            seconds += elapsed
            val = evaluate(model, val_data, val_starts, args, amp)
            total, weights = state_bytes(model, optimizer)
            point = dict(step=done, seconds=round(seconds, 3),
                         train_loss=round(float(losses) / since, 4), val_loss=round(val, 4),
                         tokens_per_s=round(since * tokens / elapsed),
                         state_bytes=total, state_bytes_per_weight=round(total / weights, 4),
                         peak_gpu_gib=round(peak_gib(device), 3),
                         gpu_used_gib=round(device_used_gib(device), 3))
            points.append(point)
            say(" ".join(f"{k}={v}" for k, v in point.items()), flush=True)
            if team is None or team.rank == 0:
                write_curve(args, label, device, points, None)  # a run cut short keeps its points
            losses.zero_()
            since = 0
            synchronize(device)
            started = time.perf_counter()
    final = summary(label, points, tokens, args.warmup)
    say("final: " + " ".join(f"{k}={v}" for k, v in final.items()), flush=True)
    if team is None or team.rank == 0:
        write_curve(args, label, device, points, final)
    if team is not None:
        team.dist.destroy_process_group()
    return final


def excursion(points, warmup):
    """The largest rise of the validation loss above its running minimum after the warmup
    (nats): how far a run fell back (0 for a loss that never rose)."""
    lowest, worst = math.inf, 0.0
    for p in points:
        lowest = min(lowest, p["val_loss"])
        if p["step"] > warmup:
            worst = max(worst, p["val_loss"] - lowest)
    return round(worst, 4)


def summary(label, points, tokens_per_step, warmup=0):
    last = points[-1]
    best = min(points, key=lambda p: p["val_loss"])
    return dict(label=label, steps=last["step"], val_loss=last["val_loss"],
                best_val_loss=best["val_loss"], best_step=best["step"],
                excursion=excursion(points, warmup),
                tokens_per_s=round(last["step"] * tokens_per_step / last["seconds"]),
                seconds=round(last["seconds"], 2), state_bytes=last["state_bytes"],
                state_bytes_per_weight=last["state_bytes_per_weight"],
                peak_gpu_gib=max(p["peak_gpu_gib"] for p in points),
                gpu_used_gib=max(p["gpu_used_gib"] for p in points))


def write_curve(args, label, device, points, final):
    if not args.curve:
        return
    record = dict(label=label, device=(torch.cuda.get_device_name(device)
                                       if device.type == "cuda" else "cpu"),
                  torch=torch.__version__, argv=sys.argv[1:], points=points,
                  final=final or summary(label, points, args.batch * args.context, args.warmup))
    with open(args.curve, "w") as f:
        json.dump(record, f, indent=1)


def plot(path, curve_paths):
    def name_of(run):
        return (f"{run['label']} (val {run['final']['val_loss']:.3f}, "
                f"{run['final']['tokens_per_s'] / 1e3:.0f}k tok/s)")
    curves.plot_runs(path, curve_paths, "val_loss", "validation loss (nats/char)",
                     "char_lm.py: validation loss", name_of)


def main(argv=None):
    args = parse_args(argv)
    if args.plot:
        if not args.curves:
            sys.exit("char_lm.py: --plot needs --curve JSON files as arguments")
        plot(args.plot, args.curves)
        return
    train(args)


if __name__ == "__main__":
    main()
