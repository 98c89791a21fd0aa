"""mla_reduce_v1 as amd-aiter's own code computes it: the wheel's reduce.cu, emulated on gfx950.

build.py compiles the wheel's reduce.cu: its host code (checks, the
kernel's dispatch over heads / head size / LSE output, grid sizing)
for the CPU against our HIP runtime, kn_mla_reduce_v1 / _ps for
gfx950; the kernel runs on the emulator and writes the caller's
final_output (and final_lse) in place.
The signature is the runner's pin's (the stand-in's, with
max_seqlen_q); the wheel's reduce has no max_seqlen_q. Without a
reduce_final_map it takes each tile's q length from
reduce_partial_map[1] - reduce_partial_map[0], where the stand-in's
torch model uses max_seqlen_q.
"""
import torch

from harness.aiter_gfx950 import build
from harness.aiter_standin import journal

MODULE = "module_mla_reduce"


def mla_reduce_v1(partial_output, partial_lse, reduce_indptr, reduce_final_map, reduce_partial_map, max_seqlen_q,
                  final_output, final_lse=None) -> None:
    from harness.emulator import launch_hip
    module = build.load(MODULE)
    launch_hip.checked(module.mla_reduce_v1)(partial_output, partial_lse, reduce_indptr, reduce_final_map,
                                             reduce_partial_map, final_output, final_lse)
    heads, v_dim = partial_output.shape[-2], partial_output.shape[-1]
    counts = reduce_indptr[1:].to(torch.int64) - reduce_indptr[:-1].to(torch.int64)
    merged = counts > 1  # the kernel leaves tiles of one split alone: stage 1 wrote them
    tiles = int(merged.sum())
    if reduce_final_map is not None and tiles:
        spans = reduce_final_map.to(torch.int64)[:counts.numel()][merged]
        rows = int(((spans[:, 1] - spans[:, 0]) * counts[merged]).sum())
    else:
        rows = int(counts[merged].sum()) * max(1, max_seqlen_q)
    journal.note(journal.entry("aiter.mla_reduce_v1", "kn_mla_reduce_v1", bytes_read=rows * heads * (v_dim + 1) * 4,
                               bytes_written=journal.tensor_bytes(final_output), total_q=final_output.shape[0]))
