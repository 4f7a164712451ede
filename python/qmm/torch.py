"""qmm.torch: PyTorch over libqmm. Imported only when used (`import qmm.torch`); torch is not needed to
build or import the rest of the package.

    model = qmm.torch.replace_linear(model, "nvfp4")            # every nn.Linear but lm_head
    layer = qmm.torch.Linear.from_linear(nn.Linear(4096, 14336), format="fp8_channel")

torch.ops.qmm.linear is registered through torch.library with a fake kernel, so torch.compile(
fullgraph=True) traces through it. CPU tensors run on this thread's qmm CPU context; CUDA tensors come
with the GPU work of the package.
"""

import ctypes
import fnmatch
import threading
from typing import Optional

import numpy as np
import torch

from . import _lib
from .context import Context
from .weight import QuantizedWeight, _sizes, quantize
from ._lib import lib

_A_TYPES = {torch.float32: 1, torch.bfloat16: 2, torch.float16: 3}
_local = threading.local()


def _host_context():
    """This thread's context for CPU tensors: the CPU backend, else the reference."""
    ctx = getattr(_local, "context", None)
    if ctx is None:
        try:
            ctx = Context("cpu")
        except Exception:  # a build without the CPU backend
            ctx = Context("reference")
        _local.context = ctx
    return ctx


def _ptr(t, ctype):
    return ctypes.cast(t.data_ptr(), ctypes.POINTER(ctype)) if t is not None else None


@torch.library.custom_op("qmm::linear", mutates_args=())
def linear(x: torch.Tensor, qweight: torch.Tensor, block_scales: Optional[torch.Tensor],
           channel_scales: Optional[torch.Tensor], tensor_scale: torch.Tensor, bias: Optional[torch.Tensor],
           format: int, n: int, k: int, activation: int) -> torch.Tensor:
    """act(x @ W^T + bias) for the quantized W held in the tensors of qmm.torch.Linear (uint8 codes and
    block scales; channel and tensor scales as the int32 bits of their float32 values)."""
    if x.device.type != "cpu":
        raise NotImplementedError(f"qmm.torch: {x.device.type} tensors are not supported yet (CPU tensors only)")
    if x.dtype not in _A_TYPES:
        raise TypeError(f"qmm.torch: activations of dtype {x.dtype} (float32, bfloat16 or float16)")
    if x.shape[-1] != k:
        raise ValueError(f"qmm.torch: the input's last dimension is {x.shape[-1]}, the weight's K is {k}")
    a = x.reshape(-1, k)
    if a.stride(-1) != 1:
        a = a.contiguous()
    m = a.shape[0]
    out = torch.empty((m, n), dtype=x.dtype)
    if m == 0:
        return out.reshape(*x.shape[:-1], n)
    s = _lib.Weight()
    _lib.check(lib.qmm_weight_init(ctypes.byref(s), format, n, k))
    size = _sizes(format, n, k)
    s.data, s.data_bytes = _ptr(qweight, ctypes.c_uint8), qweight.numel()
    if size.block_scale_bytes:
        s.block_scales, s.block_scale_bytes = _ptr(block_scales, ctypes.c_uint8), block_scales.numel()
    if size.channel_scale_count:
        s.channel_scales, s.channel_scale_count = _ptr(channel_scales, ctypes.c_float), channel_scales.numel()
    s.tensor_scale = float(tensor_scale.view(torch.float32).item())
    bias32 = None if bias is None else bias.to(torch.float32).contiguous()
    epi = _lib.Epilogue(1.0, 0.0, _ptr(bias32, ctypes.c_float), None, activation)
    ctx = _host_context()
    lda = a.stride(0) if m > 1 else k
    _lib.check(lib.qmm_matmul(ctx.handle, m, _A_TYPES[x.dtype], a.data_ptr(), lda, ctypes.byref(s), _A_TYPES[x.dtype],
                              out.data_ptr(), n, ctypes.byref(epi)))
    return out.reshape(*x.shape[:-1], n)


