#!/usr/bin/env python3
"""Trains the README's ternary MLP 784-512-256-10 on Fashion-MNIST with ternarycounter's PyTorch
layer, with the C++ main job's recipe (ternary-counter-train --dataset fashion-mnist): per-pixel
standardization, one shuffled pass per epoch (the job's hash-driven order), batch 256, cosine
decay of lr over the epochs, C=8 lr=0.003 lr_scale=0.02 rms_beta=0.99, each layer's ternary
draw and rounding seeds derived from --seed, and the job's printed lines.

The model is an ordinary torch.nn.Sequential of TernaryLinear and ReLU; loss.backward() steps
every layer (no optimizer). With the package's softmax cross-entropy (the default) the epoch and
final: lines are the C++ job's bit for bit (all but samples/s and seconds); --torch-loss uses
torch.nn.functional.cross_entropy instead (the same recipe, other bits). --save / --resume
write and read the C++ job's checkpoints (either program resumes the other's).

    PYTHONPATH=build/openmp/python python3 python/examples/fashion_mnist.py [--epochs N] ...
"""

import argparse
import gzip
import math
import os
import sys
import time

import numpy as np
import torch

import ternarycounter as tc
from ternarycounter.torch import TernaryLinear

DEFAULT_DATA = "/usr/share/datasets/fashion-mnist"
STEMS = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
         "t10k-labels-idx1-ubyte")


def read_idx(folder, stem):
    for name in (stem, stem + ".gz"):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with (gzip.open if name.endswith(".gz") else open)(path, "rb") as f:
                data = f.read()
            rank = data[3]
            dims = [int.from_bytes(data[4 + 4 * d:8 + 4 * d], "big") for d in range(rank)]
            return np.frombuffer(data, np.uint8, offset=4 + 4 * rank).reshape(dims)
    sys.exit(f"fashion_mnist.py: {folder}: no {stem}[.gz] (install dataset-fashion-mnist or pass "
             f"--data-dir)")


# The seeds of the C++ job (examples/train/MlpInit.hpp, Shuffle.hpp): uint32 arithmetic.
def derive_seed(seed, purpose):
    return tc.hash_u32(seed ^ tc.hash_u32((purpose * 0x9E3779B9 + 0x7F4A7C15) & 0xFFFFFFFF))


def epoch_order(count, seed, epoch):
    """The job's Fisher-Yates order of an epoch, driven by the library's hash."""
    stream = tc.hash_u32(seed ^ tc.hash_u32((epoch + 0x5BD1E995) & 0xFFFFFFFF))
    i = np.arange(count - 1, 0, -1, dtype=np.int64)
    h = np.array([tc.hash_u32(stream ^ tc.hash_u32(int(k))) for k in i], np.uint64)
    j = ((h * (i + 1).astype(np.uint64)) >> np.uint64(32)).astype(np.int64)
    order = list(range(count))
    for a, b in zip(i.tolist(), j.tolist()):
        order[a], order[b] = order[b], order[a]
    return np.array(order, np.int64)


def standardize(train_images, images):
    """(pixel - mean) * inv_std per pixel, statistics of the training images: the sums are
    exact integers in double, so any order gives the job's floats."""
    flat = train_images.reshape(len(train_images), -1)
    total = np.zeros(flat.shape[1], np.int64)
    squares = np.zeros(flat.shape[1], np.int64)
    for first in range(0, len(flat), 4096):  # integer sums in blocks: exact, no 8-byte copy of all
        block = flat[first:first + 4096].astype(np.int64)
        total += block.sum(0)
        squares += (block * block).sum(0)
    mean = total.astype(np.float64) / len(flat)
    var = np.maximum(squares.astype(np.float64) / len(flat) - mean * mean, 0.0)
    inv_std = np.where(var > 1e-12, 1.0 / np.sqrt(np.where(var > 1e-12, var, 1.0)), 0.0)
    x = images.reshape(len(images), -1).astype(np.float32)
    return np.ascontiguousarray((x - mean.astype(np.float32)) * inv_std.astype(np.float32))


