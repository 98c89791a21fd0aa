"""aiter.mla.mla_decode_fwd and aiter.mla.get_meta_param, as in aiter/mla.py at f3be04a12a.

Non-persistent (no work_meta_data): the split count from get_meta_param, stage 1 into a float32 split buffer, the
Triton stage 2 merging the splits into `o` (with one split and fp8 Q, stage 1 writes `o` itself). Persistent: stage
1 driven by the caller's schedule, then mla_reduce_v1. One journal entry for the whole call.
"""
import torch

from harness.aiter_standin import journal
from harness.aiter_standin.dtypes import bf16, fp32, fp8
from harness.aiter_standin.errors import StandInRefusal
from harness.aiter_standin.kernels import pick
from harness.aiter_standin.metadata import RUNNER_CU_COUNT
from harness.aiter_standin.mla import _check_stage1, _decode_entry, _stage1, reduce_routed

_FP8_MIN_BLOCK_N = {16: 128, 32: 128, 48: 64, 64: 64, 128: 32, 256: 32, 384: 32, 512: 32}
_SPLIT_OVERHEAD = 84.1  # aiter's cost model for a split, in KV rows


def _meta_param(num_kv_splits, bs, total_kv, nhead, max_seqlen_q, dtype, device):
    if num_kv_splits is None:
        avg_kv = total_kv / bs
        score = [(bs * i / ((bs * i + RUNNER_CU_COUNT - 1) // RUNNER_CU_COUNT * RUNNER_CU_COUNT) * avg_kv
                  / (avg_kv + _SPLIT_OVERHEAD * i), i) for i in range(1, 17)]
        num_kv_splits = sorted(score, key=lambda x: x[0], reverse=True)[0][1]
    if dtype == fp8:
        min_block_n = _FP8_MIN_BLOCK_N[int(nhead * max_seqlen_q)]
        num_kv_splits = min(num_kv_splits, int(total_kv / bs + min_block_n - 1) // min_block_n)
    indptr = torch.arange(0, (bs + 1) * num_kv_splits, num_kv_splits, dtype=torch.int, device=device)
    return num_kv_splits, indptr


def get_meta_param(num_kv_splits, bs, total_kv, nhead, max_seqlen_q, dtype):
    """(num_kv_splits, num_kv_splits_indptr) for a non-persistent launch on the runner's 256 CUs."""
    return _meta_param(num_kv_splits, bs, total_kv, nhead, max_seqlen_q, dtype,
                       "cuda" if torch.cuda.is_available() else "cpu")


def mla_decode_fwd(q, kv_buffer, o, qo_indptr, kv_indptr, kv_indices, kv_last_page_lens, max_seqlen_q, page_size=1,
                   nhead_kv=1, sm_scale=None, logit_cap=0.0, num_kv_splits=None, num_kv_splits_indptr=None,
                   work_meta_data=None, work_indptr=None, work_info_set=None, reduce_indptr=None,
                   reduce_final_map=None, reduce_partial_map=None, q_scale=None, kv_scale=None,
                   intra_batch_mode=False, return_logits=False, return_lse=False):
    assert logit_cap <= 0, f"logit_cap={logit_cap!r} is not support yet"
    qk_head_dim = kv_buffer.shape[3] if kv_buffer.dtype != torch.uint8 else q.shape[2]
    sm_scale = 1.0 / (qk_head_dim ** 0.5) if sm_scale is None else sm_scale
    total_s, nhead, v_head_dim = o.shape
    bs = qo_indptr.shape[0] - 1
    total_kv = kv_indices.shape[0]
    persistent = work_meta_data is not None
    q_type, kv_type = _check_stage1(q, kv_buffer, kv_indptr, kv_indices, page_size, nhead_kv, q_scale, kv_scale)
    if nhead != 16:
        raise StandInRefusal(f"aiter stand-in covers mla_decode_fwd with 16 heads (this task's); got nhead={nhead}")
    kernel = pick(q_type, kv_type, nhead // nhead_kv, persistent, max_seqlen_q)
    final_lse = None
    if not persistent:
        if num_kv_splits is None or num_kv_splits_indptr is None:
            num_kv_splits, num_kv_splits_indptr = _meta_param(num_kv_splits, bs, total_kv, nhead, max_seqlen_q,
                                                              q.dtype, q.device)
        straight = num_kv_splits == 1 and (q.dtype == fp8 or (q.dtype == bf16 and max_seqlen_q == 4))
        logits = (o.view(total_s, num_kv_splits, nhead, v_head_dim) if straight else
                  torch.empty((total_s, num_kv_splits, nhead, v_head_dim), dtype=fp32, device=q.device))
        attn_lse = torch.empty((total_s, num_kv_splits, nhead, 1), dtype=fp32, device=q.device)
        spans, _ = _stage1(kernel, q, kv_buffer, qo_indptr, kv_indptr, kv_indices, kv_last_page_lens,
                           num_kv_splits_indptr, None, None, None, max_seqlen_q, sm_scale, logits, attn_lse, o,
                           q_scale, kv_scale)
        if not straight:
            _merge_splits(logits, attn_lse, qo_indptr, kv_indptr, o)
        written = journal.tensor_bytes(o) + (0 if straight else 2 * journal.tensor_bytes(logits, attn_lse))
        journal.note(_decode_entry("aiter.mla.mla_decode_fwd", kernel, q, kv_buffer, kv_indptr, spans, False,
                                   page_size, num_kv_splits, launches=1 if straight else 2, written=written))
        return (logits.view(total_s, nhead, v_head_dim), attn_lse) if straight else (logits, final_lse)
    if num_kv_splits is None:
        num_kv_splits = RUNNER_CU_COUNT
    rows = reduce_partial_map.size(0) * max_seqlen_q
    logits = torch.empty((rows, 1, nhead, v_head_dim), dtype=fp32, device=q.device)
    attn_lse = torch.empty((rows, 1, nhead, 1), dtype=fp32, device=q.device)
    final_lse = torch.empty((total_s, nhead), dtype=fp32, device=q.device) if return_lse else None
    spans, _ = _stage1(kernel, q, kv_buffer, qo_indptr, kv_indptr, kv_indices, kv_last_page_lens, None,
                       work_meta_data, work_indptr, work_info_set, max_seqlen_q, sm_scale, logits, attn_lse, o,
                       q_scale, kv_scale)
    partial_rows = reduce_routed(logits, attn_lse, reduce_indptr, reduce_final_map, reduce_partial_map,
                                 max_seqlen_q, o, final_lse)
    written = journal.tensor_bytes(o) + 2 * partial_rows * nhead * (v_head_dim + 1) * 4
    journal.note(_decode_entry("aiter.mla.mla_decode_fwd", kernel, q, kv_buffer, kv_indptr, spans, True, page_size,
                               num_kv_splits, launches=2, written=written))
    return logits, final_lse


def _merge_splits(logits, attn_lse, qo_indptr, kv_indptr, o) -> None:
    """The Triton stage 2: per batch, merge its min(splits, cdiv(kv_len, 64)) splits by log-sum-exp into o."""
    from harness.aiter_standin.attention import merge
    from harness.aiter_standin.mla import NON_PERSISTENT_SPLIT_ROWS

    splits = logits.shape[1]
    lens = (kv_indptr[1:] - kv_indptr[:-1]).to(torch.int64)
    valid = torch.minimum(torch.full_like(lens, splits), (lens + NON_PERSISTENT_SPLIT_ROWS - 1)
                          // NON_PERSISTENT_SPLIT_ROWS)
    batch_of_row = torch.repeat_interleave(torch.arange(lens.numel(), device=o.device),
                                           (qo_indptr[1:] - qo_indptr[:-1]).to(torch.int64).to(o.device))
    keep = torch.arange(splits, device=o.device)[None, :] < valid.to(o.device)[batch_of_row][:, None]
    lse = torch.where(keep[..., None], attn_lse[..., 0], float("-inf"))
    # a split past the KV was never written: its memory may hold NaN, and a zero weight times NaN is NaN
    partials = torch.where(keep[..., None, None], logits.to(fp32), 0.0)
    o.copy_(merge(partials, lse).to(o.dtype))
