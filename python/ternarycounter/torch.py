"""PyTorch layer over TernaryCounter: ``TernaryLinear`` trains its ternary weights with the
library's counters inside an ordinary PyTorch training loop, on CPU or CUDA tensors.

Torch owns the training state: the packed codes (uint8 [out, 3 in / 4]), the row scale and the
RMS moment v (float32 [out]) are module buffers, so ``.to(device)``, ``state_dict()``,
``deepcopy``, pickling and ``share_memory()`` treat them as any buffer; each call hands their
memory to the library without a copy (CUDA: on torch's current stream, no synchronization).

Training: ``loss.backward()`` computes the input gradient with the weights the forward used and
then applies the strict update (``update_from_io``: the weight gradient is never stored) with
the step's rounding seed ``step_seed(seed, step)``, as the C++ TernaryLinear; no optimizer is
needed (the optional bias is an ordinary Parameter for the user's optimizer). The update is
tied to a zero-size Parameter, ``update_trigger``: it runs when autograd delivers that
parameter's gradient, which happens once per backward pass after every use of the layer in the
graph has computed its input gradient. So:

- a layer used several times in one graph gets one update from all its uses (their samples in
  forward order, as one ``update_from_io`` over the concatenated batch);
- ``torch.autograd.grad(y, x)`` (input gradients only), ``requires_grad_(False)``, ``eval()``
  and ``torch.no_grad()`` never change the state;
- ``accumulate=True`` keeps each backward's (x, grad_out) instead, and ``step_accumulated()``
  applies one update from all of them: bit for bit one step over the whole batch.
"""

import math
import weakref

import torch

from . import State, _tc, step_seed

__all__ = ["TernaryLinear", "step_accumulated", "DEFAULTS"]

# The update recipe (C++ UpdateParams' defaults, which train the examples' models).
DEFAULTS = dict(C=8, lr=0.003, lr_scale=0.02, rms_beta=0.99, rms_eps=1e-3, clip=0.0)

_SCALE_RANGE = (1e-5, 10.0)  # an update keeps every row scale in this range (SPEC §3 step 8)
_FLOAT_INPUTS = (torch.float32, torch.bfloat16, torch.float16)


def _where(t):
    """(device index, stream) of a tensor for the extension: -1 and 0 for host memory."""
    if t.device.type == "cpu":
        return -1, 0
    if t.device.type == "cuda":
        return t.device.index, torch.cuda.current_stream(t.device).cuda_stream
    raise ValueError(f"TernaryLinear: tensors on '{t.device}' are not supported (cpu or cuda)")


def _forward_rows(x, codes, scale, C, precision):
    """y [M, out] float32 = x [M, in] (float32, contiguous) W^T."""
    out, in_ = scale.shape[0], x.shape[1]
    y = torch.empty((x.shape[0], out), dtype=torch.float32, device=x.device)
    if x.shape[0] > 0:
        device, stream = _where(x)
        _tc.tensor_forward(device, stream, codes.data_ptr(), scale.data_ptr(), out, in_, C,
                           x.data_ptr(), x.shape[0], y.data_ptr(), precision)
    return y


# A registered operator, so that torch.jit.trace records inference as one call.
_LIBRARY = torch.library.Library("ternarycounter", "DEF")
_LIBRARY.define("linear(Tensor x, Tensor codes, Tensor scale, int C, str precision) -> Tensor")
for _key in ("CPU", "CUDA"):
    _LIBRARY.impl("linear", _forward_rows, _key)


