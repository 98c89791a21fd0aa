#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter on gfx950 sample: a non-persistent a8w8 wrapper in the style of the public full-work files
# (fp8 Q and KV, 8 KV splits, no work metadata): it takes mla_a8w8_qh16_qseqlen1_gqaratio16.co.
# EXPECT-GFX950 test=fail (the LDS race of that kernel, named)
import torch
from aiter import dtypes, per_tensor_quant_hip
from aiter.mla import mla_decode_fwd

from task import input_t, output_t

SPLITS = 8


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    heads, batch = config["num_heads"], config["batch_size"]
    q8, q_scale = per_tensor_quant_hip(q, quant_dtype=dtypes.fp8)
    ones = torch.ones(batch, dtype=torch.int32, device=q.device)
    splits_indptr = torch.arange(0, (batch + 1) * SPLITS, SPLITS, dtype=torch.int32, device=q.device)
    out = torch.empty((q.shape[0], heads, config["v_head_dim"]), dtype=torch.bfloat16, device=q.device)
    mla_decode_fwd(q8, kv8.view(-1, 1, 1, kv8.shape[-1]), out, qo_indptr, kv_indptr,
                   torch.arange(kv8.shape[0], dtype=torch.int32, device=q.device), ones, 1, page_size=1,
                   nhead_kv=1, sm_scale=config["sm_scale"], num_kv_splits=SPLITS,
                   num_kv_splits_indptr=splits_indptr, q_scale=q_scale, kv_scale=kv_scale)
    return out