class PackageLoss(torch.autograd.Function):
    """Mean softmax cross-entropy through tc.softmax_cross_entropy; keeps the per-sample losses
    and hits for the printed lines."""

    @staticmethod
    def forward(ctx, logits, labels, batch, record):
        grad = torch.empty_like(logits)
        losses, correct = tc.softmax_cross_entropy(
            logits.detach(), labels, grad, grad_scale=float(np.float32(1) / np.float32(batch)))
        record.append((losses, correct))
        ctx.save_for_backward(grad)
        return torch.tensor(float(np.cumsum(losses, dtype=np.float64)[-1]) / batch)

    @staticmethod
    def backward(ctx, grad_loss):
        (grad,) = ctx.saved_tensors
        return (grad if float(grad_loss) == 1.0 else grad * grad_loss), None, None, None


def run_metadata(a):
    """The settings the C++ job stores in a checkpoint (ImageOptions.cpp)."""
    return {"seed": str(a.seed), "hidden": ",".join(map(str, a.hidden)), "epochs": str(a.epochs),
            "batch": str(a.batch), "train-limit": str(a.train_limit), "lr": "%.17g" % a.lr,
            "lr-scale": "%.17g" % a.lr_scale, "rms-beta": "%.17g" % a.rms_beta,
            "precision": a.precision, "decay-lr-scale": str(int(a.decay_lr_scale))}


