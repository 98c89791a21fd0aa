"""get_mla_metadata_info_v1 / get_mla_metadata_v1: the persistent kernels' work schedule, for the runner's 256 CUs.

Buffer sizes follow aiter/ops/attention.py at f3be04a12a with cu_num = 256 (MI355X), whatever this machine is.
The schedule is written into the caller's six buffers in aiter's layout: work_info_set rows of 8 int32
[batch, partial_index (-1: written straight to the output), q_start, q_end, kv_start, kv_end, kv_offset, pad],
work_indptr splitting the works over the CUs, reduce_indptr / reduce_final_map [q_start, q_end] /
reduce_partial_map naming the partial rows each q tile merges. How the real kernel cuts a sequence into splits
differs in detail; any cut gives the same attention up to float32 rounding.
"""
import math

import torch

from harness.aiter_gfx950 import routing
from harness.aiter_standin import journal
from harness.aiter_standin.dtypes import fp8
from harness.aiter_standin.errors import StandInRefusal, check

RUNNER_CU_COUNT = 256  # MI355X: 8 XCDs x 32 CUs (get_mla_metadata_info_v1 reads the device's count)
TILE_ROWS = 128  # q rows (q length x heads) per tile for 16 heads


def get_mla_metadata_info_v1(batch_size: int, max_seqlen_qo: int, num_head_qo: int, q_dtype, kv_dtype,
                             is_sparse: bool, fast_mode: bool = True, num_kv_splits: int = 32,
                             intra_batch_mode: bool = False):
    """((shape, dtype) x 6) for work_metadata_ptrs, work_indptr, work_info_set, reduce_indptr, reduce_final_map,
    reduce_partial_map, as the pinned commit computes them on a 256-CU device."""
    assert num_head_qo % 16 == 0
    cu_num = RUNNER_CU_COUNT
    wide = num_head_qo == 16 or (num_head_qo == 128 and kv_dtype == fp8 and q_dtype == fp8)
    max_qo_tiles_per_batch = int(math.ceil(max_seqlen_qo * num_head_qo / (128 if wide else 16)))
    batch_size = batch_size * max_seqlen_qo if is_sparse else batch_size
    tile_cnt = batch_size * max_qo_tiles_per_batch
    if fast_mode:
        max_work = (batch_size + cu_num - 1) * max_qo_tiles_per_batch
        max_split_tiles = min(batch_size + cu_num - 1, (cu_num - 1) * 2) * max_qo_tiles_per_batch
    else:
        max_work = max_split_tiles = tile_cnt * cu_num
    if intra_batch_mode:
        max_work = max_split_tiles = tile_cnt * num_kv_splits
    return ((2, torch.uint64), (cu_num + 1, torch.int32), ((max_work, 8), torch.int32), (tile_cnt + 1, torch.int32),
            ((tile_cnt, 2), torch.int32), (max_split_tiles, torch.int32))


def _check_indptr(name: str, tensor: torch.Tensor) -> None:
    check(tensor.stride(0) == 1, "get_mla_metadata_v1", f" {name} should be continuous!")
    check(tensor.dtype == torch.int32, "get_mla_metadata_v1", f" {name}'s element type should be int!")


def _split_sizes(kv_lens: list[int], granularity: int, max_split: int, intra_batch: bool) -> list[int]:
    """Pages per split for every batch: equal splits of whole granules, at most max_split of them."""
    if intra_batch:
        quotas = [math.ceil(n / max(1, max_split)) for n in kv_lens]
    else:  # spread the whole KV evenly over the CUs
        quotas = [math.ceil(sum(kv_lens) / RUNNER_CU_COUNT)] * len(kv_lens)
        if max_split > 0:
            quotas = [max(q, math.ceil(n / max_split)) for q, n in zip(quotas, kv_lens)]
    return [max(granularity, math.ceil(q / granularity) * granularity) for q in quotas]


