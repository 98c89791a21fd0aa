#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Estimate sample: the page-size hack seen on the board - the non-persistent a16w16 wrapper told that pages hold two
KV rows. The runner's asm kernels are built for page size 1, so it would read only part of each sequence: the
stand-in refuses the call, and the estimate gives only that reason."""
import torch

from aiter.mla import mla_decode_fwd
from task import input_t, output_t

HEADS, KV_HEADS, DIM, V_DIM, PAGE = 16, 1, 576, 512, 2


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv = kv_data["bf16"]
    pages = torch.arange(kv.shape[0] // PAGE, dtype=torch.int32, device=q.device)
    page_indptr = kv_indptr // PAGE
    last = torch.full((config["batch_size"],), PAGE, dtype=torch.int32, device=q.device)
    out = torch.empty((q.shape[0], HEADS, V_DIM), dtype=torch.bfloat16, device=q.device)
    mla_decode_fwd(q, kv.view(-1, PAGE, KV_HEADS, DIM), out, qo_indptr, page_indptr, pages, last, 1,
                   page_size=PAGE, nhead_kv=KV_HEADS, sm_scale=config["sm_scale"], intra_batch_mode=False)
    return out
