"""Data-parallel training of ``TernaryLinear`` layers over ``torch.distributed`` (Gloo on CPUs,
NCCL on GPUs), with the same bits as one process on the global batch for any number of
processes and any split of the batch (SPEC §7).

Under an initialized ``torch.distributed`` with more than one process, a ``TernaryLinear``
joins the default group by itself at its first training forward (process 0's state and seeds
are copied to the others first), so ``DistributedDataParallel(model)`` trains the ternary layers
as one process; a backend without collectives for the layer's device (NCCL and a CPU layer)
raises then, before anything trains. ``local_updates(model)`` keeps layers out (each process
trains its own copy). ``data_parallel(model, group)`` does the same explicitly, for any group:
it hands every ``TernaryLinear`` of ``model`` to a ``TernaryDataParallel``. Each process runs
forward and backward on its own samples as usual, and each layer's update (in
``loss.backward()``, or in ``TernaryOptimizer.step()``) becomes collective:

- int8 layers: the columns' absmax are all-reduced by max, each process's int32 partial sums of
  the weight gradient are reduce-scattered by blocks of rows (``reduce_scatter_tensor``; on a
  backend without it, Gloo in older torch, an int32 ``all_reduce`` and each process's slice),
  each process updates its rows and the codes, scales and v are all-gathered: about 4.75 bytes
  per weight per step on a ring (8.75 with the all-reduce fallback), whatever the batch; the
  update holds the layer's int32 sums (4 bytes per weight) while it runs.
  ``backward_input``'s rounding is keyed by the global sample index, so input gradients match
  too.
- fp32 layers (ordered float sums over samples): x and grad_out are all-gathered and every
  process runs the update on the global batch.

The torch parameters of the model (embeddings, norms, biases) are torch's business: wrap the
model in ``DistributedDataParallel`` as usual (``broadcast_buffers=False``: the ternary layers
keep their buffers equal themselves). The ternary layers use a process group of their own, so
their collectives never interleave with DDP's. Their updates see the gradient of the loss the
process backpropagates: for one process's bits, normalize the loss by the global batch (sum the
per-sample losses and divide by the global count) and sum, not average, DDP's gradients
(``sum_gradients_hook``).

Several backward passes held for one update (accumulate=True or a TernaryOptimizer) make one
global batch: the passes in order, each pass's samples in rank order; int8 input gradients are
keyed by that order, so micro-batches under DDP give one process's bits on it too.

Every collective call first compares the layer's shape, counter depth, precision, update
parameters, seed and step across processes: when they differ, every process raises the same
RuntimeError and no state changes (no process waits for a partner that gave up).
"""

import struct
import weakref
import zlib

import torch
import torch.distributed as dist

from . import _tc, step_seed
from .torch import TernaryLinear, _backward_input, _where

__all__ = ["data_parallel", "local_updates", "TernaryDataParallel", "sum_gradients_hook"]

_PRECISIONS = {"fp32": 0, "int8": 1}


def data_parallel(module, group=None, broadcast=True):
    """Makes every ``TernaryLinear`` in ``module`` (itself included) train data-parallel over
    the processes of ``group`` (default: all of them). Collective over every process of the
    default group (it makes a group with ``torch.distributed.new_group``), each with the same
    model. ``broadcast``: process 0's ternary states (codes, scale, v, steps) are copied
    to the others first; either way the processes then check that they hold the same states and
    settings, and all raise the same RuntimeError if not. Returns ``module``."""
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError("ternarycounter.distributed.data_parallel: torch.distributed is not "
                           "initialized (call torch.distributed.init_process_group first)")
    runner = TernaryDataParallel(group)
    layers = [(name, m) for name, m in module.named_modules() if isinstance(m, TernaryLinear)]
    for name, layer in layers:
        _attach(runner, layer, name or "model", broadcast)
    return module


def local_updates(module):
    """Keeps every ``TernaryLinear`` in ``module`` (itself included) out of the automatic
    data parallelism: under an initialized torch.distributed each process then updates its own
    copy from its own samples. Returns ``module``."""
    for m in module.modules():
        if isinstance(m, TernaryLinear):
            m._local = True
    return module


