#!/usr/bin/env python3
"""Training memory of llama_pretrain.py's models, computed from the preset shapes alone (no
torch, nothing measured): the ternary model (TernaryLinear projections and head, an fp32
embedding and fp32 norm gains trained by a stateless sign rule) against the same model trained
by AdamW in pure BF16 and by AdamW under BF16 autocast (AMP).

    python3 python/examples/llama_memory.py                 # every preset, batch 1 x its context
    python3 python/examples/llama_memory.py --preset 7b --batch 4 --context 2048
    python3 python/examples/llama_memory.py --preset 7b --batch 8 --loss-chunk 2048 --budget

What each part counts (B = bytes, GB = 10^9 bytes, GiB = 2^30 bytes):

- ternary state: every TernaryLinear holds 0.75 B per weight (packed 6-bit codes), 8 B per
  output row (float32 scale and RMS moment v) and an 8 B int64 step count; no optimizer state.
- embedding (ternary model): float32 weights, 4 B per weight; its gradient is sparse (one row
  per token of the batch, counted with the activations) and the sign rule keeps no state.
- --head sign (llama_pretrain.py's float head, ternary model): float32 weights, 4 B per weight,
  and a dense float32 gradient of 4 B per weight, which stays from the head's backward to the
  rule's step (counted with the activations); no state, and no int8 scratch for the head.
- norm gains (ternary model): float32, 4 B + 4 B gradient per gain, no state.
- pure-BF16 AdamW: bf16 weight 2 + bf16 gradient 2 + bf16 first moment 2 + bf16 second moment 2
  = 8 B per parameter (every parameter: projections, embedding, head, norm gains).
- AMP AdamW: float32 weight (the master copy) 4 + float32 gradient 4 + float32 moments 4 + 4 =
  16 B per parameter. Autocast also keeps a bf16 cast of every matrix (2 B per weight) while the
  forward runs, before the gradients exist (zero_grad(set_to_none=True)), so 16 B per parameter
  is the peak of the two phases; the casts are not added.
- checkpointed activations: per-block checkpointing keeps each block's input, the residual
  stream in bf16 (2 B): layers x d_model x 2 B per token.
- one block's recompute: the tensors llama_pretrain.py's block saves for its backward under
  bf16 autocast, with an attention kernel that keeps q, k, v and its output (as
  scaled_dot_product_attention's fused kernels do, less their per-row statistics): each RMSNorm
  keeps its float32 input, its normalized output and the inverse RMS (8 d_model + 4 B); the
  q/k/v input (2 d_model B, one tensor for the three); the attention's q, k and v (k and v
  repeated to every query head) and output (8 d_model B); the o input (2 d_model B); the
  gate/up input (2 d_model B); the MLP's gate, up, silu(gate) and their product (8 d_ff B):
  30 d_model + 8 d_ff + 8 B per token (python/tests/test_llama_example.py counts them on the
  tiny preset). Not per token: the rotary tables' bf16 casts, 2 head_dim x 2 B per position.
- logits and loss (an estimate): at the log-softmax backward, its float32 output, incoming
  gradient and input gradient (4 B each): 12 B x vocab per token. (The head then holds a float32
  grad_out, 4 B x vocab, until its update, after those are freed.) With --loss-chunk N (the
  head and loss N tokens at a time, llama_pretrain.py's --loss-chunk) the head holds every
  chunk's float32 grad_out until its update (4 B x vocab per token of the batch), beside one
  chunk's log-softmax output and gradient (8 B x vocab per chunk token) or, in its update of
  several uses, two int32 [vocab, d_model] arrays: 4 vocab tokens + 8 vocab max(N, d_model) B.
  A float head (--head sign) holds no grad_out: 8 vocab N B.
- activations = checkpointed + the larger of one block's recompute and the logits and loss
  (the two do not coexist: the head updates before the last block's backward), + the ternary
  model's sparse embedding gradient (float32 rows, 4 d_model B per token).
- --offload: llama_pretrain.py's --offload-checkpoints keeps the checkpointed block inputs in
  pinned host memory (torch.autograd.graph.save_on_cpu); the GPU holds one block's input at a
  time (d_model x 2 B per token, back for the block's recompute) instead of all of them.
- int8 scratch (ternary model): the library keeps its largest call's int8 operands between
  calls (ternarycounter.scratch_bytes): an update of M samples quantizes x and grad_out, M (in +
  out) B, the largest of the projections' (M = the batch's tokens) and the head's (M = a chunk's
  tokens with --loss-chunk).

Not counted: the CUDA context, torch's caching allocator's slack and the transients of one call
(a TernaryLinear's float32 widening of its input and grad_out; the update's workspace, at most
the larger of 4 MiB and an eighth of the layer's float32 gradient).
"""

