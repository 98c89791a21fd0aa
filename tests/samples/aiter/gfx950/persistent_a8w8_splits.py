#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter on gfx950 sample: the same wrapper on the persistent path (get_mla_metadata_v1, at most 8 splits a
# sequence): it takes mla_a8w8_qh16_qseqlen1_gqaratio16_ps.co and aiter's reduce.
# EXPECT-GFX950 test=pass (its LDS races let through and named: see code_objects.json)
import torch
from aiter import dtypes, get_mla_metadata_info_v1, get_mla_metadata_v1, per_tensor_quant_hip
from aiter.mla import mla_decode_fwd

from task import input_t, output_t

SPLITS = 8


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    heads, batch = config["num_heads"], config["batch_size"]
    q8, q_scale = per_tensor_quant_hip(q, quant_dtype=dtypes.fp8)
    ones = torch.ones(batch, dtype=torch.int32, device=q.device)
    info = get_mla_metadata_info_v1(batch, 1, heads, q8.dtype, kv8.dtype, is_sparse=False, fast_mode=False,
                                    num_kv_splits=SPLITS, intra_batch_mode=True)
    meta, indptr, works, r_indptr, r_final, r_partial = [torch.empty(s, dtype=t, device=q.device) for s, t in info]
    get_mla_metadata_v1(qo_indptr, kv_indptr, ones, heads, 1, True, meta, works, indptr, r_indptr, r_final,
                        r_partial, page_size=1, kv_granularity=16, max_seqlen_qo=1, uni_seqlen_qo=1,
                        fast_mode=False, max_split_per_batch=SPLITS, intra_batch_mode=True, dtype_q=q8.dtype,
                        dtype_kv=kv8.dtype)
    out = torch.empty((q.shape[0], heads, config["v_head_dim"]), dtype=torch.bfloat16, device=q.device)
    mla_decode_fwd(q8, kv8.view(-1, 1, 1, kv8.shape[-1]), out, qo_indptr, kv_indptr,
                   torch.arange(kv8.shape[0], dtype=torch.int32, device=q.device), ones, 1, page_size=1,
                   nhead_kv=1, sm_scale=config["sm_scale"], num_kv_splits=SPLITS, q_scale=q_scale,
                   kv_scale=kv_scale, intra_batch_mode=True, work_meta_data=meta, work_indptr=indptr,
                   work_info_set=works, reduce_indptr=r_indptr, reduce_final_map=r_final,
                   reduce_partial_map=r_partial)
    return out
