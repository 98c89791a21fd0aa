#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter sample: an optional helper imported inside try/except ImportError, with a fallback
# (expected: AITER_UNKNOWN_NAME as a warning, not an error).
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    try:
        from aiter import per_tensor_quant_fp8  # EXPECT AITER_UNKNOWN_NAME warning
    except ImportError:
        per_tensor_quant_fp8 = None
    return data[0] if per_tensor_quant_fp8 is None else per_tensor_quant_fp8(data[0])[0]