import argparse
import json

# Each preset: layers, d_model, query heads, key/value heads, MLP width, vocabulary, context.
PRESETS = {
    "70b": dict(layers=80, d_model=8192, heads=64, kv_heads=8, d_ff=28672, vocab=32000,
                context=4096),
    "7b": dict(layers=32, d_model=4096, heads=32, kv_heads=32, d_ff=11008, vocab=32000,
               context=2048),
    # TinyLlama-1.1B's shape: 22 layers, d 2048, 32 query / 4 key-value heads, MLP 5632.
    "1b": dict(layers=22, d_model=2048, heads=32, kv_heads=4, d_ff=5632, vocab=32000,
               context=2048),
    # For CI: seconds on two CPU cores (the vocabulary keeps its real size).
    "tiny": dict(layers=2, d_model=64, heads=4, kv_heads=2, d_ff=176, vocab=32000, context=64),
}

TERNARY_BYTES_PER_WEIGHT = 0.75
TERNARY_BYTES_PER_ROW = 8  # float32 scale + float32 v
TERNARY_BYTES_PER_LAYER = 8  # the int64 step count
ACTIVATION_BYTES = 2  # bf16


def projection_shapes(p):
    """(in, out) of one block's seven projections: q, k, v, o, gate, up, down."""
    d, head_dim = p["d_model"], p["d_model"] // p["heads"]
    kv = p["kv_heads"] * head_dim
    return [(d, d), (d, kv), (d, kv), (d, d), (d, p["d_ff"]), (d, p["d_ff"]), (p["d_ff"], d)]


def counts(p):
    """Parameter counts of the preset's parts."""
    shapes = projection_shapes(p)
    block_weights = sum(i * o for i, o in shapes)
    block_rows = sum(o for _, o in shapes)
    return dict(projection_weights=p["layers"] * block_weights,
                projection_rows=p["layers"] * block_rows,
                projection_layers=p["layers"] * len(shapes),
                embedding=p["vocab"] * p["d_model"], head=p["vocab"] * p["d_model"],
                head_rows=p["vocab"], norm_gains=(2 * p["layers"] + 1) * p["d_model"])


def ternary_bytes(weights, rows, layers):
    return weights * TERNARY_BYTES_PER_WEIGHT + rows * TERNARY_BYTES_PER_ROW \
        + layers * TERNARY_BYTES_PER_LAYER


def per_token(p):
    """Activation bytes per token of the batch (all three models: same shapes, bf16)."""
    d = p["d_model"]
    return dict(checkpointed=p["layers"] * d * ACTIVATION_BYTES,
                block_recompute=30 * d + 8 * p["d_ff"] + 8, logits_and_loss=12 * p["vocab"],
                embedding_gradient=4 * d)  # the ternary model's sparse fp32 gradient rows


def model(name, batch=1, context=None, loss_chunk=0, offload=False, head="ternary"):
    """Every part in bytes for the preset at batch x context tokens, the head and loss computed
    loss_chunk tokens at a time (0: all at once), the checkpointed block inputs in pinned host
    memory (offload) or on the GPU, the ternary model's head a TernaryLinear ("ternary") or
    float32 under the sign rule ("sign")."""
    if head not in ("ternary", "sign"):
        raise ValueError(f"head must be 'ternary' or 'sign', not {head!r}")
    p = PRESETS[name]
    c = counts(p)
    tokens = batch * (context or p["context"])
    params = c["projection_weights"] + c["embedding"] + c["head"] + c["norm_gains"]
    act = per_token(p)
    chunked = 0 < loss_chunk < tokens
    if chunked and head == "sign":  # autograd adds each chunk's weight gradient as it goes
        logits = 8 * p["vocab"] * loss_chunk
    elif chunked:
        logits = 4 * p["vocab"] * tokens + 8 * p["vocab"] * max(loss_chunk, p["d_model"])
    else:
        logits = tokens * act["logits_and_loss"]
    checkpointed = tokens * (p["d_model"] * ACTIVATION_BYTES if offload else act["checkpointed"])
    activations = checkpointed + max(tokens * act["block_recompute"], logits)
    head_tokens = loss_chunk if chunked else tokens
    scratch = tokens * max(i + o for i, o in projection_shapes(p))
    if head == "ternary":
        scratch = max(scratch, head_tokens * (p["d_model"] + p["vocab"]))
    ternary = dict(
        projections=ternary_bytes(c["projection_weights"], c["projection_rows"],
                                  c["projection_layers"]),
        head=ternary_bytes(c["head"], c["head_rows"], 1) if head == "ternary" else 4 * c["head"],
        embedding=4 * c["embedding"], norm_gains=8 * c["norm_gains"])
    head_gradient = 4 * c["head"] if head == "sign" else 0
    return dict(preset=name, tokens=tokens, loss_chunk=loss_chunk if chunked else 0,
                offload=offload, head=head, parameters=params, counts=c, per_token=act,
                ternary_parts=ternary, ternary_state=sum(ternary.values()),
                adamw_bf16_state=8 * params, adamw_amp_state=16 * params,
                checkpointed=checkpointed, logits_and_loss=logits,
                block_recompute=tokens * act["block_recompute"], activations=activations,
                ternary_activations=activations + tokens * act["embedding_gradient"]
                + head_gradient,
                head_gradient=head_gradient,
                ternary_scratch=scratch,
                pinned_host=tokens * act["checkpointed"] if offload else 0)


