#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
# MLA lint sample: page size through a variable a literal 8 is assigned to (trips MLA_PAGE_SIZE).
import aiter
import torch


def custom_kernel(data):
    q, kv_data, qo_indptr, kv_indptr, config = data
    pg = 1 if config["kv_seq_len"] <= 1024 else 8
    buffers = [torch.empty(s, dtype=t, device=q.device) for s, t in aiter.get_mla_metadata_info_v1(
        config["batch_size"], 1, 16, torch.bfloat16, torch.bfloat16, is_sparse=False)]
    meta, indptr, works, r_indptr, r_final, r_partial = buffers
    aiter.get_mla_metadata_v1(qo_indptr, kv_indptr // pg, kv_indptr[1:] * 0 + pg, 16, 1, True,  # EXPECT MLA_PAGE_SIZE
                              meta, works, indptr, r_indptr, r_final, r_partial, pg)
    return meta
