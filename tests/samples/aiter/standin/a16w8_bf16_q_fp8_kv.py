#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter stand-in sample: bf16 Q with fp8 KV (a16w8). The runner has that kernel only in persistent mode, so a
# non-persistent call is refused as the runner refuses it.
# EXPECT-STANDIN test=error:heuristic-kernel
import torch
from aiter.mla import mla_decode_fwd

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    pages = torch.arange(kv8.shape[0], dtype=torch.int32, device=q.device)
    mla_decode_fwd(q, kv8.view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, pages,
                   (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32), 1, sm_scale=config["sm_scale"],
                   kv_scale=kv_scale)
    return out
