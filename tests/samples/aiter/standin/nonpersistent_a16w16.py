#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter stand-in sample: a correct non-persistent a16w16 wrapper (bf16 Q and KV, splits chosen by aiter).
# EXPECT-STANDIN test=pass leaderboard=pass stress=pass
import aiter
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv = kv_data["bf16"]
    out = torch.empty((q.shape[0], 16, 512), dtype=aiter.dtypes.bf16, device=q.device)
    pages = torch.arange(kv.shape[0], dtype=torch.int32, device=q.device)
    last = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
    aiter.mla.mla_decode_fwd(q, kv.view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, pages, last, 1,
                             sm_scale=config["sm_scale"])
    return out
