#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter stand-in sample (a hack): the persistent schedule cached by batch size alone. A later call with the same
# batch and other KV lengths runs on a schedule built for the old lengths.
# EXPECT-STANDIN test=pass same_batch_other_kv=fail:work_info_set
import torch
from aiter import dtypes, get_mla_metadata_info_v1, get_mla_metadata_v1, per_tensor_quant_hip
from aiter.mla import mla_decode_fwd

from task import input_t, output_t

_schedules = {}


def schedule(batch, qo_indptr, kv_indptr, lengths, device):
    if batch not in _schedules:
        info = get_mla_metadata_info_v1(batch, 1, 16, dtypes.fp8, dtypes.fp8, is_sparse=False, fast_mode=False,
                                        num_kv_splits=32, intra_batch_mode=True)
        buffers = [torch.empty(s, dtype=t, device=device) for s, t in info]
        meta, indptr, works, r_indptr, r_final, r_partial = buffers
        get_mla_metadata_v1(qo_indptr, kv_indptr, lengths, 16, 1, True, meta, works, indptr, r_indptr, r_final,
                            r_partial, max_seqlen_qo=1, uni_seqlen_qo=1, fast_mode=False, max_split_per_batch=32,
                            intra_batch_mode=True)
        _schedules[batch] = buffers
    return _schedules[batch]


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    q8, q_scale = per_tensor_quant_hip(q, quant_dtype=dtypes.fp8)
    lengths = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
    meta, indptr, works, r_indptr, r_final, r_partial = schedule(config["batch_size"], qo_indptr, kv_indptr,
                                                                 lengths, q.device)
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=q.device)
    pages = torch.arange(kv8.shape[0], dtype=torch.int32, device=q.device)
    mla_decode_fwd(q8, kv8.view(-1, 1, 1, 576), out, qo_indptr, kv_indptr, pages, lengths, 1,
                   sm_scale=config["sm_scale"], num_kv_splits=32, q_scale=q_scale, kv_scale=kv_scale,
                   intra_batch_mode=True, work_meta_data=meta, work_indptr=indptr, work_info_set=works,
                   reduce_indptr=r_indptr, reduce_final_map=r_final, reduce_partial_map=r_partial)
    return out
