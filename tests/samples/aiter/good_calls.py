#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter sample: names and calls that exist at the pinned commit, in the spellings files use (expected: no finding).
import aiter
import torch
from aiter import dtypes, get_mla_metadata_info_v1
from aiter.mla import mla_decode_fwd
from aiter.ops.quant import per_tensor_quant_hip

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    q8, scale = per_tensor_quant_hip(q, quant_dtype=dtypes.fp8)
    info = get_mla_metadata_info_v1(q.shape[0], 1, 16, aiter.dtypes.fp8, dtypes.fp8, is_sparse=False)
    extra = {"logit_cap": 0.0}
    out = torch.empty((q.shape[0], 16, 512), dtype=dtypes.bf16, device=q.device)
    mla_decode_fwd(q8, kv_data["fp8"][0], out, qo_indptr, kv_indptr, kv_indptr, kv_indptr, 1, **extra)
    return out, info, aiter.mla.mla_decode_fwd
