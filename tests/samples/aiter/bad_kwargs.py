#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter sample: mla_decode_fwd with keyword arguments it does not take (expected: AITER_BAD_CALL).
import torch
from aiter.mla import mla_decode_fwd

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv = kv_data["bf16"]
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    lengths = (kv_indptr[1:] - kv_indptr[:-1]).int()
    indices = torch.arange(kv.shape[0], dtype=torch.int32, device=q.device)
    mla_decode_fwd(q, kv.view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, indices, lengths, 1,  # EXPECT AITER_BAD_CALL
                   page_size=1, softmax_scale=config["sm_scale"], num_kv_heads=1)
    return out
