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
  forward order, as one ``update_from_io`` over the concatenated batch), and the input
  gradients of one call: int8 rounds each use's grad_out on the stream of its rows in that
  batch (after the held passes' rows), so a layer called on chunks trains as one call;
- ``torch.autograd.grad(y, x)`` (input gradients only), ``requires_grad_(False)``, ``eval()``
  and ``torch.no_grad()`` never change the state;
- ``accumulate=True``, or a ``TernaryOptimizer`` that controls the layer, keeps each backward's
  (x, grad_out) instead, and ``step_accumulated()`` (``TernaryOptimizer.step()``) applies one
  update from all of them: bit for bit one step over the whole batch;
- under ``torch.distributed`` with several processes, a training layer joins the process group
  for its updates (``ternarycounter.distributed``): DistributedDataParallel trains as one process.
"""

import math
import numbers
import warnings
import weakref

import torch

from . import State, _tc, step_seed

__all__ = ["TernaryLinear", "TernaryOptimizer", "step_accumulated", "DEFAULTS", "HYPERPARAMETERS"]

# The update recipe (C++ UpdateParams' defaults, which train the examples' models).
DEFAULTS = dict(C=8, lr=0.003, lr_scale=0.02, rms_beta=0.99, rms_eps=1e-3, clip=0.0)
# The update's hyperparameters: TernaryLinear attributes and TernaryOptimizer param-group keys.
HYPERPARAMETERS = ("lr", "lr_scale", "rms_beta", "rms_eps", "clip", "lagged")

_SCALE_RANGE = (1e-5, 10.0)  # an update keeps every row scale in this range (SPEC §3 step 8)
_FLOAT_INPUTS = (torch.float32, torch.bfloat16, torch.float16)


def _where(t):
    """(device index, stream) of a tensor for the extension: -1 and 0 for host memory."""
    if t.device.type == "cpu":
        return -1, 0
    if t.device.type == "cuda":
        return t.device.index, torch.cuda.current_stream(t.device).cuda_stream
    raise ValueError(f"TernaryLinear: tensors on '{t.device}' are not supported (cpu or cuda)")


def _eager(fn):
    """`fn` run eagerly under torch.compile (a graph break around it): the layer hands raw
    pointers and the current stream to the library and updates itself in backward, which
    TorchDynamo cannot trace. Torch versions without torch.compile run `fn` as it is."""
    disable = getattr(getattr(torch, "compiler", None), "disable", None)
    return fn if disable is None else disable(fn, recursive=True)


def _type_name(dtype):
    """The extension's name of a float32, bfloat16 or float16 dtype."""
    return str(dtype).rsplit(".", 1)[-1]


def _forward_rows(x, codes, scale, C, precision):
    """y [M, out] = x [M, in] (float32, bfloat16 or float16, contiguous) W^T, in x's dtype: the
    library reads 16-bit rows as they are and rounds the output into their type."""
    out, in_ = scale.shape[0], x.shape[1]
    y = torch.empty((x.shape[0], out), dtype=x.dtype, device=x.device)
    if x.shape[0] > 0:
        device, stream = _where(x)
        _tc.tensor_forward(device, stream, codes.data_ptr(), scale.data_ptr(), out, in_, C,
                           x.data_ptr(), x.shape[0], y.data_ptr(), precision,
                           _type_name(x.dtype), _type_name(x.dtype))
    return y


# A registered operator, so that torch.jit.trace records inference as one call.
_LIBRARY = torch.library.Library("ternarycounter", "DEF")
_LIBRARY.define("linear(Tensor x, Tensor codes, Tensor scale, int C, str precision) -> Tensor")
for _key in ("CPU", "CUDA"):
    _LIBRARY.impl("linear", _forward_rows, _key)


class _TernaryLinearFunction(torch.autograd.Function):
    """Inputs x [M, in] contiguous (float32, or bf16/fp16 handed over as they came), the same
    rows in their bf16/fp16 input dtype where x is their float32 widening (or None) and the
    layer's update trigger (None when the layer does not train in this call); y has x's dtype.
    Backward: grad_x from the state the forward read; when the trigger's gradient is wanted,
    hands (x, grad_out) to the layer (see the module docstring)."""

    @staticmethod
    def forward(ctx, x, narrow_x, trigger, layer):
        ctx.layer = layer
        ctx.version = layer._version
        ctx.use = layer._next_use(x.shape[0])
        ctx.dtype = x.dtype
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
                "accumulation, step the layers with a TernaryOptimizer (one update per step()) "
                "or use TernaryLinear(..., accumulate=True) and step_accumulated()")
        grad_y = grad_y.to(ctx.dtype).contiguous()  # y's dtype: x's
        seed = step_seed(layer.seed, layer.step)
        grad_x = None
        if ctx.needs_input_grad[0]:
            grad_x = layer._backward_rows(grad_y, seed, ctx.use)
        layer._ran(ctx.use)
        grad_trigger = None
        if ctx.needs_input_grad[2]:
            (x,) = ctx.saved_tensors  # the rows as they came (float32, bf16 or fp16)
            layer._record_use(ctx.use.order, x, grad_y)
            grad_trigger = grad_y.new_zeros(0)
        return grad_x, None, grad_trigger, None


class _Use:
    """A forward through _TernaryLinearFunction: its place among the layer's uses, its rows, the
    layer's pass window when it ran, and whether a finished backward pass ran it. The layer
    holds it weakly: a graph dropped without a backward takes its uses along."""

    __slots__ = ("order", "rows", "window", "done", "__weakref__")

    def __init__(self, order, rows, window):
        self.order, self.rows, self.window, self.done = order, rows, window, False


