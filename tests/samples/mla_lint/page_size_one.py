#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# MLA lint sample: page size 1 through a constant, written correctly (no MLA finding).
import torch
from aiter.mla import mla_decode_fwd

PAGE_SIZE = 1
KV_GRANULARITY = 16


def custom_kernel(data):
    q, kv_data, qo_indptr, kv_indptr, config = data
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    pages = torch.arange(kv_data["bf16"].shape[0], dtype=torch.int32, device=q.device)
    mla_decode_fwd(q, kv_data["bf16"].view(-1, PAGE_SIZE, 1, 576), out, qo_indptr, kv_indptr, pages,
                   (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32), 1, page_size=PAGE_SIZE,
                   sm_scale=config["sm_scale"])
    return out
