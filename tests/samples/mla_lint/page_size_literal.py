#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# MLA lint sample: page size 2 as a literal (trips MLA_PAGE_SIZE).
import torch
from aiter.mla import mla_decode_fwd


def custom_kernel(data):
    q, kv_data, qo_indptr, kv_indptr, config = data
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    kv = kv_data["bf16"].view(-1, 2, 1, 576)
    pages = torch.arange(kv.shape[0], dtype=torch.int32, device=q.device)
    mla_decode_fwd(q, kv, out, qo_indptr, kv_indptr // 2, pages, kv_indptr[1:] * 0 + 2, 1,  # EXPECT MLA_PAGE_SIZE
                   page_size=2, sm_scale=config["sm_scale"])
    return out
