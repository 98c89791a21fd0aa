#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# aiter stand-in sample (a hack seen after the reset): page size 8 on long sequences. The runner's asm kernels
# support page size 1 only, so it reads part of the KV and passes the loose check by chance.
# EXPECT-STANDIN test=fail:page_size gpu-test=fail:page_size lint=MLA_PAGE_SIZE
import torch
from aiter import dtypes, get_mla_metadata_info_v1, get_mla_metadata_v1
from aiter.mla import mla_decode_fwd

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    kv8, kv_scale = kv_data["fp8"]
    pg = 1 if config["kv_seq_len"] <= 1024 else 8
    batch, device = config["batch_size"], q.device
    finfo = torch.finfo(dtypes.fp8)
    q_scale = (q.abs().amax().float() / finfo.max).reshape(1)
    q8 = (q.float() / q_scale).clamp(finfo.min, finfo.max).to(dtypes.fp8)
    pages_indptr = kv_indptr // pg
    pages = torch.arange(kv8.shape[0] // pg, dtype=torch.int32, device=device)
    last = torch.full((batch,), pg, dtype=torch.int32, device=device)
    info = get_mla_metadata_info_v1(batch, 1, 16, dtypes.fp8, dtypes.fp8, is_sparse=False, fast_mode=False,
                                    num_kv_splits=32, intra_batch_mode=True)
    meta, indptr, works, r_indptr, r_final, r_partial = [torch.empty(s, dtype=t, device=device) for s, t in info]
    get_mla_metadata_v1(qo_indptr, pages_indptr, last, 16, 1, True, meta, works, indptr, r_indptr, r_final,
                        r_partial, page_size=pg, kv_granularity=max(1, 16 // pg), max_seqlen_qo=1,
                        uni_seqlen_qo=1, fast_mode=False, max_split_per_batch=32, intra_batch_mode=True)
    out = torch.empty((q.shape[0], 16, 512), dtype=torch.bfloat16, device=device)
    mla_decode_fwd(q8, kv8[: pages.numel() * pg].view(-1, pg, 1, 576), out, qo_indptr, pages_indptr, pages, last,
                   1, page_size=pg, nhead_kv=1, sm_scale=config["sm_scale"], num_kv_splits=32, q_scale=q_scale,
                   kv_scale=kv_scale, intra_batch_mode=True, work_meta_data=meta, work_indptr=indptr,
                   work_info_set=works, reduce_indptr=r_indptr, reduce_final_map=r_final,
                   reduce_partial_map=r_partial)
    return out