def adopt_metadata(a, metadata, C, path):
    """A resumed run takes the checkpoint's settings, as the C++ job does."""
    parse = {"seed": int, "hidden": lambda v: [int(w) for w in v.split(",")], "epochs": int,
             "batch": int, "train-limit": int, "lr": float, "lr-scale": float,
             "rms-beta": float, "precision": str, "decay-lr-scale": lambda v: int(v) != 0}
    for key, convert in parse.items():
        if key in metadata:
            setattr(a, key.replace("-", "_"), convert(metadata[key]))
        elif key != "precision":
            sys.exit(f"fashion_mnist.py: {path} has no metadata \"{key}\"")
    a.C = C


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", default=DEFAULT_DATA)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--stop-after", type=int, default=0)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--hidden", type=lambda v: [int(w) for w in v.split(",")], default=[512, 256])
    p.add_argument("--C", type=int, default=8)
    p.add_argument("--lr", type=float, default=0.003)
    p.add_argument("--lr-scale", type=float, default=2e-2)
    p.add_argument("--rms-beta", type=float, default=0.99)
    p.add_argument("--decay-lr-scale", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--train-limit", type=int, default=0)
    p.add_argument("--test-limit", type=int, default=0)
    p.add_argument("--precision", choices=("fp32", "int8"), default="fp32")
    p.add_argument("--torch-loss", action="store_true",
                   help="torch.nn.functional.cross_entropy instead of the package's loss")
    p.add_argument("--save", help="checkpoint after every epoch (the C++ job's format)")
    p.add_argument("--resume", help="continue a checkpoint of this script or the C++ job")
    a = p.parse_args()

    resumed = None
    if a.resume:
        layers, step, metadata = tc.read_checkpoint(a.resume)
        adopt_metadata(a, metadata, next(iter(layers.values())).C if layers else a.C, a.resume)
        resumed = (layers, step)

    load_start = time.perf_counter()
    train_images, train_labels, test_images, test_labels = (read_idx(a.data_dir, s)
                                                            for s in STEMS)
    n_train = min(a.train_limit, len(train_images)) if a.train_limit > 0 else len(train_images)
    n_test = min(a.test_limit, len(test_images)) if a.test_limit > 0 else len(test_images)
    train_x = standardize(train_images[:n_train], train_images[:n_train])
    test_x = standardize(train_images[:n_train], test_images[:n_test])
    train_y = train_labels[:n_train].astype(np.int32)
    test_y = test_labels[:n_test].astype(np.int32)
    widths = [train_x.shape[1], *a.hidden, 10]
    load_seconds = time.perf_counter() - load_start

    layers = []
    for l in range(len(widths) - 1):
        layers.append(TernaryLinear(widths[l], widths[l + 1], C=a.C, lr=a.lr, lr_scale=a.lr_scale,
                                    rms_beta=a.rms_beta, precision=a.precision,
                                    seed=derive_seed(a.seed, 200 + l),
                                    init_seed=derive_seed(a.seed, 100 + l)))
    model = torch.nn.Sequential(*[m for layer in layers for m in (layer, torch.nn.ReLU())][:-1])
    names = [f"layer{l + 1}" for l in range(len(layers))]
    if resumed:
        states = [layer.to_state() for layer in layers]
        step, _ = tc.load_layers(a.resume, dict(zip(names, states)))
        for layer, state in zip(layers, states):
            layer.load_state(state)
            layer.step = step

    weights = sum(layer.in_features * layer.out_features for layer in layers)
    state_bytes = sum(0.75 * layer.in_features * layer.out_features + 8.0 * layer.out_features
                      for layer in layers)
    print(f"fashion_mnist.py: dataset=fashion-mnist model=ternary "
          f"layers={'-'.join(map(str, widths))} exec={tc.execution_space} train={n_train} "
          f"test={n_test} batch={a.batch} epochs={a.epochs} seed={a.seed} C={a.C} "
          f"lr={a.lr:g} lr_scale={a.lr_scale:g} rms_beta={a.rms_beta:g} "
          f"(cosine{' on lr and lr_scale' if a.decay_lr_scale else ' on lr'}) "
          f"loss={'torch' if a.torch_loss else 'ternarycounter'} "
          f"(data loaded in {load_seconds:.1f} s)")
    print(f"state: bytes/weight ternary={state_bytes / weights:.4f} (0.75 codes + 2 floats per "
          f"row) fp32-adam=16.00 (w, m, v, gradient)", flush=True)

    steps_per_epoch = (n_train + a.batch - 1) // a.batch
    total_steps = steps_per_epoch * a.epochs
    if layers[0].step % steps_per_epoch != 0:
        sys.exit(f"fashion_mnist.py: the checkpoint's step {layers[0].step} is not at the end of "
                 f"an epoch of {steps_per_epoch} steps")
    first_epoch = layers[0].step // steps_per_epoch + 1
    last_epoch = min(a.stop_after, a.epochs) if a.stop_after > 0 else a.epochs
    eval_rows = max(a.batch, 1024)
    shuffle_seed = derive_seed(a.seed, 300)
    t0 = time.perf_counter()
    loss = train_acc = test_acc = 0.0
    for epoch in range(first_epoch, last_epoch + 1):
        epoch_start = time.perf_counter()
        order = epoch_order(n_train, shuffle_seed, epoch)
        record = []
        for first in range(0, n_train, a.batch):
            factor = 0.5 * (1.0 + math.cos(math.pi * layers[0].step / total_steps))
            for layer in layers:
                layer.lr = a.lr * factor
                if a.decay_lr_scale:
                    layer.lr_scale = a.lr_scale * factor
            rows = order[first:first + a.batch]
            x, y = torch.from_numpy(train_x[rows]), train_y[rows]
            logits = model(x)
            if a.torch_loss:
                y_long = torch.from_numpy(y.astype(np.int64))
                losses = torch.nn.functional.cross_entropy(logits, y_long, reduction="none")
                record.append((losses.detach().numpy(),
                               (logits.detach().argmax(1) == y_long).numpy().astype(np.int32)))
                losses.mean().backward()
            else:
                PackageLoss.apply(logits, y, len(rows), record).backward()
        train_seconds = time.perf_counter() - epoch_start
        # Sums in sample order, in double, as the job's host sums.
        losses = np.concatenate([r[0] for r in record]).astype(np.float64)
        hits = np.concatenate([r[1] for r in record])
        loss = float(np.cumsum(losses)[-1]) / n_train
        train_acc = float(hits.sum()) / n_train
        test_hits = 0
        with torch.no_grad():
            for first in range(0, n_test, eval_rows):
                logits = model(torch.from_numpy(test_x[first:first + eval_rows])).numpy()
                _, correct = tc.softmax_cross_entropy(logits, test_y[first:first + eval_rows])
                test_hits += int(correct.sum())
        test_acc = test_hits / n_test
        print(f"epoch={epoch} loss={loss:.6f} train_acc={train_acc:.4f} test_acc={test_acc:.4f} "
              f"samples/s={n_train / train_seconds:.0f}", flush=True)
        if a.save:
            tc.save_layers(a.save, dict(zip(names, (layer.to_state() for layer in layers))),
                           step=layers[0].step, metadata=run_metadata(a))
    print(f"final: epoch={last_epoch} loss={loss:.6f} train_acc={train_acc:.4f} "
          f"test_acc={test_acc:.4f} seconds={time.perf_counter() - t0:.1f}")


if __name__ == "__main__":
    main()