@linear.register_fake
def _linear_fake(x, qweight, block_scales, channel_scales, tensor_scale, bias, format, n, k, activation):
    return x.new_empty((*x.shape[:-1], n))


def _bits(values):
    """float32 values as the int32 bits of a tensor: buffers that Module.to(dtype) leaves alone."""
    return torch.from_numpy(np.ascontiguousarray(values, np.float32).view(np.int32).copy())


class Linear(torch.nn.Module):
    """A Linear layer with a quantized weight (qmm formats: nvfp4, mxfp4, fp8_tensor, fp8_channel, bf16).

    Its arrays are buffers, so state_dict() and .to(device) carry them: qweight (uint8 codes),
    block_scales (uint8 E4M3 / E8M0 codes), channel_scales and tensor_scale (the int32 bits of float32
    values, which Module.to(dtype) does not cast). bias stays a float parameter. The output has the
    input's dtype.
    """

    def __init__(self, in_features, out_features, bias=True, format="nvfp4", activation=None):
        super().__init__()
        q = QuantizedWeight.empty(format, (out_features, in_features))
        self.format = q.format
        self.in_features, self.out_features = in_features, out_features
        self.activation = activation
        self._format_code = _lib.FORMAT[q.format]
        self._activation_code = _lib.ACTIVATION[activation]
        self.register_buffer("qweight", torch.from_numpy(q.data.copy()))
        self.register_buffer("block_scales", None if q.block_scales is None else torch.from_numpy(q.block_scales.copy()))
        self.register_buffer("channel_scales", None if q.channel_scales is None else _bits(q.channel_scales))
        self.register_buffer("tensor_scale", _bits([q.tensor_scale]))
        self.bias = torch.nn.Parameter(torch.zeros(out_features), requires_grad=False) if bias else None

    @classmethod
    def from_linear(cls, linear, format="nvfp4", recipe="default", activation=None):
        """A qmm Linear holding `linear`'s weight quantized to `format` with `recipe` and its bias."""
        w = linear.weight.detach().to("cpu", torch.float32).numpy()
        q = quantize(w, format=format, recipe=recipe)
        layer = cls(linear.in_features, linear.out_features, bias=linear.bias is not None, format=format,
                    activation=activation)
        layer.load_quantized(q)
        if linear.bias is not None:
            layer.bias.data.copy_(linear.bias.detach().to("cpu", torch.float32))
        return layer

    def load_quantized(self, q):
        """Copies a qmm.QuantizedWeight of this layer's format and shape into the buffers."""
        if q.format != self.format or q.shape != (self.out_features, self.in_features):
            raise ValueError(f"a {q.format} {q.shape} weight does not fit this {self.format} layer")
        self.qweight.copy_(torch.from_numpy(q.data))
        if q.block_scales is not None:
            self.block_scales.copy_(torch.from_numpy(q.block_scales))
        if q.channel_scales is not None:
            self.channel_scales.copy_(_bits(q.channel_scales))
        self.tensor_scale.copy_(_bits([q.tensor_scale]))

    def forward(self, x):
        return torch.ops.qmm.linear(x, self.qweight, self.block_scales, self.channel_scales, self.tensor_scale,
                                    self.bias, self._format_code, self.out_features, self.in_features,
                                    self._activation_code)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"format={self.format}")


def replace_linear(model, format="nvfp4", skip=("lm_head",), recipe="default"):
    """Replaces every torch.nn.Linear of model (in place) by a qmm.torch.Linear of `format`, except those
    whose qualified name matches a pattern of skip (fnmatch, or a dotted part of the name). Returns model."""
    def skipped(name):
        return any(fnmatch.fnmatch(name, p) or p in name.split(".") for p in skip)

    for parent_name, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            full = f"{parent_name}.{child_name}" if parent_name else child_name
            if type(child) is torch.nn.Linear and not skipped(full):
                setattr(parent, child_name, Linear.from_linear(child, format=format, recipe=recipe))
    return model
