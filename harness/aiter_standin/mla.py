"""aiter.mla.mla_decode_fwd and the two kernels under it, aiter.mla_decode_stage1_asm_fwd and aiter.mla_reduce_v1.

Signatures and defaults are the pinned commit's; results go into the caller's tensors in place. The stage-1 checks
what asm_mla.cu checks, and refuses what the runner would do wrongly: a page size other than 1, a q/kv dtype pair
or head count without a gfx950 kernel, fp8 without its scales, KV indices past the buffer, and a persistent
schedule (get_mla_metadata_v1) built for other q or kv lengths than the call passes.
"""
import torch

from harness.aiter_gfx950 import routing
from harness.aiter_standin import journal, risks
from harness.aiter_standin.attention import attend, merge
from harness.aiter_standin.dtypes import fp32, short_name
from harness.aiter_standin.errors import NotCovered, StandInRefusal, check, refuse
from harness.aiter_standin.kernels import pick, variant
from harness.aiter_standin.metadata import read_schedule

PAGE_SIZE_ONLY_ONE = ("on MI355X the runner's MLA asm kernels are built for page size 1 only: with a larger page "
                      "size the kernel reads only part of each sequence's KV, and the output passes the loose check "
                      "by chance (it fails secret seeds)")
NON_PERSISTENT_SPLIT_ROWS = 64  # the stage-2 kernel's mgc for 16 heads and q length 1: splits are whole 64-row runs


def _check_stage1(Q, KV, kv_indptr, kv_page_indices, page_size, nhead_kv, q_scale, kv_scale) -> tuple[str, str]:
    if page_size != 1:
        raise refuse("page_size", page_size, PAGE_SIZE_ONLY_ONE)
    check(Q.is_contiguous(), "mla_decode_stage1_asm_fwd", ":only support Q.is_contiguous() for now")
    check(nhead_kv == 1, "mla_decode_stage1_asm_fwd", ":only support num_kv_heads==1 for now")
    q_type, kv_type = short_name(Q.dtype), short_name(KV.dtype)
    if q_type not in ("bf16", "fp8"):
        raise StandInRefusal(f"mla_decode_stage1_asm_fwd: unsupport Q dtype: {Q.dtype} (the runner stops here)")
    if kv_type not in ("bf16", "fp8", "byte"):
        raise StandInRefusal(f"mla_decode_stage1_asm_fwd: unsupport KV dtype: {KV.dtype} (the runner stops here)")
    if kv_type != "byte":
        check(KV.dim() == 4 and Q.shape[2] == KV.shape[3], "mla_decode_stage1_asm_fwd",
              ":only support head_size == KV.size(3) for now")
    if q_type == "fp8" and (q_scale is None or kv_scale is None):
        raise refuse("q_scale" if q_scale is None else "kv_scale", None, "fp8 Q needs both q_scale and kv_scale; "
                     "the runner's kernel reads them through null pointers")
    if kv_type == "fp8" and kv_scale is None:
        raise refuse("kv_scale", None, "fp8 KV without its scale: the runner's kernel then computes with unscaled "
                     "fp8 values")
    if kv_type == "byte":
        raise NotCovered("aiter.mla_decode_stage1_asm_fwd with byte (MXFP4-packed) KV")
    rows = KV.reshape(KV.shape[0] * KV.shape[1], -1).shape[0]
    used = int(kv_indptr[-1]) if kv_indptr.numel() else 0
    if used > kv_page_indices.numel():
        raise refuse("kv_indptr[-1]", used, f"it is past kv_page_indices ({kv_page_indices.numel()} entries); the "
                     "runner's kernel reads memory that is not KV")
    if used and (int(kv_page_indices[:used].max()) >= rows or int(kv_page_indices[:used].min()) < 0):
        raise refuse("kv_page_indices", "out of range", f"they point past the KV buffer's {rows} pages")
    return q_type, kv_type