def _on_trigger_gradient(layer_ref):
    def hook(grad):
        layer = layer_ref()
        if layer is not None:
            layer._uses_complete()
        return None

    return hook


# id(update_trigger) -> weak reference to its layer, for TernaryOptimizer(model.parameters()).
_TRIGGER_OWNERS = {}


def _register_trigger(layer):
    trigger = layer._parameters.get("update_trigger")
    if trigger is not None:
        key = id(trigger)
        _TRIGGER_OWNERS[key] = weakref.ref(layer, lambda ref: _forget_trigger(key, ref))


def _forget_trigger(key, ref):
    if _TRIGGER_OWNERS.get(key) is ref:
        del _TRIGGER_OWNERS[key]


def _layer_of_trigger(parameter):
    owner = _TRIGGER_OWNERS.get(id(parameter))
    layer = owner() if owner is not None else None
    if layer is not None and layer._parameters.get("update_trigger") is parameter:
        return layer
    return None


def _hyperparameter(name, doc):
    """A TernaryLinear update hyperparameter: setting it checks it at once (ValueError for a
    value the library rejects, TypeError for a non-number; the layer keeps the old value)."""

    def get(layer):
        return layer._hyper[name]

    def set_(layer, value):
        layer._set_hyperparameter(name, value)

    return property(get, set_, doc=doc)


def _checked_hyperparameter(who, name, value, others, C=DEFAULTS["C"], precision="fp32"):
    """``value`` as the update's ``name`` (float, or bool for lagged) with the ``others``
    hyperparameters; ValueError for what the library rejects, TypeError for a non-number."""
    value = bool(value) if name == "lagged" else _number(name, value, who)
    params = dict(others, precision=precision)
    params[name] = value
    try:
        _tc.check_update_params(State(1, 4, C), **params)
    except ValueError as error:
        raise ValueError(f"{who}: {name} = {value!r} is out of range ({error}); "
                         f"{name} stays {others.get(name)!r}") from None
    return value


def _number(name, value, who="TernaryLinear"):
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{who}: {name} must be a number, not {type(value).__name__}")
    return float(value)


def _draw_seed(generator):
    """A 32-bit seed from ``generator`` (torch's default generator when None)."""
    device = generator.device if generator is not None else "cpu"
    return int(torch.randint(0, 2**32, (), dtype=torch.int64, generator=generator,
                             device=device))


