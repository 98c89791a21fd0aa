#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter sample: a dtype aiter.dtypes does not define, and a top-level function aiter does not export
# (expected: two AITER_UNKNOWN_NAME).
import aiter
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q = data[0].to(aiter.dtypes.fp8_e4m3)  # EXPECT AITER_UNKNOWN_NAME
    return aiter.mla_decode_fwd(q)  # EXPECT AITER_UNKNOWN_NAME