def _check_schedule(works: torch.Tensor, qo_indptr, kv_indptr) -> None:
    """Refuse a schedule that does not cover exactly this call's q rows and KV of every batch."""
    batch = qo_indptr.numel() - 1
    q_ptr, kv_ptr = qo_indptr.to(torch.int64).cpu(), kv_indptr.to(torch.int64).cpu()
    works = works.cpu()
    b = works[:, 0]
    if works.numel() == 0 or int(b.min()) < 0 or int(b.max()) >= batch:
        raise refuse("work_info_set", "stale", f"its batches do not match this call's {batch} (metadata built for "
                     "another batch size); the runner's kernel would attend to the wrong sequences")
    covered = torch.zeros(batch, dtype=torch.int64).index_add_(0, b, works[:, 5] - works[:, 4])
    wrong_q = (works[:, 2] != q_ptr[b]) | (works[:, 3] != q_ptr[b + 1])
    wrong_kv = (works[:, 4] < kv_ptr[b]) | (works[:, 5] > kv_ptr[b + 1]) | (covered != kv_ptr[1:] - kv_ptr[:-1])[b]
    missing = covered == 0
    if bool(wrong_q.any() or wrong_kv.any() or missing.any()):
        first = int(torch.nonzero(missing | torch.zeros(batch, dtype=torch.bool).index_fill_(
            0, b[wrong_q | wrong_kv], True))[0])
        raise refuse("work_info_set", "stale", f"the schedule was built for other q/kv lengths than this call passes "
                     f"(batch {first}: this call has kv [{int(kv_ptr[first])}, {int(kv_ptr[first + 1])}), the schedule "
                     f"covers {int(covered[first])} rows of it); the runner's kernel would read part of the KV or "
                     "another sequence's. Build the metadata from this call's qo_indptr and kv_indptr")


def _stage1(kernel, Q, KV, qo_indptr, kv_indptr, kv_page_indices, kv_last_page_lens, num_kv_splits_indptr,
            work_meta_data, work_indptr, work_info_set, max_seqlen_q, softmax_scale, splitData, splitLse, output,
            q_scale, kv_scale) -> tuple[torch.Tensor, bool]:
    """Run stage 1 into the caller's buffers (aiter's kernel emulated where routing says so, else the torch
    arithmetic); returns (the spans it ran, whether persistent)."""
    persistent = num_kv_splits_indptr is None
    heads, v_dim = Q.shape[1], output.shape[-1]
    kv_rows = KV.reshape(-1, KV.shape[-1])
    if persistent:
        if work_indptr is None or work_info_set is None:
            raise refuse("work_info_set", None, "a persistent launch needs the schedule from get_mla_metadata_v1")
        works = read_schedule(work_indptr, work_info_set)
        _check_schedule(works, qo_indptr, kv_indptr)
        spans, partial = works[:, 2:6], works[:, 1]
    else:
        spans, partial = _split_spans(qo_indptr, kv_indptr, num_kv_splits_indptr, splitData.shape[1])
    routing.note_risk(risks.ranked_risk(kernel))
    if routing.emulates(kernel):
        routing.run_stage1(kernel, Q, KV, qo_indptr, kv_indptr, kv_page_indices, kv_last_page_lens,
                           num_kv_splits_indptr, work_meta_data, work_indptr, work_info_set, max_seqlen_q,
                           softmax_scale, splitData, splitLse, output, q_scale, kv_scale)
        return spans, persistent
    out, lse = attend(Q, kv_rows, kv_page_indices, spans.to(Q.device), q_scale=q_scale, kv_scale=kv_scale,
                      sm_scale=softmax_scale, v_dim=v_dim)
    if persistent:
        _write_persistent(out, lse, spans, partial, splitData, splitLse, output, heads)
    else:
        _write_splits(out, lse, spans, partial, splitData, splitLse, heads)
    return spans, persistent


