#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# MLA lint sample: sm_scale read from config, written correctly (no MLA finding).
import torch
from aiter.mla import mla_decode_fwd


def custom_kernel(data):
    q, kv_data, qo_indptr, kv_indptr, config = data
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    pages = torch.arange(kv_data["bf16"].shape[0], dtype=torch.int32, device=q.device)
    sm_scale = float(config["sm_scale"])
    mla_decode_fwd(q, kv_data["bf16"].view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, pages,
                   (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32), 1, sm_scale=sm_scale)
    return out
