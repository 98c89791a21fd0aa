#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter stand-in sample (a hack): a fixed Q amax, never measured. iid randn Q stays under it, so the official
# cases pass; Q of another scale saturates.
# EXPECT-STANDIN test=pass leaderboard=pass stress=fail lint=MLA_FIXED_Q_SCALE
import torch
from aiter import dtypes
from aiter.mla import mla_decode_fwd

from task import input_t, output_t

Q_AMAX = 5.0
Q_SCALE = torch.tensor([Q_AMAX / 448.0])


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    q_scale = Q_SCALE.to(q.device)
    q8 = (q.float() / q_scale).clamp(-448.0, 448.0).to(dtypes.fp8)
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    pages = torch.arange(kv8.shape[0], dtype=torch.int32, device=q.device)
    last = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
    mla_decode_fwd(q8, kv8.view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, pages, last, 1,
                   sm_scale=config["sm_scale"], q_scale=q_scale, kv_scale=kv_scale)
    return out
