#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""Estimate sample: the same persistent a8w8 wrapper as estimate_persistent_a8w8_item.py, but the total KV length
comes from the KV buffer's shape, so the call never waits for the GPU (no host sync)."""
import torch

from aiter import dtypes, get_mla_metadata_info_v1, get_mla_metadata_v1
from aiter.mla import mla_decode_fwd
from task import input_t, output_t

HEADS, KV_HEADS, DIM, V_DIM, SPLITS = 16, 1, 576, 512, 32
BUFFERS = ("work_meta_data", "work_indptr", "work_info_set", "reduce_indptr", "reduce_final_map", "reduce_partial_map")


def fp8_per_tensor(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    top = torch.finfo(dtypes.fp8).max
    scale = x.abs().amax().clamp(min=1e-12) / top
    return (x / scale).clamp(-top, top).to(dtypes.fp8), scale.to(torch.float32).reshape(1)


def total_kv_rows(kv_indptr: torch.Tensor, kv: torch.Tensor) -> int:
    return kv.shape[0]


def custom_kernel(data: input_t) -> output_t:
    q, kv_data, qo_indptr, kv_indptr, config = data
    batch = config["batch_size"]
    kv8, kv_scale = kv_data["fp8"]
    q8, q_scale = fp8_per_tensor(q)
    rows = total_kv_rows(kv_indptr, kv8)
    pages = torch.arange(rows, dtype=torch.int32, device=q.device)
    lengths = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
    sizes = get_mla_metadata_info_v1(batch, 1, HEADS, q8.dtype, kv8.dtype, is_sparse=False, fast_mode=False,
                                     num_kv_splits=SPLITS, intra_batch_mode=True)
    work = {name: torch.empty(shape, dtype=kind, device=q.device) for name, (shape, kind) in zip(BUFFERS, sizes)}
    get_mla_metadata_v1(qo_indptr, kv_indptr, lengths, HEADS // KV_HEADS, KV_HEADS, True,
                        work["work_meta_data"], work["work_info_set"], work["work_indptr"], work["reduce_indptr"],
                        work["reduce_final_map"], work["reduce_partial_map"], page_size=1, kv_granularity=16,
                        max_seqlen_qo=1, uni_seqlen_qo=1, fast_mode=False, max_split_per_batch=SPLITS,
                        intra_batch_mode=True, dtype_q=q8.dtype, dtype_kv=kv8.dtype)
    out = torch.empty((q.shape[0], HEADS, V_DIM), dtype=torch.bfloat16, device=q.device)
    mla_decode_fwd(q8, kv8.view(-1, 1, KV_HEADS, DIM), out, qo_indptr, kv_indptr, pages, lengths, 1, page_size=1,
                   nhead_kv=KV_HEADS, sm_scale=config["sm_scale"], logit_cap=0.0, num_kv_splits=SPLITS,
                   q_scale=q_scale, kv_scale=kv_scale, intra_batch_mode=True, **work)
    return out