class TernaryLinear(torch.nn.Module):
    """y = x W^T (+ bias) with W = scale * t, t in {-1, 0, +1} packed with its counter: 0.75 byte
    per weight + 2 floats per row of training state, trained by its own backward (see the module
    docstring).

    Arguments: ``in_features`` (a multiple of 4), ``out_features``, ``bias`` (False: an optional
    float Parameter for the user's optimizer, zero-initialized), ``C`` (counter depth, 2..11),
    the update's ``lr``, ``lr_scale``, ``rms_beta``, ``rms_eps``, ``clip``, ``lagged`` (defaults:
    the recipe, ``DEFAULTS``; attributes checked when set), ``precision`` ("fp32" or "int8":
    SPEC §3 / §6), ``seed`` (base of the per-step rounding seeds), ``init_seed`` / ``init_scale``
    (ternary values drawn from ``init_seed``, row scale ``init_scale``, default
    1 / sqrt(2 in / 3)), ``accumulate`` (defer updates to ``step_accumulated()``), ``device``
    and ``dtype`` (the bias' dtype; the state is always uint8/float32), ``generator`` (a
    torch.Generator for the seeds left None). ``seed`` and ``init_seed`` left None are drawn
    from ``generator`` or torch's default generator (init_seed first), as nn.Linear draws its
    weights: ``torch.manual_seed`` reproduces them and two layers differ. Both are in the
    state_dict (its extra state) and loaded from it.

    Inputs: [..., in_features] float32, bfloat16 or float16, any strides, on the state's device.
    The output is the product of the input widened to float32 (exact), rounded to the autocast
    dtype under ``torch.autocast`` (else to the input's dtype), so the integer path on a bf16
    input is the integer path on its float32 widening, and FP32 is the float32 product of the
    widened input, rounded once. 16-bit rows whose output is of their type (no bias) go to the
    library without a float32 copy; it rounds the output and the input gradient itself.

    ``steps`` (the step count, the rounding seed's step) stays a CPU tensor when the layer moves:
    the seed is computed on the host, and a GPU copy would cost a synchronization per step.
    """

    def __init__(self, in_features, out_features, bias=False, C=DEFAULTS["C"],
                 lr=DEFAULTS["lr"], lr_scale=DEFAULTS["lr_scale"], rms_beta=DEFAULTS["rms_beta"],
                 rms_eps=DEFAULTS["rms_eps"], clip=DEFAULTS["clip"], lagged=False,
                 precision="fp32", seed=None, init_seed=None, init_scale=None, accumulate=False,
                 device=None, dtype=None, generator=None):
        super().__init__()
        _check_int("in_features", in_features, 4)
        if in_features % 4:
            raise ValueError(f"TernaryLinear: in_features must be a multiple of 4 (4 codes pack "
                             f"into 3 bytes), not {in_features}")
        _check_int("out_features", out_features, 1)
        _check_int("C", C, 2, 11)
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"TernaryLinear: generator must be a torch.Generator, not "
                            f"{type(generator).__name__}")
        if seed is not None:
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
        self._precision = precision
        self._hyper = {}
        for name, value in (("lr", lr), ("lr_scale", lr_scale), ("rms_beta", rms_beta),
                            ("rms_eps", rms_eps), ("clip", clip)):
            self._hyper[name] = _number(name, value)
        self._hyper["lagged"] = bool(lagged)
        # Unset seeds come from torch's generator (as nn.Linear's weights): torch.manual_seed
        # reproduces a run and two layers differ. The initial values' seed is drawn first.
        if init_seed is None:
            init_seed = _draw_seed(generator)
        if seed is None:
            seed = _draw_seed(generator)
        self._seed, self._init_seed, self.init_scale = int(seed), int(init_seed), init_scale
        self.accumulate = bool(accumulate)
        self._local = False  # ternarycounter.distributed.local_updates: never joins a group
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
        # The live uses (order -> _Use) and the pass window a forward joins: the window moves on
        # when a backward pass ends, so forwards recomputed in a backward (checkpointing) never
        # count in a later pass.
        self._live = weakref.WeakValueDictionary()
        self._window = 0
        self._pass_ran = []  # the uses whose backward ran in this pass
        self._pass_uses = []  # (order, x, grad_out) of this backward pass
        self._accumulated = []  # the held passes (lists of uses) awaiting the next update
        self._held_rows = 0  # samples of the held passes in the whole (global) batch
        self._pass_rows = 0  # data-parallel int8: the global samples of this pass's uses
        # fp32, one process: (x [rows, in], grad_out [rows, out]) float32 buffers that the held
        # passes are copied into while they fit, sized by the previous step's batch
        # (_batch_hint samples), so that the step reads them without a copy.
        self._buffer = None
        self._buffered = 0
        self._batch_hint = 0
        # fp32, one process: the float32 gradient [out, in] that the held passes are folded into
        # once holding them would take more memory than it (SPEC §3's chains continued pass by
        # pass, so the update is the whole batch's), and the samples folded into it.
        self._gradient = None
        self._folded = 0
        self._callback_queued = False
        self._hooked = None
        self._skipped = None
        self._skipped_total = None
        self._skip_warned = False
        self._self_update_warned = False
        self._skip_check = None  # CUDA: (pinned count, event) of an update's skipped rows
        self._data_parallel = None  # ternarycounter.distributed: a copy is not in the group
        self._controller = None  # weak reference to the TernaryOptimizer that steps the layer
        _register_trigger(self)

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in ("_pass_uses", "_accumulated", "_callback_queued", "_hooked", "_skipped",
                     "_skipped_total", "_skip_warned", "_skip_check", "_self_update_warned",
                     "_hook_handle", "_buffer", "_data_parallel", "_controller", "_live",
                     "_pass_ran", "_gradient"):
            state.pop(name, None)
        return state

    def __setstate__(self, state):
        for name in ("seed", "init_seed", "precision"):  # plain attributes before issue 62
            if name in state:
                state["_" + name] = state.pop(name)
        if "_hyper" not in state:
            state["_hyper"] = {name: state.pop(name, DEFAULTS.get(name, False))
                               for name in HYPERPARAMETERS}
        if state.get("_init_seed") is None:
            state["_init_seed"] = 0
        super().__setstate__(state)
        version = self.__dict__.get("_version", 0)
        self._init_transient()
        self._version = version

    # -- properties --

    @property
    def C(self):
        return self._C

    @property
    def seed(self):
        """Base of the per-step rounding seeds ``step_seed(seed, step)`` (an int in
        [0, 2^32))."""
        return self._seed

    @seed.setter
    def seed(self, value):
        _check_int("seed", value, 0, 2**32 - 1)
        self._seed = int(value)

    @property
    def init_seed(self):
        """The seed ``reset_parameters()`` draws the ternary values from."""
        return self._init_seed

    @init_seed.setter
    def init_seed(self, value):
        _check_int("init_seed", value, 0, 2**32 - 1)
        self._init_seed = int(value)

    @property
    def precision(self):
        """"fp32" or "int8": the products' and the update's arithmetic (SPEC §3 / §6)."""
        return self._precision

    @precision.setter
    def precision(self, value):
        if value not in ("fp32", "int8"):
            raise ValueError(f"TernaryLinear: precision must be 'fp32' or 'int8', not {value!r}")
        self._precision = value

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

    @property
    def skipped_rows_total(self):
        """Rows skipped for a non-finite gradient over every update of this layer object since
        it was made (or moved to another device); the first update that skips rows also warns
        (``warnings.warn``, once per layer). Reading it waits for the updates on a GPU."""
        return 0 if self._skipped_total is None else int(self._skipped_total)

    def _set_hyperparameter(self, name, value):
        self._hyper[name] = _checked_hyperparameter("TernaryLinear", name, value, self._hyper,
                                                    self.C, self.precision)

    lr = _hyperparameter("lr", "The counters' learning rate (finite, >= 0).")
    lr_scale = _hyperparameter("lr_scale", "The row scales' SGD learning rate (finite, >= 0).")
    rms_beta = _hyperparameter("rms_beta", "The RMS moment's decay (in [0, 1)).")
    rms_eps = _hyperparameter("rms_eps", "The floor of the RMS denominator (finite, > 0).")
    clip = _hyperparameter("clip", "Per-row clip of the normalized gradient (0: off).")
    lagged = _hyperparameter("lagged", "Whether the denominator uses the moment before the step.")

    def update_params(self):
        """The keyword parameters of this layer's update_from_io (all but the seed); raises
        ValueError for values the library rejects."""
        params = self._params()
        _tc.check_update_params(State(1, 4, self.C), **params)
        return params

    def _params(self):
        return dict(self._hyper, precision=self.precision)

    def reset_parameters(self):
        """Draws the ternary values again from ``init_seed`` (scale ``init_scale``, v 0, steps 0,
        bias 0) and drops accumulated micro-batches."""
        scale = self.init_scale
        if scale is None:
            scale = 1.0 / math.sqrt(self.in_features * 2.0 / 3.0)
        with torch.no_grad():
            # Drawn where the state lives (State.randomize's values: each a function of its
            # place), so a large model initializes at the device's speed.
            if self.codes.device.type != "meta":  # (a meta layer has no values to draw)
                device, stream = _where(self.codes)
                _tc.tensor_randomize(device, stream, self.codes.data_ptr(),
                                     self.scale.data_ptr(), self.v.data_ptr(),
                                     self.out_features, self.in_features, self.C,
                                     self.init_seed, scale)
            self.steps.zero_()
            if self.bias is not None:
                self.bias.zero_()
        self._version += 1
        self._drop_held()

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
        self._drop_held()

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, C={self.C}, precision={self.precision}, "
                f"lr={self.lr}, lr_scale={self.lr_scale}, rms_beta={self.rms_beta}"
                + (", accumulate=True" if self.accumulate else ""))

    # -- state dict: validated as load_layers validates a checkpoint --

    def get_extra_state(self):
        return {"C": self.C, "in_features": self.in_features, "out_features": self.out_features,
                "seed": self.seed, "init_seed": self.init_seed}

    def set_extra_state(self, state):
        # Checked in _load_from_state_dict, before any buffer changes. A state_dict saved before
        # the seeds were part of it leaves the layer's own seeds.
        if "seed" in state:
            self.seed = int(state["seed"])
        if "init_seed" in state:
            self.init_seed = int(state["init_seed"])

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        problem = self._state_dict_problem(state_dict, prefix)
        if problem:
            where = f"'{prefix[:-1]}'" if prefix else "(the model itself)"
            error_msgs.append(f"TernaryLinear {where}: {problem}; the layer is unchanged")
            return
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)
        self._version += 1
        self._drop_held()

    def _state_dict_problem(self, state_dict, prefix):
        extra = state_dict.get(prefix + "_extra_state")
        if isinstance(extra, dict):
            for key in ("C", "in_features", "out_features"):
                value = getattr(self, key)
                if extra.get(key) != value:
                    return f"the state has {key} = {extra.get(key)} but the layer {value}"
            for key in ("seed", "init_seed"):
                value = extra.get(key, 0)
                if isinstance(value, bool) or not isinstance(value, int) or \
                        not 0 <= value < 2**32:
                    return f"'{key}' must be an int in [0, 2^32), not {value!r}"
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

        self._pass_uses, self._skipped, self._skipped_total = [], None, None
        result = super()._apply(keeping_state, *args, **kwargs)
        _register_trigger(self)
        return result

    # -- the calls --

    @_eager
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
        # 16-bit rows go to the library as they are when the output is of their type (it rounds
        # into it as torch's cast would); else the float32 product, its output cast after.
        direct = given.dtype != torch.float32 and out_dtype == given.dtype and self.bias is None
        rows = given.contiguous() if direct else given.to(torch.float32).contiguous()
        trains = self.training and self.update_trigger.requires_grad and torch.is_grad_enabled()
        if trains and torch.jit.is_tracing():
            raise RuntimeError(
                "TernaryLinear: torch.jit.trace records inference only (the update runs in "
                "backward, which a trace does not keep): trace the model in eval() mode or under "
                "torch.no_grad()")
        if trains or (torch.is_grad_enabled() and x.requires_grad):
            if trains:
                if self._data_parallel is None and not self._local:
                    _join_process_group(self)
                self._hook_trigger()
            narrow = None
            if trains and rows.dtype != given.dtype:
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
        """accumulate=True (or under a TernaryOptimizer, whose step() calls it): one update from
        every backward pass since the last call (the passes in order, each pass's uses in
        forward order, as one batch); nothing when there is none."""
        passes, rows, gradient = self._accumulated, self._held_rows, self._gradient
        whole = None
        if self._buffer is not None and self._buffered == rows:
            whole = (self._buffer[0][:rows], self._buffer[1][:rows])
        self._drop_held()
        if gradient is not None:
            self._update([], gradient=gradient)
        elif passes:
            if self._data_parallel is None:
                self._batch_hint = rows
            self._update(passes, whole)

    def _drop_held(self):
        self._pass_uses, self._accumulated = [], []
        self._held_rows = self._pass_rows = 0
        self._buffer, self._buffered = None, 0
        self._gradient, self._folded = None, 0

    def _hold(self, uses):
        """Keeps a backward pass's uses for the next update. fp32 on one process: copied into
        the step's buffers while every held pass fits the previous step's batch, so the step
        concatenates nothing (the first step, and one whose batch outgrows the previous,
        concatenates the passes instead); once the held rows would take more memory than a
        float32 gradient, they and every later pass are folded into one (_fold)."""
        rows = sum(use[1].shape[0] for use in uses)
        gradient_bytes = 4 * self.out_features * self.in_features
        fp32_alone = self.precision == "fp32" and self._data_parallel is None
        into_buffers = (fp32_alone and self._gradient is None
                        and self._buffered == self._held_rows
                        and self._held_rows + rows <= self._batch_hint
                        and 4 * self._batch_hint * (self.in_features + self.out_features)
                        <= gradient_bytes)
        if fp32_alone and not into_buffers:
            arriving = sum(use[1].numel() * use[1].element_size() +
                           use[2].numel() * use[2].element_size() for use in uses)
            if self._gradient is not None or self.pending_bytes + arriving > gradient_bytes:
                self._fold([use for held in self._accumulated for use in held] + list(uses))
                self._accumulated, self._buffer, self._buffered = [], None, 0
                self._held_rows += rows
                return
        if into_buffers:
            device = uses[0][1].device
            if self._buffer is None or self._buffer[0].device != device:
                self._buffer = (
                    torch.empty((self._batch_hint, self.in_features), dtype=torch.float32,
                                device=device),
                    torch.empty((self._batch_hint, self.out_features), dtype=torch.float32,
                                device=device))
            start, kept = self._buffered, []
            for order, x, grad_y in uses:
                end = start + x.shape[0]
                self._buffer[0][start:end].copy_(x)
                self._buffer[1][start:end].copy_(grad_y)
                kept.append((order, self._buffer[0][start:end], self._buffer[1][start:end]))
                start = end
            self._buffered, uses = start, kept
        self._accumulated.append(uses)
        self._held_rows += rows

    def _fold(self, uses):
        """fp32, one process: the weight gradient's chains continued over `uses` (in order) in
        the layer's float32 gradient [out, in], which the step's dense update reads: the bits of
        update_from_io over the whole batch, in one gradient's memory however many passes."""
        for _, x, grad_y in uses:
            x, grad_y = _rows32(x), _rows32(grad_y)
            accumulate = self._gradient is not None
            if not accumulate:
                self._gradient = torch.empty((self.out_features, self.in_features),
                                             dtype=torch.float32, device=x.device)
            elif self._gradient.device != x.device:
                raise RuntimeError("TernaryLinear: the layer moved to another device while it "
                                   "had uses awaiting their update")
            device, stream = _where(x)
            _tc.tensor_gradient_from_io(device, stream, x.data_ptr(), grad_y.data_ptr(),
                                        x.shape[0], self.out_features, self.in_features,
                                        self._gradient.data_ptr(), accumulate)
            self._folded += x.shape[0]

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

    def _next_use(self, rows):
        self._uses += 1
        use = _Use(self._uses, rows, self._window)
        self._live[use.order] = use
        return use

    def _pass_rows_of(self, use):
        """(rows of the uses of `use`'s pass before it in forward order, rows of all its pass's
        uses): the live uses of its window that no finished pass ran."""
        before = total = 0
        for other in list(self._live.values()):
            if other.window == use.window and not other.done:
                total += other.rows
                if other.order < use.order:
                    before += other.rows
        return before, total

    def _backward_rows(self, grad_y, seed, use):
        """grad_x in grad_y's dtype (the rows' dtype of the forward)."""
        # int8 rounds grad_out on a stream keyed by the sample's index in the batch of the
        # update: the held passes' samples, then this pass's uses in forward order, so a layer
        # called on chunks gets the bits of one call.
        offset = 0
        if self.precision == "int8":
            before, total = self._pass_rows_of(use)
            if self._data_parallel is not None:
                return self._data_parallel.backward_rows(self, grad_y, seed, self._held_rows,
                                                         before, total)
            offset = self._held_rows + before
        return _backward_input(self, grad_y, seed, offset)

    def _ran(self, use):
        self._pass_ran.append(use)
        if not self._callback_queued:
            # Uses whose trigger gradient autograd never delivers (torch.autograd.grad(y, x))
            # are dropped when the pass ends.
            self._callback_queued = True
            layer = weakref.ref(self)
            torch.autograd.Variable._execution_engine.queue_callback(
                lambda: _end_of_pass(layer))

    def _record_use(self, order, x, grad_y):
        self._pass_uses.append((order, x, grad_y))

    def _close_pass(self):
        """The uses this pass ran count in no later pass; later forwards open a new window."""
        for use in self._pass_ran:
            use.done = True
        self._pass_ran = []
        self._window += 1

    @property
    def controller(self):
        """The ``TernaryOptimizer`` that steps this layer, or None (the layer updates itself in
        backward)."""
        return None if self._controller is None else self._controller()

    @property
    def pending_samples(self):
        """This process's samples held for the next update (accumulate=True or under a
        TernaryOptimizer)."""
        return self._folded + sum(use[1].shape[0] for uses in self._accumulated for use in uses)

    @property
    def pending_bytes(self):
        """Bytes of the inputs and output gradients held for the next update: per micro-batch of
        m samples, m * (in_features + out_features) * their element size (4, or 2 for a
        bf16/fp16 model whose layers output their input's type); fp32 on one
        process, from the second step on, 4 * (in_features + out_features) per sample of the
        previous step's batch from the first micro-batch on (the step's buffers)."""
        held = sum(use[1].numel() * use[1].element_size() +
                   use[2].numel() * use[2].element_size()
                   for uses in self._accumulated for use in uses)
        if self._buffer is not None:  # fp32: the buffers' rows not filled yet
            held += (self._batch_hint - self._buffered) * 4 * (self.in_features +
                                                              self.out_features)
        if self._gradient is not None:  # fp32: the passes folded into a gradient
            held += self._gradient.numel() * 4
        return held

    def _uses_complete(self):
        uses, self._pass_uses = self._pass_uses, []
        pass_rows, self._pass_rows = self._pass_rows, 0
        self._close_pass()
        if not uses:
            return
        uses = sorted(uses, key=lambda use: use[0])
        if self.accumulate or self.controller is not None:
            if self._data_parallel is not None:
                self._accumulated.append(uses)
                self._held_rows += pass_rows
            else:
                self._hold(uses)
        else:
            if _OPTIMIZERS and not self._self_update_warned:
                self._self_update_warned = True
                warnings.warn(
                    f"TernaryLinear ({self.out_features} x {self.in_features}) updated itself in "
                    f"backward, as a layer under no TernaryOptimizer does, while a "
                    f"TernaryOptimizer exists: add the layer to it, or freeze it with "
                    f"requires_grad_(False). This warning shows once per layer.",
                    UserWarning, stacklevel=2)
            self._update([uses])

    def _update(self, passes, whole=None, gradient=None):
        """One update from the backward passes `passes` (lists of uses in forward order);
        `whole`: their (x, grad_out) concatenated, when held so; `gradient`: the passes folded
        into a float32 gradient (then `passes` is empty)."""
        if gradient is not None:
            self._dense_update(gradient)
        elif self._data_parallel is not None:
            self._check_held_device(use[1].device for p in passes for use in p)
            rounds = [(torch.cat([_rows32(u[1]) for u in p]),
                       torch.cat([_rows32(u[2]) for u in p])) for p in passes]
            self._skipped = self._data_parallel.update(self, rounds)
        else:
            self._apply_update([use for p in passes for use in p], whole)
        self.steps.add_(1)
        self._version += 1
        self._count_skipped()

    def _check_held_device(self, devices):
        if any(device != self.codes.device for device in devices):
            raise RuntimeError("TernaryLinear: the layer moved to another device while it had "
                               "uses awaiting their update")

    def _skipped_count(self):
        """The int64 on the layer's device that the next update counts its skipped rows into."""
        if self._skipped is None or self._skipped.device != self.codes.device:
            self._skipped = torch.zeros((), dtype=torch.int64, device=self.codes.device)
        return self._skipped

    def _dense_update(self, gradient):
        self._check_held_device([gradient.device])
        skipped = self._skipped_count()
        params = self._params()
        params.pop("precision")
        device, stream = _where(gradient)
        _tc.tensor_update(device, stream, self.codes.data_ptr(), self.scale.data_ptr(),
                          self.v.data_ptr(), self.out_features, self.in_features, self.C,
                          gradient.data_ptr(), skipped.data_ptr(),
                          seed=step_seed(self.seed, self.step), **params)

    def _apply_update(self, uses, whole=None):
        self._check_held_device(use[1].device for use in uses)
        skipped = self._skipped_count()
        if self.precision == "int8" and len(uses) > 1:
            self._integer_update_in_parts(uses)
            return
        if whole is not None:
            x, grad_y = whole
        else:
            # bf16/fp16 rows of one type go as they are (the library widens them exactly as it
            # reads them); anything else as float32.
            dtypes = {use[1].dtype for use in uses} | {use[2].dtype for use in uses}
            dtype = dtypes.pop() if len(dtypes) == 1 else torch.float32
            if len(uses) == 1:
                x, grad_y = (uses[0][1].to(dtype).contiguous(),
                             uses[0][2].to(dtype).contiguous())
            else:
                x = _concatenated([use[1] for use in uses], self.in_features, dtype)
                grad_y = _concatenated([use[2] for use in uses], self.out_features, dtype)
        dev, stream = _where(x)
        params = self._params()  # the library validates them before it changes anything
        rows = _tc.tensor_workspace_rows(dev, self.out_features, self.in_features)
        workspace = torch.empty((rows, self.in_features), dtype=torch.float32, device=x.device)
        _tc.tensor_update_from_io(dev, stream, self.codes.data_ptr(), self.scale.data_ptr(),
                                  self.v.data_ptr(), self.out_features, self.in_features, self.C,
                                  x.data_ptr(), x.shape[0], grad_y.data_ptr(),
                                  workspace.data_ptr(), rows, skipped.data_ptr(),
                                  seed=step_seed(self.seed, self.step),
                                  input_type=_type_name(x.dtype), **params)

    def _integer_update_in_parts(self, uses):
        """The int8 update of several micro-batches without concatenating them (SPEC §7's
        phases, the micro-batches in the ranks' place): the column absmax over all of them, then
        each one's int32 sums on the global streams, added exactly, then the row update. Holds
        2 * 4 * out * in bytes of int32 sums instead of a copy of the batch."""
        out, in_ = self.out_features, self.in_features
        dev, stream = _where(uses[0][1])
        params = self._params()
        _tc.check_update_params(State(1, 4, self.C), **params)
        params.pop("precision")
        seed = step_seed(self.seed, self.step)
        total = sum(use[1].shape[0] for use in uses)
        absmax = None
        for _, x, grad_y in uses:
            x, grad_y = _rows32(x), _rows32(grad_y)
            part = torch.empty(in_ + out, dtype=torch.int32, device=x.device)
            _tc.tensor_int8_column_absmax(dev, stream, x.data_ptr(), grad_y.data_ptr(),
                                          x.shape[0], out, in_, part.data_ptr())
            absmax = part if absmax is None else torch.maximum(absmax, part)
        sums = torch.zeros((out, in_), dtype=torch.int32, device=absmax.device)
        part = torch.empty_like(sums)
        offset = 0
        for _, x, grad_y in uses:
            x, grad_y = _rows32(x), _rows32(grad_y)
            _tc.tensor_int8_gradient_sums(dev, stream, x.data_ptr(), grad_y.data_ptr(),
                                          x.shape[0], out, in_, absmax.data_ptr(), seed, total,
                                          offset, part.data_ptr())
            sums.add_(part)
            offset += x.shape[0]
        del part
        self._skipped.zero_()
        _tc.tensor_int8_update_from_sums(dev, stream, self.codes.data_ptr(),
                                         self.scale.data_ptr(), self.v.data_ptr(), 0, out, out,
                                         in_, self.C, sums.data_ptr(), absmax.data_ptr(),
                                         self._skipped.data_ptr(), seed=seed, **params)

    def _count_skipped(self):
        """Adds the last update's skipped rows to skipped_rows_total and warns (once per layer)
        when an update skipped rows; on a GPU the check waits for nothing: it reads the count of
        an earlier update once that update's copy to the host has arrived."""
        skipped = self._skipped
        if skipped is None:
            return
        if self._skipped_total is None or self._skipped_total.device != skipped.device:
            self._skipped_total = torch.zeros((), dtype=torch.int64, device=skipped.device)
        self._skipped_total.add_(skipped)
        if self._skip_warned:
            return
        if skipped.device.type == "cpu":
            count = int(skipped)
        else:
            pending = self._skip_check
            count = 0
            if pending is not None and pending[1].query():
                count = int(pending[0])
                pending = None
            if pending is None:
                host = torch.empty((), dtype=torch.int64, pin_memory=True)
                host.copy_(skipped, non_blocking=True)
                event = torch.cuda.Event()
                event.record()
                pending = (host, event)
            self._skip_check = pending
        if count:
            self._skip_warned = True
            warnings.warn(
                f"TernaryLinear ({self.out_features} x {self.in_features}): an update left "
                f"{count} of its {self.out_features} rows unchanged because their gradient was "
                f"not finite (a NaN or inf in one sample's input reaches every row); "
                f"skipped_rows_total counts every such row. This warning shows once per layer.",
                RuntimeWarning, stacklevel=2)