def _split_spans(qo_indptr, kv_indptr, splits_indptr, splits: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-persistent: batch b's KV in `splits` runs of whole 64-row blocks; partial = the split's number."""
    q_ptr, kv_ptr = qo_indptr.to(torch.int64).cpu(), kv_indptr.to(torch.int64).cpu()
    lens = kv_ptr[1:] - kv_ptr[:-1]
    size = ((lens + splits - 1) // splits + NON_PERSISTENT_SPLIT_ROWS - 1) // NON_PERSISTENT_SPLIT_ROWS
    size = size.clamp(min=1) * NON_PERSISTENT_SPLIT_ROWS
    split = torch.arange(splits)
    start = (kv_ptr[:-1, None] + split * size[:, None]).clamp(max=kv_ptr[1:, None])
    end = (start + size[:, None]).clamp(max=kv_ptr[1:, None])
    batch = lens.numel()
    spans = torch.stack([q_ptr[:-1, None].expand(batch, splits), q_ptr[1:, None].expand(batch, splits), start, end],
                        dim=-1).reshape(-1, 4)
    return spans, split.repeat(batch)


def _write_splits(out, lse, spans, split, splitData, splitLse, heads) -> None:
    """splitData (total_q, splits, H, Dv) / splitLse (total_q, splits, H, 1): row q, column split."""
    for r in range(out.shape[1]):
        rows = spans[:, 0] + r
        valid = (rows < spans[:, 1]).to(out.device)
        index = (rows.clamp(max=splitData.shape[0] - 1).to(out.device), split.to(out.device))
        data = splitData[index]
        splitData[index] = torch.where(valid[:, None, None], out[:, r].to(splitData.dtype), data)
        old = splitLse[index].reshape(-1, heads)
        splitLse[index] = torch.where(valid[:, None], lse[:, r], old).reshape(splitLse[index].shape).to(splitLse.dtype)


def _write_persistent(out, lse, spans, partial, splitData, splitLse, output, heads) -> None:
    """Works with partial_index -1 write bf16 rows of the output; the rest write float32 partial rows."""
    flat_data, flat_lse = splitData.view(-1, heads, splitData.shape[-1]), splitLse.view(-1, heads)
    for r in range(out.shape[1]):
        valid = spans[:, 0] + r < spans[:, 1]
        final = (valid & (partial < 0)).to(out.device)
        split = (valid & (partial >= 0)).to(out.device)
        if bool(final.any()):
            output[(spans[:, 0] + r).to(out.device)[final]] = out[final, r].to(output.dtype)
        if bool(split.any()):
            rows = (partial + r).to(out.device)[split]
            if int(rows.max()) >= flat_data.shape[0]:
                raise refuse("reduce_partial_map", "too small", "the partial buffer sized from it has no room for "
                             "this schedule's splits; the runner's kernel would write past it")
            flat_data[rows] = out[split, r]
            flat_lse[rows] = lse[split, r]


def _reduce(partial_output, partial_lse, reduce_indptr, reduce_final_map, reduce_partial_map, max_seqlen_q,
            final_output) -> int:
    """Merge each q tile's partial rows by log-sum-exp into final_output (bf16); returns the partial rows read."""
    check(partial_output.dtype == fp32 and partial_lse.dtype == fp32, "mla_reduce_v1",
          " partial_out and partial_lse must be float32!")
    heads, v_dim = partial_output.shape[-2], partial_output.shape[-1]
    ptr = reduce_indptr.to(torch.int64).cpu()
    counts = ptr[1:] - ptr[:-1]
    tiles = torch.nonzero(counts > 0).flatten()
    if tiles.numel() == 0:
        return 0
    width = int(counts.max())
    if reduce_final_map is None:
        q_start = tiles * max_seqlen_q
        q_end = q_start + max_seqlen_q
    else:
        final = reduce_final_map.to(torch.int64).cpu()[tiles]
        q_start, q_end = final[:, 0], final[:, 1]
    slots = ptr[tiles][:, None] + torch.arange(width)
    present = slots < ptr[tiles + 1][:, None]
    device = partial_output.device
    base = reduce_partial_map.to(torch.int64)[slots.clamp(max=reduce_partial_map.numel() - 1).to(device)]
    base = torch.where(present.to(device), base, 0)  # slots past a tile's count hold whatever the buffer held
    if int(base.max()) + int((q_end - q_start).max()) > partial_output.view(-1, heads, v_dim).shape[0] or int(base.min()) < 0:
        raise refuse("reduce_partial_map", "out of range", "it names partial rows outside partial_output; the "
                     "runner's reduce would read memory that no stage-1 wrote")
    data, lse = partial_output.view(-1, heads, v_dim), partial_lse.view(-1, heads)
    for r in range(int((q_end - q_start).max())):
        rows = (base + r).clamp(max=data.shape[0] - 1)
        tile_lse = torch.where(present.to(device)[..., None], lse[rows], float("-inf"))
        merged = merge(data[rows], tile_lse)
        valid = (q_start + r < q_end).to(device)
        final_output[(q_start + r).to(device)[valid]] = merged[valid].to(final_output.dtype)
    return int(counts.sum()) * int((q_end - q_start).max())


def mla_decode_stage1_asm_fwd(Q, KV, qo_indptr, kv_indptr, kv_page_indices, kv_last_page_lens, num_kv_splits_indptr,
                              work_meta_data, work_indptr, work_info_set, max_seqlen_q, page_size, nhead_kv,
                              softmax_scale, splitData, splitLse, output, q_scale=None, kv_scale=None) -> None:
    q_type, kv_type = _check_stage1(Q, KV, kv_indptr, kv_page_indices, page_size, nhead_kv, q_scale, kv_scale)
    persistent = num_kv_splits_indptr is None
    kernel = pick(q_type, kv_type, Q.shape[1] // nhead_kv, persistent, max_seqlen_q)
    spans, _ = _stage1(kernel, Q, KV, qo_indptr, kv_indptr, kv_page_indices, kv_last_page_lens,
                       num_kv_splits_indptr, work_meta_data, work_indptr, work_info_set, max_seqlen_q,
                       softmax_scale, splitData, splitLse, output, q_scale, kv_scale)
    journal.note(_decode_entry("aiter.mla_decode_stage1_asm_fwd", kernel, Q, KV, kv_indptr, spans, persistent,
                               page_size, splitData.shape[1] if not persistent else None, launches=1,
                               written=journal.tensor_bytes(splitData, splitLse)))


def reduce_routed(partial_output, partial_lse, reduce_indptr, reduce_final_map, reduce_partial_map,
                  max_seqlen_q, final_output, final_lse=None) -> int:
    """The split reduce where it runs here (aiter's kernel emulated, else torch); returns the partial rows read."""
    from harness.aiter_gfx950 import reduce as emulated
    if not routing.runs_in_torch("mla_reduce_v1") and emulated.mla_reduce_v1(  # aiter's own, emulated
            partial_output, partial_lse, reduce_indptr, reduce_final_map, reduce_partial_map, max_seqlen_q,
            final_output, final_lse):
        counts = (reduce_indptr[1:] - reduce_indptr[:-1]).to(torch.int64)
        return int(counts[counts > 1].sum()) * max(1, max_seqlen_q)  # tiles of one split are left alone
    return _reduce(partial_output, partial_lse, reduce_indptr, reduce_final_map, reduce_partial_map,
                   max_seqlen_q, final_output)


def mla_reduce_v1(partial_output, partial_lse, reduce_indptr, reduce_final_map, reduce_partial_map, max_seqlen_q,
                  final_output, final_lse=None) -> None:
    rows = reduce_routed(partial_output, partial_lse, reduce_indptr, reduce_final_map, reduce_partial_map,
                         max_seqlen_q, final_output, final_lse)
    heads, v_dim = partial_output.shape[-2], partial_output.shape[-1]
    journal.note(journal.entry("aiter.mla_reduce_v1", "mla_reduce_v1", bytes_read=rows * heads * (v_dim + 1) * 4,
                               bytes_written=journal.tensor_bytes(final_output), total_q=final_output.shape[0]))


def _decode_entry(api, kernel, Q, KV, kv_indptr, spans, persistent, page_size, splits, launches, written) -> dict:
    row_bytes = KV.shape[-1] * KV.element_size()
    kv_read = int((spans[:, 3] - spans[:, 2]).sum()) * row_bytes
    q_type, kv_type = short_name(Q.dtype), short_name(KV.dtype)
    return journal.entry(api, kernel, variant=variant(q_type, kv_type), persistent=persistent,
                         q_dtype=journal.dtype_name(Q.dtype), kv_dtype=journal.dtype_name(KV.dtype),
                         page_size=page_size, num_kv_splits=splits, batch=kv_indptr.numel() - 1,
                         total_q=Q.shape[0], total_kv=int(kv_indptr[-1]) * page_size,
                         bytes_read=journal.tensor_bytes(Q) + kv_read, bytes_written=written, launches=launches,
                         warning=risks.RACY_A8W8_TEXT if kernel == risks.RACY_A8W8 else None)
