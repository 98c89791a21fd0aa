#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter stand-in sample (a hack): Q's fp8 quantization cached by data_ptr(). A new input at a reused address
# gets the old Q, which leaderboard mode's fresh input on every call exposes.
# EXPECT-STANDIN test=rejected leaderboard=fail lint=MLA_DATA_PTR_CACHE
import torch
from aiter import dtypes, per_tensor_quant_hip
from aiter.mla import mla_decode_fwd

from task import input_t, output_t

_quantized = {}


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    key = q.data_ptr()
    if key not in _quantized:
        _quantized[key] = per_tensor_quant_hip(q, quant_dtype=dtypes.fp8)
    q8, q_scale = _quantized[key]
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    pages = torch.arange(kv8.shape[0], dtype=torch.int32, device=q.device)
    last = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
    mla_decode_fwd(q8, kv8.view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, pages, last, 1,
                   sm_scale=config["sm_scale"], q_scale=q_scale, kv_scale=kv_scale)
    return out
