"""aiter.utility.fp4_utils at the pinned commit: MXFP4 quantization (ties away from zero, aiter's padded scale
layout) and its decoders. The quantizer's arithmetic is reference.py's, which implements this very rule.
Torch on every machine: each call is named "aiter modelled in torch" in the case's words (routing.modelled)."""
import torch

from harness.aiter_gfx950.routing import modelled
from harness.aiter_standin import journal
from harness.aiter_standin.dtypes import fp4x2, fp8_e8m0
from harness.aiter_standin.errors import NotCovered


@modelled("aiter.utility.fp4_utils.dynamic_mxfp4_quant")
def dynamic_mxfp4_quant(x: torch.Tensor, scaling_mode: str = "even", shuffle: bool = False):
    """(x_fp4 (M, N/2) fp4x2, scales (cdiv(M, 256) * 256, cdiv(N/32, 8) * 8) e8m0); rows past M unwritten."""
    import reference  # the repository root's portable quantizer (already imported by the child)

    if shuffle:
        raise NotCovered("aiter.utility.fp4_utils.dynamic_mxfp4_quant(shuffle=True)")
    M, N = x.shape
    assert (N // 2) % 2 == 0
    packed, scales = reference.quantize_mxfp4(x, rounding="away")
    journal.note(journal.entry("aiter.utility.fp4_utils.dynamic_mxfp4_quant", "triton_dynamic_mxfp4_quant",
                               q_dtype=journal.dtype_name(x.dtype), bytes_read=journal.tensor_bytes(x),
                               bytes_written=journal.tensor_bytes(packed) + M * scales.shape[1]))
    return packed.view(torch.uint8).view(fp4x2), scales.view(torch.uint8).view(fp8_e8m0)


@modelled("aiter.utility.fp4_utils.mxfp4_to_f32")
def mxfp4_to_f32(x: torch.Tensor) -> torch.Tensor:
    """float32 (..., 2 * N) from packed fp4 (..., N): low nibble first (reference.py's E2M1 table)."""
    import reference

    raw = x.view(torch.uint8)
    return reference.e2m1_decode(torch.stack((raw & 0xF, raw >> 4), dim=-1).flatten(-2))


@modelled("aiter.utility.fp4_utils.e8m0_to_f32")
def e8m0_to_f32(scale_e8m0_biased: torch.Tensor) -> torch.Tensor:
    """2^(b - 127) as float32; byte 0 gives 2^-127 (bits 0x00400000), byte 255 NaN (0x7F800001)."""
    raw = scale_e8m0_biased.view(torch.uint8)
    bits = raw.to(torch.int32) << 23
    bits = torch.where(raw == 0, torch.full_like(bits, 0x00400000), bits)
    bits = torch.where(raw == 0xFF, torch.full_like(bits, 0x7F800001), bits)
    return bits.view(torch.float32)