class _TernaryLinearFunction(torch.autograd.Function):
    """Inputs x [M, in] float32 contiguous, the same rows in their bf16/fp16 input dtype (or
    None) and the layer's update trigger (None when the layer does not train in this call). Backward: grad_x from the state the forward read; when the
    trigger's gradient is wanted, hands (x, grad_out) to the layer (see the module docstring)."""

    @staticmethod
    def forward(ctx, x, narrow_x, trigger, layer):
        ctx.layer = layer
        ctx.version = layer._version
        ctx.order = layer._next_use()
        if trigger is not None:
            # A bf16/fp16 input is kept as it came (half the memory) and widened again for the
            # update: widening is exact, so the bits are the same.
            ctx.save_for_backward(x if narrow_x is None else narrow_x)
        return _forward_rows(x, layer.codes, layer.scale, layer.C, layer.precision)

    @staticmethod
    def backward(ctx, grad_y):
        layer = ctx.layer
        if layer._version != ctx.version:
            raise RuntimeError(
                "TernaryLinear: the layer's state was updated after this forward (a backward "
                "through another graph, or a second backward through this one), so its input "
                "gradient can't come from the weights the forward used; for gradient "
                "accumulation use TernaryLinear(..., accumulate=True) and step_accumulated()")
        grad_y = grad_y.to(torch.float32).contiguous()
        seed = step_seed(layer.seed, layer.step)
        grad_x = None
        if ctx.needs_input_grad[0]:
            grad_x = layer._backward_rows(grad_y, seed)
        grad_trigger = None
        if ctx.needs_input_grad[2]:
            (x,) = ctx.saved_tensors
            layer._record_use(ctx.order, x.to(torch.float32).contiguous(), grad_y)
            grad_trigger = grad_y.new_zeros(0)
        return grad_x, None, grad_trigger, None


def _on_trigger_gradient(layer_ref):
    def hook(grad):
        layer = layer_ref()
        if layer is not None:
            layer._uses_complete()
        return None

    return hook


