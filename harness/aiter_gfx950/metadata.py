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
- intra_batch_mode: the wheel has none: the stand-in's torch model
  runs it (harness/aiter_standin/metadata.py routes).
- kv_last_page_lens, dtype_q, dtype_kv: the wheel's code reads none.
- get_mla_metadata_info_v1 with 128 heads and fp8 KV: the wheel counts
  128-row tiles whatever Q's dtype (the pin: fp8 Q too).
"""
import math

import torch

from harness.aiter_gfx950 import build

MODULE = "module_mla_metadata"
RUNNER_CU_COUNT = 256  # MI355X's, as our HIP runtime's device reports (get_mla_metadata_info_v1 reads it)
FP8 = torch.float8_e4m3fn  # gfx950's fp8 (aiter.dtypes.fp8)


def get_mla_metadata_info_v1(batch_size: int, max_seqlen_qo: int, num_head_qo: int, q_dtype, kv_dtype,
                             is_sparse: bool, fast_mode: bool = True, num_kv_splits: int = 32,
                             intra_batch_mode: bool = False):
    """((shape, dtype) x 6) as the wheel's attention.py sizes them on a 256-CU device (intra_batch_mode, which
    the wheel lacks: the pin's tiles x num_kv_splits)."""
    assert num_head_qo % 16 == 0
    cu_num = RUNNER_CU_COUNT
    wide = num_head_qo == 16 or (num_head_qo == 128 and kv_dtype == FP8)
    max_qo_tiles_per_batch = int(math.ceil(max_seqlen_qo * num_head_qo / (128 if wide else 16)))
    batch_size = batch_size * max_seqlen_qo if is_sparse else batch_size
    tile_cnt = batch_size * max_qo_tiles_per_batch
    if fast_mode:
        max_work = tile_cnt + cu_num - 1
        max_split_tiles = min(batch_size + cu_num - 1, (cu_num - 1) * 2) * max_qo_tiles_per_batch
    else:
        max_work = max_split_tiles = tile_cnt * cu_num
    if intra_batch_mode:
        max_work = max_split_tiles = tile_cnt * num_kv_splits
    return ((2, torch.uint64), (cu_num + 1, torch.int32), ((max_work, 8), torch.int32),
            (tile_cnt + 1, torch.int32), ((tile_cnt, 2), torch.int32), (max_split_tiles, torch.int32))


def get_mla_metadata_v1(seqlens_qo_indptr, seqlens_kv_indptr, kv_last_page_lens, num_heads_per_head_k: int,
                        num_heads_k: int, is_causal: bool, work_metadata_ptrs, work_info_set, work_indptr,
                        reduce_indptr, reduce_final_map, reduce_partial_map, page_size: int = 1,
                        kv_granularity: int = 16, max_seqlen_qo: int = -1, uni_seqlen_qo: int = -1,
                        fast_mode: bool = True, topk: int = -1, max_split_per_batch: int = -1,
                        intra_batch_mode: bool = False, dtype_q=None, dtype_kv=None) -> bool:
    """The wheel's metadata kernel, emulated, fills the caller's buffers in place; False where the module cannot
    be built here (noted; the caller runs its torch model). intra_batch_mode, dtype_q / dtype_kv and
    kv_last_page_lens are not in the wheel: ignored (the stand-in routes intra_batch_mode away)."""
    granularity = max(1, kv_granularity // page_size) if page_size > 1 else kv_granularity
    from harness.emulator import launch_hip
    module = build.load_or_note(MODULE, "get_mla_metadata_v1")
    if module is None:
        return False
    with build.emulated_call(seqlens_qo_indptr=seqlens_qo_indptr, seqlens_kv_indptr=seqlens_kv_indptr,
                             work_metadata_ptrs=work_metadata_ptrs, work_info_set=work_info_set,
                             work_indptr=work_indptr, reduce_indptr=reduce_indptr,
                             reduce_final_map=reduce_final_map, reduce_partial_map=reduce_partial_map):
        launch_hip.checked(module.get_mla_metadata_v1)(
            seqlens_qo_indptr, seqlens_kv_indptr, num_heads_per_head_k, num_heads_k, is_causal,
            work_metadata_ptrs, work_info_set, work_indptr, reduce_indptr, reduce_final_map, reduce_partial_map,
            granularity, max_seqlen_qo, uni_seqlen_qo, fast_mode, topk, max_split_per_batch)
    build.note_ran("get_mla_metadata_v1 (metadata.cu)")
    return True
