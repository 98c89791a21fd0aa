#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# MLA lint sample: Q's fp8 scale from constants (trips MLA_FIXED_Q_SCALE, a warning).
import torch
from aiter.mla import mla_decode_fwd

Q_SCALE = torch.tensor([4.5 / 448.0])  # EXPECT MLA_FIXED_Q_SCALE warning


def custom_kernel(data):
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    q8 = (q.float() / Q_SCALE.to(q.device)).clamp(-448, 448).to(kv8.dtype)
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    pages = torch.arange(kv8.shape[0], dtype=torch.int32, device=q.device)
    mla_decode_fwd(q8, kv8.view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, pages,  # EXPECT MLA_FIXED_Q_SCALE warning
                   (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32), 1, sm_scale=config["sm_scale"],
                   q_scale=torch.tensor([0.01], device=q.device), kv_scale=kv_scale)
    return out
