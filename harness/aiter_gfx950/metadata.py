"""get_mla_metadata_info_v1 / get_mla_metadata_v1 as amd-aiter's own code computes them, emulated on gfx950.

- get_mla_metadata_v1: the wheel's metadata.cu (its host code and
  kn_get_mla_metadata_v1_2 / _v1_1 kernels), built by build.py: host
  code compiled for the CPU against our HIP runtime, the kernel run on
  the gfx950 emulator, writing into the caller's six buffers.
- get_mla_metadata_info_v1: plain Python in the wheel (aiter/ops/
  attention.py), written here from it with the runner's 256 CUs;
  tests/test_aiter_gfx950_metadata.py runs the wheel's own function
  beside it.
The signatures are the runner's pin's (the stand-in's); the wheel's
API is older. Where they differ:
- page_size: the wheel has none; as the stand-in does, KV counted in
  pages is cut in granules of max(1, kv_granularity // page_size).
- intra_batch_mode: the wheel has none: the call runs the stand-in's
  torch model and says so ("aiter modelled in torch").
- kv_last_page_lens, dtype_q, dtype_kv: the wheel's code reads none.
- get_mla_metadata_info_v1 with 128 heads and fp8 KV: the wheel counts
  128-row tiles whatever Q's dtype (the pin: fp8 Q too).
"""
import math

import torch

from harness.aiter_gfx950 import build
from harness.aiter_standin import journal
from harness.aiter_standin import metadata as standin
from harness.aiter_standin.dtypes import fp8
from harness.aiter_standin.errors import StandInRefusal, check

MODULE = "module_mla_metadata"
RUNNER_CU_COUNT = standin.RUNNER_CU_COUNT  # our HIP runtime's device has MI355X's 256 CUs too


def get_mla_metadata_info_v1(batch_size: int, max_seqlen_qo: int, num_head_qo: int, q_dtype, kv_dtype,
                             is_sparse: bool, fast_mode: bool = True, num_kv_splits: int = 32,
                             intra_batch_mode: bool = False):
    """((shape, dtype) x 6) as the wheel's attention.py sizes them on a 256-CU device."""
    if intra_batch_mode:  # not in the wheel: the pin's sizes, with the call's splits
        return standin.get_mla_metadata_info_v1(batch_size, max_seqlen_qo, num_head_qo, q_dtype, kv_dtype,
                                                is_sparse, fast_mode, num_kv_splits, intra_batch_mode)
    assert num_head_qo % 16 == 0
    cu_num = RUNNER_CU_COUNT
    wide = num_head_qo == 16 or (num_head_qo == 128 and kv_dtype == fp8)
    max_qo_tiles_per_batch = int(math.ceil(max_seqlen_qo * num_head_qo / (128 if wide else 16)))
    batch_size = batch_size * max_seqlen_qo if is_sparse else batch_size
    tile_cnt = batch_size * max_qo_tiles_per_batch
    if fast_mode:
        max_work = tile_cnt + cu_num - 1
        max_split_tiles = min(batch_size + cu_num - 1, (cu_num - 1) * 2) * max_qo_tiles_per_batch
    else:
        max_work = max_split_tiles = tile_cnt * cu_num
    return ((2, torch.uint64), (cu_num + 1, torch.int32), ((max_work, 8), torch.int32),
            (tile_cnt + 1, torch.int32), ((tile_cnt, 2), torch.int32), (max_split_tiles, torch.int32))


def _refuse_overrun(name: str, capacity: int, needed: int) -> None:
    if needed > capacity:
        raise StandInRefusal(f"aiter's get_mla_metadata_v1 (emulated) wrote {needed} entries of {name}, "
                             f"which holds {capacity}: on the runner it writes past the buffer (size it with "
                             "get_mla_metadata_info_v1 for the same batch, q length and splits)")


def get_mla_metadata_v1(seqlens_qo_indptr, seqlens_kv_indptr, kv_last_page_lens, num_heads_per_head_k: int,
                        num_heads_k: int, is_causal: bool, work_metadata_ptrs, work_info_set, work_indptr,
                        reduce_indptr, reduce_final_map, reduce_partial_map, page_size: int = 1,
                        kv_granularity: int = 16, max_seqlen_qo: int = -1, uni_seqlen_qo: int = -1,
                        fast_mode: bool = True, topk: int = -1, max_split_per_batch: int = -1,
                        intra_batch_mode: bool = False, dtype_q=None, dtype_kv=None) -> None:
    """The wheel's metadata kernel, emulated, fills the caller's buffers in place."""
    check(page_size > 0 and page_size & (page_size - 1) == 0, "get_mla_metadata_v1", " page_size Must be power of 2!")
    if topk != -1:
        raise StandInRefusal(f"aiter stand-in refuses topk={topk}: sparse MLA metadata is not part of this task")
    granularity = max(1, kv_granularity // page_size) if page_size > 1 else kv_granularity
    from harness.emulator import launch_hip
    module = build.load(MODULE)
    launch_hip.checked(module.get_mla_metadata_v1)(
        seqlens_qo_indptr, seqlens_kv_indptr, num_heads_per_head_k, num_heads_k, is_causal,
        work_metadata_ptrs, work_info_set, work_indptr, reduce_indptr, reduce_final_map, reduce_partial_map,
        granularity, max_seqlen_qo, uni_seqlen_qo, fast_mode, topk, max_split_per_batch)
    works = int(work_indptr[-1])
    _refuse_overrun("work_info_set", work_info_set.shape[0], works)
    partials = int(reduce_indptr[-1])
    _refuse_overrun("reduce_partial_map", reduce_partial_map.numel(), partials)
    batch = seqlens_qo_indptr.numel() - 1
    rows = work_info_set[:works].to(torch.int64)
    splits = torch.bincount(rows[:, 0], minlength=batch) if works else torch.zeros(1, dtype=torch.int64)
    journal.note(journal.entry(
        "aiter.get_mla_metadata_v1", "kn_get_mla_metadata_v1_2" if fast_mode else "kn_get_mla_metadata_v1_1",
        page_size=page_size, num_kv_splits=int(splits.max()), batch=batch,
        total_q=int(seqlens_qo_indptr[-1]), total_kv=int(seqlens_kv_indptr[-1]) * page_size,
        q_dtype=journal.dtype_name(dtype_q), kv_dtype=journal.dtype_name(dtype_kv),
        bytes_read=4 * (2 * batch + 2), bytes_written=4 * (8 * works + work_indptr.numel() + 3 * batch + 1
                                                           + partials)))