# The runner that training layers join by themselves: (id of the default group, a weak
# reference to the runner). The layers hold it; a module global would keep its process group
# alive past destroy_process_group(), into the interpreter's exit.
_DEFAULT = None


def _join_default_group(layer):
    """A training layer's first forward under torch.distributed with several processes: the
    layer joins the update group of all processes (made once, collectively), after process 0's
    state and seeds are copied to the others, as ``data_parallel`` does. Raises, before the
    layer trains, where the backend has no collectives for the layer's device."""
    global _DEFAULT
    backend = dist.get_backend()
    device = layer.codes.device.type
    if backend == "nccl" and device != "cuda":
        raise RuntimeError(
            f"TernaryLinear: torch.distributed runs {dist.get_world_size()} processes on "
            f"{backend}, which has no collectives for the layer's {device} tensors, so its "
            f"update can't be shared and each process would train its copy on its own samples; "
            f"move the layer to this process's GPU, or call "
            f"ternarycounter.distributed.local_updates(model) for separate copies")
    world = id(dist.group.WORLD)
    runner = _DEFAULT[1]() if _DEFAULT is not None and _DEFAULT[0] == world else None
    if runner is None:
        runner = TernaryDataParallel()
        _DEFAULT = (world, weakref.ref(runner))
    _attach(runner, layer, "TernaryLinear", True)


def _attach(runner, layer, where, broadcast):
    if broadcast:
        for buffer in (layer.codes, layer.scale, layer.v):
            runner._broadcast(buffer)
        meta = runner._meta_device(layer.codes)
        settings = torch.tensor([layer.step, layer.seed, layer.init_seed], dtype=torch.int64,
                                device=meta)
        dist.broadcast(settings, runner.ranks[0], group=runner.group)
        step, layer.seed, layer.init_seed = (int(v) for v in settings.cpu())
        layer.steps.fill_(step)
        layer._version += 1
    digest = zlib.crc32(layer.codes.cpu().numpy().tobytes())
    digest = zlib.crc32(layer.scale.cpu().numpy().tobytes(), digest)
    digest = zlib.crc32(layer.v.cpu().numpy().tobytes(), digest)
    runner._agree(layer, [("state digest (codes, scale, v)", digest)], where)
    layer._data_parallel = runner