class TernaryLinear(torch.nn.Module):
    """y = x W^T (+ bias) with W = scale * t, t in {-1, 0, +1} packed with its counter: 0.75 byte
    per weight + 2 floats per row of training state, trained by its own backward (see the module
    docstring).

    Arguments: ``in_features`` (a multiple of 4), ``out_features``, ``bias`` (False: an optional
    float Parameter for the user's optimizer, zero-initialized), ``C`` (counter depth, 2..11),
    the update's ``lr``, ``lr_scale``, ``rms_beta``, ``rms_eps``, ``clip``, ``lagged`` (defaults:
    the recipe, ``DEFAULTS``), ``precision`` ("fp32" or "int8": SPEC §3 / §6), ``seed`` (base of
    the per-step rounding seeds), ``init_seed`` / ``init_scale`` (ternary values drawn from
    ``init_seed``, row scale ``init_scale``, default 1 / sqrt(2 in / 3); ``init_seed=None``
    leaves t = 0, which does not learn), ``accumulate`` (defer updates to
    ``step_accumulated()``), ``device`` and ``dtype`` (the bias' dtype; the state is always
    uint8/float32).

    Inputs: [..., in_features] float32, bfloat16 or float16, any strides, on the state's device.
    bf16/fp16 inputs are widened to float32 exactly; the output is float32 rounded to the
    autocast dtype under ``torch.autocast`` (else to the input's dtype), so the integer path on a
    bf16 input is the integer path on its float32 widening, and FP32 is the float32 product of
    the widened input, rounded once.

    ``steps`` (the step count, the rounding seed's step) stays a CPU tensor when the layer moves:
    the seed is computed on the host, and a GPU copy would cost a synchronization per step.
    """

    def __init__(self, in_features, out_features, bias=False, C=DEFAULTS["C"],
                 lr=DEFAULTS["lr"], lr_scale=DEFAULTS["lr_scale"], rms_beta=DEFAULTS["rms_beta"],
                 rms_eps=DEFAULTS["rms_eps"], clip=DEFAULTS["clip"], lagged=False,
                 precision="fp32", seed=0, init_seed=0, init_scale=None, accumulate=False,
                 device=None, dtype=None):
        super().__init__()
        _check_int("in_features", in_features, 4)
        if in_features % 4:
            raise ValueError(f"TernaryLinear: in_features must be a multiple of 4 (4 codes pack "
                             f"into 3 bytes), not {in_features}")
        _check_int("out_features", out_features, 1)
        _check_int("C", C, 2, 11)
        _check_int("seed", seed, 0, 2**32 - 1)
        if init_seed is not None:
            _check_int("init_seed", init_seed, 0, 2**32 - 1)
        if init_scale is not None:
            _check_float("init_scale", init_scale, *_SCALE_RANGE)
        if precision not in ("fp32", "int8"):
            raise ValueError(f"TernaryLinear: precision must be 'fp32' or 'int8', not {precision!r}")
        if dtype is not None and dtype not in _FLOAT_INPUTS + (torch.float64,):
            raise TypeError(f"TernaryLinear: dtype (the bias') must be floating, not {dtype}")
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.lr, self.lr_scale, self.rms_beta, self.rms_eps = lr, lr_scale, rms_beta, rms_eps
        self.clip, self.lagged, self.precision, self.seed = clip, bool(lagged), precision, int(seed)
        self.init_seed, self.init_scale = init_seed, init_scale
        self.accumulate = bool(accumulate)
        self._C = int(C)
        self.register_buffer("codes", torch.empty((out_features, in_features // 4 * 3),
                                                  dtype=torch.uint8, device=device))
        self.register_buffer("scale", torch.empty(out_features, dtype=torch.float32,
                                                  device=device))
        self.register_buffer("v", torch.empty(out_features, dtype=torch.float32, device=device))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        # Zero-size: its gradient only says "this backward trains the layer" (see the module
        # docstring); requires_grad_(False) freezes the layer.
        self.update_trigger = torch.nn.Parameter(torch.empty(0, device=device))
        self.bias = (torch.nn.Parameter(torch.zeros(out_features, device=device, dtype=dtype))
                     if bias else None)
        self._init_transient()
        self.update_params()  # ValueError now, not at the first step, for parameters out of range
        self.reset_parameters()

    # -- bookkeeping that is not part of the layer's value (dropped by copies and pickles) --

    def _init_transient(self):
        self._version = 0  # +1 per update: a backward checks its forward saw the same state
        self._uses = 0  # forward calls that may train, for the order of a multi-use update
        self._pass_uses = []  # (order, x, grad_out) of this backward pass
        self._accumulated = []  # accumulate=True: the passes' uses awaiting step_accumulated()
        self._callback_queued = False
        self._hooked = None
        self._skipped = None
        self._data_parallel = None  # ternarycounter.distributed: a copy is not in the group

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in ("_pass_uses", "_accumulated", "_callback_queued", "_hooked", "_skipped",
                     "_hook_handle", "_data_parallel"):
            state.pop(name, None)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        version = self.__dict__.get("_version", 0)
        self._init_transient()
        self._version = version

    # -- properties --

    @property
    def C(self):
        return self._C

    @property
    def step(self):
        """Training steps done (the rounding seed's step)."""
        return int(self.steps)

    @step.setter
    def step(self, value):
        _check_int("step", value, 0)
        self.steps.fill_(int(value))

    @property
    def skipped_rows(self):
        """Rows the last update left untouched for a non-finite gradient (reading it waits for
        that update on a GPU)."""
        return 0 if self._skipped is None else int(self._skipped)

    def update_params(self):
        """The keyword parameters of this layer's update_from_io (all but the seed); raises
        ValueError for values the library rejects."""
        params = self._params()
        _tc.check_update_params(State(1, 4, self.C), **params)
        return params

    def _params(self):
        return dict(lr=float(self.lr), lr_scale=float(self.lr_scale),
                    rms_beta=float(self.rms_beta), rms_eps=float(self.rms_eps),
                    clip=float(self.clip), lagged=bool(self.lagged), precision=self.precision)

    def reset_parameters(self):
        """Draws the ternary values again from ``init_seed`` (scale ``init_scale``, v 0, steps 0,
        bias 0) and drops accumulated micro-batches."""
        host = State(self.out_features, self.in_features, self.C)
        if self.init_seed is not None:
            scale = self.init_scale
            if scale is None:
                scale = 1.0 / math.sqrt(self.in_features * 2.0 / 3.0)
            host.randomize(self.init_seed, scale)
        with torch.no_grad():
            self.codes.copy_(torch.from_numpy(host.codes))
            self.scale.copy_(torch.from_numpy(host.scale))
            self.v.copy_(torch.from_numpy(host.v))
            self.steps.zero_()
            if self.bias is not None:
                self.bias.zero_()
        self._version += 1
        self._pass_uses, self._accumulated = [], []

    def to_state(self):
        """The layer's state as a new host ``ternarycounter.State`` (a copy: for the functional
        calls and ``save_layers``)."""
        state = State(self.out_features, self.in_features, self.C)
        state.codes[...] = self.codes.cpu().numpy()
        state.scale[...] = self.scale.cpu().numpy()
        state.v[...] = self.v.cpu().numpy()
        return state

    def load_state(self, state):
        """Copies a ``ternarycounter.State`` (e.g. from ``load_layers``) into the layer; its
        shape and C must be the layer's."""
        if not isinstance(state, State):
            raise TypeError(f"TernaryLinear.load_state: state must be a ternarycounter.State, "
                            f"not {type(state).__name__}")
        if (state.out, state.in_, state.C) != (self.out_features, self.in_features, self.C):
            raise ValueError(f"TernaryLinear.load_state: the state is {state.out} x {state.in_} "
                             f"(C = {state.C}) but the layer {self.out_features} x "
                             f"{self.in_features} (C = {self.C})")
        with torch.no_grad():
            self.codes.copy_(torch.from_numpy(state.codes))
            self.scale.copy_(torch.from_numpy(state.scale))
            self.v.copy_(torch.from_numpy(state.v))
        self._version += 1
        self._pass_uses, self._accumulated = [], []

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, C={self.C}, precision={self.precision}, "
                f"lr={self.lr}, lr_scale={self.lr_scale}, rms_beta={self.rms_beta}"
                + (", accumulate=True" if self.accumulate else ""))

    # -- state dict: validated as load_layers validates a checkpoint --

    def get_extra_state(self):
        return {"C": self.C, "in_features": self.in_features, "out_features": self.out_features}

    def set_extra_state(self, state):
        pass  # checked in _load_from_state_dict, before any buffer changes

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        problem = self._state_dict_problem(state_dict, prefix)
        if problem:
            error_msgs.append(f"TernaryLinear '{prefix.rstrip('.')}': {problem}; the layer is "
                              f"unchanged")
            return
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)
        self._version += 1
        self._pass_uses, self._accumulated = [], []

    def _state_dict_problem(self, state_dict, prefix):
        extra = state_dict.get(prefix + "_extra_state")
        if isinstance(extra, dict):
            mine = self.get_extra_state()
            for key, value in mine.items():
                if extra.get(key) != value:
                    return f"the state has {key} = {extra.get(key)} but the layer {value}"
        shapes = {"codes": (torch.uint8, tuple(self.codes.shape)),
                  "scale": (torch.float32, (self.out_features,)),
                  "v": (torch.float32, (self.out_features,)), "steps": (torch.int64, ())}
        for name, (dtype, shape) in shapes.items():
            t = state_dict.get(prefix + name)
            if t is None:
                continue  # missing: load_state_dict reports it (strict) or keeps the buffer
            if not isinstance(t, torch.Tensor) or t.dtype != dtype or tuple(t.shape) != shape:
                got = (f"{t.dtype} {tuple(t.shape)}" if isinstance(t, torch.Tensor)
                       else type(t).__name__)
                return f"'{name}' must be {dtype} {shape}, not {got}"
        codes = state_dict.get(prefix + "codes")
        if codes is not None:
            limit = 3 * (2 * self.C - 1)
            worst = int(_unpack_codes(codes).max()) if codes.numel() else 0
            if worst >= limit:
                return f"'codes' holds code {worst}, not below 3(2C - 1) = {limit} for C = {self.C}"
        scale = state_dict.get(prefix + "scale")
        if scale is not None and not bool(((scale >= _SCALE_RANGE[0]) &
                                           (scale <= _SCALE_RANGE[1])).all()):
            return "'scale' must be in [1e-5, 10] (an update keeps it there)"
        v = state_dict.get(prefix + "v")
        if v is not None and not bool((torch.isfinite(v) & (v >= 0)).all()):
            return "'v' must be finite and >= 0"
        steps = state_dict.get(prefix + "steps")
        if steps is not None and int(steps) < 0:
            return "'steps' must be >= 0"
        return None

    # -- device and dtype moves --

    def _apply(self, fn, *args, **kwargs):
        """The state keeps its dtypes (``.half()``/``.double()`` convert the bias only) and
        ``steps`` stays on the CPU; a device move takes codes, scale and v along."""
        state = {id(self.codes), id(self.scale), id(self.v)}
        steps = id(self.steps)

        def keeping_state(t):
            moved = fn(t)
            if id(t) == steps:
                return moved if moved.device.type == "cpu" and moved.dtype == t.dtype else t
            if id(t) in state and moved.dtype != t.dtype:
                return t.to(device=moved.device)
            return moved

        self._pass_uses, self._skipped = [], None
        return super()._apply(keeping_state, *args, **kwargs)

    # -- the calls --

    def forward(self, x):
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"TernaryLinear: x must be a torch.Tensor, not {type(x).__name__}")
        # (A trace records the shapes it sees: the check would be a constant in it.)
        if not torch.jit.is_tracing() and (x.dim() < 1 or x.shape[-1] != self.in_features):
            raise ValueError(f"TernaryLinear: x has shape {tuple(x.shape)} but [..., "
                             f"{self.in_features}] is needed")
        if x.dtype not in _FLOAT_INPUTS:
            raise TypeError(f"TernaryLinear: x must be float32, bfloat16 or float16, not {x.dtype}")
        self._check_state(x)
        out_dtype = _autocast_dtype(x.device.type) or x.dtype
        given = x.reshape(-1, self.in_features)
        rows = given.to(torch.float32).contiguous()
        trains = self.training and self.update_trigger.requires_grad and torch.is_grad_enabled()
        if trains or (torch.is_grad_enabled() and x.requires_grad):
            if trains:
                self._hook_trigger()
            narrow = None
            if trains and given.dtype != torch.float32:
                narrow = given.detach().contiguous()
            y = _TernaryLinearFunction.apply(rows, narrow, self.update_trigger if trains else None,
                                             self)
        else:
            y = torch.ops.ternarycounter.linear(rows, self.codes, self.scale, self.C,
                                                self.precision)
        if self.bias is not None:
            y = y + self.bias
        return y.to(out_dtype).reshape(*x.shape[:-1], self.out_features)

    def step_accumulated(self):
        """accumulate=True: one update from every use since the last call (their samples in
        order, as one batch); nothing when there is none."""
        uses, self._accumulated = self._accumulated, []
        if uses:
            self._update(uses)

    def _check_state(self, x):
        for name, dtype in (("codes", torch.uint8), ("scale", torch.float32),
                            ("v", torch.float32)):
            t = getattr(self, name)
            if t.dtype != dtype or not t.is_contiguous():
                raise RuntimeError(f"TernaryLinear: buffer '{name}' must be a contiguous {dtype} "
                                   f"tensor, not {t.dtype} (stride {t.stride()})")
            if t.device != x.device:
                raise ValueError(f"TernaryLinear: x is on {x.device} but the layer's state "
                                 f"('{name}') is on {t.device}; move one with .to(device)")

    def _hook_trigger(self):
        # A weak reference: a Parameter held as an attribute would register as a second name.
        if self._hooked is None or self._hooked() is not self.update_trigger:
            self._hook_handle = self.update_trigger.register_hook(
                _on_trigger_gradient(weakref.ref(self)))
            self._hooked = weakref.ref(self.update_trigger)

    def _next_use(self):
        self._uses += 1
        return self._uses

    def _backward_rows(self, grad_y, seed):
        if self._data_parallel is not None and self.precision == "int8":
            return self._data_parallel.backward_rows(self, grad_y, seed)
        grad_x = torch.empty((grad_y.shape[0], self.in_features), dtype=torch.float32,
                             device=grad_y.device)
        if grad_y.shape[0] > 0:
            device, stream = _where(grad_y)
            _tc.tensor_backward_input(device, stream, self.codes.data_ptr(),
                                      self.scale.data_ptr(), self.out_features, self.in_features,
                                      self.C, grad_y.data_ptr(), grad_y.shape[0],
                                      grad_x.data_ptr(), self.precision, seed)
        return grad_x

    def _record_use(self, order, x, grad_y):
        self._pass_uses.append((order, x, grad_y))
        if not self._callback_queued:
            # Uses whose trigger gradient autograd never delivers (torch.autograd.grad(y, x))
            # are dropped when the pass ends.
            self._callback_queued = True
            layer = weakref.ref(self)
            torch.autograd.Variable._execution_engine.queue_callback(
                lambda: _end_of_pass(layer))

    def _uses_complete(self):
        uses, self._pass_uses = self._pass_uses, []
        if not uses:
            return
        if self.accumulate:
            self._accumulated.extend(uses)
        else:
            self._update(uses)

    def _update(self, uses):
        uses = sorted(uses, key=lambda use: use[0])
        x = uses[0][1] if len(uses) == 1 else torch.cat([use[1] for use in uses])
        grad_y = uses[0][2] if len(uses) == 1 else torch.cat([use[2] for use in uses])
        if x.device != self.codes.device:
            raise RuntimeError("TernaryLinear: the layer moved to another device while it had "
                               "uses awaiting their update")
        if self._data_parallel is not None:
            self._skipped = self._data_parallel.update(self, x, grad_y)
            self.steps.add_(1)
            self._version += 1
            return
        device, stream = _where(x)
        params = self._params()  # the library validates them before it changes anything
        rows = _tc.tensor_workspace_rows(device, self.out_features, self.in_features)
        workspace = torch.empty((rows, self.in_features), dtype=torch.float32, device=x.device)
        if self._skipped is None or self._skipped.device != x.device:
            self._skipped = torch.zeros((), dtype=torch.int64, device=x.device)
        _tc.tensor_update_from_io(device, stream, self.codes.data_ptr(), self.scale.data_ptr(),
                                  self.v.data_ptr(), self.out_features, self.in_features, self.C,
                                  x.data_ptr(), x.shape[0], grad_y.data_ptr(),
                                  workspace.data_ptr(), rows, self._skipped.data_ptr(),
                                  seed=step_seed(self.seed, self.step), **params)
        self.steps.add_(1)
        self._version += 1


