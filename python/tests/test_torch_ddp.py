"""Plain torch.nn.parallel.DistributedDataParallel over Gloo (processes started by spawn): the
TernaryLinear layers join the process group by themselves, so 2 and 3 processes, each with its
block of the global batch and models built from different torch seeds, end with the codes,
scales and v of one process on the global batch, bit for bit; with a TernaryOptimizer, each
process's micro-batches make one collective update per step() (the global batch: the rounds
of micro-batches in order, each in rank order). Skipped where PyTorch or its
Gloo backend is missing."""

import os
import tempfile

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (Debian: python3-torch)")
dist = pytest.importorskip("torch.distributed")
mp = pytest.importorskip("torch.multiprocessing")
if not (dist.is_available() and dist.is_gloo_available()):
    pytest.skip("torch.distributed without Gloo", allow_module_level=True)

IN, HIDDEN, OUT, GLOBAL_BATCH, STEPS = 24, 20, 10, 23, 3


class Chunked(torch.nn.Module):
    """Calls `layer` on two chunks of its input: the first 2 samples, then the rest."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return torch.cat([self.layer(x[:2]), self.layer(x[2:])])


def make_model(precision, torch_seed, chunked=False):
    from ternarycounter.torch import TernaryLinear
    torch.manual_seed(torch_seed)  # the layers' seeds and initial values come from it
    common = dict(precision=precision, lr=0.3, lr_scale=1e-2, rms_beta=0.9)
    last = TernaryLinear(HIDDEN, OUT, **common)
    return torch.nn.Sequential(TernaryLinear(IN, HIDDEN, **common), torch.nn.ReLU(),
                               Chunked(last) if chunked else last)


def global_batch(step):
    g = torch.Generator().manual_seed(200 + step)
    return torch.randn(GLOBAL_BATCH, IN, generator=g), torch.randint(0, OUT, (GLOBAL_BATCH,),
                                                                       generator=g)


def block(rank, size):
    return GLOBAL_BATCH * rank // size, GLOBAL_BATCH * (rank + 1) // size


def micro_batches(rank, size, micro):
    """This process's samples of the global batch: its block, in two micro-batches (index
    tensors) with micro."""
    first, last = block(rank, size)
    cuts = [first, (first + last) // 2, last] if micro else [first, last]
    return [torch.arange(a, b) for a, b in zip(cuts, cuts[1:])]


def one_process_order(size, micro):
    """The global batch as one process sees it: the rounds of micro-batches in order, each
    round the processes' micro-batches in rank order."""
    parts = [micro_batches(r, size, micro) for r in range(size)]
    return torch.cat([parts[r][k] for k in range(len(parts[0])) for r in range(size)])


def train(model, optimizer=None, rank=0, size=1, order=None):
    """STEPS steps on this process's micro-batches, with one step() after them (optimizer),
    or on the samples `order` in one backward. The loss is the per-sample sum over the global
    batch size."""
    for step in range(STEPS):
        x, labels = global_batch(step)
        parts = [order] if order is not None else micro_batches(rank, size, optimizer is not None)
        for rows in parts:
            loss = torch.nn.functional.cross_entropy(model(x[rows]), labels[rows],
                                                     reduction="sum") / GLOBAL_BATCH
            loss.backward()
        if optimizer is not None:
            optimizer.step()
    layers = [m for m in model.modules() if hasattr(m, "codes")]
    return [(m.codes.clone(), m.scale.clone(), m.v.clone(), int(m.steps), m.seed)
            for m in layers]


def worker(rank, size, init_file, out_dir, precision, micro, chunked=False):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=size)
    from ternarycounter.torch import TernaryOptimizer
    # Different seeds: process 0's are used.
    model = make_model(precision, torch_seed=rank, chunked=chunked)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = TernaryOptimizer(model) if micro else None
    states = train(ddp, optimizer, rank, size)
    torch.save(states, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()


@pytest.mark.parametrize("precision, micro", [("fp32", False), ("int8", False), ("fp32", True),
                                              ("int8", True)])
@pytest.mark.parametrize("size", [2, 3])
def test_ddp_trains_as_one_process(size, precision, micro):
    reference = make_model(precision, torch_seed=0)
    expected = train(reference, order=one_process_order(size, micro))
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(worker, args=(size, os.path.join(tmp, "init"), tmp, precision, micro),
                 nprocs=size)
        results = [torch.load(os.path.join(tmp, f"rank{r}.pt")) for r in range(size)]
    for rank, states in enumerate(results):
        for (codes, scale, v, steps, seed), (c0, s0, v0, n0, seed0) in zip(states, expected):
            assert steps == n0 == STEPS and seed == seed0
            assert torch.equal(codes, c0), f"rank {rank}: codes differ"
            assert scale.numpy().tobytes() == s0.numpy().tobytes(), f"rank {rank}: scale"
            assert v.numpy().tobytes() == v0.numpy().tobytes(), f"rank {rank}: v"


@pytest.mark.parametrize("micro", [False, True])
def test_a_layer_on_chunks_under_ddp_is_one_call(micro):
    # The last layer runs on two chunks of each process's samples: its int8 input gradient's
    # rounding follows the global batch (the processes in rank order, each one's chunks in
    # order), so the first layer's update is one process's on the unchunked model.
    size = 2
    reference = make_model("int8", torch_seed=0)
    expected = train(reference, order=one_process_order(size, micro))
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(worker, args=(size, os.path.join(tmp, "init"), tmp, "int8", micro, True),
                 nprocs=size)
        results = [torch.load(os.path.join(tmp, f"rank{r}.pt")) for r in range(size)]
    for rank, states in enumerate(results):
        for (codes, scale, v, steps, _), (c0, s0, v0, n0, _) in zip(states, expected):
            assert steps == n0 == STEPS
            assert torch.equal(codes, c0), f"rank {rank}: codes differ"
            assert scale.numpy().tobytes() == s0.numpy().tobytes(), f"rank {rank}: scale"
            assert v.numpy().tobytes() == v0.numpy().tobytes(), f"rank {rank}: v"


def local_worker(rank, size, init_file, out_dir):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=size)
    from ternarycounter.distributed import local_updates
    model = local_updates(make_model("fp32", torch_seed=0))
    train(model, None, rank, size)
    torch.save(model[0].codes.clone(), os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()


def test_local_updates_opt_out():
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(local_worker, args=(2, os.path.join(tmp, "init"), tmp), nprocs=2)
        codes = [torch.load(os.path.join(tmp, f"rank{r}.pt")) for r in range(2)]
    assert not torch.equal(codes[0], codes[1])  # each process trained on its own samples


def no_collective_worker(rank, size, init_file, out_dir):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank,
                            world_size=size)
    from ternarycounter.torch import TernaryLinear
    layer = TernaryLinear(8, 4, seed=1, init_seed=1)
    codes = layer.codes.clone()
    real = dist.get_backend
    dist.get_backend = lambda group=None: "nccl"  # as NCCL would be, for this CPU layer
    message = ""
    try:
        layer(torch.randn(3, 8)).sum().backward()
    except RuntimeError as error:
        message = str(error)
    dist.get_backend = real
    torch.save({"message": message, "unchanged": torch.equal(codes, layer.codes) and
                layer.step == 0}, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()


def test_a_layer_without_collectives_raises_before_it_trains():
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(no_collective_worker, args=(2, os.path.join(tmp, "init"), tmp), nprocs=2)
        results = [torch.load(os.path.join(tmp, f"rank{r}.pt")) for r in range(2)]
    for result in results:
        assert "no collectives for the layer's cpu tensors" in result["message"]
        assert result["unchanged"]