def sum_gradients_hook(group, bucket):
    """A DDP communication hook that sums the processes' gradients (DDP's default averages):
    with the loss normalized by the global batch, the sum is the global batch's gradient.
    ``ddp.register_comm_hook(None, sum_gradients_hook)``."""
    work = dist.all_reduce(bucket.buffer(), group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


class TernaryDataParallel:
    """The collective update of TernaryLinear layers over a process group of their own (a new
    group of ``group``'s processes). ``data_parallel`` attaches one to every layer; a layer with
    one calls ``update`` and (int8) ``backward_rows`` instead of its one-process calls."""

    def __init__(self, group=None):
        world = dist.get_world_size()
        if group is None:
            self.ranks = list(range(world))
        else:
            # The group's global ranks, in its own rank order.
            mine = torch.tensor([dist.get_rank()], dtype=torch.int64)
            gathered = [torch.empty_like(mine) for _ in range(dist.get_world_size(group))]
            dist.all_gather(gathered, mine, group=group)
            self.ranks = [int(t) for t in gathered]
        self.group = dist.new_group(ranks=self.ranks)
        self.size = dist.get_world_size(self.group)
        self.rank = dist.get_rank(self.group)
        self._reduce_scatter_works = None  # unknown until tried

    # -- agreement --

    def _meta_device(self, like):
        return like.device if dist.get_backend(self.group) == "nccl" else torch.device("cpu")

    def _agree(self, layer, extra, where, rows=0):
        """Every process's `rows` (an int, or a tuple of ints), after checking that the processes
        agree on the layer's settings and on `extra` ((name, int) pairs); otherwise the same
        RuntimeError everywhere."""
        fields = [("out_features", layer.out_features), ("in_features", layer.in_features),
                  ("C", layer.C), ("precision", _PRECISIONS[layer.precision]),
                  ("seed", layer.seed), ("step", layer.step), ("lagged", int(layer.lagged))]
        for name in ("lr", "lr_scale", "rms_beta", "rms_eps", "clip"):
            bits = struct.unpack("<q", struct.pack("<d", float(getattr(layer, name))))[0]
            fields.append((name, bits))
        fields += list(extra)
        counts = list(rows) if isinstance(rows, tuple) else [rows]
        mine = torch.tensor([value for _, value in fields] + counts, dtype=torch.int64,
                            device=self._meta_device(layer.codes))
        gathered = [torch.empty_like(mine) for _ in range(self.size)]
        dist.all_gather(gathered, mine, group=self.group)
        table = torch.stack(gathered).cpu()
        for k, (name, _) in enumerate(fields):
            for r in range(1, self.size):
                if table[r, k] != table[0, k]:
                    raise RuntimeError(
                        f"ternarycounter.distributed: {where}: the processes disagree on "
                        f"{name}: rank 0 has {int(table[0, k])} but rank {r} has "
                        f"{int(table[r, k])}; nothing changed")
        if isinstance(rows, tuple):
            return [tuple(int(v) for v in row) for row in table[:, len(fields):]]
        return [int(v) for v in table[:, -1]]

    # -- collectives --

    def _broadcast(self, tensor):
        if tensor.device.type == "cpu" and dist.get_backend(self.group) == "nccl":
            raise RuntimeError("ternarycounter.distributed: NCCL needs the layers on the GPU")
        dist.broadcast(tensor, self.ranks[0], group=self.group)

    def _block(self, out):
        """Rows per process: equal blocks of ceil(out / size) (the last ones may be short)."""
        return -(-out // self.size)

    def _reduce_scatter(self, sums, block):
        """This process's block of the sum over processes of `sums` [block * size, in]."""
        if self._reduce_scatter_works is not False and hasattr(dist, "reduce_scatter_tensor"):
            mine = torch.empty((block, sums.shape[1]), dtype=sums.dtype, device=sums.device)
            try:
                dist.reduce_scatter_tensor(mine, sums, group=self.group)
                self._reduce_scatter_works = True
                return mine
            except RuntimeError:
                # The backend lacks it (it says so before any data moves, on every process).
                if self._reduce_scatter_works:
                    raise
                self._reduce_scatter_works = False
        dist.all_reduce(sums, group=self.group)
        return sums[self.rank * block:(self.rank + 1) * block]

    def _all_gather_rows(self, tensor, first, last, block):
        """Every process's rows [first, last) of `tensor` to every process (blocks of `block`
        rows, the last ones padded)."""
        part = tensor.new_zeros((block,) + tuple(tensor.shape[1:]))
        part[:last - first] = tensor[first:last]
        parts = [torch.empty_like(part) for _ in range(self.size)]
        dist.all_gather(parts, part, group=self.group)
        tensor.copy_(torch.cat(parts)[:tensor.shape[0]])

    # -- the layer's calls --

    def backward_rows(self, layer, grad_y, seed, base=0, before=0, pass_rows=None):
        """int8 grad_x (in grad_y's dtype) of this process's samples, its rounding keyed by the
        global sample: the `base` samples of earlier held passes (every process's), then this
        pass's processes in rank order, each process's uses in forward order (`before`: this
        process's rows of the pass's earlier uses; `pass_rows`: of all its uses, default this
        use's)."""
        pass_rows = grad_y.shape[0] if pass_rows is None else pass_rows
        sizes = self._agree(layer, [("samples held", base)], "backward_input",
                            (grad_y.shape[0], pass_rows))
        offset = base + sum(total for _, total in sizes[:self.rank]) + before
        layer._pass_rows += sum(rows for rows, _ in sizes)
        return _backward_input(layer, grad_y, seed, offset)

    def update(self, layer, rounds):
        """The collective update of `layer` from this process's backward passes `rounds`
        ([(x [m_k, in], grad_y [m_k, out])], float32 contiguous); returns the skipped-row count
        of the whole layer (an int64 tensor). The global batch is the rounds in order, each
        round the processes' samples in rank order."""
        local = [x.shape[0] for x, _ in rounds]
        self._agree(layer, [("backward passes held", len(rounds))], "update", sum(local))
        mine = torch.tensor(local, dtype=torch.int64, device=self._meta_device(layer.codes))
        table = [torch.empty_like(mine) for _ in range(self.size)]
        dist.all_gather(table, mine, group=self.group)
        table = torch.stack(table).cpu().tolist()  # [rank][round] samples
        offsets, start = [], 0
        for k in range(len(rounds)):
            offsets.append(start + sum(table[r][k] for r in range(self.rank)))
            start += sum(table[r][k] for r in range(self.size))
        seed = step_seed(layer.seed, layer.step)
        if layer.precision == "int8":
            return self._integer_update(layer, rounds, offsets, start, seed)
        return self._gathered_update(layer, rounds, table, seed)

    def _integer_update(self, layer, rounds, offsets, m, seed):
        out, in_ = layer.out_features, layer.in_features
        device, stream = _where(rounds[0][0])
        where = rounds[0][0].device
        absmax = None
        for x, grad_y in rounds:
            part = torch.empty(in_ + out, dtype=torch.int32, device=where)
            _tc.tensor_int8_column_absmax(device, stream, x.data_ptr(), grad_y.data_ptr(),
                                          x.shape[0], out, in_, part.data_ptr())
            absmax = part if absmax is None else torch.maximum(absmax, part)
        dist.all_reduce(absmax, op=dist.ReduceOp.MAX, group=self.group)
        block = self._block(out)
        sums = torch.zeros((block * self.size, in_), dtype=torch.int32, device=where)
        part = torch.empty((out, in_), dtype=torch.int32, device=where) if len(rounds) > 1 else None
        for (x, grad_y), offset in zip(rounds, offsets):
            target = sums if part is None else part
            _tc.tensor_int8_gradient_sums(device, stream, x.data_ptr(), grad_y.data_ptr(),
                                          x.shape[0], out, in_, absmax.data_ptr(), seed, m,
                                          offset, target.data_ptr())
            if part is not None:
                sums[:out].add_(part)
        del part
        mine = self._reduce_scatter(sums, block).contiguous()
        first, last = min(out, self.rank * block), min(out, (self.rank + 1) * block)
        skipped = torch.zeros((), dtype=torch.int64, device=where)
        params = layer._params()
        params.pop("precision")
        if last > first:
            _tc.tensor_int8_update_from_sums(
                device, stream, layer.codes[first:].data_ptr(), layer.scale[first:].data_ptr(),
                layer.v[first:].data_ptr(), first, last - first, out, in_, layer.C,
                mine.data_ptr(), absmax.data_ptr(), skipped.data_ptr(), seed=seed, **params)
        for buffer in (layer.codes, layer.scale, layer.v):
            self._all_gather_rows(buffer, first, last, block)
        dist.all_reduce(skipped, group=self.group)
        return skipped

    def _gathered_update(self, layer, rounds, table, seed):
        totals = [sum(row) for row in table]
        largest = max(totals)

        def gather(tensors):
            local = torch.cat(tensors)
            padded = torch.zeros((largest, local.shape[1]), dtype=local.dtype,
                                 device=local.device)
            padded[:local.shape[0]] = local
            parts = [torch.empty_like(padded) for _ in range(self.size)]
            dist.all_gather(parts, padded, group=self.group)
            pieces, starts = [], [0] * self.size
            for k in range(len(rounds)):  # round k: every process's rows of it, in rank order
                for r in range(self.size):
                    pieces.append(parts[r][starts[r]:starts[r] + table[r][k]])
                    starts[r] += table[r][k]
            return torch.cat(pieces).contiguous()

        x_all = gather([x for x, _ in rounds])
        grad_all = gather([g for _, g in rounds])
        device, stream = _where(x_all)
        rows = _tc.tensor_workspace_rows(device, layer.out_features, layer.in_features)
        workspace = torch.empty((rows, layer.in_features), dtype=torch.float32,
                                device=x_all.device)
        skipped = torch.zeros((), dtype=torch.int64, device=x_all.device)
        _tc.tensor_update_from_io(device, stream, layer.codes.data_ptr(), layer.scale.data_ptr(),
                                  layer.v.data_ptr(), layer.out_features, layer.in_features,
                                  layer.C, x_all.data_ptr(), x_all.shape[0], grad_all.data_ptr(),
                                  workspace.data_ptr(), rows, skipped.data_ptr(), seed=seed,
                                  **layer._params())
        return skipped