def _concatenated(parts, columns, dtype=torch.float32):
    """The rows of `parts` in one contiguous tensor of `dtype` (bf16/fp16 rows widened in place
    for float32)."""
    out = torch.empty((sum(p.shape[0] for p in parts), columns), dtype=dtype,
                      device=parts[0].device)
    start = 0
    for part in parts:
        out[start:start + part.shape[0]].copy_(part)
        start += part.shape[0]
    return out


def _backward_input(layer, grad_y, seed, sample_offset=0):
    """grad_x [M, in] of grad_y [M, out] (contiguous; float32, or bf16/fp16 read as they are),
    in grad_y's dtype; int8 rounds grad_y on the stream of samples sample_offset, sample_offset
    + 1, ... (SPEC §6: the rows' places in the update's batch)."""
    grad_x = torch.empty((grad_y.shape[0], layer.in_features), dtype=grad_y.dtype,
                         device=grad_y.device)
    if grad_y.shape[0] > 0:
        device, stream = _where(grad_y)
        _tc.tensor_backward_input(device, stream, layer.codes.data_ptr(), layer.scale.data_ptr(),
                                  layer.out_features, layer.in_features, layer.C,
                                  grad_y.data_ptr(), grad_y.shape[0], grad_x.data_ptr(),
                                  layer.precision, seed, sample_offset,
                                  _type_name(grad_y.dtype), _type_name(grad_y.dtype))
    return grad_x


