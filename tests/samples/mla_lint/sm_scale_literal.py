#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# MLA lint sample: sm_scale hard-coded, as a literal and as a constant name (trips MLA_HARDCODED_SM_SCALE).
import torch
from aiter.mla import mla_decode_fwd

SM_SCALE = 1.0 / (576 ** 0.5)


def custom_kernel(data):
    q, kv_data, qo_indptr, kv_indptr, config = data
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    pages = torch.arange(kv_data["bf16"].shape[0], dtype=torch.int32, device=q.device)
    lengths = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
    kv = kv_data["bf16"].view(-1, 1, 1, 576)
    mla_decode_fwd(q, kv, out, qo_indptr, kv_indptr, pages, lengths, 1, sm_scale=SM_SCALE)  # EXPECT MLA_HARDCODED_SM_SCALE warning
    mla_decode_fwd(q, kv, out, qo_indptr, kv_indptr, pages, lengths, 1, sm_scale=0.0416667)  # EXPECT MLA_HARDCODED_SM_SCALE warning
    return out