def gb(n):
    return f"{n / 1e9:8.2f}"


def setting(batch, context, loss_chunk=0, offload=False, head="ternary"):
    return (f"batch {batch} x context {'(preset)' if context is None else context}"
            + (f", loss chunk {loss_chunk}" if loss_chunk else "")
            + (", checkpoints offloaded" if offload else "")
            + (", float32 head (--head sign)" if head == "sign" else ""))


def table(names, batch, context, loss_chunk=0, offload=False, head="ternary"):
    lines = ["Computed from the preset shapes (not measured); GB = 10^9 bytes; "
             f"{setting(batch, context, loss_chunk, offload, head)}.", ""]
    header = ("| preset | parameters | ternary state GB | pure-BF16 AdamW GB | AMP AdamW GB | "
              "activations GB | ternary total GB | BF16 AdamW total GB | AMP AdamW total GB |")
    lines += [header, "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name in names:
        m = model(name, batch, context, loss_chunk, offload, head)
        a = m["activations"]
        lines.append(f"| {name} | {m['parameters'] / 1e9:.3f} B | {gb(m['ternary_state'])} | "
                     f"{gb(m['adamw_bf16_state'])} | {gb(m['adamw_amp_state'])} | {gb(a)} | "
                     f"{gb(ternary_total(m))} | "
                     f"{gb(m['adamw_bf16_state'] + a)} | "
                     f"{gb(m['adamw_amp_state'] + a)} |")
    lines += ["", "Ternary model's parts (GB): projections (0.75 B/weight + 8 B/row + 8 B/layer), "
              "head (the same, or fp32 with --head sign), fp32 embedding, fp32 norm gains + "
              "gradients;",
              "activations per token (kB = 10^3 B): checkpointed block inputs, one block's "
              "recompute (estimate), logits and loss (estimate); the ternary total also counts "
              "the embedding's sparse float32 gradient (4 d_model B per token), a float head's "
              "gradient (4 B per weight) and the int8 scratch the library keeps (its largest "
              "call's operands).", "",
              "| preset | projections | head | embedding | norm gains | checkpointed kB/token | "
              "block recompute kB/token | logits+loss kB/token |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name in names:
        m = model(name, batch, context, loss_chunk, offload, head)
        t, act = m["ternary_parts"], m["per_token"]
        lines.append(f"| {name} | {gb(t['projections'])} | {gb(t['head'])} | "
                     f"{gb(t['embedding'])} | {gb(t['norm_gains'])} | "
                     f"{act['checkpointed'] / 1e3:.1f} | {act['block_recompute'] / 1e3:.1f} | "
                     f"{act['logits_and_loss'] / 1e3:.1f} |")
    return "\n".join(lines)


def ternary_total(m):
    """The ternary model's GPU bytes: state, activations, the int8 scratch."""
    return m["ternary_state"] + m["ternary_activations"] + m["ternary_scratch"]


def budget(names, batch, context, loss_chunk, head="ternary"):
    """The ternary model's GPU memory, part by part, with the checkpointed block inputs on the
    GPU and in pinned host memory, with the loss chunk and without."""
    lines = ["Computed from the preset shapes (not measured); GB = 10^9 bytes; the ternary model "
             f"at {setting(batch, context, head=head)}.", "",
             "| preset | loss chunk | checkpointed inputs | state GB | checkpointed GB | "
             "block recompute GB | logits+loss GB | embedding, head gradients GB | "
             "int8 scratch GB | GPU total GB | pinned host GB |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    chunks = [loss_chunk, 0] if loss_chunk else [0]
    for name in names:
        for chunk in chunks:
            for offload in (False, True):
                m = model(name, batch, context, chunk, offload, head)
                embedding = m["tokens"] * m["per_token"]["embedding_gradient"]
                lines.append(
                    f"| {name} | {m['loss_chunk'] or 'none'} | "
                    f"{'pinned host' if offload else 'GPU'} | {gb(m['ternary_state'])} | "
                    f"{gb(m['checkpointed'])} | {gb(m['block_recompute'])} | "
                    f"{gb(m['logits_and_loss'])} | {gb(embedding + m['head_gradient'])} | "
                    f"{gb(m['ternary_scratch'])} | {gb(ternary_total(m))} | "
                    f"{gb(m['pinned_host'])} |")
    lines += ["", "The GPU total counts the larger of the block recompute and the logits and loss "
              "(they do not coexist); pinned host: the offloaded block inputs."]
    return "\n".join(lines)


def plot_measured(path, runs, limit_gib=None):
    """A bar chart of measured GPU memory: per run (a llama_pretrain.py --curve record) the
    driver's count and torch's peak; a run that ran out of memory drawn hatched at what it held
    when it failed. `limit_gib`: a dashed line (a memory budget)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(figsize=(9, 4.2))
    for k, run in enumerate(runs):
        error = run.get("error")
        last = error if error else run["final"]
        driver, torch_peak = last["driver_used_gib"], last["max_allocated_gib"]
        hatch = "//" if error else None
        axes.bar(k - 0.2, driver, 0.4, color="#4477aa", hatch=hatch,
                 label="driver's count" if k == 0 else None)
        axes.bar(k + 0.2, torch_peak, 0.4, color="#bbbbbb", hatch=hatch,
                 label="torch peak" if k == 0 else None)
        note = "out of memory" if error else f"{driver:.1f} GiB"
        axes.text(k - 0.2, driver + 1, note, ha="center", fontsize=8)
    if limit_gib:
        axes.axhline(limit_gib, color="#cc3311", linestyle="--", linewidth=1)
        axes.text(len(runs) - 0.5, limit_gib + 1, f"{limit_gib * 2**30 / 1e9:.0f} GB",
                  color="#cc3311", ha="right", fontsize=8)
    axes.set_xticks(range(len(runs)), [run["label"] for run in runs], fontsize=8)
    axes.set_ylabel("GPU memory (GiB)")
    axes.legend(fontsize=8, loc="upper left")
    axes.grid(axis="y", alpha=0.3)
    fig.suptitle("Measured GPU memory of llama_pretrain.py runs (hatched: ran out of memory)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--preset", choices=list(PRESETS), action="append",
                   help="one preset (repeatable; default: all)")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--context", type=int, default=None, help="default: the preset's")
    p.add_argument("--loss-chunk", type=int, default=0,
                   help="the head and loss this many tokens at a time (0: all at once)")
    p.add_argument("--offload", action="store_true",
                   help="the checkpointed block inputs in pinned host memory")
    p.add_argument("--plot-measured", metavar="PNG",
                   help="draw the measured memory of llama_pretrain.py --curve records (the "
                        "positional files, or the runs of one JSON object of records) to PNG")
    p.add_argument("--limit-gb", type=float, default=None,
                   help="with --plot-measured: a budget line at this many GB (10^9 bytes)")
    p.add_argument("records", nargs="*", help="with --plot-measured: --curve JSON files")
    p.add_argument("--head", choices=["ternary", "sign"], default="ternary",
                   help="the ternary model's head: TernaryLinear, or float32 under the sign rule "
                        "(llama_pretrain.py --head sign)")
    p.add_argument("--budget", action="store_true",
                   help="the ternary model's GPU memory part by part, checkpoints on the GPU "
                        "and offloaded, with --loss-chunk and without")
    args = p.parse_args(argv)
    if args.plot_measured:
        runs = []
        for record in args.records:
            with open(record) as f:
                loaded = json.load(f)
            runs += list(loaded.values()) if "points" not in loaded else [loaded]
        limit = args.limit_gb * 1e9 / 2**30 if args.limit_gb else None
        plot_measured(args.plot_measured, runs, limit)
        return
    names = args.preset or list(PRESETS)
    if args.budget:
        print(budget(names, args.batch, args.context, args.loss_chunk, args.head))
    else:
        print(table(names, args.batch, args.context, args.loss_chunk, args.offload, args.head))


if __name__ == "__main__":
    main()
