#!POPCORN leaderboard amd-mixed-mla
#!POPCORN gpu MI355X
"""014: aiter mla_decode_fwd, picking the launch style by the total KV length.

- small totals (<= 65536 KV rows): bf16 Q and bf16 KV, non-persistent launch - the least set-up work;
- large totals: Q quantized per-tensor to fp8, fp8 KV, persistent launch with 32 KV splits, its work
  schedule built by get_mla_metadata_info_v1 / get_mla_metadata_v1 - the official reference's own mode.
Needs ROCm and aiter (MI355X); aiter is imported on the first call, so the file imports anywhere.
"""
import torch

from task import input_t, output_t

NUM_HEADS = 16
NUM_KV_HEADS = 1
QK_HEAD_DIM = 576
V_HEAD_DIM = 512
PAGE_SIZE = 1
BF16_TOTAL_KV_LIMIT = 65536  # the seed's switch: at most this many KV rows take the bf16 launch
PERSISTENT_SPLITS = 32
KV_GRANULARITY = 16


def choose_mode(total_kv: int) -> str:
    """'bf16' (non-persistent) for small totals, 'fp8_persistent' for large ones."""
    return "bf16" if total_kv <= BF16_TOTAL_KV_LIMIT else "fp8_persistent"


def quantize_query_fp8(q: torch.Tensor, fp8: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-tensor fp8 Q (aiter's HIP quantizer when present, else the same formula in torch)."""
    try:
        from aiter import per_tensor_quant_hip
    except ImportError:
        per_tensor_quant_hip = None
    if per_tensor_quant_hip is not None:
        q8, scale = per_tensor_quant_hip(q, quant_dtype=fp8)
        return q8, scale.reshape(1)
    finfo = torch.finfo(fp8)
    scale = (q.abs().amax().to(torch.float32).clamp(min=1e-12) / finfo.max).reshape(1)
    return (q.to(torch.float32) / scale).clamp(finfo.min, finfo.max).to(fp8), scale


def persistent_schedule(batch: int, max_q_len: int, qo_indptr, kv_indptr, kv_lengths, q_dtype, kv_dtype) -> dict:
    """aiter's work schedule for a persistent launch: buffers sized by _info_v1, filled by _v1."""
    from aiter import get_mla_metadata_info_v1, get_mla_metadata_v1

    info = get_mla_metadata_info_v1(
        batch, max_q_len, NUM_HEADS, q_dtype, kv_dtype,
        is_sparse=False, fast_mode=False, num_kv_splits=PERSISTENT_SPLITS, intra_batch_mode=True,
    )
    names = ("work_meta_data", "work_indptr", "work_info_set", "reduce_indptr", "reduce_final_map", "reduce_partial_map")
    buffers = {name: torch.empty(shape, dtype=dtype, device=qo_indptr.device) for name, (shape, dtype) in zip(names, info)}
    get_mla_metadata_v1(
        qo_indptr, kv_indptr, kv_lengths, NUM_HEADS // NUM_KV_HEADS, NUM_KV_HEADS, True,
        buffers["work_meta_data"], buffers["work_info_set"], buffers["work_indptr"],
        buffers["reduce_indptr"], buffers["reduce_final_map"], buffers["reduce_partial_map"],
        page_size=PAGE_SIZE, kv_granularity=max(PAGE_SIZE, KV_GRANULARITY),
        max_seqlen_qo=max_q_len, uni_seqlen_qo=max_q_len, fast_mode=False,
        max_split_per_batch=PERSISTENT_SPLITS, intra_batch_mode=True, dtype_q=q_dtype, dtype_kv=kv_dtype,
    )
    return buffers


@torch.no_grad()
def custom_kernel(data: input_t) -> output_t:
    from aiter.mla import mla_decode_fwd

    q, kv_data, qo_indptr, kv_indptr, config = data
    batch, max_q_len = int(config["batch_size"]), int(config["q_seq_len"])
    sm_scale = float(config["sm_scale"])
    total_kv = kv_data["bf16"].shape[0]
    device = q.device
    # Page size 1: page i is KV row i, and every sequence's "last page length" is its KV length.
    kv_indices = torch.arange(total_kv, dtype=torch.int32, device=device)
    kv_lengths = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int32)
    out = torch.empty((q.shape[0], NUM_HEADS, V_HEAD_DIM), dtype=torch.bfloat16, device=device)

    if choose_mode(total_kv) == "bf16":
        kv = kv_data["bf16"]
        mla_decode_fwd(
            q, kv.view(total_kv, PAGE_SIZE, NUM_KV_HEADS, QK_HEAD_DIM), out,
            qo_indptr, kv_indptr, kv_indices, kv_lengths, max_q_len,
            page_size=PAGE_SIZE, nhead_kv=NUM_KV_HEADS, sm_scale=sm_scale,
            q_scale=None, kv_scale=None, intra_batch_mode=False,
        )
        return out

    kv8, kv_scale = kv_data["fp8"]
    q8, q_scale = quantize_query_fp8(q, kv8.dtype)
    schedule = persistent_schedule(batch, max_q_len, qo_indptr, kv_indptr, kv_lengths, q8.dtype, kv8.dtype)
    mla_decode_fwd(
        q8, kv8.view(total_kv, PAGE_SIZE, NUM_KV_HEADS, QK_HEAD_DIM), out,
        qo_indptr, kv_indptr, kv_indices, kv_lengths, max_q_len,
        page_size=PAGE_SIZE, nhead_kv=NUM_KV_HEADS, sm_scale=sm_scale, logit_cap=0.0,
        num_kv_splits=PERSISTENT_SPLITS, q_scale=q_scale, kv_scale=kv_scale, intra_batch_mode=True,
        **schedule,
    )
    return out
