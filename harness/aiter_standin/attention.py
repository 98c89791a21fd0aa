"""The arithmetic of the runner's MLA kernels, in torch: the numbers the stand-in writes.

Stage 1 (the asm kernel), per work item (a batch's q rows against a span of its KV): fp8 or bf16 operands taken
exactly (fp8 values widen to float32 without loss), q . k accumulated in float32 and scaled by
q_scale * kv_scale * sm_scale, softmax in float32 over the span, p . v in float32; the span's output and its
log-sum-exp come out in float32. Stage 2 (mla_reduce_v1 or the Triton stage-2) merges the spans of one q tile
by log-sum-exp and writes bf16. Works are processed in chunks so the widened KV stays under CHUNK_BYTES.
"""
import torch

CHUNK_BYTES = 256 << 20


def _scale(value) -> torch.Tensor | float:
    return 1.0 if value is None else value.reshape(-1)[:1].to(torch.float32)


def attend(q: torch.Tensor, kv_rows: torch.Tensor, kv_indices: torch.Tensor, spans: torch.Tensor, *,
           q_scale, kv_scale, sm_scale: float, v_dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Partial attention of every work item.

    q (total_q, H, D); kv_rows (rows, D), one KV row per page (page size 1); kv_indices maps positions to rows;
    spans (W, 4) int64 rows of [q_start, q_end, kv_start, kv_end] (kv positions index kv_indices).
    Returns out (W, R, H, v_dim) float32 and lse (W, R, H) float32, R = the longest q span; an empty KV span
    gives out 0 and lse -inf (it adds nothing when merged)."""
    heads, dim = q.shape[1], q.shape[2]
    works = spans.shape[0]
    q_len = int((spans[:, 1] - spans[:, 0]).max()) if works else 0
    kv_len = int((spans[:, 3] - spans[:, 2]).max()) if works else 0
    out = torch.zeros((works, q_len, heads, v_dim), dtype=torch.float32, device=q.device)
    lse = torch.full((works, q_len, heads), float("-inf"), dtype=torch.float32, device=q.device)
    if works == 0 or q_len == 0 or kv_len == 0:
        return out, lse
    factor = _scale(q_scale) * _scale(kv_scale) * sm_scale
    per_work = max(1, CHUNK_BYTES // (kv_len * dim * 4))
    kv_steps = torch.arange(kv_len, device=q.device)
    q_steps = torch.arange(q_len, device=q.device)
    for first in range(0, works, per_work):
        part = spans[first:first + per_work].to(q.device)
        positions = part[:, 2:3] + kv_steps
        kv_valid = positions < part[:, 3:4]
        rows = kv_indices[positions.clamp(max=max(kv_indices.numel() - 1, 0))].long()
        keys = kv_rows[rows].to(torch.float32)  # (w, L, D): fp8/bf16 values, exactly
        q_positions = part[:, 0:1] + q_steps
        q_valid = q_positions < part[:, 1:2]
        queries = q[q_positions.clamp(max=q.shape[0] - 1)].to(torch.float32)  # (w, R, H, D)
        scores = torch.bmm(queries.reshape(len(part), q_len * heads, dim), keys.transpose(1, 2)) * factor
        scores = scores.masked_fill(~kv_valid[:, None, :], float("-inf"))
        peak = scores.amax(dim=-1, keepdim=True)
        peak = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
        weights = torch.exp(scores - peak)
        total = weights.sum(dim=-1, keepdim=True)
        values = keys[..., :v_dim] * _scale(kv_scale)
        acc = torch.bmm(weights, values) / total.clamp(min=torch.finfo(torch.float32).tiny)
        part_lse = (peak + torch.log(total)).squeeze(-1)
        shape = (len(part), q_len, heads)
        keep = q_valid[:, :, None].expand(shape)
        out[first:first + len(part)] = torch.where(keep[..., None], acc.reshape(*shape, v_dim), 0.0)
        lse[first:first + len(part)] = torch.where(keep, part_lse.reshape(shape), float("-inf"))
    return out, lse


def merge(outs: torch.Tensor, lses: torch.Tensor) -> torch.Tensor:
    """Log-sum-exp merge over dim 1: outs (T, S, ..., Dv), lses (T, S, ...) -> (T, ..., Dv) float32."""
    peak = lses.amax(dim=1, keepdim=True)
    peak = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
    weights = torch.exp(lses - peak)
    total = weights.sum(dim=1)
    return (outs * weights[..., None]).sum(dim=1) / total.clamp(min=torch.finfo(torch.float32).tiny)[..., None]
