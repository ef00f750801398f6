"""PyTorch layer over TernaryCounter: ``TernaryLinear`` trains its ternary weights with the
library's counters inside an ordinary PyTorch training loop.

The layer holds no float weight Parameter and needs no optimizer: its autograd backward returns
grad_x through ``backward_input`` (with the weights before the step) and then applies the strict
``update_from_io`` to its own state, with the step's rounding seed derived from the layer's base
seed as the C++ TernaryLinear does (``step_seed(seed, step)``). A layer used twice in one graph
is updated twice. The packed state (codes, scale, v) and the step are buffers that share memory
with the library's state, so ``state_dict()`` / ``load_state_dict()`` round-trip it.
"""

import math

import torch

from . import State, backward_input, forward, step_seed, update_from_io

__all__ = ["TernaryLinear"]


class _TernaryLinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, trigger, layer):
        y = torch.empty((x.shape[0], layer.out_features), dtype=torch.float32)
        forward(layer.state, x, y, precision=layer.precision)
        ctx.layer = layer
        ctx.save_for_backward(x)
        return y

    @staticmethod
    def backward(ctx, grad_y):
        layer = ctx.layer
        (x,) = ctx.saved_tensors
        # Autograd may hand an expanded or strided gradient: the library takes rows.
        grad_y = grad_y.to(torch.float32).contiguous()
        seed = step_seed(layer.seed, int(layer.step))
        grad_x = None
        if ctx.needs_input_grad[0]:
            grad_x = torch.empty_like(x)
            backward_input(layer.state, grad_y, grad_x, precision=layer.precision, seed=seed)
        layer.skipped_rows = update_from_io(layer.state, x, grad_y, seed=seed,
                                            **layer.update_params())
        layer.step += 1
        return grad_x, None, None


class TernaryLinear(torch.nn.Module):
    """y = x W^T with W = scale * t, t in {-1, 0, +1} packed with its counter (0.75 byte per
    weight + 2 floats per row of training state). Trained by its own backward (see the module
    docstring); no bias.

    ``x`` must be a float32, contiguous CPU tensor [..., in_features] (TypeError/ValueError
    otherwise, before anything changes). Initialization: ternary values drawn from ``init_seed``
    with row scale ``init_scale`` (default 1 / sqrt(2 in / 3): unit-variance outputs for
    unit-variance inputs), as the C++ main job's MLP; ``init_seed=None`` leaves t = 0, scale 1.
    ``lr`` and ``lr_scale`` may be changed between steps (a schedule).
    """

    def __init__(self, in_features, out_features, C=8, lr=0.05, lr_scale=2e-4, rms_beta=0.9,
                 rms_eps=1e-3, clip=0.0, lagged=False, precision="fp32", seed=0, init_seed=0,
                 init_scale=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.lr, self.lr_scale, self.rms_beta, self.rms_eps = lr, lr_scale, rms_beta, rms_eps
        self.clip, self.lagged, self.precision, self.seed = clip, lagged, precision, seed
        self.skipped_rows = 0
        self.state = State(out_features, in_features, C)
        if init_seed is not None:
            if init_scale is None:
                init_scale = 1.0 / math.sqrt(in_features * 2.0 / 3.0)
            self.state.randomize(init_seed, init_scale)
        # Views of the library's memory: state_dict() reads it, load_state_dict() writes it.
        self.register_buffer("codes", torch.from_numpy(self.state.codes))
        self.register_buffer("scale", torch.from_numpy(self.state.scale))
        self.register_buffer("v", torch.from_numpy(self.state.v))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        # An empty tensor that requires grad, not a Parameter: autograd records the layer's
        # function (and so runs its backward, the update) also when x does not require grad, as
        # the first layer's input; it never gets a gradient.
        self._trigger = torch.empty(0, requires_grad=True)
        # Fails early, as a step would, on parameters the library rejects.
        self.update_params()

    @property
    def C(self):
        return self.state.C

    @property
    def step(self):
        """Training steps done (the rounding seed's step)."""
        return int(self.steps)

    @step.setter
    def step(self, value):
        self.steps.fill_(int(value))

    def update_params(self):
        """The keyword parameters of this layer's update_from_io (all but the seed)."""
        from . import _tc
        params = dict(lr=float(self.lr), lr_scale=float(self.lr_scale),
                      rms_beta=float(self.rms_beta), rms_eps=float(self.rms_eps),
                      clip=float(self.clip), lagged=bool(self.lagged), precision=self.precision)
        _tc.check_update_params(self.state, **params)
        return params

    def _check_buffers(self):
        for name in ("codes", "scale", "v"):
            buffer, array = getattr(self, name), getattr(self.state, name)
            if buffer.device.type != "cpu" or buffer.data_ptr() != array.ctypes.data:
                raise RuntimeError(
                    f"TernaryLinear: buffer '{name}' no longer shares the layer's state memory "
                    f"(moved to another device or dtype?); the layer runs on the CPU in float32")

    def forward(self, x):
        self._check_buffers()
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"TernaryLinear: x must be a torch.Tensor, not {type(x).__name__}")
        if x.device.type != "cpu":
            raise ValueError(f"TernaryLinear: x is on device '{x.device}'; the layer runs on the CPU")
        if x.dtype != torch.float32:
            raise TypeError(f"TernaryLinear: x must be float32, not {x.dtype}")
        if not x.is_contiguous():
            raise ValueError("TernaryLinear: x must be contiguous; pass x.contiguous()")
        if x.dim() < 1 or x.shape[-1] != self.in_features:
            raise ValueError(f"TernaryLinear: x has shape {tuple(x.shape)} but [..., "
                             f"{self.in_features}] is needed")
        rows = x.reshape(-1, self.in_features)
        y = _TernaryLinearFunction.apply(rows, self._trigger, self)
        return y.reshape(*x.shape[:-1], self.out_features)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, C={self.C}, "
                f"lr={self.lr}, lr_scale={self.lr_scale}, precision={self.precision}")
