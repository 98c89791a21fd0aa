#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter stand-in sample: an aiter function the pinned aiter has but the stand-in does not cover.
# EXPECT-STANDIN test=error:not-covered
import torch
from aiter.mla import mla_prefill_fwd

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    pages = torch.arange(kv_data["bf16"].shape[0], dtype=torch.int32, device=q.device)
    mla_prefill_fwd(q, kv_data["bf16"].view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, pages,
                    (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32), 1, sm_scale=config["sm_scale"])
    return out