def _rows32(x):
    """Held rows as float32 contiguous (a bf16/fp16 input is widened here, exactly)."""
    return x.to(torch.float32).contiguous()


def _join_process_group(layer):
    """Under torch.distributed with more than one process, a training layer joins the default
    group for its updates (ternarycounter.distributed); nothing otherwise."""
    dist = torch.distributed
    if not dist.is_available() or not dist.is_initialized() or dist.get_world_size() < 2:
        return
    from .distributed import _join_default_group
    _join_default_group(layer)


def _end_of_pass(layer_ref):
    layer = layer_ref()
    if layer is not None:
        layer._callback_queued = False
        layer._pass_uses, layer._pass_rows = [], 0
        layer._close_pass()


def step_accumulated(module):
    """Calls ``step_accumulated()`` of every TernaryLinear in ``module`` (itself included)."""
    for m in module.modules():
        if isinstance(m, TernaryLinear):
            m.step_accumulated()


# The live TernaryOptimizers: while one exists, a layer that updates itself in backward warns.
_OPTIMIZERS = weakref.WeakSet()


class _ParamGroup(dict):
    """A TernaryOptimizer param group. Setting one of its update hyperparameters (as
    ``torch.optim.lr_scheduler`` sets ``"lr"``) checks the value at once, as the layer's
    attribute does, and hands it to the group's layers; ``layers`` are those layers."""

    def __init__(self, items, layers):
        super().__init__()
        self.layers = list(layers)
        for key, value in items.items():
            self[key] = value

    def __setitem__(self, key, value):
        if key in HYPERPARAMETERS:
            others = {name: self.get(name, DEFAULTS.get(name, False)) for name in HYPERPARAMETERS}
            value = _checked_hyperparameter("TernaryOptimizer: param group", key, value, others)
            for layer in getattr(self, "layers", ()):
                layer._hyper[key] = value
        super().__setitem__(key, value)

    def update(self, *args, **kwargs):
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def setdefault(self, key, value=None):
        if key not in self:
            self[key] = value
        return self[key]


