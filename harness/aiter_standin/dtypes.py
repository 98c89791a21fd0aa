"""aiter.dtypes as the runner (gfx950) sees it: fp8 is OCP float8_e4m3fn, not gfx942's e4m3fnuz."""
import torch

_BYTE = torch.uint8  # aiter's fallback where torch lacks a type

fp8 = torch.float8_e4m3fn
fp8_e8m0 = getattr(torch, "float8_e8m0fnu", _BYTE)
fp4x2 = getattr(torch, "float4_e2m1fn_x2", _BYTE)
i4x2 = getattr(torch, "int4", _BYTE)
fp16 = torch.float16
bf16 = torch.bfloat16
fp32 = torch.float32
u32 = torch.uint32
i32 = torch.int32
i16 = torch.int16
i8 = torch.int8

d_dtypes = {"fp8": fp8, "fp8_e8m0": fp8_e8m0, "fp16": fp16, "bf16": bf16, "fp32": fp32, "i4x2": i4x2,
            "fp4x2": fp4x2, "u32": u32, "i32": i32, "i16": i16, "i8": i8}


def get_dtype_fp8() -> torch.dtype:
    return fp8


def is_fp8(dtype) -> bool:
    """Either fp8 flavour: the runner's kernels accept e4m3fn and e4m3fnuz tensors alike (asm_mla.cu)."""
    return dtype in (torch.float8_e4m3fn, torch.float8_e4m3fnuz)


def short_name(dtype) -> str:
    """The kernel catalogue's names: 'bf16', 'fp8', 'byte' (what asm_mla.cu calls q_type / kv_type)."""
    if dtype == torch.bfloat16:
        return "bf16"
    if is_fp8(dtype):
        return "fp8"
    if dtype in (torch.uint8, torch.int8):
        return "byte"
    return str(dtype).removeprefix("torch.")
