#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter sample: get_mla_metadata_v1 without its required buffers, through an alias of the module
# (expected: AITER_BAD_CALL).
import aiter as ai
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    ai.get_mla_metadata_v1(qo_indptr, kv_indptr, kv_indptr, 16, 1, True, page_size=1)  # EXPECT AITER_BAD_CALL
    return q
