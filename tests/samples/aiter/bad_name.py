#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter sample: imports a function aiter.mla does not have (expected: AITER_UNKNOWN_NAME on the import line).
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    from aiter.mla import mla_decode_fwd_persistent  # EXPECT AITER_UNKNOWN_NAME

    return mla_decode_fwd_persistent(data[0])
