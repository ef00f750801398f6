"""ternarycounter.distributed under torch.distributed (Gloo, processes started by spawn): 1 to 3
processes, each with its block of a global batch (unequal blocks), train a two-layer model of
TernaryLinear layers; every process ends with the codes, scales, v and losses of one process on
the global batch, bit for bit (int8: the reduce-scatter of int32 sums; fp32: the gathered
batch). Skipped where PyTorch or its Gloo backend is missing."""

import os
import tempfile

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (Debian: python3-torch)")
dist = pytest.importorskip("torch.distributed")
mp = pytest.importorskip("torch.multiprocessing")
if not (dist.is_available() and dist.is_gloo_available()):
    pytest.skip("torch.distributed without Gloo", allow_module_level=True)

IN, HIDDEN, OUT, GLOBAL_BATCH, STEPS = 24, 36, 10, 29, 3


def make_model(precision):
    from ternarycounter.torch import TernaryLinear
    common = dict(precision=precision, lr=0.3, lr_scale=1e-2, rms_beta=0.9)
    return torch.nn.Sequential(TernaryLinear(IN, HIDDEN, seed=11, init_seed=3, **common),
                               torch.nn.ReLU(),
                               TernaryLinear(HIDDEN, OUT, seed=12, init_seed=4, **common))


def global_batch(step):
    g = torch.Generator().manual_seed(100 + step)
    x = torch.randn(GLOBAL_BATCH, IN, generator=g)
    labels = torch.randint(0, OUT, (GLOBAL_BATCH,), generator=g)
    return x, labels


def block(rank, size):
    """Unequal blocks: rank r holds about (r + 1) shares of the batch."""
    shares = size * (size + 1) // 2
    first = GLOBAL_BATCH * (rank * (rank + 1) // 2) // shares
    last = GLOBAL_BATCH * ((rank + 1) * (rank + 2) // 2) // shares
    return first, last


def train(model, rank=0, size=1, gather=None):
    """STEPS steps; returns the per-step global losses and the final states. The loss is the sum
    of the per-sample losses over the global batch size (the global batch's gradient)."""
    losses = []
    for step in range(STEPS):
        x, labels = global_batch(step)
        first, last = block(rank, size)
        x = x[first:last].clone().requires_grad_()
        per_sample = torch.nn.functional.cross_entropy(model(x), labels[first:last],
                                                       reduction="none")
        (per_sample.sum() / GLOBAL_BATCH).backward()
        every = per_sample.detach() if gather is None else gather(per_sample.detach())
        losses.append(float(every.sum() / GLOBAL_BATCH))
        losses.append(x.grad.clone())  # this block's input gradient
    states = [(m.codes.clone(), m.scale.clone(), m.v.clone(), int(m.steps))
              for m in model if hasattr(m, "codes")]
    return losses, states


def worker(rank, size, init_file, out_dir, precision):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=size)
    from ternarycounter.distributed import data_parallel
    model = data_parallel(make_model(precision))

    def gather(values):
        sizes = [block(r, size)[1] - block(r, size)[0] for r in range(size)]
        padded = torch.zeros(max(sizes))
        padded[:values.shape[0]] = values
        parts = [torch.empty_like(padded) for _ in range(size)]
        dist.all_gather(parts, padded)
        return torch.cat([p[:n] for p, n in zip(parts, sizes)])

    losses, states = train(model, rank, size, gather)
    torch.save({"losses": losses, "states": states}, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()


def run_processes(size, precision):
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(worker, args=(size, os.path.join(tmp, "init"), tmp, precision), nprocs=size)
        return [torch.load(os.path.join(tmp, f"rank{r}.pt")) for r in range(size)]


@pytest.mark.parametrize("precision", ["int8", "fp32"])
@pytest.mark.parametrize("size", [1, 2, 3])
def test_processes_reproduce_one_process(size, precision):
    reference_losses, reference_states = train(make_model(precision))
    results = run_processes(size, precision)
    for rank, result in enumerate(results):
        first, last = block(rank, size)
        for step in range(STEPS):
            assert result["losses"][2 * step] == reference_losses[2 * step], (rank, step)
            grad_x = result["losses"][2 * step + 1]
            assert torch.equal(grad_x, reference_losses[2 * step + 1][first:last]), (rank, step)
        for (codes, scale, v, steps), (c0, s0, v0, n0) in zip(result["states"], reference_states):
            assert steps == n0 == STEPS
            assert torch.equal(codes, c0), f"rank {rank}: codes differ"
            assert scale.numpy().tobytes() == s0.numpy().tobytes(), f"rank {rank}: scale"
            assert v.numpy().tobytes() == v0.numpy().tobytes(), f"rank {rank}: v"


def disagreeing_worker(rank, size, init_file, out_dir):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=size)
    from ternarycounter.distributed import data_parallel
    from ternarycounter.torch import TernaryLinear
    layer = data_parallel(TernaryLinear(8, 4, precision="int8", seed=1))
    layer.lr = 0.01 * (rank + 1)  # a setting that differs between processes
    codes = layer.codes.clone()
    message = ""
    try:
        layer(torch.randn(3, 8)).sum().backward()
    except RuntimeError as e:
        message = str(e)
    torch.save({"message": message, "unchanged": torch.equal(codes, layer.codes)},
               os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()


def test_disagreement_raises_the_same_error_everywhere():
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(disagreeing_worker, args=(2, os.path.join(tmp, "init"), tmp), nprocs=2)
        results = [torch.load(os.path.join(tmp, f"rank{r}.pt")) for r in range(2)]
    assert "disagree on lr" in results[0]["message"]
    assert results[0]["message"] == results[1]["message"]
    assert all(r["unchanged"] for r in results)
