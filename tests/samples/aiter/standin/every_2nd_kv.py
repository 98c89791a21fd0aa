#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter stand-in sample (a hack): every 2nd KV token only on long sequences, through kv_indices. Near-uniform
# attention over iid randn forgives it; a few keys that take most of the attention do not.
# EXPECT-STANDIN test=pass:warned stress=fail
import torch
from aiter import dtypes, per_tensor_quant_hip
from aiter.mla import mla_decode_fwd

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    q8, q_scale = per_tensor_quant_hip(q, quant_dtype=dtypes.fp8)
    starts = kv_indptr[:-1].tolist()
    lengths = (kv_indptr[1:] - kv_indptr[:-1]).tolist()
    step = 2 if config["kv_seq_len"] > 1024 else 1
    kept = [torch.arange(s, s + n, step, dtype=torch.int32, device=q.device) for s, n in zip(starts, lengths)]
    pages = torch.cat(kept)
    half = torch.tensor([0] + [len(k) for k in kept], device=q.device).cumsum(0).to(torch.int32)
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    mla_decode_fwd(q8, kv8.view(-1, 1, 1, 576), out, qo_indptr, half, pages, (half[1:] - half[:-1]), 1,
                   sm_scale=config["sm_scale"], q_scale=q_scale, kv_scale=kv_scale)
    return out