def _end_of_pass(layer_ref):
    layer = layer_ref()
    if layer is not None:
        layer._callback_queued = False
        layer._pass_uses = []


def step_accumulated(module):
    """Calls ``step_accumulated()`` of every TernaryLinear in ``module`` (itself included)."""
    for m in module.modules():
        if isinstance(m, TernaryLinear):
            m.step_accumulated()


def _autocast_dtype(device_type):
    """The autocast dtype of ``device_type`` when autocast is on there, else None."""
    if hasattr(torch, "get_autocast_dtype"):  # torch >= 2.4
        if torch.is_autocast_enabled(device_type):
            return torch.get_autocast_dtype(device_type)
        return None
    if device_type == "cuda" and torch.is_autocast_enabled():
        return torch.get_autocast_gpu_dtype()
    if device_type == "cpu" and torch.is_autocast_cpu_enabled():
        return torch.get_autocast_cpu_dtype()
    return None


def _unpack_codes(packed):
    """The codes of packed rows [out, 3 in / 4] (uint8), as int16 [out, in] (SPEC §1)."""
    b = packed.reshape(packed.shape[0], -1, 3).to(torch.int16)
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    k = torch.stack([b0 & 63, (b0 >> 6) | ((b1 & 15) << 2), (b1 >> 4) | ((b2 & 3) << 4), b2 >> 2],
                    dim=-1)
    return k.reshape(packed.shape[0], -1)


def _check_int(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"TernaryLinear: {name} must be an int, not {type(value).__name__}")
    if value < low or (high is not None and value > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"TernaryLinear: {name} must be {bound}, not {value}")


def _check_float(name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"TernaryLinear: {name} must be a number, not {type(value).__name__}")
    if not (math.isfinite(value) and low <= value <= high):
        raise ValueError(f"TernaryLinear: {name} must be finite and in [{low}, {high}], "
                         f"not {value}")

