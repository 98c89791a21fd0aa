#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# MLA lint sample: Q's fp8 scale measured from each call's Q, written correctly (no MLA finding).
import torch
from aiter.mla import mla_decode_fwd

FP8_MAX = 448.0


def custom_kernel(data):
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    q_scale = (q.abs().amax().float() / FP8_MAX).reshape(1)
    q8 = (q.float() / q_scale).clamp(-FP8_MAX, FP8_MAX).to(kv8.dtype)
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    pages = torch.arange(kv8.shape[0], dtype=torch.int32, device=q.device)
    mla_decode_fwd(q8, kv8.view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, pages,
                   (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32), 1, sm_scale=config["sm_scale"],
                   q_scale=q_scale, kv_scale=kv_scale)
    return out
