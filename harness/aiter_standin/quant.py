"""aiter's per-tensor quantizers (aiter.ops.quant and aiter.ops.triton.quant): results written in place, as there.

The HIP kernels (dynamic_per_tensor_quant, static_per_tensor_quant) compute scale = amax / dtype max and store
x * (1 / scale), saturated, in the caller's `out`; the Triton ones take a 2-D input and fold the scale into the
caller's scale buffer with an atomic max, so a scale buffer that was not zeroed changes their answer here too.
Torch on every machine: each call is named "aiter modelled in torch" in the case's words (routing.modelled).
"""
import torch

from harness.aiter_gfx950.routing import modelled
from harness.aiter_standin import journal
from harness.aiter_standin.dtypes import fp32, i8, is_fp8
from harness.aiter_standin.errors import check


def get_dtype_max(dtype) -> float:
    try:
        return torch.finfo(dtype).max
    except TypeError:
        return torch.iinfo(dtype).max


def _saturated(x: torch.Tensor, inverse_scale: torch.Tensor, dtype) -> torch.Tensor:
    limit = get_dtype_max(dtype)
    y = (x.to(torch.float32) * inverse_scale).clamp(-limit, limit)
    return y.round().to(dtype) if dtype == torch.int8 else y.to(dtype)


def _note(api: str, kernel: str, x: torch.Tensor, out: torch.Tensor, launches: int) -> None:
    journal.note(journal.entry(api, kernel, launches=launches, q_dtype=journal.dtype_name(x.dtype),
                               bytes_read=journal.tensor_bytes(x) * (2 if launches > 1 else 1),
                               bytes_written=journal.tensor_bytes(out) + 4))


def _check_out(function: str, out: torch.Tensor, x: torch.Tensor) -> None:
    check(is_fp8(out.dtype) or out.dtype == torch.int8, function, f" not support output type: {out.dtype}")
    check(out.numel() == x.numel(), function, f" out holds {out.numel()} elements, input {x.numel()}")


@modelled("aiter.dynamic_per_tensor_quant")
def dynamic_per_tensor_quant(out: torch.Tensor, input: torch.Tensor, scale: torch.Tensor) -> None:
    """HIP: scale[0] = amax / max (initialised, then reduced, then used), out = sat(x / scale)."""
    _check_out("dynamic_per_tensor_quant", out, input)
    amax = input.abs().amax().to(torch.float32)
    scale.view(-1)[:1].copy_((amax / get_dtype_max(out.dtype)).reshape(1))
    out.copy_(_saturated(input, 1.0 / scale.view(-1)[:1].to(torch.float32), out.dtype).view(out.shape))
    _note("aiter.dynamic_per_tensor_quant", "dynamic_per_tensor_quant", input, out, launches=3)


@modelled("aiter.static_per_tensor_quant")
def static_per_tensor_quant(out: torch.Tensor, input: torch.Tensor, scale: torch.Tensor) -> None:
    """HIP: out = sat(x * (1 / scale[0]))."""
    _check_out("static_per_tensor_quant", out, input)
    out.copy_(_saturated(input, 1.0 / scale.view(-1)[:1].to(torch.float32), out.dtype).view(out.shape))
    _note("aiter.static_per_tensor_quant", "static_per_tensor_quant", input, out, launches=1)


@modelled("aiter.per_tensor_quant")
def per_tensor_quant(x, scale=None, scale_dtype=fp32, quant_dtype=i8, dtypeMax=None):
    """The torch version in aiter.ops.quant: no saturation, y = (x / scale).to(quant_dtype)."""
    x = x.to(fp32)
    if scale is None:
        scale = torch.abs(x).max() / (get_dtype_max(quant_dtype) if dtypeMax is None else dtypeMax)
    y = (x / scale).to(quant_dtype)
    _note("aiter.per_tensor_quant", "torch", x, y, launches=3)
    return y, scale.view(1).to(scale_dtype)


@modelled("aiter.per_tensor_quant_hip")
def per_tensor_quant_hip(x, scale=None, quant_dtype=i8, num_rows=None, num_rows_factor=1):
    assert num_rows is None, "num_rows is not supported for per_tensor_quant_hip"
    y = torch.empty(x.shape, dtype=quant_dtype, device=x.device)
    if not (is_fp8(quant_dtype) or quant_dtype == i8):
        raise ValueError(f"unsupported: quant_dtype={quant_dtype!r}")
    if scale is None:
        scale = torch.empty(1, dtype=fp32, device=x.device)
        dynamic_per_tensor_quant.__wrapped__(y, x, scale)
    else:
        static_per_tensor_quant.__wrapped__(y, x, scale)
    return y, scale.view(1)


def _triton_rows(function: str, x_in: torch.Tensor) -> None:
    # The Triton kernels take rows = shape[0], cols = shape[1] and the row stride: a 3-D input is misread there.
    check(x_in.dim() == 2, function, f" x_in must be 2-D (M, N); got shape {tuple(x_in.shape)}, which the "
          "runner's Triton kernel reads as shape[0] x shape[1] rows and columns only")


@modelled("aiter.ops.triton.quant.dynamic_per_tensor_quant_fp8_i8")
def dynamic_per_tensor_quant_fp8_i8(qx: torch.Tensor, x_in: torch.Tensor, scale_out: torch.Tensor):
    """Triton: scale_out = max(scale_out, amax / max) (an atomic max into the caller's buffer), qx = sat(x / scale)."""
    _triton_rows("dynamic_per_tensor_quant_fp8_i8", x_in)
    found = x_in.abs().amax().to(torch.float32) / get_dtype_max(qx.dtype)
    scale_out.view(-1)[:1].copy_(torch.maximum(scale_out.view(-1)[:1].to(torch.float32), found.reshape(1)))
    qx.copy_(_saturated(x_in, 1.0 / scale_out.view(-1)[:1].to(torch.float32), qx.dtype))
    _note("aiter.ops.triton.quant.dynamic_per_tensor_quant_fp8_i8", "triton_dynamic_per_tensor_quant", x_in, qx, 2)
    return qx, scale_out


@modelled("aiter.ops.triton.quant.static_per_tensor_quant_fp8_i8")
def static_per_tensor_quant_fp8_i8(qx: torch.Tensor, x_in: torch.Tensor, scale_in: torch.Tensor):
    _triton_rows("static_per_tensor_quant_fp8_i8", x_in)
    assert scale_in.numel() == 1
    qx.copy_(_saturated(x_in, 1.0 / scale_in.view(-1)[:1].to(torch.float32), qx.dtype))
    _note("aiter.ops.triton.quant.static_per_tensor_quant_fp8_i8", "triton_static_per_tensor_quant", x_in, qx, 1)
    return qx


@modelled("aiter.per_tensor_quant_triton")
def per_tensor_quant_triton(x, scale=None, quant_dtype=i8):
    y = torch.empty(x.shape, dtype=quant_dtype, device=x.device)
    x = x.view(-1, x.shape[-1])
    if scale is None:
        scale = torch.zeros(1, dtype=fp32, device=x.device)
        dynamic_per_tensor_quant_fp8_i8.__wrapped__(y.view(x.shape), x, scale)
    else:
        static_per_tensor_quant_fp8_i8.__wrapped__(y.view(x.shape), x, scale)
    return y, scale
