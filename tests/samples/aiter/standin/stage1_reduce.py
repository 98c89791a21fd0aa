#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter stand-in sample: the persistent stage-1 asm kernel and mla_reduce_v1 called directly (fp8 Q from the
# Triton quantizer into a zeroed scale), partial buffers sized from the metadata.
# EXPECT-STANDIN test=pass leaderboard=pass stress=pass
import aiter
import torch
from aiter import dtypes
from aiter.ops.triton.quant import dynamic_per_tensor_quant_fp8_i8

from task import input_t, output_t

SPLITS = 16


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    batch, device = config["batch_size"], q.device
    q8 = torch.empty(q.shape, dtype=dtypes.fp8, device=device)
    q_scale = torch.zeros(1, dtype=torch.float32, device=device)
    dynamic_per_tensor_quant_fp8_i8(q8.view(-1, 576), q.view(-1, 576), q_scale)
    lengths = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
    info = aiter.get_mla_metadata_info_v1(batch, 1, 16, dtypes.fp8, dtypes.fp8, is_sparse=False, fast_mode=False,
                                          num_kv_splits=SPLITS, intra_batch_mode=True)
    meta, indptr, works, r_indptr, r_final, r_partial = [torch.empty(s, dtype=t, device=device) for s, t in info]
    aiter.get_mla_metadata_v1(qo_indptr, kv_indptr, lengths, 16, 1, True, meta, works, indptr, r_indptr, r_final,
                              r_partial, max_seqlen_qo=1, uni_seqlen_qo=1, fast_mode=False,
                              max_split_per_batch=SPLITS, intra_batch_mode=True)
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=device)
    partial = torch.empty((r_partial.shape[0], 1, 16, 512), dtype=torch.float32, device=device)
    partial_lse = torch.empty((r_partial.shape[0], 1, 16, 1), dtype=torch.float32, device=device)
    pages = torch.arange(kv8.shape[0], dtype=torch.int32, device=device)
    aiter.mla_decode_stage1_asm_fwd(q8, kv8.view(-1, 1, 1, 576), qo_indptr, kv_indptr, pages, lengths, None, meta,
                                    indptr, works, 1, 1, 1, config["sm_scale"], partial, partial_lse, out, q_scale,
                                    kv_scale)
    aiter.mla_reduce_v1(partial, partial_lse, r_indptr, r_final, r_partial, 1, out, None)
    return out
