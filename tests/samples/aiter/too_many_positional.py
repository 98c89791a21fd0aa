#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter sample: get_mla_metadata_info_v1 called with more positional arguments than it has parameters
# (expected: AITER_BAD_CALL).
import aiter
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q = data[0]
    info = aiter.get_mla_metadata_info_v1(q.shape[0], 1, 16, q.dtype, q.dtype, False, False, 32, True, 1)  # EXPECT AITER_BAD_CALL
    return info