class TernaryOptimizer(torch.optim.Optimizer):
    """The update of TernaryLinear layers as a ``torch.optim.Optimizer``: the layers it controls
    no longer update in backward; each ``loss.backward()`` keeps their (x, grad_out) and
    ``step()`` applies ONE update from everything kept since the last step (the micro-batches in
    forward order, as one batch: bit for bit the update of one backward over the concatenated
    batch). Its param groups carry the layers' update hyperparameters (``lr``, ``lr_scale``,
    ``rms_beta``, ``rms_eps``, ``clip``, ``lagged``), so ``torch.optim.lr_scheduler`` drives
    ``lr``; setting a group's value checks it at once and sets it on the group's layers.

    ``params``: a module (its TernaryLinear layers, itself included), TernaryLinear layers, their
    ``update_trigger`` Parameters, or dicts of those (``{"params": [...], "lr": ...}``) for
    several groups. Anything else raises TypeError (torch parameters belong to a torch
    optimizer). A hyperparameter left None takes the group's layers' common value (ValueError
    when they differ). A layer belongs to at most one TernaryOptimizer.

    ``zero_grad()`` drops what the layers hold for the next step, as it drops torch gradients.
    Memory: each micro-batch of m samples is held until ``step()``, m * (in_features * the
    input's element size + 4 * out_features) bytes per layer (``TernaryLinear.pending_bytes``).
    """

    def __init__(self, params, lr=None, lr_scale=None, rms_beta=None, rms_eps=None, clip=None,
                 lagged=None):
        if isinstance(params, torch.nn.Module):
            params = [params]
        defaults = dict(lr=lr, lr_scale=lr_scale, rms_beta=rms_beta, rms_eps=rms_eps, clip=clip,
                        lagged=lagged)
        super().__init__(params, defaults)
        _OPTIMIZERS.add(self)

    def add_param_group(self, param_group):
        if not isinstance(param_group, dict):
            raise TypeError(f"TernaryOptimizer: a param group must be a dict, not "
                            f"{type(param_group).__name__}")
        group = dict(param_group)
        layers = _layers_of(group.pop("params", []))
        if not layers:
            raise ValueError("TernaryOptimizer: a param group without TernaryLinear layers")
        for layer in layers:
            owner = layer.controller
            if owner is not None and owner is not self:
                raise ValueError("TernaryOptimizer: a layer is already stepped by another "
                                 "TernaryOptimizer")
        for name in HYPERPARAMETERS:
            if group.get(name) is None:
                group[name] = self.defaults.get(name)
            if group[name] is None:
                values = {layer._hyper[name] for layer in layers}
                if len(values) > 1:
                    raise ValueError(f"TernaryOptimizer: the group's layers have different "
                                     f"{name} ({sorted(values)}): pass {name}= or put them in "
                                     f"separate param groups")
                group[name] = values.pop() if values else DEFAULTS.get(name, False)
        group["params"] = [layer.update_trigger for layer in layers]
        super().add_param_group(group)
        self.param_groups[-1] = _ParamGroup(self.param_groups[-1], layers)
        for layer in layers:
            layer._controller = weakref.ref(self)

    @torch.no_grad()
    def step(self, closure=None):
        """Applies to every layer one update from the micro-batches its backward passes kept
        since the last step (none: the layer does not change), with the group's
        hyperparameters and the layer's next rounding seed. Returns ``closure()``'s loss when a
        closure is given (it runs first, with gradients enabled)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for layer in group.layers:
                for name in HYPERPARAMETERS:
                    if layer._hyper[name] != group[name]:
                        setattr(layer, name, group[name])
                layer.step_accumulated()
        return loss

    def zero_grad(self, set_to_none=False):
        """Drops the micro-batches the layers hold for the next step (and zeroes their
        zero-size ``update_trigger`` gradients, as torch's optimizers do); the first time it
        drops samples that no step() applied, it warns."""
        super().zero_grad(set_to_none)
        dropped = 0
        for group in self.param_groups:
            for layer in group.layers:
                dropped += layer.pending_samples
                layer._drop_held()
        if dropped and not getattr(self, "_drop_warned", False):
            self._drop_warned = True
            warnings.warn(f"TernaryOptimizer.zero_grad() dropped {dropped} held samples that no "
                          f"step() applied (call step() before zero_grad() to train on them). "
                          f"This warning shows once per optimizer.", UserWarning, stacklevel=2)

    def load_state_dict(self, state_dict):
        """Loads the groups' hyperparameters (checked, and handed to the layers)."""
        groups = self.param_groups
        super().load_state_dict(state_dict)
        self.param_groups = [_ParamGroup(new, old.layers)
                             for new, old in zip(self.param_groups, groups)]

    def __setstate__(self, state):
        super().__setstate__(state)
        _OPTIMIZERS.add(self)
        for group in self.param_groups:
            for layer in getattr(group, "layers", ()):
                layer._controller = weakref.ref(self)


def _layers_of(params):
    """The TernaryLinear layers named by a param group's ``params`` (in order, no repeats)."""
    if isinstance(params, (torch.Tensor, torch.nn.Module)):
        params = [params]
    layers = []
    for item in params:
        if isinstance(item, TernaryLinear):
            found = [item]
        elif isinstance(item, torch.nn.Module):
            found = [m for m in item.modules() if isinstance(m, TernaryLinear)]
        elif isinstance(item, torch.Tensor) and _layer_of_trigger(item) is not None:
            found = [_layer_of_trigger(item)]
        else:
            what = (f"a tensor of shape {tuple(item.shape)}" if isinstance(item, torch.Tensor)
                    else type(item).__name__)
            raise TypeError(f"TernaryOptimizer: params must be TernaryLinear layers, modules "
                            f"holding them or their update_trigger Parameters, not {what} "
                            f"(torch parameters belong to a torch optimizer)")
        for layer in found:
            if not any(layer is seen for seen in layers):
                layers.append(layer)
    return layers


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

