#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Estimate sample: bf16 Q and bf16 KV straight into aiter's non-persistent mla_decode_fwd (the a16w16 stage-1 asm
kernel, aiter's own split count): no quantization, no metadata kernel, the output allocated on every call."""
import torch

from aiter.mla import mla_decode_fwd
from task import input_t, output_t

HEADS, KV_HEADS, DIM, V_DIM = 16, 1, 576, 512


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv = kv_data["bf16"]
    pages = torch.arange(kv.shape[0], dtype=torch.int32, device=q.device)
    lengths = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
    out = torch.empty((q.shape[0], HEADS, V_DIM), dtype=torch.bfloat16, device=q.device)
    mla_decode_fwd(q, kv.view(-1, 1, KV_HEADS, DIM), out, qo_indptr, kv_indptr, pages, lengths, 1, page_size=1,
                   nhead_kv=KV_HEADS, sm_scale=config["sm_scale"], intra_batch_mode=False)
    return out