def get_mla_metadata_v1(seqlens_qo_indptr, seqlens_kv_indptr, kv_last_page_lens, num_heads_per_head_k: int,
                        num_heads_k: int, is_causal: bool, work_metadata_ptrs, work_info_set, work_indptr,
                        reduce_indptr, reduce_final_map, reduce_partial_map, page_size: int = 1,
                        kv_granularity: int = 16, max_seqlen_qo: int = -1, uni_seqlen_qo: int = -1,
                        fast_mode: bool = True, topk: int = -1, max_split_per_batch: int = -1,
                        intra_batch_mode: bool = False, dtype_q=None, dtype_kv=None) -> None:
    """Fill the six buffers in place with a schedule covering exactly these q and kv lengths.

    In an emulating child (harness/aiter_gfx950/routing.py) aiter's own metadata kernel writes it instead, on
    the gfx950 emulator (harness/aiter_gfx950/metadata.py), but for intra_batch_mode, which its wheel lacks."""
    check(kv_granularity > 0 and kv_granularity & (kv_granularity - 1) == 0, "get_mla_metadata_v1",
          " kv_granularity Must be power of 2!")
    check(page_size > 0 and page_size & (page_size - 1) == 0, "get_mla_metadata_v1", " page_size Must be power of 2!")
    _check_indptr("seqlens_qo_indptr", seqlens_qo_indptr)
    _check_indptr("seqlens_kv_indptr", seqlens_kv_indptr)
    _check_indptr("kv_last_page_lens", kv_last_page_lens)
    if topk != -1:
        raise StandInRefusal(f"aiter stand-in refuses topk={topk}: sparse MLA metadata is not part of this task")
    from harness.aiter_gfx950 import build, metadata as emulated
    if intra_batch_mode and routing.mode() == "emulate":
        build.note_modelled("get_mla_metadata_v1", "intra_batch_mode: amd-aiter's metadata.cu has none")
    elif not routing.runs_in_torch("get_mla_metadata_v1") and emulated.get_mla_metadata_v1(
            seqlens_qo_indptr, seqlens_kv_indptr, kv_last_page_lens, num_heads_per_head_k, num_heads_k, is_causal,
            work_metadata_ptrs, work_info_set, work_indptr, reduce_indptr, reduce_final_map, reduce_partial_map,
            page_size, kv_granularity, max_seqlen_qo, uni_seqlen_qo, fast_mode, topk, max_split_per_batch):
        return _note_emulated(seqlens_qo_indptr, seqlens_kv_indptr, work_info_set, work_indptr, reduce_indptr,
                              reduce_partial_map, page_size, dtype_q, dtype_kv)
    q_ptr, kv_ptr = seqlens_qo_indptr.tolist(), seqlens_kv_indptr.tolist()
    batch = len(q_ptr) - 1
    q_lens = [q_ptr[b + 1] - q_ptr[b] for b in range(batch)]
    kv_lens = [kv_ptr[b + 1] - kv_ptr[b] for b in range(batch)]
    check(all(n > 0 for n in q_lens) and all(n > 0 for n in kv_lens), "get_mla_metadata_v1",
          " Invalid qo_len or/and kv_len!")
    sizes = _split_sizes(kv_lens, max(1, kv_granularity // page_size) if page_size > 1 else kv_granularity,
                         max_split_per_batch, intra_batch_mode)
    works, partial_map, tile_ptr, slot = [], [], [0], 0
    row_step = max(max_seqlen_qo, max(q_lens))
    for b in range(batch):
        count = math.ceil(kv_lens[b] / sizes[b])
        for j in range(count):
            start = kv_ptr[b] + j * sizes[b]
            end = min(start + sizes[b], kv_ptr[b + 1])
            partial = -1 if count == 1 else slot * row_step
            works.append([b, partial, q_ptr[b], q_ptr[b + 1], start, end, kv_ptr[b + 1] - end, 0])
            if count > 1:
                partial_map.append(partial)
                slot += 1
        tile_ptr.append(len(partial_map))
    _fits("work_info_set", work_info_set.shape[0], len(works))
    _fits("reduce_partial_map", reduce_partial_map.numel(), len(partial_map))
    _fits("reduce_indptr", reduce_indptr.numel(), batch + 1)
    _fits("reduce_final_map", reduce_final_map.shape[0], batch)
    device = work_info_set.device
    work_info_set[:len(works)] = torch.tensor(works, dtype=torch.int32).to(device)
    cuts = [round(c * len(works) / (work_indptr.numel() - 1)) for c in range(work_indptr.numel())]
    work_indptr.copy_(torch.tensor(cuts, dtype=torch.int32).to(device))
    reduce_indptr[:batch + 1] = torch.tensor(tile_ptr, dtype=torch.int32).to(device)
    reduce_final_map[:batch] = torch.tensor([[q_ptr[b], q_ptr[b + 1]] for b in range(batch)], dtype=torch.int32).to(device)
    if partial_map:
        reduce_partial_map[:len(partial_map)] = torch.tensor(partial_map, dtype=torch.int32).to(device)
    work_metadata_ptrs.copy_(torch.tensor([work_indptr.data_ptr(), work_info_set.data_ptr()],
                                          dtype=torch.uint64).to(device))
    journal.note(journal.entry("aiter.get_mla_metadata_v1", "get_mla_metadata_v1", page_size=page_size,
                               num_kv_splits=max(math.ceil(n / s) for n, s in zip(kv_lens, sizes)), batch=batch,
                               total_q=q_ptr[-1], total_kv=kv_ptr[-1] * page_size,
                               q_dtype=journal.dtype_name(dtype_q), kv_dtype=journal.dtype_name(dtype_kv),
                               bytes_read=4 * (2 * batch + 2 + batch),
                               bytes_written=4 * (8 * len(works) + len(cuts) + 3 * batch + 1 + len(partial_map))))


def _note_emulated(q_ptr, kv_ptr, work_info_set, work_indptr, reduce_indptr, reduce_partial_map, page_size,
                   dtype_q, dtype_kv) -> None:
    """After aiter's kernel ran: refuse a schedule it wrote past its buffers; the journal entry."""
    works, partials = int(work_indptr[-1]), int(reduce_indptr[-1])
    _fits("work_info_set", work_info_set.shape[0], works)
    _fits("reduce_partial_map", reduce_partial_map.numel(), partials)
    batch = q_ptr.numel() - 1
    per_batch = torch.bincount(work_info_set[:works, 0].to(torch.int64).cpu(), minlength=batch)
    journal.note(journal.entry("aiter.get_mla_metadata_v1", "kn_get_mla_metadata_v1 (emulated)",
                               page_size=page_size, num_kv_splits=int(per_batch.max()), batch=batch,
                               total_q=int(q_ptr[-1]), total_kv=int(kv_ptr[-1]) * page_size,
                               q_dtype=journal.dtype_name(dtype_q), kv_dtype=journal.dtype_name(dtype_kv),
                               bytes_read=4 * (2 * batch + 2),
                               bytes_written=4 * (8 * works + work_indptr.numel() + 3 * batch + 1 + partials)))


def _fits(name: str, capacity: int, needed: int) -> None:
    if needed > capacity:
        raise StandInRefusal(f"aiter stand-in refuses {name} of {capacity} entries: this schedule needs {needed}; "
                             "the runner's metadata kernel would write past the buffer (size it with "
                             "get_mla_metadata_info_v1 for the same batch, q length and splits)")


def read_schedule(work_indptr: torch.Tensor, work_info_set: torch.Tensor) -> torch.Tensor:
    """The work rows the persistent kernel runs: work_info_set[work_indptr[0] : work_indptr[-1]] as int64."""
    first, last = int(work_indptr[0]), int(work_indptr[-1])
    if not 0 <= first <= last <= work_info_set.shape[0]:
        raise StandInRefusal(f"aiter stand-in refuses work_indptr [{first}, {last}]: it points outside "
                             f"work_info_set ({work_info_set.shape[0]} rows); was the metadata ever built?")
    return work_info_set[first:last].to(torch.int64)

